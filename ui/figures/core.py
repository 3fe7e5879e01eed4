"""Plotly figures of the five core tabs (no streamlit): frames in, ``go.Figure`` out.

Frames come from ``planner.studies.curves`` in SI units; figures convert to display
units (ms, GiB, KiB, TFLOP/s) and take their look from ``ui.figures.theme``.  The
tabs that show them, with their captions, are in ``ui.tabs.charts``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from planner.format import fmt_bytes, fmt_num
from planner.studies.ridge import fmt_turn
from planner.units import MS_PER_S, TERA, GiB, KiB
from ui.figures.theme import (
    COLORS,
    COMPONENT_LABELS,
    POLICY_LABELS,
    SPEEDUP_SCALE,
    axis,
    band,
    figure,
    hline_paper,
    positive_or_none,
    pow2_ticks,
    vline,
)

# ---------------------------------------------------------------- memory


def memory_figure(frame: pd.DataFrame, capacity_bytes: float, usable_bytes: float) -> go.Figure:
    """Stacked horizontal bar of one GPU's memory (GiB) as the engine lays it out, with the total
    the driver reports (``capacity_bytes``) and the engine's budget (``usable_bytes``) marked."""
    data = [
        dict(
            type="bar",
            orientation="h",
            y=["per GPU"],
            x=[row.bytes_per_gpu / GiB],
            name=COMPONENT_LABELS[row.component],
            marker=dict(color=COLORS[row.component]),
            customdata=[[row.bytes_per_gpu]],
            hovertemplate=f"{COMPONENT_LABELS[row.component]}: %{{x:.2f}} GiB"
            " (%{customdata[0]:,.0f} B)<extra></extra>",
        )
        for row in frame.itertuples()
        if row.bytes_per_gpu > 0
    ]
    top = max(sum(d["x"][0] for d in data), capacity_bytes / GiB) if data else capacity_bytes / GiB
    span = (0.0, top)
    # the bar fills the middle half (bargap): the total's label sits above it, the budget's below it
    cap = vline(capacity_bytes / GiB, f"total {fmt_bytes(capacity_bytes)}", False, COLORS["ink"], 0.99, span)
    use = vline(usable_bytes / GiB, f"engine budget {fmt_bytes(usable_bytes)}", False, COLORS["mark"], 0.2, span)
    return figure(
        data,
        barmode="stack",
        bargap=0.5,
        height=260,
        xaxis=axis("GiB per GPU"),
        yaxis=dict(type="category", showticklabels=False),
        shapes=[cap[0], use[0]],
        annotations=[cap[1], use[1]],
    )


def concurrency_figure(frame: pd.DataFrame, window_tokens: float, context_tokens: float) -> go.Figure:
    """Max concurrent sequences vs context (log–log), paged vs contiguous, window marked."""
    scheme, ctx, conc = (
        frame["scheme"].to_numpy(),
        frame["context_tokens"].to_numpy(),
        frame["max_concurrent_sequences"].to_numpy(),
    )
    data = [
        dict(
            type="scatter",
            mode="lines",
            name=f"{name} KV allocation",
            x=ctx[scheme == name],
            y=positive_or_none(conc[scheme == name]),
            line=dict(color=COLORS[name]),
            hovertemplate=f"{name}: %{{y:,.2f}} sequences at %{{x:,}} tokens<extra></extra>",
        )
        for name in ("paged", "contiguous")
    ]
    span = (float(ctx.min()), float(ctx.max()))
    win = vline(window_tokens, f"advertised window {fmt_num(window_tokens)}", True, span=span)
    now = vline(context_tokens, f"this scenario {fmt_num(context_tokens)}", True, y_text=0.15, span=span)
    notes = [win[1], now[1]]
    if not (frame["max_concurrent_sequences"] > 0).any():
        notes.append(
            dict(
                xref="paper",
                yref="paper",
                x=0.5,
                y=0.5,
                showarrow=False,
                font=dict(size=14, color=COLORS["lose"]),
                text="no sequence fits at any context length: the weights and reserve fill the GPU",
            )
        )
    return figure(
        data,
        xaxis=axis("context length (tokens per sequence)", log=True, values=ctx),
        yaxis=axis("max concurrent sequences", log=True, values=conc),
        shapes=[win[0], now[0]],
        annotations=notes,
    )


def kv_attention_figure(frame: pd.DataFrame) -> go.Figure:
    """KV bytes per token (KiB) for MHA, the chosen K/V head count and MQA."""
    labels = [
        "MLA (compressed latent)" if a == "MLA" else f"{a} ({h} KV heads)"
        for a, h in zip(frame["attention"], frame["kv_heads"], strict=True)
    ]
    data = [
        dict(
            type="bar",
            x=labels,
            y=(frame["kv_bytes_per_token"] / KiB).to_numpy(),
            customdata=frame[["kv_bytes_per_token"]].to_numpy(),
            marker=dict(color=[COLORS["kv_cache_in_use"] if c else COLORS["not_usable"] for c in frame["current"]]),
            text=["this model" if c else "" for c in frame["current"]],
            textposition="outside",
            hovertemplate="%{x}: %{y:,.1f} KiB per token (%{customdata[0]:,.0f} B)<extra></extra>",
        )
    ]
    return figure(
        data,
        showlegend=False,
        yaxis=axis("KV cache per token, KiB (all layers, all GPUs)"),
        xaxis=axis("attention", category=True),
    )


# ---------------------------------------------------------------- latency & throughput


def roofline_figure(frame: pd.DataFrame) -> go.Figure:
    """Attainable TFLOP/s per GPU vs arithmetic intensity (log–log) with the prefill and decode points."""
    data = []
    styles = {
        "roof": dict(color=COLORS["ink"], width=2),
        "hardware_peak": dict(color=COLORS["peak"], dash="dot", width=1.5),
    }
    names = {"roof": "roofline (× MFU, × MBU)", "hardware_peak": "hardware peak"}
    for series, line in styles.items():
        part = frame[frame["series"] == series]
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=names[series],
                line=line,
                x=part["arithmetic_intensity_flop_per_byte"].to_numpy(),
                y=(part["attainable_flop_per_s"] / TERA).to_numpy(),
                hovertemplate="%{x:.3g} FLOP/byte → %{y:.4g} TFLOP/s<extra>" + names[series] + "</extra>",
            )
        )
    for series in ("prefill", "decode"):
        part = frame[frame["series"] == series]
        data.append(
            dict(
                type="scatter",
                mode="markers+text",
                name=series,
                text=[series],
                textposition="top center",
                marker=dict(size=12, color=COLORS[series]),
                x=part["arithmetic_intensity_flop_per_byte"].to_numpy(),
                y=(part["achieved_flop_per_s"] / TERA).to_numpy(),
                hovertemplate=f"{series}: %{{x:.3g}} FLOP/byte, %{{y:.4g}} TFLOP/s achieved<extra></extra>",
            )
        )
    return figure(
        data,
        xaxis=axis(
            "arithmetic intensity (FLOP per byte moved)", log=True, values=frame["arithmetic_intensity_flop_per_byte"]
        ),
        yaxis=axis("TFLOP/s per GPU", log=True, values=frame["attainable_flop_per_s"] / TERA),
    )


def decode_batch_figure(frame: pd.DataFrame, ridge_batch: float, memory_limit: float, batch: float) -> go.Figure:
    """Two panels sharing a log2 batch axis: decode step time (ms) and tokens/s per GPU.
    The compute-bound turn is marked; batches above ``memory_limit`` (the KV cache
    cannot hold them) are shaded."""
    x = frame["batch"].to_numpy()
    colors = [COLORS["decode"] if f else COLORS["lose"] for f in frame["fits_memory"]]
    bound = ["compute-bound" if c else "memory-bound" for c in frame["compute_bound"]]
    data = [
        dict(
            type="scatter",
            mode="lines+markers",
            name="decode step time",
            x=x,
            y=(frame["decode_step_s"] * MS_PER_S).to_numpy(),
            marker=dict(color=colors),
            line=dict(color=COLORS["decode"]),
            customdata=[[b] for b in bound],
            hovertemplate="batch %{x:,}: %{y:.3f} ms per step (%{customdata[0]})<extra></extra>",
            yaxis="y",
        ),
        dict(
            type="scatter",
            mode="lines+markers",
            name="tokens/s per GPU",
            x=x,
            y=frame["tokens_per_s_per_gpu"].to_numpy(),
            marker=dict(color=colors),
            line=dict(color=COLORS["kv_cache_free"]),
            xaxis="x",
            yaxis="y2",
            hovertemplate="batch %{x:,}: %{y:,.0f} tokens/s per GPU<extra></extra>",
        ),
    ]
    shapes, notes = [], []
    lo, hi = min(x), max(x)
    if math.isfinite(ridge_batch) and lo <= ridge_batch <= hi:
        s, n = vline(ridge_batch, f"compute-bound from batch {fmt_turn(ridge_batch)}", True, span=(lo, hi))
        shapes.append(s), notes.append(n)
    if memory_limit < hi:
        shapes.append(band(max(memory_limit, lo), hi, 0, 1, "x", "paper", COLORS["lose"], opacity=0.08))
        notes.append(
            dict(
                xref="x",
                yref="paper",
                x=math.log10(max(memory_limit, lo)),
                y=0.45,
                text="KV memory full",
                showarrow=False,
                xanchor="left",
                font=dict(size=11, color=COLORS["lose"]),
            )
        )
    s, n = vline(batch, f"batch {fmt_num(batch)}", True, y_text=0.98 if not notes else 0.8, span=(lo, hi))
    shapes.append(s), notes.append(n)
    return figure(
        data,
        height=520,
        shapes=shapes,
        annotations=notes,
        xaxis=axis("batch (concurrent decoding sequences)", log=True, anchor="y2", **pow2_ticks(x)),
        yaxis=axis("decode step, ms", domain=[0.55, 1.0]),
        yaxis2=axis("tokens/s per GPU", domain=[0.0, 0.45], anchor="x"),
    )


def latency_throughput_figure(frame: pd.DataFrame, batch: float) -> go.Figure:
    """TPOT (ms) vs output tokens/s per GPU along batch; hover adds batch and $/M tokens."""
    data = [
        dict(
            type="scatter",
            mode="lines+markers+text",
            name="batch 1 … max concurrency",
            x=frame["tokens_per_s_per_gpu"].to_numpy(),
            y=(frame["tpot_s"] * MS_PER_S).to_numpy(),
            text=[fmt_num(b) for b in frame["batch"]],
            textposition="top left",
            customdata=frame[["batch", "cost_per_million_output_tokens_usd"]].to_numpy(),
            line=dict(color=COLORS["decode"]),
            hovertemplate="batch %{customdata[0]:,}: TPOT %{y:.3f} ms, %{x:,.0f} tokens/s per GPU, "
            "$%{customdata[1]:.4g} per M output tokens<extra></extra>",
        )
    ]
    now = frame[frame["batch"] == int(batch)]
    if len(now):
        data.append(
            dict(
                type="scatter",
                mode="markers",
                name=f"batch {fmt_num(batch)}",
                x=now["tokens_per_s_per_gpu"].to_numpy(),
                y=(now["tpot_s"] * MS_PER_S).to_numpy(),
                marker=dict(size=14, symbol="star", color=COLORS["prefill"]),
                hoverinfo="skip",
            )
        )
    return figure(
        data,
        xaxis=axis("output tokens/s per GPU", log=True, values=frame["tokens_per_s_per_gpu"]),
        yaxis=axis("time per output token, ms"),
    )


def ttft_prompt_figure(frame: pd.DataFrame, prompt_tokens: float, window_tokens: float) -> go.Figure:
    """TTFT (ms) vs prompt length on an idle replica, log–log, prompt and window marked."""
    data = [
        dict(
            type="scatter",
            mode="lines",
            name="TTFT",
            x=frame["prompt_tokens"].to_numpy(),
            y=(frame["ttft_s"] * MS_PER_S).to_numpy(),
            customdata=[["compute-bound" if c else "memory-bound"] for c in frame["compute_bound"]],
            line=dict(color=COLORS["prefill"]),
            hovertemplate="%{x:,} prompt tokens: TTFT %{y:.4g} ms (%{customdata[0]})<extra></extra>",
        )
    ]
    x = frame["prompt_tokens"].to_numpy()
    span = (float(x.min()), float(x.max()))
    p = vline(prompt_tokens, f"prompt {fmt_num(prompt_tokens)}", True, y_text=0.6, span=span)
    w = vline(window_tokens, f"window {fmt_num(window_tokens)}", True, span=span)
    return figure(
        data,
        showlegend=False,
        xaxis=axis("prompt length (tokens)", log=True, values=x),
        yaxis=axis("time to first token, ms", log=True, values=frame["ttft_s"] * MS_PER_S),
        shapes=[p[0], w[0]],
        annotations=[p[1], w[1]],
    )


# ---------------------------------------------------------------- chunked prefill


def chunked_figure(frame: pd.DataFrame, chunk_tokens: float) -> go.Figure:
    """Two panels vs chunk size (log2): newcomer TTFT and running streams' worst gap (ms),
    each against its no-chunking value (dashed)."""
    x = frame["chunk_tokens"].to_numpy()
    panels = [
        ("y", "newcomer_ttft_s", "nochunk_newcomer_ttft_s", "newcomer TTFT", COLORS["prefill"]),
        ("y2", "running_itl_s", "nochunk_running_itl_s", "running streams' max inter-token latency", COLORS["decode"]),
    ]
    data = []
    for y_axis, col, base, label, color in panels:
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                name=f"{label}, chunked",
                x=x,
                y=(frame[col] * MS_PER_S).to_numpy(),
                yaxis=y_axis,
                line=dict(color=color),
                customdata=frame[["chunked_steps"]].to_numpy(),
                hovertemplate="chunk %{x:,} tokens (%{customdata[0]:,} steps): "
                f"{label} %{{y:.4g}} ms<extra></extra>",
            )
        )
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"{label}, no chunking",
                x=[x[0], x[-1]],
                yaxis=y_axis,
                y=[float(frame[base].iloc[0] * MS_PER_S)] * 2,
                line=dict(color=color, dash="dash"),
                hovertemplate=f"no chunking: {label} %{{y:.4g}} ms<extra></extra>",
            )
        )
    s, n = vline(chunk_tokens, f"chunk {fmt_num(chunk_tokens)}", True, span=(float(x.min()), float(x.max())))
    return figure(
        data,
        height=560,
        shapes=[s],
        annotations=[n],
        xaxis=axis("chunk size (prefill tokens per step)", log=True, anchor="y2", **pow2_ticks(x)),
        yaxis=axis("newcomer TTFT, ms", domain=[0.55, 1.0]),
        yaxis2=axis("running max ITL, ms", domain=[0.0, 0.45], anchor="x"),
    )


# ---------------------------------------------------------------- speculative decoding


def speedup_colorscale(z_min: float, z_max: float) -> list:
    """Reds below a speedup of 1, greens above, switching exactly at 1 whatever the range."""
    red, pale_red, pale_green, green = (SPEEDUP_SCALE[k] for k in ("red", "pale_red", "pale_green", "green"))
    if z_max <= 1.0:
        return [[0.0, red], [1.0, pale_red]]
    if z_min >= 1.0:
        return [[0.0, pale_green], [1.0, green]]
    p = (1.0 - z_min) / (z_max - z_min)
    return [[0.0, red], [p, pale_red], [p, pale_green], [1.0, green]]


def speculative_heatmap_figure(frame: pd.DataFrame, alpha: float, gamma: float) -> go.Figure:
    """Speedup over α × γ: reds below 1 (loses), greens above, the 1.0 contour drawn,
    the scenario's (γ, α) starred."""
    a, g, v = frame["alpha"].to_numpy(), frame["gamma"].to_numpy(), frame["speedup"].to_numpy()
    alphas, gammas = np.unique(a), np.unique(g)
    z = v[np.lexsort((g, a))].reshape(len(alphas), len(gammas))  # rows α, columns γ
    z_min, z_max = float(z.min()), float(z.max())
    data = [
        dict(
            type="heatmap",
            x=gammas,
            y=alphas,
            z=z,
            zmin=z_min,
            zmax=z_max,
            colorscale=speedup_colorscale(z_min, z_max),
            colorbar=dict(title=dict(text="speedup ×")),
            hovertemplate="γ %{x}, α %{y:.2f}: %{z:.3f}× <extra></extra>",
        ),
        dict(
            type="scatter",
            mode="markers",
            x=[gamma],
            y=[alpha],
            name="this scenario",
            marker=dict(symbol="star", size=16, color="#FFFFFF", line=dict(color=COLORS["ink"], width=1.5)),
            hovertemplate="this scenario: γ %{x}, α %{y:.2f}<extra></extra>",
        ),
    ]
    if z_min < 1.0 < z_max:
        data.insert(
            1,
            dict(
                type="contour",
                x=gammas,
                y=alphas,
                z=z,
                showscale=False,
                hoverinfo="skip",
                name="speedup = 1",
                contours=dict(start=1.0, end=1.0, size=1.0, coloring="none", showlabels=True),
                line=dict(color=COLORS["ink"], width=2),
            ),
        )
    return figure(
        data, showlegend=False, xaxis=axis("γ (draft tokens per step)", dtick=1), yaxis=axis("α (acceptance rate)")
    )


def speculative_batch_figure(frame: pd.DataFrame, batch: float) -> go.Figure:
    """Speedup vs batch (log2) with the region below 1 shaded and losing points in red."""
    x = frame["batch"].to_numpy()
    y = frame["speedup"].to_numpy()
    data = [
        dict(
            type="scatter",
            mode="lines+markers",
            name="speedup",
            x=x,
            y=y,
            line=dict(color=COLORS["decode"]),
            marker=dict(size=8, color=[COLORS["lose"] if lose else COLORS["win"] for lose in frame["loses"]]),
            customdata=[["loses: slower than plain decoding" if lose else "wins"] for lose in frame["loses"]],
            hovertemplate="batch %{x:,}: %{y:.3f}× (%{customdata[0]})<extra></extra>",
        )
    ]
    y_lo = min(min(y), 1.0) * 0.95
    shapes = [
        band(0, 1, y_lo, 1.0, "paper", "y", COLORS["lose"], opacity=0.12),
        hline_paper(1.0, COLORS["lose"]),
    ]
    notes = [
        dict(
            xref="paper",
            yref="y",
            x=0.01,
            y=1.0,
            text="below 1: slower than plain decoding",
            showarrow=False,
            xanchor="left",
            yanchor="top",
            font=dict(color=COLORS["lose"], size=11),
        )
    ]
    s, n = vline(batch, f"batch {fmt_num(batch)}", True, span=(float(x.min()), float(x.max())))
    return figure(
        data,
        showlegend=False,
        shapes=shapes + [s],
        annotations=notes + [n],
        xaxis=axis("batch (concurrent decoding sequences)", log=True, **pow2_ticks(x)),
        yaxis=axis("speedup over plain decoding, ×", range=[y_lo, max(max(y), 1.0) * 1.05]),
    )


# ---------------------------------------------------------------- prompt caching


def cache_cost_figure(frame: pd.DataFrame, cache_hit_rate: float, break_even: Mapping[str, float]) -> go.Figure:
    """USD per million requests vs hit rate for each write policy; break-even hit rates
    (pass none when the prefix is too short to cache) and the scenario's hit rate marked."""
    policy, hit = frame["write_policy"].to_numpy(), frame["cache_hit_rate"].to_numpy()
    per_m, per_req = frame["cost_per_million_requests_usd"].to_numpy(), frame["cost_per_request_usd"].to_numpy()
    data = [
        dict(
            type="scatter",
            mode="lines",
            name=POLICY_LABELS[name],
            x=hit[policy == name],
            y=per_m[policy == name],
            customdata=per_req[policy == name, None],
            line=dict(color=COLORS[name], dash="dash" if name == "none" else "solid"),
            hovertemplate=f"{POLICY_LABELS[name]}, hit rate %{{x:.2f}}: "
            "$%{customdata[0]:.5f} per request, $%{y:,.2f} per million<extra></extra>",
        )
        for name in POLICY_LABELS
    ]
    shapes, notes = [], []
    for i, (policy, h) in enumerate(break_even.items()):
        s, n = vline(h, f"{policy} break-even {fmt_num(h)}", False, COLORS[policy], 0.98 - 0.1 * i, (0.0, 1.0))
        shapes.append(s), notes.append(n)
    s, n = vline(cache_hit_rate, f"this scenario {fmt_num(cache_hit_rate)}", False, y_text=0.2, span=(0.0, 1.0))
    return figure(
        data,
        shapes=shapes + [s],
        annotations=notes + [n],
        xaxis=axis("cache hit rate", range=[0, 1]),
        yaxis=axis("USD per million requests", rangemode="tozero"),
    )


def gpu_cache_figure(frame: pd.DataFrame, hit_rate: float) -> go.Figure:
    """Your GPUs' prefix cache: idle and under-load TTFT (ms, left) and GPU $ per million output tokens (right)
    vs its hit rate; the scenario's hit rate marked."""
    h = frame["gpu_cache_hit_rate"].to_numpy()
    series = [
        ("ttft_s", "TTFT, idle (ms)", COLORS["prefill"], "y", MS_PER_S),
        ("chunked_ttft_s", "TTFT beside the batch (ms)", COLORS["decode"], "y", MS_PER_S),
        ("cost_per_million_output_tokens_usd", "GPU $ / M output tokens", COLORS["ink"], "y2", 1.0),
    ]
    series = [row for row in series if row[0] in frame]  # a newcomer that never starts has no chunked line
    data = [
        dict(
            type="scatter",
            mode="lines",
            name=name,
            x=h,
            y=frame[col].to_numpy() * scale,
            yaxis=yaxis,
            line=dict(color=color, dash="dot" if yaxis == "y2" else "solid"),
            hovertemplate=f"{name}, hit rate %{{x:.2f}}: %{{y:,.4g}}"
            + ("" if yaxis == "y2" else " ms")
            + "<extra></extra>",
        )
        for col, name, color, yaxis, scale in series
    ]
    s, n = vline(hit_rate, f"this scenario {fmt_num(hit_rate)}", False, y_text=0.2, span=(0.0, 1.0))
    return figure(
        data,
        shapes=[s],
        annotations=[n],
        xaxis=axis("prefix-cache hit rate on your GPUs", range=[0, 1]),
        yaxis=axis("time to first token, ms", rangemode="tozero"),
        yaxis2=axis("GPU $ per million output tokens", overlaying="y", side="right", rangemode="tozero"),
    )


def break_even_figure(frame: pd.DataFrame, cache_hit_rate: float) -> go.Figure:
    """Break-even hit rate per write policy (bars green when this scenario's hit rate beats it)."""
    data = [
        dict(
            type="bar",
            orientation="h",
            y=[POLICY_LABELS[p] for p in frame["write_policy"]],
            x=frame["break_even_hit_rate"].to_numpy(),
            marker=dict(
                color=[COLORS["win"] if cache_hit_rate > h else COLORS["lose"] for h in frame["break_even_hit_rate"]]
            ),
            hovertemplate="%{y}: caching pays above a %{x:.3f} hit rate<extra></extra>",
        )
    ]
    s, n = vline(cache_hit_rate, f"this scenario {fmt_num(cache_hit_rate)}", False, span=(0.0, 1.0))
    return figure(
        data,
        height=240,
        showlegend=False,
        shapes=[s],
        annotations=[n],
        xaxis=axis("break-even hit rate", range=[0, 1]),
        yaxis=axis("", category=True),
    )
