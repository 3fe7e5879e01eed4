"""Plotly figures of a simulation and a sizing (no streamlit): results in, ``go.Figure`` out.

Display units (ms, %) are applied here only; the inputs are SI.  The look is
``ui.figures.theme``'s.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from planner.format import fmt_seconds
from planner.units import MS_PER_S, PERCENT
from ui.figures.theme import COLORS, axis, figure, hline_paper, vline
from ui.format import plot_text


def latency_cdf_figure(
    frame: pd.DataFrame, metric: str, title: str, slo_s: float | None, pct: float | str = 99.0
) -> go.Figure:
    """One latency CDF (log x, ms) with the SLO target (none where unset) and the statistic's percentile line
    (none for the mean)."""
    part = frame[frame["metric"] == metric]
    x_ms = part["value_s"].to_numpy() * MS_PER_S
    positive = x_ms[np.isfinite(x_ms) & (x_ms > 0)]
    target_ms = slo_s * MS_PER_S if slo_s is not None else None
    ends = [float(positive.min()), float(positive.max())] if positive.size else [1.0]
    lo, hi = min(ends + ([target_ms] if target_ms else [])), max(ends + ([target_ms] if target_ms else []))
    if hi <= lo * 1.5:  # one value (or nearly): widen so the axis has room and plain labels
        lo, hi = lo / 2, hi * 2
    shapes, notes = [], []
    if target_ms is not None and slo_s is not None:
        target, label = vline(
            target_ms, f"target {fmt_seconds(slo_s)}", log_x=True, color=COLORS["lose"], y_text=0.5, span=(lo, hi)
        )
        shapes, notes = [target], [label]
    if pct != "mean":
        share = float(pct) / 100.0
        shapes.append(hline_paper(share, COLORS["mark"], width=1, dash="dot"))
        notes.append(
            dict(
                xref="paper",
                yref="y",
                x=0.0,
                y=share,
                text=f"p{float(pct):g}",
                showarrow=False,
                xanchor="left",
                yanchor="bottom",
                font=dict(size=11),
            )
        )
    line = dict(
        type="scatter",
        mode="lines",
        x=x_ms.tolist(),
        y=part["share"].tolist(),
        name=title,
        line=dict(color=COLORS["decode"], width=2),
        hovertemplate="%{x:.3g} ms: %{y:.1%}<extra></extra>",
    )
    return figure(
        [line],
        title=dict(text=plot_text(title)),
        xaxis=axis(
            f"{title} (ms, log scale)", log=True, values=[lo, hi], range=[math.log10(lo) - 0.05, math.log10(hi) + 0.05]
        ),
        yaxis=axis("share of " + ("tokens" if metric == "itl" else "requests"), tickformat=".0%", range=[0, 1.02]),
        shapes=shapes,
        annotations=notes,
        showlegend=False,
        height=320,
    )


def timeline_figure(frame: pd.DataFrame) -> go.Figure:
    """Waiting requests (left axis) and KV-cache use (right axis) over simulated time."""
    data = [
        dict(
            type="scatter",
            mode="lines",
            x=frame["time_s"].tolist(),
            y=frame["queue_len"].tolist(),
            name="waiting requests",
            line=dict(color=COLORS["prefill"], shape="hv"),
        ),
        dict(
            type="scatter",
            mode="lines",
            x=frame["time_s"].tolist(),
            y=(frame["kv_used_frac"] * PERCENT).tolist(),
            name="KV cache used (%)",
            yaxis="y2",
            line=dict(color=COLORS["decode"], shape="hv"),
        ),
    ]
    return figure(
        data,
        title=dict(text="Queue and KV cache over time"),
        xaxis=axis("simulated time (s)"),
        yaxis=axis("waiting requests", rangemode="tozero"),
        yaxis2=axis("KV cache used (%)", overlaying="y", side="right", range=[0, 100]),
        height=340,
    )


def sizing_figure(table: pd.DataFrame) -> go.Figure:
    """$/hour of every configuration meeting the SLOs, cheapest first; the best one highlighted."""
    ok = table[table["status"] == "meets SLOs"]
    layouts = ok["layout"] if "layout" in ok else [f"tp{int(t)}" for t in ok["tp"]]
    labels = [
        plot_text(f"{g} · {lay} · {int(r)}×") for g, lay, r in zip(ok["gpu"], layouts, ok["replicas"], strict=True)
    ]
    colors = [COLORS["win"] if b else COLORS["paged"] for b in ok["best"]]
    bars = dict(
        type="bar",
        orientation="h",
        x=ok["cost_per_hour_usd"].tolist(),
        y=labels,
        marker=dict(color=colors),
        customdata=np.stack([ok["gpus"], ok["cost_per_million_output_tokens_usd"]], axis=-1).tolist()
        if len(ok)
        else [],
        hovertemplate="%{y}: $%{x:,.2f}/h, %{customdata[0]} GPUs, $%{customdata[1]:.3g}/Mtok<extra></extra>",
    )
    return figure(
        [bars],
        title=dict(text="Fleet cost meeting the SLOs (green: best)"),
        xaxis=axis("USD per hour"),
        yaxis=axis("", category=True, autorange="reversed"),
        height=max(260, 22 * len(ok) + 120),
        showlegend=False,
    )


def arrival_rate_figure(frame: pd.DataFrame, title: str) -> go.Figure:
    """Requests per second over the trace's time (one step per bin)."""
    width = float(frame["bin_s"].iloc[0]) if len(frame) else 0.0
    line = dict(
        type="scatter",
        mode="lines",
        x=frame["time_s"].tolist(),
        y=frame["requests_per_s"].tolist(),
        line=dict(color=COLORS["decode"], shape="hv"),
        name="arrivals",
        hovertemplate="%{x:.0f} s: %{y:.3g} requests/s<extra></extra>",
    )
    return figure(
        [line],
        title=dict(text=plot_text(f"{title}: arrival rate ({fmt_seconds(width)} bins)")),
        xaxis=axis("time since the first request (s)"),
        yaxis=axis("requests/s", rangemode="tozero"),
        showlegend=False,
        height=300,
    )


def length_figure(frame: pd.DataFrame) -> go.Figure:
    """Prompt and output length histograms on log-spaced bins (bars at the bins' geometric centres)."""
    data = []
    for kind, color in (("prompt", COLORS["prefill"]), ("output", COLORS["decode"])):
        part = frame[frame["kind"] == kind]
        centres = np.sqrt(part["lo_tokens"].to_numpy() * part["hi_tokens"].to_numpy())
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                x=centres.tolist(),
                y=part["requests"].tolist(),
                name=f"{kind} tokens",
                line=dict(color=color, shape="spline"),
                customdata=np.stack([part["lo_tokens"], part["hi_tokens"]], axis=-1).tolist(),
                hovertemplate=kind
                + " %{customdata[0]:,.0f}–%{customdata[1]:,.0f} tokens: %{y} requests<extra></extra>",
            )
        )
    return figure(
        data,
        title=dict(text="Prompt and output lengths"),
        xaxis=axis("tokens (log scale)", log=True, values=np.concatenate([frame["lo_tokens"], frame["hi_tokens"]])),
        yaxis=axis("requests per bin", rangemode="tozero"),
        height=300,
    )


def replica_figure(frame: pd.DataFrame) -> go.Figure:
    """Requests routed to each replica (bars) and its prefix-cache hit rate by tokens (markers, right axis)."""
    labels = [f"replica {int(k)}" for k in frame["replica"]]
    data = [
        dict(type="bar", x=labels, y=frame["requests"].tolist(), name="requests", marker=dict(color=COLORS["paged"])),
        dict(
            type="scatter",
            mode="markers",
            x=labels,
            y=(frame["prefix_cache_hit_rate_tokens"] * PERCENT).tolist(),
            name="prefix-cache hit rate (% of prompt tokens)",
            yaxis="y2",
            marker=dict(color=COLORS["win"], size=12),
        ),
    ]
    return figure(
        data,
        title=dict(text="Load and prefix-cache hits per replica"),
        xaxis=axis("", category=True),
        yaxis=axis("requests", rangemode="tozero"),
        yaxis2=axis("hit rate (%)", overlaying="y", side="right", range=[0, 100]),
        height=320,
    )
