"""Plotly figures of the prompt-layout checker and the usage-log audit (no streamlit).

``layout_figure``: each layout as one horizontal bar of its blocks in render
order, coloured by how widely each block is shared, with a diamond at every
breakpoint (green: it pays, red: it does not).  ``audit_figure``: input tokens per
time bin (or per run of requests), stacked: cache reads, cache writes, uncached.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from planner.format import fmt_count, fmt_pct
from planner.prompts.layout_report import LayoutReport
from planner.prompts.usage_audit import AuditReport
from planner.units import S_PER_DAY, S_PER_HOUR, S_PER_MINUTE
from ui.figures.theme import COLORS, figure

_MARGIN = dict(l=10, r=10, t=30, b=40)
_LEGEND = dict(orientation="h", y=1.15)


def layout_figure(layouts: Sequence[tuple[str, LayoutReport]]) -> go.Figure:
    """One bar per (label, report); x in tokens."""
    traces: list[dict] = []
    shown: set[str] = set()
    for label, rep in layouts:
        for row in rep.blocks_frame.itertuples(index=False):
            traces.append(
                dict(
                    type="bar",
                    orientation="h",
                    y=[label],
                    x=[row.tokens],
                    marker=dict(color=COLORS[row.variability], line=dict(color="white", width=1)),
                    name=row.variability.replace("_", " "),
                    legendgroup=row.variability,
                    showlegend=row.variability not in shown,
                    hovertemplate=f"block {row.block}: {row.kind}, {fmt_count(row.tokens)} tokens, "
                    f"{row.variability.replace('_', ' ')}<extra></extra>",
                )
            )
            shown.add(row.variability)
        bp = rep.breakpoints_frame
        if len(bp):
            traces.append(
                dict(
                    type="scatter",
                    mode="markers",
                    y=[label] * len(bp),
                    x=bp["prefix_tokens"].tolist(),
                    marker=dict(
                        symbol="diamond",
                        size=14,
                        line=dict(color="white", width=1),
                        color=[COLORS["pays"] if p else COLORS["loses"] for p in bp["pays"]],
                    ),
                    name="breakpoint",
                    legendgroup="breakpoint",
                    showlegend="breakpoint" not in shown,
                    customdata=[[b, fmt_pct(h)] for b, h in zip(bp["block"], bp["cache_hit_rate"], strict=True)],
                    hovertemplate="breakpoint after block %{customdata[0]}: prefix %{x:,} tokens, "
                    "hit rate %{customdata[1]}<extra></extra>",
                )
            )
            shown.add("breakpoint")
    return figure(
        traces,
        barmode="stack",
        height=140 + 60 * len(layouts),
        margin=_MARGIN,
        xaxis=dict(title="tokens (rendered order: tools → system → messages)"),
        yaxis=dict(autorange="reversed"),
        legend=_LEGEND,
    )


def audit_figure(report: AuditReport) -> go.Figure:
    """Input tokens per bin, stacked: cache reads, cache writes, uncached input."""
    s = report.series
    x = (s["bin_start"] if report.series_axis == "time" else s["first_request"]).tolist()
    series = (
        ("cache_read_input_tokens", "cache reads", COLORS["pays"]),
        ("cache_creation_input_tokens", "cache writes", COLORS["loses"]),
        ("input_tokens", "uncached input", COLORS["uncached"]),
    )
    traces = [
        dict(
            type="bar",
            x=x,
            y=s[col].tolist(),
            name=name,
            marker=dict(color=color),
            hovertemplate=f"{name}: %{{y:,}} tokens<extra></extra>",
        )
        for col, name, color in series
    ]
    if report.series_axis == "time":
        width = report.bin_width_s or S_PER_MINUTE
        unit = (
            f"{width / S_PER_MINUTE:g}-minute"
            if width < S_PER_HOUR
            else f"{width / S_PER_HOUR:g}-hour"
            if width < S_PER_DAY
            else f"{width / S_PER_DAY:g}-day"
        )
        xtitle = f"time (UTC), {unit} bins"
        xaxis = dict(title=xtitle)
    else:
        xaxis = dict(title="request (file order; the log has no timestamps)")
    return figure(
        traces,
        barmode="stack",
        bargap=0.1,
        height=320,
        margin=_MARGIN,
        xaxis=xaxis,
        yaxis=dict(title="input tokens per bin", rangemode="tozero"),
        legend=_LEGEND,
    )
