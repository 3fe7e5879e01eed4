"""Plotly figures of the sizing search (no streamlit): the screened points, a Pareto frontier, the
SLO line and the scenario on screen.  Each point carries its point id as ``customdata`` (a click
selects it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from planner.format import fmt_num, fmt_seconds
from planner.search.frontiers import Frontier, frontier_points
from planner.sim.slo import Slo
from planner.units import MS_PER_S
from ui.figures.theme import COLORS, GPU_COLORS, GPU_SYMBOLS, axis, figure, vline
from ui.format import plot_text

#: Points drawn per chart; the frontier's are always drawn, the CSV holds every one.
MAX_DRAWN = 20_000
_HOVER = "%{text}<br>%{x:.4g} × %{y:.4g}<extra></extra>"  # the axes' own units are in their titles


def point_labels(frame: pd.DataFrame) -> np.ndarray:
    """Each point's configuration as its hover text: "GPU: [disaggregated, ]layout[ on N nodes], batch B,
    chunk C[, KV fp8][, fp8 weights][, speculative]; G GPUs".  The escaping (``plot_text``) is applied once
    to each GPU and layout name, the only parts that come from data: it works character by character and
    the fixed parts hold no ``%`` or ``{``, so the text is the whole label's."""

    def named(column: str) -> list[str]:
        values = frame[column].astype(str).tolist()
        escaped = {v: plot_text(v) for v in set(values)}
        return [escaped[v] for v in values]

    def ints(column: str) -> list[int]:
        return frame[column].to_numpy(dtype=float).astype(np.int64).tolist()

    disagg = (frame["mode"] == "disaggregated").tolist()
    kv8, w8 = (frame["kvdtype"] == "fp8").tolist(), (frame["wdtype"] == "fp8").tolist()
    rows = zip(
        named("gpu"), disagg, named("layout"), ints("nodes"), ints("batch"), ints("chunk"), kv8, w8,
        frame["spec"].astype(bool).tolist(), ints("gpus"), strict=True,
    )  # fmt: skip
    return np.array(
        [
            f"{gpu}: {'disaggregated, ' if dis else ''}{layout}{f' on {nodes} nodes' if nodes > 1 else ''}, "
            f"batch {batch}, chunk {chunk}{', KV fp8' if kv else ''}{', fp8 weights' if w else ''}"
            f"{', speculative' if spec else ''}; {gpus} GPUs"
            for gpu, dis, layout, nodes, batch, chunk, kv, w, spec, gpus in rows
        ],
        dtype=object,
    )


def drawn_points(points: pd.DataFrame, frontier: Frontier) -> pd.DataFrame:
    """The feasible points a chart draws: every frontier point and at most ``MAX_DRAWN`` in all."""
    ok = points[points["meets_slo"].astype(bool)]
    if len(ok) <= MAX_DRAWN:
        return ok
    on = ok[ok[frontier.key].astype(bool)]
    rest = ok[~ok[frontier.key].astype(bool)]
    return pd.concat([on, rest.iloc[:: max(1, math.ceil(len(rest) / (MAX_DRAWN - len(on))))]])


def _axis_values(frame: pd.DataFrame, column: str) -> np.ndarray:
    scale = MS_PER_S if column.endswith("_s") else 1.0
    return frame[column].to_numpy(dtype=float) * scale


def _points_trace(
    frame: pd.DataFrame,
    frontier: Frontier,
    kind: str,
    mode: str,
    name: str,
    text: np.ndarray | None = None,
    **style: Any,
) -> dict:
    """One trace of ``frame``'s points on the frontier's axes: each point's id as customdata (a click selects
    it), its configuration as the hover text (``point_labels``, unless given).  Arrays, not lists: plotly
    checks a numpy array at once and every element of a list."""
    return dict(
        type=kind,
        mode=mode,
        name=name,
        x=_axis_values(frame, frontier.x),
        y=_axis_values(frame, frontier.y),
        customdata=frame["point"].to_numpy(),
        text=point_labels(frame) if text is None else text,
        hovertemplate=_HOVER,
        **style,
    )


def frontier_figure(points: pd.DataFrame, frontier: Frontier, slo: Slo, current: int | None = None) -> go.Figure:
    """One trace of points per GPU profile (its own colour and symbol, ``GPU_COLORS`` × ``GPU_SYMBOLS``: twelve
    GPUs read apart), the frontier as a line, the SLO line, the current point.  No title in the figure (the
    tab writes it above, clear of plotly's toolbar); log axes labelled at 1, 2, 5 × 10^k (``axis``)."""
    shown = drawn_points(points, frontier)
    labels = point_labels(shown)  # once for every drawn point, then split by GPU
    groups = shown.groupby("gpu", sort=False, observed=True).indices
    data = [
        _points_trace(
            shown.iloc[rows],
            frontier,
            "scattergl",
            "markers",
            plot_text(gpu),
            labels[rows],
            marker=dict(
                size=7,
                opacity=0.7,
                color=GPU_COLORS[k % len(GPU_COLORS)],
                symbol=GPU_SYMBOLS[k % len(GPU_SYMBOLS)],
            ),
        )
        for k, (gpu, rows) in enumerate(groups.items())
    ]
    on = frontier_points(points, frontier)
    ink = COLORS["ink"]
    data.append(
        _points_trace(
            on,
            frontier,
            "scatter",
            "lines+markers",
            "frontier",
            line=dict(color=ink, width=2.5),
            marker=dict(size=10, color=ink, symbol="diamond-open", line=dict(width=2)),
        )
    )
    row = points.loc[(points["point"] == current) & points["meets_slo"].astype(bool)]
    if current is not None and len(row):
        star = dict(size=16, color=COLORS["win"], symbol="star", line=dict(color=ink, width=1))
        data.append(_points_trace(row, frontier, "scatter", "markers", "this scenario", marker=star))
    shapes, notes = _slo_line(frontier, slo)
    x_values, y_values = _axis_values(shown, frontier.x), _axis_values(shown, frontier.y)
    if shapes:
        x_values = np.append(x_values, shapes[0]["x0"])
    return figure(
        data,
        xaxis=axis(_title(frontier.x, slo), log=True, values=x_values),
        yaxis=axis(_title(frontier.y, slo), log=True, values=y_values),
        shapes=shapes,
        annotations=notes,
        height=500,
        legend=dict(orientation="v", x=1.01, y=1.0, xanchor="left", yanchor="top"),
        margin=dict(l=70, r=170, t=40, b=50),
    )


def frontier_heading(frontier: Frontier) -> str:
    """The chart's heading, written above the figure (clear of plotly's toolbar)."""
    return f"{frontier.title} (every configuration meeting the SLO; grey line: the frontier)"


TITLES = {
    "capacity_output_tokens_per_s_per_user": "output tokens/s per user at capacity (1 / mean TPOT)",
    "capacity_output_tokens_per_s_per_gpu": "output tokens/s per GPU at capacity",
    "cost_per_million_output_tokens_usd": "USD per million output tokens",
}


def _title(column: str, slo: Slo) -> str:
    return f"{slo.ttft_label} (ms)" if column == "ttft_q_s" else TITLES[column]


def _slo_line(frontier: Frontier, slo: Slo) -> tuple[list[dict], list[dict]]:
    """The SLO on the x axis: the tighter of the TPOT and ITL targets as tokens/s per user (a mean gap above
    it misses it), or the TTFT target; none where that target is unset."""
    if frontier.x == "capacity_output_tokens_per_s_per_user":
        limit = slo.step_limit_s
        if limit is None:
            return [], []
        x = 1.0 / limit
        text = f"{slo.pct_label} {slo.step_limit_words} target {fmt_seconds(limit)} = {fmt_num(x)}/s"
    else:
        if slo.ttft_s is None:
            return [], []
        x, text = slo.ttft_s * MS_PER_S, f"{slo.ttft_label} target {fmt_seconds(slo.ttft_s)}"
    shape, note = vline(x, text, log_x=True, color=COLORS["lose"])
    return [shape], [note]
