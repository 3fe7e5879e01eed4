"""Simulate & size tab: one replica's simulated latencies, and the fleet that meets the SLOs.

Workload and SLO inputs are Scenario fields (link keys).  They sit in a form with
their own widget keys; pressing a button applies changed values with
``ctx.update_scenario`` (the link follows) and the action runs on that rerun.
Results are cached with ``st.cache_data`` keyed by the scenario's JSON and the
trace's SHA-256: the run itself happens outside the cached function so that its
progress bar is an ordinary element (a cached function's elements are replayed).
"""

from __future__ import annotations

import hashlib
import time
from typing import Any

import pandas as pd

from planner.errors import TraceError
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_pct, fmt_seconds
from planner.links import FIELDS
from planner.model.scenario import Scenario
from planner.serving.results import SimResult, cdf_frame, requests_frame, summary_frame, timeline_frame
from planner.serving.simulate import simulate_scenario
from planner.serving.sizing import SIZING_MAX_REQUESTS, Sizing, size_fleet
from planner.serving.traces import MAX_TRACE_BYTES, MAX_TRACE_ROWS, parse_trace
from planner.serving.workload import Workload
from ui.figures.serving import latency_cdf_figure, sizing_figure, timeline_figure
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import display_frame, download_csv, highlighted, md_escape, md_list, md_text
from ui.state import PageContext

FORM_FIELDS = ("rate", "dist", "spread", "sim_requests", "seed", "slo_ttft_s", "slo_tpot_s")
_W = "_sim_w_"  # widget key prefix (the sidebar owns the keys named like the fields)
_SYNCED = "_sim_form_for"
_PENDING = "_sim_pending_action"
_TRACE = _W + "trace"
SIMULATE, SIZE = "simulate", "size"
PROGRESS_AFTER_S = 1.0

SIZING_DISPLAY = {
    "name": "GPU",
    "tp": "tp",
    "replicas": "replicas",
    "gpus": "GPUs",
    "cost_per_hour_usd": "$ / hour",
    "cost_per_million_output_tokens_usd": "$ / M output tokens",
    "ttft_p99_s": "p99 TTFT (ms)",
    "itl_p99_s": "p99 ITL (ms)",
    "goodput_frac": "goodput",
    "status": "status",
}


def _remember(key: str, _value: Any = None) -> Any:
    """Cache slot: returns the value stored under ``key``; raises on a miss (exceptions are never cached)."""
    if _value is None:
        raise LookupError(key)
    return _value


def _store(st: Any):
    return st.cache_data(max_entries=16, show_spinner=False)(_remember)


def _lookup(st: Any, key: str) -> Any:
    try:
        return _store(st)(key)
    except LookupError:
        return None


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


def _form(st: Any, s: Scenario) -> tuple[str | None, dict[str, Any]]:
    """The inputs; returns (action pressed, values)."""
    st.file_uploader(
        "Trace CSV (optional: replaces the generated requests)",
        type=["csv"],
        key=_TRACE,
        help="Columns arrival_s, prompt_tokens, output_tokens and optional prefix_id (rows sharing an id share the "
        f"prefix); ≤ {fmt_bytes(MAX_TRACE_BYTES)}, ≤ {fmt_count(MAX_TRACE_ROWS)} rows.",
    )
    with st.form("sim_form", border=True):
        c1, c2, c3 = st.columns(3)
        c1.number_input(
            "Arrival rate (requests/s)",
            min_value=min(0.001, s.rate),
            max_value=_upper("rate"),
            step=0.5,
            format="%g",
            key=_W + "rate",
            help="Poisson arrivals to the whole fleet; one replica when simulating; requests per second.",
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
            max_value=100_000,
            step=500,
            key=_W + "sim_requests",
            help="Requests in one simulation; count.",
        )
        c2.number_input(
            "Seed",
            min_value=0,
            max_value=2**31 - 1,
            step=1,
            key=_W + "seed",
            help="Same seed, same requests and same result.",
        )
        c1.number_input(
            "p99 TTFT target (s)",
            min_value=min(0.001, s.slo_ttft_s),
            max_value=_upper("slo_ttft_s"),
            step=0.1,
            format="%g",
            key=_W + "slo_ttft_s",
            help="Time-to-first-token SLO, 99th percentile; seconds.",
        )
        c2.number_input(
            "p99 inter-token target (s)",
            min_value=min(0.0001, s.slo_tpot_s),
            max_value=_upper("slo_tpot_s"),
            step=0.005,
            format="%g",
            key=_W + "slo_tpot_s",
            help="Inter-token latency SLO, 99th percentile over tokens; seconds.",
        )
        b1, b2, _ = st.columns([1, 1, 2])
        simulate = b1.form_submit_button("Simulate one replica", type="primary", icon=":material/play_arrow:")
        size = b2.form_submit_button("Size the fleet", icon=":material/calculate:")
    values = {f: st.session_state[_W + f] for f in FORM_FIELDS}
    return (SIMULATE if simulate else SIZE if size else None), values


def _trace_bytes(st: Any) -> tuple[bytes | None, str, str | None]:
    """(bytes, sha256 hex, problem) of the uploaded trace; ('', None) when there is none."""
    up = st.session_state.get(_TRACE)
    if up is None:
        return None, "", None
    if up.size > MAX_TRACE_BYTES:
        return None, "", f"the trace is {fmt_count(up.size)} bytes; the limit is {fmt_count(MAX_TRACE_BYTES)}"
    data = up.getvalue()
    return data, hashlib.sha256(data).hexdigest(), None


def _progress(st: Any, text: str):
    """A callback that shows a progress bar once a run has taken a second, and its slot."""
    slot = st.empty()
    start = time.perf_counter()

    def report(frac: float) -> None:
        if time.perf_counter() - start > PROGRESS_AFTER_S:
            slot.progress(min(max(frac, 0.0), 1.0), text=text)

    return report, slot


def _run(ctx: PageContext, action: str, key: str, trace: Workload | None) -> None:
    st = ctx.st
    if action == SIMULATE:
        report, slot = _progress(st, "Simulating one replica…")
        value: Any = simulate_scenario(ctx.scenario, ctx.catalog, workload=trace, progress=report)
    else:
        report, slot = _progress(st, "Sizing: every GPU profile × tp 1, 2, 4, 8…")
        value = size_fleet(ctx.scenario, ctx.catalog, trace=trace, progress=report)
    slot.empty()
    _store(st)(key, value)


def render(ctx: PageContext) -> None:
    st = ctx.st
    s = ctx.scenario
    if ctx.result is None:
        st.info("Nothing to simulate until the scenario can be evaluated (see the error above).")
        return
    st.caption(
        md_text(
            f"Requests arrive at the rate below; prompt and output lengths average {fmt_count(s.prompt)} and "
            f"{fmt_count(s.output)} tokens (sidebar), {fmt_pct(s.hit)} of prompts find {fmt_count(s.prefix)} tokens "
            f"in the prefix cache. One replica is {s.tp} × {ctx.result.resolved.gpu.name}, continuous batching up to "
            f"{fmt_count(s.batch)} sequences, {fmt_count(s.chunk)}-token steps."
        )
    )
    ss = st.session_state
    _sync_form(ss, s)
    action, values = _form(st, s)
    data, digest, problem = _trace_bytes(st)
    if problem:
        st.error(md_escape(problem))
    if action:
        changes = {k: v for k, v in values.items() if v != getattr(s, k)}
        if changes:
            ss[_PENDING] = action
            ctx.update_scenario(**changes)  # reruns; the action runs with the new scenario
            return
    pending = ss.pop(_PENDING, None)
    action = action or pending
    keys = {a: f"{a}|{s.model_dump_json()}|{digest}" for a in (SIMULATE, SIZE)}
    if action and not problem:
        trace = None
        if data is not None:
            try:
                trace = parse_trace(data, s.prefix).workload
            except TraceError as exc:
                st.error("The trace cannot be used:\n\n" + md_list(exc.problems))
                action = None
        if action:
            _run(ctx, action, keys[action], trace)
    sim: SimResult | None = _lookup(st, keys[SIMULATE])
    sizing: Sizing | None = _lookup(st, keys[SIZE])
    if sim is None and sizing is None:
        st.info(
            "Press **Simulate one replica** for latency distributions, "
            "or **Size the fleet** for the cheapest fleet meeting the targets."
        )
    if sim is not None:
        _show_simulation(st, sim, s, digest)
    if sizing is not None:
        _show_sizing(st, sizing)


def _show_simulation(st: Any, r: SimResult, s: Scenario, digest: str) -> None:
    sm = r.summary
    source = "the uploaded trace" if digest else f"{fmt_count(sm['requests'])} Poisson arrivals at {fmt_num(s.rate)}/s"
    st.subheader("One replica")
    st.caption(md_text(f"Simulated {source}, seed {s.seed}."))
    m = st.columns(5)
    m[0].metric(
        "p99 TTFT",
        fmt_seconds(sm["ttft_p99_s"]),
        help=f"p50 {fmt_seconds(sm['ttft_p50_s'])}, p90 {fmt_seconds(sm['ttft_p90_s'])}",
    )
    m[1].metric(
        "p99 inter-token",
        fmt_seconds(sm["itl_p99_s"]),
        help=f"p50 {fmt_seconds(sm['itl_p50_s'])}, p90 {fmt_seconds(sm['itl_p90_s'])}; over tokens",
    )
    m[2].metric(
        "Output tokens/s", fmt_num(sm["output_tokens_per_s"]), help=f"{fmt_num(sm['requests_per_s'])} requests/s"
    )
    m[3].metric(
        "Goodput",
        fmt_pct(sm["goodput_frac"]),
        help="Share of requests with TTFT and mean time per output token within the targets.",
    )
    m[4].metric(
        "Preemptions",
        fmt_count(sm["preemptions"]),
        help=f"KV cache used: mean {fmt_pct(sm['kv_used_mean_frac'])}, max {fmt_pct(sm['kv_used_max_frac'])}",
    )
    verdict = "meets" if sm["slo_met"] else "misses"
    rejected = int(sm["rejected_context"] + sm["rejected_kv"])
    note = (
        f" {fmt_count(rejected)} requests were rejected (longer than the context window or the KV cache)."
        if rejected
        else ""
    )
    (st.success if sm["slo_met"] else st.warning)(
        md_text(f"This replica {verdict} the p99 targets at this load.{note}")
    )
    cdf = cdf_frame(r)
    left, right = st.columns(2)
    left.plotly_chart(
        latency_cdf_figure(cdf, "ttft", "Time to first token", s.slo_ttft_s), key="sim-cdf-ttft", config=PLOTLY_CONFIG
    )
    right.plotly_chart(
        latency_cdf_figure(cdf, "itl", "Inter-token latency", s.slo_tpot_s), key="sim-cdf-itl", config=PLOTLY_CONFIG
    )
    st.plotly_chart(timeline_figure(timeline_frame(r)), key="sim-timeline", config=PLOTLY_CONFIG)
    c1, c2, c3 = st.columns(3)
    with c1:
        download_csv(st, "Per-request CSV", requests_frame(r), "sim-requests")
    with c2:
        download_csv(st, "Summary CSV", summary_frame(r), "sim-summary")
    with c3:
        download_csv(st, "Latency CDF CSV", cdf, "sim-cdf")


def sizing_display_frame(table: pd.DataFrame) -> pd.DataFrame:
    return display_frame(table, SIZING_DISPLAY, ("ttft_p99_s", "itl_p99_s"))


def _show_sizing(st: Any, z: Sizing) -> None:
    st.subheader("Fleet sizing")
    (st.success if z.best is not None else st.warning)(md_text(z.reason))
    flags = z.table["best"].astype(bool).tolist()

    st.dataframe(
        highlighted(sizing_display_frame(z.table), flags),
        hide_index=True,
        column_config={
            "$ / hour": st.column_config.NumberColumn(format="$%.2f"),
            "$ / M output tokens": st.column_config.NumberColumn(format="$%.3f"),
            "p99 TTFT (ms)": st.column_config.NumberColumn(format="%.0f"),
            "p99 ITL (ms)": st.column_config.NumberColumn(format="%.1f"),
            "goodput": st.column_config.NumberColumn(format="percent"),
        },
    )
    st.caption(
        md_text(
            f"Fewest replicas per GPU profile and tp meeting both p99 targets at {fmt_num(z.rate_per_s)} requests/s: "
            f"each replica gets rate ÷ replicas; each search run simulates {fmt_count(z.requests_per_simulation)} "
            f"requests (at most {fmt_count(SIZING_MAX_REQUESTS)}, fewer than a full simulation, to keep the table "
            "fast), and replicas − 1 was simulated to miss."
        )
    )
    st.plotly_chart(sizing_figure(z.table), key="sim-sizing", config=PLOTLY_CONFIG)
    st.markdown("**Disaggregated prefill and decode pools** (estimate, KV transfer not counted)")
    d = z.disaggregated
    cols = [
        c
        for c in (
            "name",
            "prefill_tp",
            "prefill_gpus",
            "decode_tp",
            "decode_gpus",
            "disaggregated_gpus",
            "colocated_gpus",
            "disaggregated_cost_per_hour_usd",
            "colocated_cost_per_hour_usd",
            "status",
        )
        if c in d
    ]
    st.dataframe(
        d[cols].rename(
            columns={
                "name": "GPU",
                "disaggregated_gpus": "disaggregated GPUs",
                "colocated_gpus": "colocated GPUs",
                "disaggregated_cost_per_hour_usd": "disaggregated $/h",
                "colocated_cost_per_hour_usd": "colocated $/h",
            }
        ),
        hide_index=True,
    )
    st.caption(
        "Prefill GPUs from prompt throughput at the TTFT target (M/M/1 p99); decode GPUs from concurrent streams "
        "(rate × output × TPOT) over streams per GPU within the inter-token target and KV memory."
    )
    c1, c2 = st.columns(2)
    with c1:
        download_csv(st, "Sizing table CSV", z.table, "sizing")
    with c2:
        download_csv(st, "Disaggregated CSV", z.disaggregated, "sizing-disaggregated")
