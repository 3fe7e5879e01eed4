"""The look every dashboard figure shares: palette, labels, base layout, the plotly
config, and the axis / marker-line / tick helpers.

Figures are built as plain dicts and validated once by ``go.Figure`` (several times
faster than adding traces one by one, which matters on every dashboard rerun);
``figure(data, **layout)`` is that one call with the base layout under ``layout``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.colors import qualitative

from planner.format import fmt_num
from ui.format import plot_text

#: The modebar of every chart: no plotly logo, no lasso/box selection (nothing selects).
PLOTLY_CONFIG: dict[str, Any] = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}

COLORS = {
    "weights": "#4C78A8",
    "reserve": "#9D755D",
    "kv_cache_in_use": "#F58518",
    "kv_cache_free": "#54A24B",
    "not_usable": "#BAB0AC",
    "kv_cache_over_budget": "#E45756",
    "activation": "#9D755D",
    "non_torch": "#B279A2",
    "cuda_graphs": "#72B7B2",
    "startup_baseline": "#79706E",
    "unallocated": "#BAB0AC",
    "over_capacity": "#C62828",
    "paged": "#4C78A8",
    "contiguous": "#F58518",
    "prefill": "#E45756",
    "decode": "#4C78A8",
    "none": "#7F7F7F",
    "5m": "#4C78A8",
    "1h": "#F58518",
    "lose": "#E45756",
    "win": "#54A24B",
    "mark": "#555555",
    # lines that must read on a light and on a dark page (streamlit's themes: white and #0E1117): a mid
    # grey, contrast ≥ 3:1 against both (tests/ui/test_figures.py), never black (lost in dark mode)
    "ink": "#8C8C8C",
    "peak": "#7F7F7F",
    "zero_line": "#999",
    # prompt layout: how widely a block is shared, and whether a breakpoint pays
    "stable": "#54A24B",
    "per_day": "#EECA3B",
    "per_user": "#F58518",
    "per_request": "#E45756",
    "pays": "#2E7D32",
    "loses": "#C62828",
    "uncached": "#9E9E9E",
}
#: One colour per series where a chart has several of the same kind (benchmark contexts).
SERIES_COLORS = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2")
#: One colour per GPU profile on a chart of many (up to 23 distinct): plotly's Dark24 without its near-black
#: (#222A2A, lost in dark mode and beside the frontier line); a symbol per GPU as well (``GPU_SYMBOLS``).
GPU_COLORS = tuple(c for c in qualitative.Dark24 if c != "#222A2A")
GPU_SYMBOLS = (
    "circle", "square", "diamond", "triangle-up", "cross", "x", "triangle-down", "pentagon", "hexagon", "star-square",
)  # fmt: skip
#: Speedup heatmap: reds below 1, greens above.
SPEEDUP_SCALE = {"red": "#B2182B", "pale_red": "#FDDBC7", "pale_green": "#D9F0D3", "green": "#1B7837"}

COMPONENT_LABELS = {
    "weights": "weights",
    "reserve": "activation & workspace reserve",
    "kv_cache_in_use": "KV cache, current batch",
    "kv_cache_free": "KV cache, free",
    "not_usable": "not usable (1 − memory utilisation)",
    "kv_cache_over_budget": "KV needed beyond the budget",
    "activation": "peak activation (start-up profile run)",
    "non_torch": "non-torch (NCCL, cuBLAS)",
    "cuda_graphs": "CUDA graphs",
    "startup_baseline": "CUDA context at start-up",
    "unallocated": "unallocated",
    "over_capacity": "needed beyond the device",
}
POLICY_LABELS = {"none": "no cache", "5m": "5-minute writes (1.25×)", "1h": "1-hour writes (2×)"}

BASE_LAYOUT: dict[str, Any] = dict(
    margin=dict(l=60, r=20, t=50, b=50),
    legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
    hovermode="closest",
)


def figure(data: list[dict], **layout: Any) -> go.Figure:
    """One validated figure: ``data`` traces over the base layout updated by ``layout``."""
    return go.Figure(dict(data=data, layout={**BASE_LAYOUT, **layout}))


#: A log axis spanning more decades than this is labelled at the decades only; a shorter one at 1, 2, 5.
DECADES_ONLY_ABOVE = 3.0
#: A line's label goes to its left when the line sits in the right part of the axis (so it is never cut).
LABEL_LEFT_FROM = 0.6
#: Mantissas of a log axis' labelled ticks, coarsest first: the first giving at least ``MIN_LOG_TICKS``
#: inside the values' span is used (decades only when the span is over ``DECADES_ONLY_ABOVE`` decades).
LOG_MANTISSAS = ((1.0,), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0, 7.0), tuple(float(m) for m in range(1, 10)))
MIN_LOG_TICKS = 3


def log_ticks(values: Sequence[float] | np.ndarray) -> dict:
    """Labelled ticks of a log axis over ``values``: every label a whole number as the page writes numbers
    (``fmt_num``: 1, 2, 5, 10, 20, 50, 100, 1k …), never a bare minor digit ("100 2 5 1000 2").  Decades
    when the span is over ``DECADES_ONLY_ABOVE`` decades; else the coarsest of ``LOG_MANTISSAS`` that puts
    ``MIN_LOG_TICKS`` labels inside the span."""
    v = np.asarray([x for x in np.asarray(values, dtype=float).ravel() if np.isfinite(x) and x > 0])
    if v.size == 0:
        return dict(dtick=1)
    lo, hi = float(v.min()), float(v.max())
    decades = np.arange(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 2)
    start = 0 if math.log10(hi / lo) > DECADES_ONLY_ABOVE else 1
    vals: list[float] = []
    for mantissas in LOG_MANTISSAS[start:]:
        grid = sorted(m * 10.0**d for d in decades for m in mantissas)
        inside = [g for g in grid if lo <= g * (1 + 1e-9) and g <= hi * (1 + 1e-9)]
        vals = inside
        if len(inside) >= MIN_LOG_TICKS:
            break
    if len(vals) < MIN_LOG_TICKS:  # a span too narrow for round log ticks: round linear steps across it
        step = nice_step((hi - lo) / MIN_LOG_TICKS) if hi > lo else nice_step(lo / 10.0)
        first, last = math.floor(lo / step), math.ceil(hi / step)
        vals = [round(k * step, 12) for k in range(first, last + 1) if k * step > 0]
    else:  # one tick each side of the span, so the axis' padding is labelled too
        below = [g for g in grid if g < lo * (1 - 1e-9)][-1:]
        above = [g for g in grid if g > hi * (1 + 1e-9)][:1]
        vals = below + vals + above
    vals = [float(x) for x in vals]
    return dict(tickvals=vals, ticktext=[tick_text(x) for x in vals])


def nice_step(raw: float) -> float:
    """The round step (1, 2 or 5 × 10^k) nearest above ``raw`` (> 0): linear ticks at round numbers."""
    k = math.floor(math.log10(raw))
    return next(m * 10.0**k for m in (1.0, 2.0, 5.0, 10.0) if m * 10.0**k >= raw * (1 - 1e-9))


def tick_text(x: float) -> str:
    """A round tick's label: whole numbers as the page writes them (1,000), others without trailing zeros (0.2)."""
    return fmt_num(x) if float(x).is_integer() else f"{x:.3g}"


def axis(title: str, log: bool = False, category: bool = False, values: Any = None, **kw: Any) -> dict:
    """An axis: its title (plot-escaped), type, and for a log axis the 1-2-5 / decade ticks over ``values``
    (``log_ticks``) unless explicit ticks are given; a second axis (``overlaying``) its own round ticks."""
    if log and "tickvals" not in kw and "dtick" not in kw:
        kw.update(log_ticks(values if values is not None else []))
    if "overlaying" in kw and "tickvals" not in kw:
        # a second y axis picks its own round ticks (0, 20, 40 … %, $0.5, $1 …): streamlit's theme syncs it
        # to the first axis' grid, which labelled it 23.7, 47.5, 71.3 (issue 30); no grid of its own
        kw = {"tickmode": "auto", "showgrid": False, **kw}
    return dict(title=dict(text=plot_text(title)), type="category" if category else "log" if log else "linear", **kw)


def vline(
    x: float,
    text: str,
    log_x: bool,
    color: str = COLORS["mark"],
    y_text: float = 1.0,
    span: tuple[float, float] | None = None,
) -> tuple[dict, dict]:
    """A dashed vertical line across the plot and its label (plot-escaped).  Annotations on a log axis
    take log10(x); shapes take x itself (plotly.js convention).  With the axis' ``span`` the label is
    put on the line's left when the line is in the right part of the axis, so the plot never cuts it."""
    shape = dict(
        type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1, line=dict(color=color, dash="dash", width=1.5)
    )
    right = span is not None and label_on_left(x, span, log_x)
    note = dict(
        xref="x",
        yref="paper",
        x=math.log10(x) if log_x else x,
        y=y_text,
        text=plot_text(text),
        showarrow=False,
        xanchor="right" if right else "left",
        xshift=-3 if right else 3,
        yanchor="top",
        font=dict(size=11, color=color),
        bgcolor="rgba(255,255,255,0.7)",
    )
    return shape, note


def label_on_left(x: float, span: tuple[float, float], log_x: bool) -> bool:
    """Whether a line at ``x`` lies in the right part (``LABEL_LEFT_FROM``) of an axis over ``span``."""
    lo, hi = span
    if log_x:
        if lo <= 0 or hi <= lo or x <= 0:
            return False
        frac = (math.log10(x) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    else:
        frac = 0.0 if hi <= lo else (x - lo) / (hi - lo)
    return frac > LABEL_LEFT_FROM


def hline_paper(y: float, color: str, width: float = 1.5, dash: str | None = None) -> dict:
    """A horizontal line at data ``y`` across the whole plot width."""
    line: dict[str, Any] = dict(color=color, width=width)
    if dash is not None:
        line["dash"] = dash
    return dict(type="line", xref="paper", yref="y", x0=0, x1=1, y0=y, y1=y, line=line)


def band(x0: float, x1: float, y0: float, y1: float, xref: str, yref: str, color: str, opacity: float) -> dict:
    """A shaded rectangle behind the traces (no outline)."""
    return dict(
        type="rect",
        xref=xref,
        yref=yref,
        x0=x0,
        x1=x1,
        y0=y0,
        y1=y1,
        fillcolor=color,
        opacity=opacity,
        line=dict(width=0),
        layer="below",
    )


#: At most this many labelled powers of two on an axis (beyond it every second, fourth … is labelled).
MAX_POW2_TICKS = 9


def pow2_ticks(values: Sequence[float]) -> dict:
    """Tick marks at the powers of two inside ``values``' range (every 2nd, 4th … when there would be more
    than ``MAX_POW2_TICKS``), labelled like every number on the page."""
    vals = [v for v in (2.0 ** np.arange(0, 31)) if min(values) <= v <= max(values)]
    stride = 1
    while len(vals[::stride]) > MAX_POW2_TICKS:
        stride *= 2
    vals = vals[::stride]
    return dict(tickvals=vals, ticktext=[fmt_num(v) for v in vals])


def positive_or_none(values: Sequence[float] | np.ndarray) -> list:
    """Zeros cannot sit on a log axis: leave a gap there instead."""
    return [float(v) if v > 0 else None for v in values]
