"""The "Compare GPUs" tab: the scenario on every GPU profile, the cheapest one meeting
the SLOs highlighted and named in a sentence.

The table comes from ``planner.studies.compare.compare_gpus`` (cached by the app; with a tp chosen
per GPU, computed for it); its CSV keeps every column in SI units.  The table on screen shows the
columns people read (``COMPARE_DISPLAY``: they fit at 1280 px), latencies in ms, every number through
``planner.format``; the rest under "Every column".  A vendor filter and a tp per GPU (the tp column
says which: yours, the smallest that fits, or chosen).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from planner.engine.metrics import label
from planner.format import fmt_seconds, fmt_tokens_per_s, fmt_usd
from planner.sim.slo import Slo
from planner.studies.compare import compare_gpus
from ui.format import display_frame, download_csv, md_escape, table
from ui.state import PageContext

#: The one throughput the page shows per GPU, named by what it includes (the headline's, the findings').
THROUGHPUT_HEADER = label("output_tokens_per_s_per_gpu")

COMPARE_DISPLAY = {
    "name": "GPU",
    "tp_text": "tp",
    "max_concurrent_sequences": "max concurrency (sequences)",
    "ttft_s": "idle TTFT (ms)",
    "tpot_s": "TPOT (ms)",
    "output_tokens_per_s_per_gpu": THROUGHPUT_HEADER,
    "cost_per_million_output_tokens_usd": "GPU $ / M output tokens (from it)",
    "meets_slo": "meets SLOs",
}
#: The columns under "Every column" (and the CSV, which has all).
MORE_DISPLAY = {
    "name": "GPU",
    "vendor": "vendor",
    "fits": "fits at your tp",
    "min_tp_that_fits": "smallest tp that fits",
    "tp_used": "tp shown",
    "price_per_gpu_hour_usd": "$ / GPU-hour",
    "decode_tokens_per_s_per_gpu": label("decode_tokens_per_s_per_gpu"),
    "note": "note",
}
#: How each shown column reads (``ui.format.CELL_FORMATS``).
COMPARE_KINDS = {
    "fits at your tp": "yes_no",
    "smallest tp that fits": "count",
    "tp shown": "count",
    "max concurrency (sequences)": "sequences",
    "idle TTFT (ms)": "ms",
    "TPOT (ms)": "ms",
    THROUGHPUT_HEADER: "count",
    label("decode_tokens_per_s_per_gpu"): "count",
    "GPU $ / M output tokens (from it)": "usd",
    "$ / GPU-hour": "usd",
    "meets SLOs": "yes_no",
}
#: Short labels and widths (px) for the main table, so its eight columns fit the page at 1280 px; each
#: header's full words in its help.
NARROW = {
    "GPU": ("GPU", 200),
    "tp": ("tp", 150),
    "max concurrency (sequences)": ("max seqs", 70),
    "idle TTFT (ms)": ("idle TTFT ms", 85),
    "TPOT (ms)": ("TPOT ms", 65),
    THROUGHPUT_HEADER: ("tok/s per GPU", 95),
    "GPU $ / M output tokens (from it)": ("$ / M tokens", 80),
    "meets SLOs": ("meets SLOs", 75),
}


def column_config(st: Any) -> dict[str, Any]:
    """The main table's columns: short labels, fixed widths, the full header as help."""
    return {h: st.column_config.Column(label, help=h, width=w) for h, (label, w) in NARROW.items()}


#: The tps a GPU can be given here (powers of two, as engines shard heads).
TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
_TP_KEY = "_cmp_tp"  # {gpu key: tp} chosen on this tab
_VENDOR_KEY = "_cmp_vendor"
_MS_COLUMNS = ("ttft_s", "tpot_s")


def compare_display_frame(frame: pd.DataFrame, columns: dict[str, str] | None = None) -> pd.DataFrame:
    """The columns people read, ms for latencies, friendly headers (the CSV keeps every column, SI: the
    decode-only throughput and its cost beside the serving ones)."""
    return display_frame(frame, COMPARE_DISPLAY if columns is None else columns, _MS_COLUMNS)


def cheapest_sentence(frame: pd.DataFrame, slo: Slo) -> str:
    """Which row is highlighted and why, in words (Markdown: the profile's name, data, is escaped)."""
    targets = single_request_text(slo)
    best = frame[frame["cheapest_meeting_slo"].astype(bool)] if "cheapest_meeting_slo" in frame else frame.iloc[:0]
    if best.empty:
        return md_escape(
            f"No GPU profile meets {targets} with this scenario; relax the targets or change the workload."
        )
    row = best.iloc[0]
    note = f" Note: {row['note']}." if row.get("note") else ""
    return f"Highlighted: **{md_escape(row['name'])}** " + md_escape(
        f"(at tp={row['tp_used']}) is the cheapest profile meeting {targets}: "
        f"{fmt_usd(row['cost_per_million_output_tokens_usd'])} GPU cost per million output tokens at "
        f"{fmt_tokens_per_s(row['output_tokens_per_s_per_gpu'])} per GPU, prefill included "
        f"(idle TTFT {fmt_seconds(row['ttft_s'])}, TPOT {fmt_seconds(row['tpot_s'])}).{note}"
    )


def single_request_text(slo: Slo) -> str:
    """The one-request check in words: 'idle TTFT ≤ 2.00 s and TPOT ≤ 50.0 ms' (``slo.meets_single_request``)."""
    parts = []
    if slo.ttft_s is not None:
        parts.append(f"idle TTFT ≤ {fmt_seconds(slo.ttft_s)}")
    if slo.step_limit_s is not None:
        parts.append(f"TPOT ≤ {fmt_seconds(slo.step_limit_s)} (the {slo.step_limit_words} target)")
    if slo.e2e_s is not None:
        parts.append(f"request latency ≤ {fmt_seconds(slo.e2e_s)}")
    return " and ".join(parts) or "no latency target"


def _tp_choice(ctx: PageContext, frame: pd.DataFrame) -> dict[str, int]:
    """A tp for one GPU at a time (kept per session); the choices made so far, with a way to clear them."""
    st, ss = ctx.st, ctx.st.session_state
    chosen: dict[str, int] = dict(ss.get(_TP_KEY, {}))
    names = dict(zip(frame["gpu"], frame["name"], strict=True))
    with st.expander("tp per GPU" + (f" ({len(chosen)} chosen)" if chosen else ""), expanded=bool(chosen)):
        c1, c2, c3 = st.columns([3, 1, 1], vertical_alignment="bottom")
        gpu = c1.selectbox("GPU", list(names), format_func=names.get, key=_TP_KEY + "_gpu")
        row = frame.loc[frame["gpu"] == gpu].iloc[0]
        shown = int(row["tp_used"]) if pd.notna(row["tp_used"]) else ctx.scenario.tp
        tp = c2.selectbox("tp", TP_CHOICES, index=TP_CHOICES.index(shown) if shown in TP_CHOICES else 0,
                          key=_TP_KEY + "_tp_" + str(gpu))  # fmt: skip
        if c3.button("Set", key=_TP_KEY + "_set"):
            chosen[str(gpu)] = int(tp)
        if chosen and st.button("Clear the chosen tps", key=_TP_KEY + "_clear"):
            chosen = {}
        st.caption(
            "By default each GPU runs your tp where it fits, else the smallest tp that fits (the tp column "
            "says which); a GPU that holds no whole sequence at any tp up to 64 is marked does not fit."
        )
    ss[_TP_KEY] = chosen
    return chosen


def render(ctx: PageContext) -> None:
    st, s = ctx.st, ctx.scenario
    base = ctx.data.compare_frame() if ctx.data is not None else compare_gpus(s, ctx.catalog)
    chosen = _tp_choice(ctx, base)
    frame = compare_gpus(s, ctx.catalog, chosen) if chosen else base
    vendors = list(dict.fromkeys(frame["vendor"]))
    picked = st.multiselect("Vendors", vendors, default=vendors, key=_VENDOR_KEY)
    frame = frame[frame["vendor"].isin(picked)].reset_index(drop=True)
    flags = (
        frame["cheapest_meeting_slo"].astype(bool).tolist() if "cheapest_meeting_slo" in frame else [False] * len(frame)
    )
    st.markdown(cheapest_sentence(frame, Slo.of(s)))
    st.dataframe(
        table(compare_display_frame(frame), COMPARE_KINDS, flags), hide_index=True, column_config=column_config(st)
    )
    with st.expander("Every column"):
        st.dataframe(table(compare_display_frame(frame, MORE_DISPLAY), COMPARE_KINDS, flags), hide_index=True)
    st.caption(
        "Click a column header to sort. "
        "Each profile runs this scenario at your tp where it fits, else at its smallest tp that fits, or at the "
        "tp chosen above; the tp column says which. "
        "TTFT here is a prompt's on an idle replica (the SLO check's, one request: no queue, so no statistic; "
        "the Simulate tab holds the statistic); the headline's is beside the running batch. Throughput is output "
        "tokens/s per GPU with each request's prefill included, the cost beside it is computed from it (the CSV "
        "also has the decode-only throughput and its cost)."
    )
    download_csv(st, "Download table CSV", frame, "compare-gpus")
