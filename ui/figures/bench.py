"""Plotly figures of a benchmark's results: predicted vs measured, with the error.

Pure functions (``BenchResults`` in, ``go.Figure`` out; no streamlit).  Times
are shown in ms and errors in % — the only unit conversion, done here.

  decode_figure    step time vs batch, one colour per context (log–log),
                   measured as markers, predicted (roofline max) as dashed lines, the
                   no overlap (o = 0: compute + memory) dotted; error % of the prediction below
  prefill_figure   prefill time vs prompt tokens, same layout
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from planner.bench.results import BenchResults, CaseResult
from planner.units import MS_PER_S
from ui.figures.theme import BASE_LAYOUT, COLORS, SERIES_COLORS, log_ticks
from ui.format import plot_text


def _figure(title: str, x_title: str) -> go.Figure:
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.68, 0.32], vertical_spacing=0.06)
    fig.update_layout(
        **BASE_LAYOUT
        | dict(
            title=plot_text(title),
            margin=dict(l=60, r=20, t=50, b=40),
            legend=dict(orientation="h", yanchor="top", y=-0.1, xanchor="left", x=0),  # below the error panel
            height=640,
        )
    )
    fig.update_xaxes(type="log", dtick=1, row=1, col=1)
    fig.update_xaxes(type="log", title_text=plot_text(x_title), dtick=1, row=2, col=1)
    fig.update_yaxes(type="log", title_text="step time (ms)", dtick=1, row=1, col=1)
    fig.update_yaxes(title_text="error (%)", zeroline=True, row=2, col=1)
    fig.add_hline(y=0, line=dict(color=COLORS["zero_line"], width=1), row=2, col=1)
    return fig


def _log_ticks(fig: go.Figure) -> go.Figure:
    """The log axes labelled as every chart's are (``theme.log_ticks``: 1-2-5 × 10^k written whole, over the
    figure's own x values and its step-time values)."""
    xs = [v for t in fig.data for v in (t.x or ())]
    ys = [v for t in fig.data if t.yaxis in (None, "y") for v in (t.y or ())]
    for row in (1, 2):
        fig.update_xaxes(dtick=None, tickmode="array", **log_ticks(xs), row=row, col=1)
    fig.update_yaxes(dtick=None, tickmode="array", **log_ticks(ys), row=1, col=1)
    return fig


def _add_series(fig: go.Figure, rows: list[CaseResult], x: list[int], profile: str, name: str, color: str) -> None:
    measured = [r.measured_s * MS_PER_S for r in rows]
    predicted = [r.predictions[profile].time_s * MS_PER_S for r in rows]
    error = [100.0 * r.predictions[profile].error_frac for r in rows]
    bound = ["compute" if r.predictions[profile].compute_bound else "memory" for r in rows]
    fig.add_trace(
        go.Scatter(
            x=x,
            y=measured,
            mode="markers",
            name=plot_text(f"{name} measured"),
            legendgroup=name,
            marker=dict(color=color, size=8),
            hovertemplate="%{x}: measured %{y:.3g} ms<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=predicted,
            mode="lines",
            name=plot_text(f"{name} predicted"),
            legendgroup=name,
            line=dict(color=color, dash="dash"),
            customdata=bound,
            hovertemplate="%{x}: predicted %{y:.3g} ms (%{customdata}-bound)<extra></extra>",
        ),
        row=1,
        col=1,
    )
    serial = [r.predictions[profile].serial_s * MS_PER_S for r in rows]
    fig.add_trace(
        go.Scatter(
            x=x,
            y=serial,
            mode="lines",
            name=plot_text(f"{name} no overlap (o = 0)"),
            legendgroup=name,
            line=dict(color=color, dash="dot", width=1),
            opacity=0.6,
            hovertemplate="%{x}: no overlap (o = 0) %{y:.3g} ms<extra></extra>",
        ),
        row=1,
        col=1,
    )
    fig.add_trace(
        go.Scatter(
            x=x,
            y=error,
            mode="lines+markers",
            name=plot_text(f"{name} error"),
            legendgroup=name,
            showlegend=False,
            line=dict(color=color),
            marker=dict(size=5),
            hovertemplate="%{x}: error %{y:+.1f} %<extra></extra>",
        ),
        row=2,
        col=1,
    )


def decode_figure(r: BenchResults, profile: str = "calibrated") -> go.Figure:
    fig = _figure(f"Decode step vs batch ({profile} profile)", "batch (sequences)")
    contexts = sorted({c.ctx for c in r.cases if c.phase == "decode"})
    for i, ctx in enumerate(contexts):
        rows = sorted((c for c in r.cases if c.phase == "decode" and c.ctx == ctx), key=lambda c: c.seqs)
        _add_series(fig, rows, [c.seqs for c in rows], profile, f"ctx {ctx}", SERIES_COLORS[i % len(SERIES_COLORS)])
    return _log_ticks(fig)


def prefill_figure(r: BenchResults, profile: str = "calibrated") -> go.Figure:
    fig = _figure(f"Prefill vs prompt length ({profile} profile)", "prompt (tokens)")
    rows = sorted((c for c in r.cases if c.phase == "prefill"), key=lambda c: c.n)
    _add_series(fig, rows, [c.n for c in rows], profile, "prefill", SERIES_COLORS[0])
    return _log_ticks(fig)
