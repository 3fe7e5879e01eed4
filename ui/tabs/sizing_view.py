"""The Simulate & size tab's fleet-sizing view: the GPU × layout (or searched) table, its chart, the
disaggregated estimate, and "simulate this row"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from planner.format import fmt_count, fmt_num
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.search.answer import SCREENED
from planner.search.confidence import band_text
from planner.search.fleet_sample import FLEET_SAMPLE_REPLICAS
from planner.search.knob_search import basis_text
from planner.search.latency_text import latency_columns
from planner.search.layouts import on_layout
from planner.search.sizing import SIZING_MAX_REQUESTS, Sizing
from planner.sim.slo import Slo
from ui.figures.serving import sizing_figure
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import display_frame, download_csv, md_escape, md_text, table
from ui.state import PageContext

#: A configuration's columns (header per column), shared by the sizing table and the search's tables.
CONFIG_DISPLAY = {
    "name": "GPU",
    "mode": "mode",
    "layout": "layout",
    "nodes": "nodes",
    "tp": "tp",
    "batch": "batch",
    "chunk": "chunk",
    "kvdtype": "KV",
    "wdtype": "weights",
    "spec": "speculative",
    "replicas": "replicas",
    "gpus": "GPUs",
    "cost_per_hour_usd": "GPU $ / hour",
    "cost_per_million_output_tokens_usd": "GPU $ / M output tokens",
}
COMM_HEADER = "comm share of a decode step"
#: How those columns are formatted (``ui.format.table``).
CONFIG_KINDS = {
    "tp": "count",
    "nodes": "count",
    "batch": "count",
    "chunk": "count",
    "replicas": "count",
    "GPUs": "count",
    "GPU $ / hour": "usd",
    "GPU $ / M output tokens": "usd",
    COMM_HEADER: "pct",
}
POWER_HEADERS = {"power_per_gpu_w": "W per GPU", "fleet_power_kw": "fleet IT kW"}
SIZING_DISPLAY = CONFIG_DISPLAY | {
    "goodput_frac": "goodput",
    **POWER_HEADERS,  # the screened board power at the configured batch and the fleet's IT power (search.power_limit)
    "binding": "binding",
    "decode_comm_frac": COMM_HEADER,
    "basis": "basis",
    "confirmed_on": "simulated fleet",  # one replica at its share, or a bounded sample (search.fleet_sample)
    "time_basis": "step times",  # measured kernels or the fitted roofline, per GPU (grid_bases.Base.time_basis)
    "status": "status",
}
SIZING_KINDS = CONFIG_KINDS | {"goodput": "pct"} | dict.fromkeys(POWER_HEADERS.values(), "num")


def latency_display(slo: Slo) -> tuple[dict[str, str], dict[str, str]]:
    """The latency columns a table shows for ``slo`` (one per target: ``latency_text.latency_columns``), each
    headed by its statistic — 'p99 TTFT (ms)', 'mean TPOT (ms)' — and their cell formats."""
    display = {f"{n}_q_s": f"{slo.label(n)} (ms)" for n in latency_columns(slo)}
    return display, {h: "ms" for h in display.values()}


DISAGGREGATED_DISPLAY = {
    "name": "GPU",
    "prefill_layout": "prefill layout",
    "prefill_gpus": "prefill GPUs",
    "decode_layout": "decode layout",
    "decode_gpus": "decode GPUs",
    "kv_transfer_s": "KV transfer (ms)",
    "disaggregated_gpus": "disaggregated GPUs",
    "colocated_gpus": "colocated GPUs",
    "disaggregated_cost_per_hour_usd": "disaggregated GPU $ / hour",
    "colocated_cost_per_hour_usd": "colocated GPU $ / hour",
    "status": "status",
}
DISAGGREGATED_KINDS = {
    h: ("usd" if "$" in h else "ms" if "(ms)" in h else "count")
    for k, h in DISAGGREGATED_DISPLAY.items()
    if k not in ("name", "status", "prefill_layout", "decode_layout")
}


def sizing_display_frame(table: pd.DataFrame, slo: Slo) -> pd.DataFrame:
    lat, _ = latency_display(slo)
    shown = dict(SIZING_DISPLAY)
    at = list(shown).index("goodput_frac")
    items = list(shown.items())
    return display_frame(table, dict(items[:at] + list(lat.items()) + items[at:]), tuple(lat))


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _verdict_box(st: Any, reason: str, best: int | None, basis: str) -> None:
    """The answer in words: green when confirmed by simulation, blue while it is the screening model's."""
    box = st.warning if best is None else st.info if basis == SCREENED else st.success
    box(md_escape(reason))


def show_partial_sizing(st: Any, z: Sizing) -> None:
    """A sizing still confirming (``ui.jobs`` partials): its answer so far and the table, each row's basis —
    no widgets, so the finished view drawn below on a later rerun has the keys to itself."""
    st.subheader("Fleet sizing (confirming by simulation…)")
    search = z.search
    _verdict_box(st, z.reason, z.best, search.best_basis if search is not None else "")
    flags = z.table["best"].astype(bool).tolist()
    kinds = SIZING_KINDS | latency_display(z.slo)[1]
    st.dataframe(table(sizing_display_frame(z.table, z.slo), kinds, flags), hide_index=True)
    if search is not None:
        st.caption(md_text(_sentence(basis_text(search))))


def show_sizing(st: Any, z: Sizing) -> None:
    st.subheader("Fleet sizing")
    _verdict_box(st, z.reason, z.best, z.search.best_basis if z.search is not None else "")
    flags = z.table["best"].astype(bool).tolist()
    kinds = SIZING_KINDS | latency_display(z.slo)[1]
    st.dataframe(table(sizing_display_frame(z.table, z.slo), kinds, flags), hide_index=True)
    if z.search is not None:
        n = z.requests_per_simulation
        slo = z.search.slo
        band = (
            band_text(n // 2, slo.q)
            if not slo.is_mean
            else f"for the mean, the median's count: {band_text(n // 2, 50.0)}"
        )
        st.caption(
            md_text(
                f"Searched GPU × layout (tp, pp, ep, dp) × {z.search.points['batch'].nunique()} batch caps × "
                f"{z.search.points['chunk'].nunique()} chunks (link key search: {md_escape(searched_knobs(z))}); the "
                f"cheapest {len(z.table)} of {fmt_count(len(z.search.points))} configurations were simulated, each "
                f"on one replica at its share of the traffic ({fmt_count(n)} requests a run; {band} — "
                "half the requests, for one queue's correlated path). "
                + _sentence(basis_text(z.search))
                + " The Search & frontier tab shows every point."
            )
        )
    st.caption(
        md_escape(
            f"Fewest replicas per GPU profile and layout meeting {z.slo.text()} at "
            f"{fmt_num(z.rate_per_s)} requests/s: "
            "behind a round-robin or random router one replica is simulated at its share of the traffic (the "
            "fleet's size does not change the cost), with a load-aware router a bounded sample of the fleet (at most "
            f"{FLEET_SAMPLE_REPLICAS} replicas co-simulated on their share: the 'simulated fleet' column); "
            + requests_text(z.requests_per_simulation, z.search is not None)
            + ", and the count below the answer was simulated to miss (resolved to 4 % of the count for large fleets)."
        )
    )
    st.plotly_chart(sizing_figure(z.table), key="sim-sizing", config=PLOTLY_CONFIG)
    st.markdown("**Disaggregated prefill and decode pools** (estimate; each pool its own layout, KV transfer in TTFT)")
    shown = display_frame(z.disaggregated, DISAGGREGATED_DISPLAY, ("kv_transfer_s",))
    st.dataframe(table(shown, DISAGGREGATED_KINDS), hide_index=True)
    st.caption(
        "Prefill GPUs from prompt throughput at the TTFT target (M/M/1, at the SLO's statistic); decode GPUs from "
        "concurrent streams (rate × output × TPOT) over streams per GPU within the TPOT / ITL target and KV memory; "
        "each prompt's KV "
        "moves from the prefill to the decode pool over the network (kv_transfer_s, seconds) before its first token."
    )
    c1, c2 = st.columns(2)
    with c1:
        download_csv(st, "Sizing table CSV", z.table, "sizing")
    with c2:
        download_csv(st, "Disaggregated CSV", z.disaggregated, "sizing-disaggregated")


def requests_text(requests: int, searched: bool) -> str:
    """How many requests each sizing run simulates, the cap named only where it is what bound the count (it
    used to read "simulates 2,000 requests per replica (at most 1,000)", a search's count beside the plain
    sizing's cap)."""
    text = f"each run simulates {fmt_count(requests, 'request')} per replica"
    if not searched and requests >= SIZING_MAX_REQUESTS:
        text += f" (the sizing's cap: {fmt_count(SIZING_MAX_REQUESTS)} a run)"
    return text


def searched_knobs(z: Sizing) -> str:
    """The knobs a searched sizing tuned, in words."""
    points = z.search.points if z.search is not None else None
    if points is None:
        return "none"
    moved = [k for k in ("batch", "chunk", "kvdtype", "wdtype", "spec", "mode") if points[k].nunique() > 1]
    return ", ".join(moved) or "none"


def row_changes(s: Scenario, z: Sizing, row: pd.Series) -> dict[str, Any]:
    """The scenario changes that make a sizing row the scenario: its configuration and replicas."""
    if z.search is not None:
        return z.search.changes(int(row["point"]))
    lay = Layout(tp=int(row["tp"]), pp=int(row["pp"]), ep=int(row["ep"]), dp=int(row["dp"]))
    moved = on_layout(s, str(row["gpu"]), lay)
    return {k: v for k, v in moved.model_dump().items() if getattr(s, k) != v} | {"replicas": int(row["replicas"])}


def simulate_row(ctx: PageContext, z: Sizing, key_prefix: str, request_simulation: Callable[[], None]) -> None:
    """Pick a sizing row and simulate that fleet (its configuration and replica count) on the traffic:
    ``request_simulation`` marks the simulation the tab runs on the rerun the scenario change starts."""
    st = ctx.st
    ok = z.table[z.table["status"] == "meets SLOs"]
    if not len(ok):
        return
    labels = {
        i: f"{r['name']} · "
        + (str(r["layout"]) if "layout" in r else f"tp {int(r['tp'])}")
        + (f" · batch {int(r['batch'])} · chunk {int(r['chunk'])}" if "batch" in r and pd.notna(r["batch"]) else "")
        + f" · {int(r['replicas'])} replicas"
        for i, r in ok.iterrows()
    }
    c1, c2 = st.columns([3, 1])
    pick = c1.selectbox("A sizing row", list(labels), format_func=labels.get, key=key_prefix + "sizing_row")
    if (
        c2.button("Simulate this row", icon=":material/play_arrow:", key=key_prefix + "simulate_row")
        and pick is not None
    ):
        changes = row_changes(ctx.scenario, z, ok.loc[pick])
        request_simulation()
        ctx.update_scenario(**changes)
