"""Simulate & size tab: the traffic (generated, a bundled production trace or an upload), the
simulated replicas' latencies and prefix-cache hit rates, and the fleet that meets the SLOs.

Workload, trace replay, prefix-cache, fleet and SLO inputs are Scenario fields (link keys).
They sit in a form with their own widget keys; pressing a button applies changed values with
``ctx.update_scenario`` (the link follows) and the action runs on that rerun.  An uploaded
trace is session-only (it cannot travel in a link) and is used while no bundled trace is
selected.  A run goes to a worker process (``ui.jobs``: a time limit, a memory limit, one run per
visitor at a time); its result lands in a byte-bounded cache keyed by the scenario's JSON and the
upload's SHA-256, where any later rerun finds it.  The progress bar sits right under the buttons.

The prefix cache here is the serving engine's own KV cache shared across requests (vLLM's
automatic prefix caching); the API prompt-cache pricing is the Prompt caching tab's.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any, get_args

from planner.errors import ScenarioError, TraceError
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_pct, fmt_seconds
from planner.links import FIELDS
from planner.model.parallel_layout import Layout
from planner.model.scenario import PrefixCacheMode, Router, Scenario, TraceName
from planner.search.latency_text import latency_columns
from planner.search.sizing import Sizing, screened_answer
from planner.sim.fleet import FleetResult, replica_frame
from planner.sim.results import SimResult, cdf_frame, requests_frame, simulated_gpu_hit, summary_frame, timeline_frame
from planner.sim.slo import Slo, goodput_targets
from planner.sim.traces import BUNDLED, MAX_TRACE_BYTES, MAX_TRACE_ROWS, Trace, bundled_trace, replay
from planner.sim.traffic import arrival_rate_frame, length_frame, traffic_summary
from planner.sim.workload import Workload
from planner.units import MiB
from ui.figures.serving import (
    arrival_rate_figure,
    latency_cdf_figure,
    length_figure,
    replica_figure,
    timeline_figure,
)
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import display_frame, download_csv, md_escape, md_list, table
from ui.jobs import RESULTS, WORKERS, Busy
from ui.slo_inputs import stat_input, target_inputs
from ui.state import PageContext
from ui.tabs.runs import cancel_button, session_id, upload_job, wait
from ui.tabs.sizing_view import show_partial_sizing, show_sizing, simulate_row

FORM_FIELDS = (
    "rate",
    "dist",
    "spread",
    "sim_requests",
    "seed",
    "slo_pct",
    "slo_ttft_s",
    "slo_tpot_s",
    "slo_itl_s",
    "slo_e2e_s",
    "trace",
    "trace_scale",
    "trace_start_s",
    "trace_duration_s",
    "prefix_cache",
    "replicas",
    "router",
)
_W = "_sim_w_"  # widget key prefix (the sidebar owns the keys named like the fields)
_SYNCED = "_sim_form_for"
_PENDING = "_sim_pending_action"
_UPLOAD = _W + "upload"
SIMULATE, SIZE = "simulate", "size"
#: Short enough for the Traffic box at 1280 px (the trace's name and size; the dataset's own words, date and
#: prefix note are in the box's help).
TRACE_LABELS = {"": "Poisson (generated) or upload"} | {
    name: name + text[text.rfind(" (") :] for name, (_, text) in BUNDLED.items()
}
CACHE_LABELS = {
    "pool": "in the free KV blocks (vLLM)",
    "unbounded": "unbounded (the traffic's ceiling)",
    "off": "off (no sharing)",
}
ROUTER_LABELS = {
    "round_robin": "round-robin",
    "least_tokens": "least outstanding tokens",
    "prefix_affinity": "prefix affinity (SGLang cache-aware)",
}

REPLICA_DISPLAY = {
    "replica": "replica",
    "requests": "requests",
    "output_tokens_per_s": "output tokens/s",
    "ttft_p99_s": "p99 TTFT (ms)",
    "itl_p99_s": "p99 ITL (ms)",
    "kv_used_mean_frac": "KV used (mean)",
    "preemptions": "preemptions",
    "prefix_cache_hit_rate_tokens": "prefix hit (tokens)",
    "prefix_cache_hit_rate_requests": "prefix hit (requests)",
}
REPLICA_KINDS = {
    "replica": "count",
    "requests": "count",
    "output tokens/s": "count",
    "p99 TTFT (ms)": "ms",
    "p99 ITL (ms)": "ms",
    "KV used (mean)": "pct",
    "preemptions": "count",
    "prefix hit (tokens)": "pct",
    "prefix hit (requests)": "pct",
}


def _parsed_upload(st: Any, data: bytes, digest: str, prefix_tokens: int) -> Trace:
    """The uploaded trace, read in the uploads' worker once per content (``ui.jobs.UPLOADS``, kind
    ``parse_trace``: a 20 MB trace parses to ~10 MB, kept in that pool's byte-bounded cache); TraceError
    with the reader's problems."""
    trace, problems = upload_job(
        st, "parse_trace", f"{digest}|{prefix_tokens}", (data, prefix_tokens), "Reading the trace…"
    )
    if trace is None:
        raise TraceError(list(problems))
    return trace


def _upper(name: str) -> float:
    """The field's upper bound (``le``) from the Scenario model."""
    return next(float(m.le) for m in FIELDS[name].metadata if getattr(m, "le", None) is not None)


def _sync_form(ss: Any, s: Scenario) -> None:
    """Show the scenario's values in the form whenever they changed elsewhere (link, sidebar)."""
    values = tuple(getattr(s, f) for f in FORM_FIELDS)
    if ss.get(_SYNCED) != values:
        for f, v in zip(FORM_FIELDS, values, strict=True):
            ss[_W + f] = v
        ss[_SYNCED] = values


def intro_text(s: Scenario, instance: str, uploaded: bool) -> str:
    """The tab's first words: the replica, and the traffic it is given — the chosen trace's own requests
    (the sidebar's lengths unused), an upload, or the generated prompts with the sidebar's lengths."""
    replica = (
        f"One replica is {instance}, continuous batching up to {fmt_count(s.batch)} sequences, "
        f"{fmt_count(s.chunk)}-token steps. "
    )
    if s.trace:
        scale = f" at {fmt_num(s.trace_scale)}× its recorded rate" if s.trace_scale != 1 else ""
        return replica + (
            f"Traffic: the bundled trace {BUNDLED[s.trace][1]}, replayed{scale} with its own arrival times, "
            "prompt and output lengths (the sidebar's lengths and rate are not used); the prefix cache decides "
            "how many shared prefix blocks are found."
        )
    if uploaded:
        return replica + (
            "Traffic: the uploaded trace, replayed with its own arrival times and lengths (the sidebar's lengths "
            "and rate are not used)."
        )
    return replica + (
        f"Generated prompts and outputs average {fmt_count(s.prompt)} and {fmt_count(s.output)} tokens "
        f"(sidebar); {fmt_pct(s.hit)} of them begin with a shared {fmt_count(s.prefix)}-token prefix, and the "
        "prefix cache decides how many find it."
    )


def _traffic_inputs(st: Any) -> None:
    """The trace, its replay (scale, window), the prefix cache and the fleet."""
    c1, c2, c3 = st.columns([2, 1, 1])
    c1.selectbox(
        "Traffic",
        get_args(TraceName),
        format_func=TRACE_LABELS.get,
        key=_W + "trace",
        help="A bundled production trace (Azure LLM inference 2023, CC-BY 4.0; Mooncake FAST'25, Apache-2.0, "
        "with shared prefix blocks), or generated Poisson arrivals with the lengths below (an uploaded trace "
        "replaces them).\n\n" + "\n".join(f"- {name}: {text}" for name, (_, text) in BUNDLED.items()),
    )
    c2.number_input(
        "Replay speed (× recorded rate)",
        min_value=0.001,
        max_value=_upper("trace_scale"),
        step=0.5,
        format="%g",
        key=_W + "trace_scale",
        help="3 = the same requests arriving three times as fast (a trace only).",
    )
    c3.selectbox(
        "Prefix cache",
        get_args(PrefixCacheMode),
        format_func=CACHE_LABELS.get,
        key=_W + "prefix_cache",
        help="The serving engine's KV cache shared across requests (vLLM automatic prefix caching): cached "
        "blocks stay in the free KV blocks until the pool needs them (LRU). Not the API prompt-cache pricing.",
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.number_input(
        "Window start (s)",
        min_value=0.0,
        max_value=_upper("trace_start_s"),
        step=60.0,
        format="%g",
        key=_W + "trace_start_s",
        help="Replay only the trace's requests from this time on (seconds after its first request).",
    )
    c2.number_input(
        "Window length (s, 0 = to the end)",
        min_value=0.0,
        max_value=_upper("trace_duration_s"),
        step=60.0,
        format="%g",
        key=_W + "trace_duration_s",
    )
    c3.number_input(
        "Replicas",
        min_value=1,
        max_value=int(_upper("replicas")),
        step=1,
        key=_W + "replicas",
        help="Behind one router.",
    )
    c4.selectbox("Router", get_args(Router), format_func=ROUTER_LABELS.get, key=_W + "router")


def _workload_inputs(st: Any, s: Scenario) -> None:
    c1, c2, c3 = st.columns(3)
    c1.number_input(
        "Arrival rate (requests/s)",
        min_value=min(0.001, s.rate),
        max_value=_upper("rate"),
        step=0.5,
        format="%g",
        key=_W + "rate",
        help="Poisson arrivals to the whole fleet (when no trace is replayed); requests per second.",
    )
    c2.selectbox(
        "Length distribution",
        ("fixed", "uniform", "lognormal"),
        key=_W + "dist",
        help="Prompt and output lengths around the sidebar's prompt and output tokens.",
    )
    c3.number_input(
        "Spread (CV)",
        min_value=0.0,
        max_value=_upper("spread"),
        step=0.1,
        format="%g",
        key=_W + "spread",
        help="Coefficient of variation of the lengths: standard deviation / mean.",
    )
    c1.number_input(
        "Requests simulated",
        min_value=10,
        max_value=int(_upper("sim_requests")),
        step=500,
        key=_W + "sim_requests",
        help="Poisson requests in one simulation; count (a trace is replayed whole).",
    )
    c2.number_input(
        "Seed", min_value=0, max_value=2**31 - 1, step=1, key=_W + "seed", help="Same seed, same requests and result."
    )
    with c3:
        stat_input(st, _W + "slo_pct", s.slo_pct)
    target_inputs(st, _W, columns=4)


def _form(st: Any, s: Scenario) -> tuple[str | None, dict[str, Any]]:
    """The inputs; returns (action pressed, values)."""
    st.file_uploader(
        "Upload a trace (optional: used while Traffic is the generated arrivals)",
        type=["csv", "jsonl", "json", "gz"],
        key=_UPLOAD,
        max_upload_size=MAX_TRACE_BYTES // MiB,
        help="kvplan CSV (arrival_s, prompt_tokens, output_tokens, optional prefix_id), Azure LLM inference CSV "
        "(TIMESTAMP, ContextTokens, GeneratedTokens), BurstGPT CSV or Mooncake JSONL (timestamp, input_length, "
        f"output_length, hash_ids); gzip accepted; ≤ {fmt_bytes(MAX_TRACE_BYTES)}, ≤ {fmt_count(MAX_TRACE_ROWS)} rows.",
    )
    with st.form("sim_form", border=True):
        _traffic_inputs(st)
        _workload_inputs(st, s)
        b1, b2, _ = st.columns([1, 1, 2])
        simulate = b1.form_submit_button("Simulate", type="primary", icon=":material/play_arrow:")
        size = b2.form_submit_button("Size the fleet", icon=":material/calculate:")
    values = {f: st.session_state[_W + f] for f in FORM_FIELDS}
    return (SIMULATE if simulate else SIZE if size else None), values


def _upload(st: Any) -> tuple[bytes | None, str, str | None]:
    """(bytes, sha256 hex, problem) of the uploaded trace; (None, '', None) when there is none."""
    up = st.session_state.get(_UPLOAD)
    if up is None:
        return None, "", None
    if up.size > MAX_TRACE_BYTES:
        return None, "", f"the trace is {fmt_count(up.size)} bytes; the limit is {fmt_count(MAX_TRACE_BYTES)}"
    data = up.getvalue()
    return data, hashlib.sha256(data).hexdigest(), None


def _traffic(st: Any, s: Scenario, data: bytes | None, digest: str) -> tuple[Workload | None, str, list[str]]:
    """(workload or None for Poisson, its name, problems) of the selected traffic, replayed."""
    try:
        if s.trace:
            trace, name = bundled_trace(s.trace, s.prefix), s.trace
        elif data is not None:
            trace, name = _parsed_upload(st, data, digest, s.prefix), "the uploaded trace"
        else:
            return None, f"Poisson arrivals at {fmt_num(s.rate)}/s", []
        workload = replay(trace, s.trace_scale, s.trace_start_s, s.trace_duration_s or None)
    except TraceError as exc:
        return None, "", exc.problems
    if trace.skipped_rows:
        st.caption(md_escape(trace.skipped_reason))
    return workload, name, []


def _preview(st: Any, w: Workload, name: str, s: Scenario) -> None:
    """The replayed trace before simulating: its counts, arrival rate over time and lengths."""
    sm = traffic_summary(w)
    scale = f" at {fmt_num(s.trace_scale)}× its recorded rate" if s.trace_scale != 1 else ""
    reuse = (
        f"; {fmt_pct(sm['prefix_reuse_ceiling_frac'])} of prompt tokens repeat an earlier prompt's prefix blocks"
        if sm["prefix_reuse_ceiling_frac"]
        else "; no prefix information (no sharing between requests)"
    )
    st.caption(
        md_escape(
            f"{name}{scale}: {fmt_count(sm['requests'])} requests over {fmt_seconds(sm['duration_s'])}, "
            f"mean {fmt_num(sm['rate_per_s'])}/s, peak {fmt_num(sm['peak_rate_per_s'])}/s; prompts p50 "
            f"{fmt_count(sm['prompt_p50_tokens'])} / p99 {fmt_count(sm['prompt_p99_tokens'])} tokens, outputs p50 "
            f"{fmt_count(sm['output_p50_tokens'])} / p99 {fmt_count(sm['output_p99_tokens'])}{reuse}."
        )
    )
    rate, lengths = arrival_rate_frame(w), length_frame(w)
    left, right = st.columns(2)
    left.plotly_chart(arrival_rate_figure(rate, "Traffic"), key="sim-trace-rate", config=PLOTLY_CONFIG)
    right.plotly_chart(length_figure(lengths), key="sim-trace-lengths", config=PLOTLY_CONFIG)


def _words(action: str, s: Scenario) -> str:
    if action == SIZE:
        knobs = "" if s.search == "none" else f" × {s.search.replace(',', ' × ')}"
        return f"Sizing: every GPU profile × tp{knobs} screened, the cheapest confirmed by simulation…"
    return "Simulating " + ("one replica" if s.replicas == 1 else f"{s.replicas} replicas") + "…"


def _run(
    ctx: PageContext, slot: Any, action: str | None, key: str, workload: Workload | None, holder: Any = None
) -> None:
    """Start (or join) the run under ``key`` when asked — or when one is already running under it — and wait
    for it; its problems as an error box.  A sizing's answer so far is drawn in ``holder`` while it confirms
    (screened at once, each row replaced as its simulation arrives), with a Cancel button."""
    st, s = ctx.st, ctx.scenario
    job = WORKERS.find(key)
    if job is None and action is None:
        return
    if job is None:
        try:
            job = WORKERS.submit(session_id(st), key, action, (s.model_dump_json(), workload))
        except Busy as exc:
            st.warning(md_escape(f"Not started: {exc}."))
            return
    on_partial = None
    cancel = None
    if job.kind == SIZE and holder is not None:
        cancel = st.empty()  # emptied when the run ends: the finished view has no Cancel
        cancel_button(cancel, job, _W + "cancel_size", "Cancel: keep what is confirmed")

        def on_partial(z: Sizing) -> None:
            with holder.container():
                show_partial_sizing(st, z)

        if job.partial is None and s.search != "none":  # the worker is starting: the screen is a fraction of a second
            with contextlib.suppress(ScenarioError):  # the worker reports it
                on_partial(screened_answer(s, ctx.catalog, workload))

    wait(slot, job, _words(job.kind, s), on_partial)
    if holder is not None:
        holder.empty()
        if cancel is not None:
            cancel.empty()
    if job.state == "problems" and job.kind == SIMULATE:
        st.error("This run was not simulated:\n\n" + md_list(job.problems))
    elif job.state != "done":
        st.error("The run could not finish:\n\n" + md_list(job.problems))


def not_simulable(ctx: PageContext) -> str | None:
    """Why one replica of this scenario cannot be simulated (it does not fit), in words; else None."""
    m = ctx.result.metrics if ctx.result is not None else None
    if m is None or m["fits"]:
        return None
    r = ctx.result.resolved
    min_tp = int(m["min_tp_that_fits"])
    if m["memory_headroom_bytes_per_gpu"] < 0 or m["kv_budget_bytes_per_gpu"] <= 0:
        cause = f"the weights do not fit at tp = {r.scenario.tp} on a {r.gpu.name}"
    else:
        cause = f"no {fmt_count(r.scenario.prompt + r.scenario.output)}-token sequence fits in the KV cache left"
    fix = f"the smallest tp that fits is {min_tp}" if min_tp else "no tp up to 64 fits on this GPU"
    return f"Nothing to simulate: {cause} ({fix}; see the Memory tab). Size the fleet to search every profile and tp."


def render(ctx: PageContext) -> None:
    st = ctx.st
    s = ctx.scenario
    if ctx.result is None:
        st.info("Nothing to simulate until the scenario can be evaluated (see the error above).")
        return
    instance = Layout(s.tp, s.pp, s.ep, s.dp).on(ctx.result.resolved.gpu.name)
    st.caption(md_escape(intro_text(s, instance, st.session_state.get(_UPLOAD) is not None)))
    ss = st.session_state
    _sync_form(ss, s)
    action, values = _form(st, s)
    slot = st.empty()  # the progress bar, right under the buttons
    holder = st.empty()  # a sizing's answer while it confirms
    data, digest, problem = _upload(st)
    if problem:
        st.error(md_escape(problem))
    if action:
        changes = {k: v for k, v in values.items() if v != getattr(s, k)}
        if changes:
            ss[_PENDING] = action
            ctx.update_scenario(**changes)  # reruns; the action runs with the new scenario
            return
    action = action or ss.pop(_PENDING, None)
    blocked = not_simulable(ctx)
    if blocked and action == SIMULATE:
        st.error(md_escape(blocked))
        action = None
    workload, name, problems = _traffic(st, s, data, digest)
    if problems:
        st.error("The trace cannot be used:\n\n" + md_list(problems))
        action = None
    elif workload is not None:
        _preview(st, workload, name, s)
    upload_key = digest if not s.trace else ""
    keys = {a: f"{a}|{s.model_dump_json()}|{upload_key}" for a in (SIMULATE, SIZE)}
    if not problem and not problems:
        for a in (SIMULATE, SIZE):
            if (a == action or WORKERS.find(keys[a]) is not None) and keys[a] not in RESULTS:
                _run(ctx, slot, a if a == action else None, keys[a], workload, holder)
    fleet: FleetResult | None = RESULTS.get(keys[SIMULATE])
    sizing: Sizing | None = RESULTS.get(keys[SIZE])
    if fleet is None and sizing is None:
        st.info(
            md_escape(blocked)
            if blocked
            else "Press **Simulate** for latency distributions and prefix-cache hit rates, or **Size the fleet** for "
            "the cheapest fleet meeting the targets."
        )
    if fleet is not None:
        _show_simulation(ctx, fleet, s, name)
    if sizing is not None:
        show_sizing(st, sizing)
        simulate_row(ctx, sizing, _W, lambda: st.session_state.__setitem__(_PENDING, SIMULATE))


def _metrics(st: Any, sm: dict[str, Any], slo: Slo) -> None:
    names = latency_columns(slo)
    m = st.columns(len(names) + 3)
    over = {"ttft": "served requests", "tpot": "per request", "itl": "over tokens", "e2e": "served requests"}
    for k, n in enumerate(names):
        stats = ", ".join(f"{p} {fmt_seconds(sm[f'{n}_{p}_s'])}" for p in ("mean", "p50", "p90", "p99"))
        m[k].metric(slo.label(n), fmt_seconds(sm[f"{n}_slo_stat_s"]), help=f"{stats} ({over[n]})")
    m[-3].metric(
        "Output tokens/s", fmt_num(sm["output_tokens_per_s"]), help=f"{fmt_num(sm['requests_per_s'])} requests/s"
    )
    m[-2].metric(
        "Goodput",
        fmt_pct(sm["goodput_frac"]),
        help=f"Share of all requests (rejected ones included) with {goodput_targets(slo)}. KV cache used: mean "
        f"{fmt_pct(sm['kv_used_mean_frac'])}, max {fmt_pct(sm['kv_used_max_frac'])}; "
        f"{fmt_count(sm['preemptions'], 'preemption')}.",
    )
    m[-1].metric(
        "Prefix-cache hits",
        fmt_pct(sm["prefix_cache_hit_rate_tokens"]),
        help=f"Of prompt tokens; {fmt_pct(sm['prefix_cache_hit_rate_blocks'])} of prefix blocks, "
        f"{fmt_pct(sm['prefix_cache_hit_rate_requests'])} of requests found some. An unbounded cache would serve "
        f"{fmt_pct(sm['prefix_reuse_ceiling_frac'])} of prompt tokens.",
    )


def _verdict(st: Any, sm: dict[str, Any], s: Scenario) -> None:
    rejected = int(sm["rejected_context"] + sm["rejected_kv"])
    note = (
        f" {fmt_count(rejected)} of {fmt_count(sm['requests'])} requests were rejected (longer than the context "
        "window, or than the whole KV cache); they count as misses against the TTFT target."
        if rejected
        else ""
    )
    where = "This replica" if s.replicas == 1 else "This fleet"
    verdict = "meets" if sm["slo_met"] else "misses"
    text = f"{where} {verdict} {Slo.of(s).text()} at this load.{note}"
    (st.success if sm["slo_met"] else st.warning)(md_escape(text))


def _use_hit_rate(ctx: PageContext, r: SimResult) -> None:
    """'Use the simulated hit rate': the run's measured prefix-cache hits in the headline (``gpu_hit``)."""
    s, m = ctx.scenario, ctx.result.metrics if ctx.result is not None else {}
    h = simulated_gpu_hit(r, s.prompt, float(m.get("gpu_cached_tokens", 0.0)))
    if h is None:
        return
    label = f"Use the simulated hit rate ({fmt_pct(h)}) on your GPUs"
    helptext = (
        "Sets the GPUs' prefix-cache hit rate (gpu_hit) the headline's TTFT, tokens/s and GPU cost use to what this "
        "run's cache found (its share of prompt tokens × prompt / the prefix's cached blocks); the API bill keeps "
        "the hit rate of the sidebar."
    )
    if ctx.st.button(label, key=_W + "use_hit", help=helptext, icon=":material/input:"):
        ctx.update_scenario(gpu_hit=round(h, 4))


def _show_simulation(ctx: PageContext, f: FleetResult, s: Scenario, name: str) -> None:
    st = ctx.st
    r: SimResult = f.combined
    sm = r.summary
    st.subheader("One replica" if s.replicas == 1 else f"{s.replicas} replicas, {ROUTER_LABELS[f.router]} router")
    cache = CACHE_LABELS[s.prefix_cache]
    st.caption(md_escape(f"Simulated {name}, seed {s.seed}; prefix cache {cache}."))
    if sm["served_requests"] == 0:
        st.error(
            md_escape(
                f"No request was served: {fmt_count(sm['rejected_context'])} are longer than the model's context "
                f"window and {fmt_count(sm['rejected_kv'])} need more KV blocks than the replica's "
                f"{fmt_count(sm['kv_capacity_blocks'])}. Nothing to chart."
            )
        )
        return
    slo = Slo.of(s)
    _metrics(st, sm, slo)
    _verdict(st, sm, s)
    _use_hit_rate(ctx, r)
    cdf = cdf_frame(r)
    cols = st.columns(3)
    for col, (n, title) in zip(
        cols,
        (("ttft", "Time to first token"), ("tpot", "TPOT per request"), ("itl", "Inter-token latency")),
        strict=True,
    ):
        col.plotly_chart(
            latency_cdf_figure(cdf, n, title, slo.target(n), slo.pct), key=f"sim-cdf-{n}", config=PLOTLY_CONFIG
        )
    st.plotly_chart(timeline_figure(timeline_frame(r)), key="sim-timeline", config=PLOTLY_CONFIG)
    if s.replicas > 1:
        frame = replica_frame(f)
        st.dataframe(
            table(display_frame(frame, REPLICA_DISPLAY, ("ttft_p99_s", "itl_p99_s")), REPLICA_KINDS),
            hide_index=True,
        )
        st.plotly_chart(replica_figure(frame), key="sim-replicas", config=PLOTLY_CONFIG)
        download_csv(st, "Per-replica CSV", frame, "sim-replicas")
    c1, c2, c3 = st.columns(3)
    with c1:
        download_csv(st, "Per-request CSV", requests_frame(r), "sim-requests")
    with c2:
        download_csv(st, "Summary CSV", summary_frame(r), "sim-summary")
    with c3:
        download_csv(st, "Latency CDF CSV", cdf, "sim-cdf")
