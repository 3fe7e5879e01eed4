"""The core tabs: the five chart tabs, Compare GPUs and Explain.

Data comes in already computed (app.py caches it by the scenario's JSON); these
functions only draw it with the injected streamlit module.  Every CSV goes
through ``planner.export`` (formula-looking cells neutralised).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from planner.export import frame_to_csv, present_frame
from planner.studies.explain import ExplainItem
from ui.figures.core import Chart
from ui.headline import fmt_seconds, fmt_usd, md_escape, md_text

PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def frame_csv(frame: pd.DataFrame) -> str:
    """A chart's or table's CSV: presented (no NaN/inf, booleans as words, missing cells
    empty) and neutralised."""
    return frame_to_csv(present_frame(frame.astype(object).where(frame.notna(), None)))


def download_csv(st: Any, label: str, frame: pd.DataFrame, name: str) -> None:
    """A download button whose CSV is built only when clicked."""
    st.download_button(
        label,
        data=lambda: frame_csv(frame),
        file_name=f"kvplan-{name}.csv",
        mime="text/csv",
        key=f"csv-{name}",
        on_click="ignore",
        icon=":material/download:",
    )


def chart_tab(st: Any, charts: Sequence[Chart]) -> None:
    for chart in charts:
        st.markdown(f"##### {md_text(chart.title)}")
        st.plotly_chart(chart.figure, key=f"chart-{chart.key}", config=PLOTLY_CONFIG)
        left, right = st.columns([5, 1], vertical_alignment="center")
        if chart.caption:
            left.caption(md_text(chart.caption))
        with right:
            download_csv(st, "CSV", chart.frame, chart.key)


# --- Compare GPUs ----------------------------------------------------------------------------

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
    "price_usd_per_gpu_hour": "$ / GPU-hour",
    "meets_slo": "meets SLOs",
    "note": "note",
}
_MS_COLUMNS = ("ttft_s", "tpot_s")


def compare_display_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns people read, ms for latencies, friendly headers (the CSV keeps every column, SI)."""
    cols = [c for c in COMPARE_DISPLAY if c in frame.columns]
    shown = frame[cols].copy()
    for c in _MS_COLUMNS:
        if c in shown:
            shown[c] = shown[c] * 1e3
    return shown.rename(columns=COMPARE_DISPLAY)


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


HIGHLIGHT_STYLE = "background-color: rgba(84, 162, 75, 0.25); font-weight: 600"


def highlighted(frame: pd.DataFrame, flags: list[bool]):
    """A Styler that marks the rows whose flag is set (positions, not index labels)."""
    frame = frame.reset_index(drop=True)
    return frame.style.apply(lambda row: [HIGHLIGHT_STYLE if flags[row.name] else ""] * len(row), axis=1)


def compare_tab(st: Any, frame: pd.DataFrame, slo_ttft_s: float, slo_tpot_s: float) -> None:
    shown = compare_display_frame(frame)
    flags = (
        frame["cheapest_meeting_slo"].astype(bool).tolist() if "cheapest_meeting_slo" in frame else [False] * len(frame)
    )

    st.markdown(md_text(cheapest_sentence(frame, slo_ttft_s, slo_tpot_s)))
    st.dataframe(
        highlighted(shown, flags),
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
        "Click a column header to sort. Each profile runs this scenario at its own smallest tp that fits when yours does not."
    )
    download_csv(st, "Download table CSV", frame, "compare-gpus")


# --- Explain ---------------------------------------------------------------------------------


def explain_tab(st: Any, items: Sequence[ExplainItem]) -> None:
    st.caption(
        "Each figure's formula, then the same formula with this scenario's numbers, then the engine's value; retype the middle line into a calculator to check it."
    )
    for item in items:
        st.markdown(f"**{md_escape(item.title)}**")
        st.code(f"{item.formula}\n= {item.substituted}\n= {item.value}", language=None, wrap_lines=True)
