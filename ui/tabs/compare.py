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
from ui.format import display_frame, download_csv, md_escape, table
from ui.state import PageContext

COMPARE_DISPLAY = {
    "name": "GPU",
    "fits": "fits at your tp",
    "min_tp_that_fits": "smallest tp that fits",
    "tp_used": "tp shown",
    "max_concurrent_sequences": "max concurrency (sequences)",
    "ttft_s": "idle TTFT (ms)",
    "tpot_s": "TPOT (ms)",
    "decode_tokens_per_s_per_gpu": "decode tok/s per GPU",
    "cost_per_million_output_tokens_usd": "GPU $ / M output tokens",
    "price_per_gpu_hour_usd": "$ / GPU-hour",
    "meets_slo": "meets SLOs",
    "note": "note",
}
#: How each shown column reads (``ui.format.CELL_FORMATS``).
COMPARE_KINDS = {
    "fits at your tp": "yes_no",
    "smallest tp that fits": "count",
    "tp shown": "count",
    "max concurrency (sequences)": "num",
    "idle TTFT (ms)": "ms",
    "TPOT (ms)": "ms",
    "decode tok/s per GPU": "count",
    "GPU $ / M output tokens": "usd",
    "$ / GPU-hour": "usd",
    "meets SLOs": "yes_no",
}
_MS_COLUMNS = ("ttft_s", "tpot_s")


def compare_display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns people read, ms for latencies, friendly headers (the CSV keeps every column, SI)."""
    return display_frame(frame, COMPARE_DISPLAY, _MS_COLUMNS)


def cheapest_sentence(frame: pd.DataFrame, slo_ttft_s: float, slo_tpot_s: float) -> str:
    """Which row is highlighted and why, in words (Markdown: the profile's name, data, is escaped)."""
    targets = f"idle TTFT ≤ {fmt_seconds(slo_ttft_s)} and TPOT ≤ {fmt_seconds(slo_tpot_s)}"
    best = frame[frame["cheapest_meeting_slo"].astype(bool)] if "cheapest_meeting_slo" in frame else frame.iloc[:0]
    if best.empty:
        return md_escape(
            f"No GPU profile meets {targets} with this scenario; relax the targets or change the workload."
        )
    row = best.iloc[0]
    note = f" Note: {row['note']}." if row.get("note") else ""
    return f"Highlighted: **{md_escape(row['name'])}** " + md_escape(
        f"(at tp={row['tp_used']}) is the cheapest profile meeting {targets}: "
        f"{fmt_usd(row['cost_per_million_output_tokens_usd'])} GPU cost per million output tokens "
        f"(idle TTFT {fmt_seconds(row['ttft_s'])}, TPOT {fmt_seconds(row['tpot_s'])}).{note}"
    )


def render(ctx: PageContext) -> None:
    st, s = ctx.st, ctx.scenario
    frame = ctx.data.compare_frame() if ctx.data is not None else compare_gpus(s, ctx.catalog)
    flags = (
        frame["cheapest_meeting_slo"].astype(bool).tolist() if "cheapest_meeting_slo" in frame else [False] * len(frame)
    )
    st.markdown(cheapest_sentence(frame, s.slo_ttft_s, s.slo_tpot_s))
    st.dataframe(table(compare_display_frame(frame), COMPARE_KINDS, flags), hide_index=True)
    st.caption(
        "Click a column header to sort. "
        "Each profile runs this scenario at its own smallest tp that fits when yours does not. "
        "TTFT here is a prompt's on an idle replica (the SLO check's); the headline's is beside the running batch."
    )
    download_csv(st, "Download table CSV", frame, "compare-gpus")
