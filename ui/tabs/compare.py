"""The "Compare GPUs" tab: the scenario on every GPU profile, the cheapest one meeting
the SLOs highlighted and named in a sentence.

The table comes from ``planner.studies.compare.compare_gpus`` (cached by the app);
its CSV keeps every column in SI units, the table on screen shows the columns people
read with latencies in ms.
"""

from __future__ import annotations

import pandas as pd

from planner.format import fmt_seconds, fmt_usd
from planner.studies.compare import compare_gpus
from ui.format import display_frame, download_csv, highlighted, md_text
from ui.state import PageContext

COMPARE_DISPLAY = {
    "name": "GPU",
    "fits": "fits at your tp",
    "min_tp_that_fits": "smallest tp that fits",
    "tp_used": "tp shown",
    "max_concurrent_sequences": "max concurrency",
    "ttft_s": "TTFT (ms)",
    "tpot_s": "TPOT (ms)",
    "decode_tokens_per_s_per_gpu": "tok/s per GPU",
    "cost_per_million_output_tokens_usd": "$ / M output tokens",
    "price_per_gpu_hour_usd": "$ / GPU-hour",
    "meets_slo": "meets SLOs",
    "note": "note",
}
_MS_COLUMNS = ("ttft_s", "tpot_s")


def compare_display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns people read, ms for latencies, friendly headers (the CSV keeps every column, SI)."""
    return display_frame(frame, COMPARE_DISPLAY, _MS_COLUMNS)


def cheapest_sentence(frame: pd.DataFrame, slo_ttft_s: float, slo_tpot_s: float) -> str:
    """Which row is highlighted and why, in words."""
    targets = f"TTFT ≤ {fmt_seconds(slo_ttft_s)} and TPOT ≤ {fmt_seconds(slo_tpot_s)}"
    best = frame[frame["cheapest_meeting_slo"].astype(bool)] if "cheapest_meeting_slo" in frame else frame.iloc[:0]
    if best.empty:
        return f"No GPU profile meets {targets} with this scenario; relax the targets or change the workload."
    row = best.iloc[0]
    note = f" Note: {row['note']}." if row.get("note") else ""
    return (
        f"Highlighted: **{row['name']}** (at tp={row['tp_used']}) is the cheapest profile meeting {targets}: "
        f"{fmt_usd(row['cost_per_million_output_tokens_usd'])} per million output tokens "
        f"(TTFT {fmt_seconds(row['ttft_s'])}, TPOT {fmt_seconds(row['tpot_s'])}).{note}"
    )


def render(ctx: PageContext) -> None:
    st, s = ctx.st, ctx.scenario
    frame = ctx.data.compare_frame() if ctx.data is not None else compare_gpus(s, ctx.catalog)
    flags = (
        frame["cheapest_meeting_slo"].astype(bool).tolist() if "cheapest_meeting_slo" in frame else [False] * len(frame)
    )
    st.markdown(md_text(cheapest_sentence(frame, s.slo_ttft_s, s.slo_tpot_s)))
    st.dataframe(
        highlighted(compare_display_frame(frame), flags),
        hide_index=True,
        column_config={
            "TTFT (ms)": st.column_config.NumberColumn(format="%.1f"),
            "TPOT (ms)": st.column_config.NumberColumn(format="%.2f"),
            "tok/s per GPU": st.column_config.NumberColumn(format="%.0f"),
            "$ / M output tokens": st.column_config.NumberColumn(format="$%.3f"),
            "$ / GPU-hour": st.column_config.NumberColumn(format="$%.2f"),
        },
    )
    st.caption(
        "Click a column header to sort. "
        "Each profile runs this scenario at its own smallest tp that fits when yours does not."
    )
    download_csv(st, "Download table CSV", frame, "compare-gpus")
