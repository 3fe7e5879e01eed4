"""Search & frontier tab: every configuration the sizing search scores on the scenario's traffic, two
Pareto frontiers, the cheapest fleets confirmed by simulation, and any point made the scenario.

The knobs searched (``search``), the SLO percentile (``slo_pct``) and the goodput share
(``slo_goodput``) are link keys; the form applies them with ``ctx.update_scenario``.  The screen
(``planner.search.knob_search.screen_points``) runs on every scenario (cached by its JSON; a fraction of
a second); **Search** also confirms the cheapest points by simulation (``search_fleet``, run in a
worker process of ui/jobs.py, like the Simulate tab's runs: the same busy rule, time limit and progress
bar; its confirmation pool is bounded by the jobs' ``default_processes()``).  Clicking a point of a
chart selects it in the picker; **Use this point** makes it the scenario (its GPU, layout, knobs and
replica count; the link follows) and **Back to the previous scenario** restores the one before;
**Simulate this point** simulates that fleet on the scenario's traffic (in a worker too).
Traffic: the scenario's Poisson arrivals or its bundled trace (an uploaded trace lives in the Simulate
& size tab only).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from planner.errors import ScenarioError
from planner.format import fmt_count, fmt_num, fmt_pct, fmt_seconds
from planner.links import DEFAULTS, FIELDS
from planner.model.scenario import SEARCH_AXES, Scenario
from planner.model.specs import ModelSpec
from planner.model.weight_plan import format_labels
from planner.search.frontiers import FRONTIERS, frontier_points
from planner.search.knob_search import MEETS, Screened, SearchResult, basis_text, describe, screen_points
from planner.search.latency_text import latency_columns
from planner.sim.fleet import FleetResult
from planner.sim.slo import Slo, verdict
from planner.sim.traces import scenario_traffic
from ui.figures.frontier import frontier_figure, frontier_heading
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import display_frame, download_csv, md_escape, md_list, md_text, table
from ui.jobs import RESULTS, WORKERS, Busy, Job
from ui.slo_inputs import stat_input
from ui.state import PageContext
from ui.tabs.runs import cancel_button, session_id
from ui.tabs.runs import wait as wait_for_job
from ui.tabs.sizing_view import COMM_HEADER, CONFIG_DISPLAY, CONFIG_KINDS, latency_display

KNOB_LABELS = {
    "batch": "batch cap (max_num_seqs)",
    "chunk": "chunk (max_num_batched_tokens)",
    "kvdtype": "allow an fp8 KV cache",
    "wdtype": "allow fp8 weights",
    "spec": "speculative decoding on and off (the sidebar's γ, α, draft)",
    "disagg": "disaggregated prefill / decode pools",
}
FORM_FIELDS = ("slo_pct", "slo_goodput")
_W = "_fr_w_"
_SYNCED = "_fr_form_for"
_PENDING = "_fr_pending_search"
_APPLIED = "_fr_applied_click"
_PICK = _W + "point"
_CLICKED = "_fr_clicked"  # the point id last clicked on a chart (selected in the picker, not applied)
_PREVIOUS = "_fr_previous"  # the scenario's fields before a point or row was used (the Back button)
_SIMULATED = "_fr_simulated"  # (scenario JSON, "point" or "row", the point's changes) of the last simulated point
SEARCH_JOB, SIMULATE_POINT_JOB = "search", "simulate_point"  # ui/jobs.py kinds
UPDATE, SEARCH = "update", "search"
TABLE_DISPLAY = CONFIG_DISPLAY | {
    "decode_comm_frac": COMM_HEADER,
    "fleet_power_kw": "fleet IT power (kW)",
    "binding": "binding (simulated)",
    "binding_analytic": "binding (screening model)",
    "analytic_gpus": "GPUs (screening model)",
    "basis": "basis",
    "confirmed_on": "simulated fleet",  # one replica at its share, or a bounded sample (search.fleet_sample)
    "time_basis": "step times",  # measured kernels or the fitted roofline, per GPU (grid_bases.Base.time_basis)
    "status": "status",
}
#: How each shown column is formatted (``ui.format.table``).
TABLE_KINDS = CONFIG_KINDS | {"GPUs (screening model)": "count", "fleet IT power (kW)": "num"}


def _store(st: Any):
    def remember(key: str, _value: Any = None) -> Any:
        if _value is None:
            raise LookupError(key)
        return _value

    remember.__qualname__ = "frontier_store"
    return st.cache_data(max_entries=8, show_spinner=False)(remember)


def _lookup(st: Any, key: str) -> Any:
    try:
        return _store(st)(key)
    except LookupError:
        return None


def screen_key(s: Scenario) -> str:
    """The cache key of a scenario's screen: the scenario without the knobs the search sweeps itself (a
    searched batch or chunk gives the same points whatever the sidebar says) or that only a fleet run
    reads — so moving the batch on this tab redraws the same screen instead of re-scoring it."""
    axes = set(s.search.split(","))
    neutral = {"replicas": 1, "router": DEFAULTS.router}
    if "batch" in axes:
        neutral["batch"] = DEFAULTS.batch
    if "chunk" in axes:
        neutral["chunk"] = DEFAULTS.chunk
    return "screen|" + s.model_copy(update=neutral).model_dump_json()


def _screened(st: Any, ctx: PageContext) -> Screened:
    key = screen_key(ctx.scenario)
    found = _lookup(st, key)
    if found is None:
        found = screen_points(ctx.scenario, ctx.catalog, scenario_traffic(ctx.scenario))
        _store(st)(key, found)
    return found


def _sync_form(ss: Any, s: Scenario) -> None:
    values = (s.search, *(getattr(s, f) for f in FORM_FIELDS))
    if ss.get(_SYNCED) != values:
        on = set(s.search.split(","))
        for axis in SEARCH_AXES:
            ss[_W + axis] = axis in on
        for f in FORM_FIELDS:
            ss[_W + f] = getattr(s, f)
        ss[_SYNCED] = values


def _form(st: Any) -> tuple[str | None, dict[str, Any]]:
    with st.form("frontier_form", border=True):
        st.markdown("**Knobs the search tunes** (GPU profile and tp always)")
        cols = st.columns(3)
        for k, axis in enumerate(SEARCH_AXES):
            cols[k % 3].checkbox(KNOB_LABELS[axis], key=_W + axis)
        c1, c2 = st.columns(2)
        with c1:
            stat_input(st, _W + "slo_pct", st.session_state[_W + "slo_pct"], " The targets are the sidebar's.")
        c2.number_input(
            "Goodput: share of requests meeting their targets (0 = no requirement)",
            min_value=0.0,
            max_value=1.0,
            step=0.05,
            format="%g",
            key=_W + "slo_goodput",
        )
        b1, b2, _ = st.columns([1, 2, 2])
        update = b1.form_submit_button("Update", icon=":material/refresh:")
        search = b2.form_submit_button("Search and confirm by simulation", type="primary", icon=":material/search:")
    ss = st.session_state
    knobs = [a for a in SEARCH_AXES if ss[_W + a]]
    values = {"search": ",".join(knobs) or "none", **{f: ss[_W + f] for f in FORM_FIELDS}}
    return (SEARCH if search else UPDATE if update else None), values


def current_point(points: pd.DataFrame, s: Scenario, model: ModelSpec | None = None) -> int | None:
    """The colocated point that is the scenario itself (its GPU, layout, knobs), if the grid has it (its weights and
    KV cache as the search names them, ``weight_plan.format_labels``; without ``model``: the link's own values)."""
    wd, kv = format_labels(model, s) if model is not None else (s.wdtype or "bf16", s.kvdtype or "bf16")
    own = points[
        (points["mode"] == "colocated")
        & (points["gpu"] == s.gpu)
        & (points["tp"] == s.tp)
        & (points["pp"] == s.pp)
        & (points["ep"] == s.ep)
        & (points["dp"] == s.dp)
        & (points["batch"] == s.batch)
        & (points["chunk"] == s.chunk)
        & (points["kvdtype"] == kv)
        & (points["wdtype"] == wd)
        & (points["spec"] == s.spec)
    ]
    return int(own["point"].iloc[0]) if len(own) else None


def _clicked(event: Any) -> int | None:
    """The point id of the first clicked point of a chart's selection event, if any."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for p in points:
        data = p.get("customdata")
        if isinstance(data, list | tuple):
            data = data[0] if data else None
        if data is not None:
            return int(data)
    return None


def _charts(ctx: PageContext, z: Screened) -> None:
    """Both frontiers, each under its heading; a click on a point selects it in the picker below (it does
    not change the scenario: only **Use this point** does)."""
    st = ctx.st
    current = current_point(z.points, ctx.scenario, ctx.result.resolved.model if ctx.result else None)
    if current is not None:
        row = z.points.loc[z.points["point"] == current].iloc[0]
        if row["meets_slo"]:
            st.caption(
                md_text(
                    f"The star is this scenario: {fmt_count(row['gpus'], 'GPU')} "
                    f"({fmt_count(row['replicas'], 'replica')}), binding: {row['binding']}."
                )
            )
        else:
            st.caption(md_escape(f"This scenario itself ({describe(row)} on {row['name']}): {row['status']}."))
    for f in FRONTIERS:
        key = f"fr-chart-{f.key}"
        st.markdown(md_text(f"**{frontier_heading(f)}**"))
        event = st.plotly_chart(
            frontier_figure(z.points, f, z.slo, current),
            key=key,
            on_select="rerun",
            selection_mode="points",
            config=PLOTLY_CONFIG,
        )
        point = _clicked(event)
        if point is not None and st.session_state.get(_APPLIED) != (key, point):
            st.session_state[_APPLIED] = (key, point)
            st.session_state[_CLICKED] = point
            st.session_state[_PICK] = point  # the picker shows it; the scenario is unchanged
    st.caption(
        md_text(
            "Throughput frontier at capacity: each configuration's replica carrying the most requests/s it "
            "serves within the SLO (the screening model's capacity), so its output tokens/s per GPU is what "
            "the configuration can do — not this scenario's demand — and does not move with the arrival "
            "rate; tokens/s per user is its decode speed at that load (as InferenceMAX and NVIDIA "
            "AIConfigurator draw throughput against interactivity). The cost frontier prices the fleet "
            "sized for this scenario's traffic."
        )
    )


def _label(r: pd.Series) -> str:
    return (
        f"{r['name']}: {describe(r)}; {fmt_count(r['gpus'], 'GPU')}, "
        f"${r['cost_per_hour_usd']:,.2f}/h, {fmt_num(r['capacity_output_tokens_per_s_per_user'])} tokens/s per user"
    )


def _options(z: Screened, clicked: int | None = None) -> dict[int, str]:
    """Frontier points (both frontiers) for the picker, cheapest first; a clicked point off the frontiers
    first, when it meets the SLO."""
    on = pd.concat([frontier_points(z.points, f) for f in FRONTIERS]).drop_duplicates("point")
    on = on.sort_values(["cost_per_hour_usd", "gpus"], kind="stable")
    options = {int(r["point"]): _label(r) for _, r in on.iterrows()}
    if clicked is not None and clicked not in options:
        row = z.points.loc[(z.points["point"] == clicked) & z.points["meets_slo"].astype(bool)]
        if len(row):
            options = {clicked: "clicked: " + _label(row.iloc[0])} | options
    return options


def use_point(ctx: PageContext, changes: dict[str, Any]) -> None:
    """Make ``changes`` the scenario, remembering the scenario before them (``back_button`` restores it)."""
    ctx.st.session_state[_PREVIOUS] = {k: getattr(ctx.scenario, k) for k in FIELDS}
    ctx.update_scenario(**changes)


def back_button(ctx: PageContext) -> None:
    """**Back to the previous scenario**: shown after a point or row was used, restores the scenario before it."""
    ss = ctx.st.session_state
    previous = ss.get(_PREVIOUS)
    if previous is None:
        return
    if ctx.st.button("Back to the previous scenario", icon=":material/undo:", key=_W + "back"):
        ss.pop(_PREVIOUS, None)
        ctx.update_scenario(**{k: v for k, v in previous.items() if v != getattr(ctx.scenario, k)})


def _start(
    ctx: PageContext, slot: Any, kind: str, s: Scenario, key: str, pressed: bool, holder: Any = None
) -> Job | None:
    """Start (when ``pressed``) or join the worker job ``kind`` for ``s`` under ``key`` (ui/jobs.py: the
    Simulate tab's busy rule and time limit) and wait for it with a progress bar; None when none runs.  A
    search draws its answer so far in ``holder`` (screened at once, confirmed row by row) beside a Cancel
    button."""
    st = ctx.st
    job = WORKERS.find(key)
    if job is None and not pressed:
        return None
    if job is None:
        try:
            job = WORKERS.submit(session_id(st), key, kind, (s.model_dump_json(), None))
        except Busy as exc:
            st.warning(md_escape(f"Not started: {exc}."))
            return None
    text = "Searching…" if kind == SEARCH_JOB else f"Simulating {s.replicas} replicas…"
    on_partial = None
    cancel = None
    if kind == SEARCH_JOB and holder is not None:
        cancel = st.empty()  # emptied when the run ends: the finished view has no Cancel
        cancel_button(cancel, job, _W + "cancel_search", "Cancel: keep what is confirmed")

        def on_partial(z: SearchResult) -> None:
            with holder.container():
                _partial(st, z)

    wait_for_job(_NotedSlot(slot, job), job, text, on_partial)
    if holder is not None:
        holder.empty()
        if cancel is not None:
            cancel.empty()
    return job


def _partial(st: Any, z: SearchResult) -> None:
    """The search's answer while it confirms: no widgets (the finished view has the keys)."""
    (st.info if z.best_basis == "screened" else st.success)(md_escape(z.reason))
    flags = z.table["best"].astype(bool).tolist()
    shown, kinds = _shown_table(z)
    st.dataframe(table(shown, kinds, flags), hide_index=True)
    st.caption(md_text(basis_text(z)))


class _NotedSlot:
    """A progress slot that shows the job's own words (the search's stage) when it sends them."""

    def __init__(self, slot: Any, job: Job) -> None:
        self.slot, self.job = slot, job

    def progress(self, frac: float, text: str) -> None:
        self.slot.progress(frac, text=md_escape(self.job.note) + text[text.rfind(" (") :] if self.job.note else text)

    def empty(self) -> None:
        self.slot.empty()


def _simulate_point(ctx: PageContext, changes: dict[str, Any], where: str, pressed: bool) -> None:
    """Simulate the fleet of a point on the scenario's traffic, in a worker; the result shows here while
    the scenario is unchanged (also on a rerun while it runs)."""
    st, ss = ctx.st, ctx.st.session_state
    own = ctx.scenario.model_dump_json()
    if pressed:
        ss[_SIMULATED] = (own, where, changes)
    elif ss.get(_SIMULATED, (None, None, None))[:2] != (own, where):
        return
    else:
        changes = ss[_SIMULATED][2]
    s = ctx.scenario.with_changes(**changes)
    key = "frontier-simulate|" + s.model_dump_json()
    job = None if key in RESULTS else _start(ctx, st.empty(), SIMULATE_POINT_JOB, s, key, pressed)
    if job is not None and job.state != "done":
        st.error("This point cannot be simulated here:\n\n" + md_list(job.problems))
        return
    fleet: FleetResult | None = RESULTS.get(key)
    if fleet is None:
        return
    slo = Slo.of(s)
    v = verdict(fleet.combined, slo)
    names = latency_columns(slo)
    m = st.columns(len(names) + 2)
    for k, n in enumerate(names):
        m[k].metric(slo.label(n), fmt_seconds(v.value(n)))
    m[-2].metric("Goodput", fmt_pct(v.goodput_frac))
    m[-1].metric("Replicas", fmt_count(s.replicas))
    text = f"{s.replicas} replicas ({s.router} router) {'meet' if v.met else 'miss'} {slo.text()}"
    (st.success if v.met else st.warning)(md_text(text + ("" if v.met else f": {v.binding_text()}") + "."))


def _picker(ctx: PageContext, z: Screened) -> None:
    st = ctx.st
    options = _options(z, st.session_state.get(_CLICKED))
    if not options:
        return
    if st.session_state.get(_PICK) not in options:
        st.session_state.pop(_PICK, None)
    pick = st.selectbox(
        "A point on the frontiers (or the one clicked)", list(options), format_func=options.get, key=_PICK
    )
    b1, b2, _ = st.columns([1, 1, 2])
    use = b1.button("Use this point", icon=":material/check:", key=_W + "use")
    sim = b2.button("Simulate this point", icon=":material/play_arrow:", key=_W + "simulate")
    if use and pick is not None:
        use_point(ctx, z.changes(int(pick)))
    _simulate_point(ctx, z.changes(int(pick)) if pick is not None else {}, "point", bool(sim and pick is not None))


def _run_search(ctx: PageContext, key: str, pressed: bool) -> None:
    """The search (``search_fleet``: the screen, then the cheapest points confirmed by simulation) in a
    worker process, started when pressed or joined while it runs; its problems as an error box."""
    st = ctx.st
    if key in RESULTS:
        return
    job = _start(ctx, st.empty(), SEARCH_JOB, ctx.scenario, key, pressed, st.empty())
    if job is not None and job.state != "done":
        st.error("The search cannot run:\n\n" + md_list(job.problems))


def _shown_table(z: SearchResult) -> tuple[pd.DataFrame, dict[str, str]]:
    """The candidates' table for the page: its latency columns headed by the SLO's statistic."""
    lat, lat_kinds = latency_display(z.slo)
    items = list(TABLE_DISPLAY.items())
    at = list(TABLE_DISPLAY).index("decode_comm_frac")
    shown = display_frame(z.table, dict(items[:at] + list(lat.items()) + items[at:]), tuple(lat))
    return shown, TABLE_KINDS | lat_kinds


def _confirmed(ctx: PageContext, z: SearchResult) -> None:
    st = ctx.st
    box = st.warning if z.best is None else st.info if z.best_basis == "screened" else st.success
    box(md_escape(z.reason))
    flags = z.table["best"].astype(bool).tolist()
    shown, kinds = _shown_table(z)
    st.dataframe(table(shown, kinds, flags), hide_index=True)
    st.caption(
        md_text(
            basis_text(z)[:1].upper()
            + basis_text(z)[1:]
            + " Each candidate is one replica simulated at its share of the traffic; the binding constraint is "
            "what the simulation misses at the count below the answer. Rows whose basis is screened are the "
            "screening model's estimate."
        )
    )
    ok = z.table[z.table["status"] == MEETS]
    if len(ok):
        rows = {int(r["point"]): f"{r['name']}: {describe(r)} × {int(r['replicas'])}" for _, r in ok.iterrows()}
        pick = st.selectbox("A confirmed row", list(rows), format_func=rows.get, key=_W + "row")
        b1, b2, _ = st.columns([1, 1, 2])
        if b1.button("Use this row", key=_W + "use_row", icon=":material/check:"):
            use_point(ctx, z.changes(int(pick)))
        sim = b2.button("Simulate this row", key=_W + "sim_row", icon=":material/play_arrow:")
        _simulate_point(ctx, z.changes(int(pick)), "row", sim)
    download_csv(st, "Confirmed table CSV", z.table, "search-confirmed")


def render(ctx: PageContext) -> None:
    st, s = ctx.st, ctx.scenario
    if ctx.result is None:
        st.info("Nothing to search until the scenario can be evaluated (see the error above).")
        return
    ss = st.session_state
    _sync_form(ss, s)
    action, values = _form(st)
    if action:
        changes = {k: v for k, v in values.items() if v != getattr(s, k)}
        if changes:
            if action == SEARCH:
                ss[_PENDING] = True
            ctx.update_scenario(**changes)  # reruns; a search runs with the new scenario
            return
    searching = action == SEARCH or bool(ss.pop(_PENDING, False))
    slo = Slo.of(s)
    traffic = "trace " + md_escape(s.trace) if s.trace else f"Poisson, {fmt_num(s.rate)} requests/s"
    st.caption(
        md_text(
            f"Every configuration of the knobs above on every priced GPU profile, scored on this scenario's "
            f"traffic ({traffic}) against "
            f"{slo.text()}; each point is the fewest replicas that meet it."
        )
    )
    try:
        z = _screened(st, ctx)
    except ScenarioError as exc:
        st.error("The search cannot run:\n\n" + md_list(exc.problems))
        return
    key = "search|" + s.model_dump_json()
    _run_search(ctx, key, searching)
    found: SearchResult | None = RESULTS.get(key)
    if found is not None:
        _confirmed(ctx, found)
    else:
        st.info("Press **Search and confirm by simulation** to simulate the cheapest points on every GPU profile.")
    feasible = int(z.points["meets_slo"].sum())
    st.markdown(
        md_text(
            f"**{fmt_count(len(z.points))} configurations scored, {fmt_count(feasible)} meet the SLO** "
            "(screening model). Click a point to select it below; **Use this point** makes it the scenario "
            "(**Back to the previous scenario** undoes it)."
        )
    )
    if not feasible:
        st.warning(md_escape(f"No configuration meets {slo.text()} at this load."))
    back_button(ctx)
    _charts(ctx, z)
    _picker(ctx, z)
    download_csv(st, "Every point CSV", z.export_frame(), "search-points")
