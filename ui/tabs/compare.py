"""The "Compare GPUs" tab: the scenario on every GPU profile, the cheapest one meeting
the SLOs highlighted and named in a sentence.

The table comes from ``planner.studies.compare.compare_gpus`` (cached by the app);
its CSV keeps every column in SI units, the table on screen shows the columns people
read with latencies in ms.
"""

from __future__ import annotations

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
    "fits": "fits at your tp",
    "min_tp_that_fits": "smallest tp that fits",
    "tp_used": "tp shown",
    "max_concurrent_sequences": "max concurrency (sequences)",
    "ttft_s": "idle TTFT (ms)",
    "tpot_s": "TPOT (ms)",
    "output_tokens_per_s_per_gpu": THROUGHPUT_HEADER,
    "cost_per_million_output_tokens_usd": "GPU $ / M output tokens (from it)",
    "price_per_gpu_hour_usd": "$ / GPU-hour",
    "meets_slo": "meets SLOs",
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
    "GPU $ / M output tokens (from it)": "usd",
    "$ / GPU-hour": "usd",
    "meets SLOs": "yes_no",
}
_MS_COLUMNS = ("ttft_s", "tpot_s")


def compare_display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns people read, ms for latencies, friendly headers (the CSV keeps every column, SI: the
    decode-only throughput and its cost beside the serving ones)."""
    return display_frame(frame, COMPARE_DISPLAY, _MS_COLUMNS)


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


def render(ctx: PageContext) -> None:
    st, s = ctx.st, ctx.scenario
    frame = ctx.data.compare_frame() if ctx.data is not None else compare_gpus(s, ctx.catalog)
    flags = (
        frame["cheapest_meeting_slo"].astype(bool).tolist() if "cheapest_meeting_slo" in frame else [False] * len(frame)
    )
    st.markdown(cheapest_sentence(frame, Slo.of(s)))
    st.dataframe(table(compare_display_frame(frame), COMPARE_KINDS, flags), hide_index=True)
    st.caption(
        "Click a column header to sort. "
        "Each profile runs this scenario at its own smallest tp that fits when yours does not. "
        "TTFT here is a prompt's on an idle replica (the SLO check's, one request: no queue, so no statistic; "
        "the Simulate tab holds the statistic); the headline's is beside the running batch. Throughput is output "
        "tokens/s per GPU with each request's prefill included, the cost beside it is computed from it (the CSV "
        "also has the decode-only throughput and its cost)."
    )
    download_csv(st, "Download table CSV", frame, "compare-gpus")
