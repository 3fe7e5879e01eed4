"""Plotly figures for the dashboard tabs (no streamlit): frames in, ``go.Figure`` out.

Frames come from ``planner.studies.curves`` in SI units; this is the only place that
converts to display units (ms, GiB, KiB, TFLOP/s).  Figures are built as
plain dicts and validated once by ``go.Figure`` (several times faster than
adding traces one by one, which matters on every dashboard rerun).

``tab_charts(tab, result)`` returns the ``Chart`` list of one tab: key (CSV
file name and widget key), title, the exact frame plotted, the figure and a
one-sentence caption with the scenario's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from planner.engine.evaluate import Result
from planner.studies import curves
from planner.units import MS_PER_S, TERA, GiB, KiB

TABS: tuple[str, ...] = ("Memory", "Latency & throughput", "Chunked prefill", "Speculative decoding", "Prompt caching")

COLORS = {
    "weights": "#4C78A8",
    "reserve": "#9D755D",
    "kv_cache_in_use": "#F58518",
    "kv_cache_free": "#54A24B",
    "not_usable": "#BAB0AC",
    "kv_cache_over_budget": "#E45756",
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
}
COMPONENT_LABELS = {
    "weights": "weights",
    "reserve": "activation & workspace reserve",
    "kv_cache_in_use": "KV cache, current batch",
    "kv_cache_free": "KV cache, free",
    "not_usable": "not usable (1 − memory utilisation)",
    "kv_cache_over_budget": "KV needed beyond the budget",
}
POLICY_LABELS = {"none": "no cache", "5m": "5-minute writes (1.25×)", "1h": "1-hour writes (2×)"}
_BASE_LAYOUT = dict(
    margin=dict(l=60, r=20, t=50, b=50),
    legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
    hovermode="closest",
)


@dataclass(frozen=True)
class Chart:
    key: str  # stable slug, used for the CSV file name and widget keys
    title: str
    frame: pd.DataFrame  # exactly the data plotted (downloaded as CSV)
    figure: go.Figure
    caption: str = ""  # one sentence telling what to read from it, with this scenario's numbers


# ---------------------------------------------------------------- formatting (display only)


def fmt_num(v: float, sig: int = 3) -> str:
    """Integers with thousands separators; other values to ``sig`` significant digits."""
    v = float(v)
    if not math.isfinite(v):
        return "never" if v > 0 else "n/a"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    if abs(v) >= 10**sig:
        return f"{round(v):,}"
    return f"{v:.{sig}g}"


def fmt_ms(seconds: float) -> str:
    return f"{fmt_num(seconds * MS_PER_S)} ms"


def fmt_gib(n_bytes: float) -> str:
    return f"{fmt_num(n_bytes / GiB)} GiB"


def fmt_usd(v: float) -> str:
    return f"${v:,.2f}" if abs(v) >= 1 else f"${v:.3g}"


# ---------------------------------------------------------------- figure helpers


def _figure(data: list[dict], **layout) -> go.Figure:
    return go.Figure(dict(data=data, layout={**_BASE_LAYOUT, **layout}))


def _axis(title: str, log: bool = False, category: bool = False, **kw) -> dict:
    return dict(title=dict(text=title), type="category" if category else "log" if log else "linear", **kw)


def _vline(x: float, text: str, log_x: bool, color: str = COLORS["mark"], y_text: float = 1.0) -> tuple[dict, dict]:
    """A dashed vertical line across the plot and its label.  Annotations on a log axis
    take log10(x); shapes take x itself (plotly.js convention)."""
    shape = dict(
        type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1, line=dict(color=color, dash="dash", width=1.5)
    )
    note = dict(
        xref="x",
        yref="paper",
        x=math.log10(x) if log_x else x,
        y=y_text,
        text=text,
        showarrow=False,
        xanchor="left",
        yanchor="top",
        font=dict(size=11, color=color),
        bgcolor="rgba(255,255,255,0.7)",
    )
    return shape, note


def _pow2_ticks(values: Sequence[float]) -> dict:
    vals = [v for v in (2.0 ** np.arange(0, 31)) if min(values) <= v <= max(values)]
    return dict(tickvals=vals, ticktext=[fmt_num(v) for v in vals])


def _positive_or_none(values) -> list:
    """Zeros cannot sit on a log axis: leave a gap there instead."""
    return [float(v) if v > 0 else None for v in values]


# ---------------------------------------------------------------- memory


def memory_figure(frame: pd.DataFrame, capacity_bytes: float, usable_bytes: float) -> go.Figure:
    """Stacked horizontal bar of one GPU's memory (GiB) with capacity and usable limits."""
    data = [
        dict(
            type="bar",
            orientation="h",
            y=["per GPU"],
            x=[row.bytes_per_gpu / GiB],
            name=COMPONENT_LABELS[row.component],
            marker=dict(color=COLORS[row.component]),
            customdata=[[row.bytes_per_gpu]],
            hovertemplate=f"{COMPONENT_LABELS[row.component]}: %{{x:.2f}} GiB (%{{customdata[0]:,.0f}} B)<extra></extra>",
        )
        for row in frame.itertuples()
        if row.bytes_per_gpu > 0
    ]
    cap = _vline(capacity_bytes / GiB, f"capacity {fmt_gib(capacity_bytes)}", False, color="#000000")
    use = _vline(usable_bytes / GiB, f"usable {fmt_gib(usable_bytes)}", False, y_text=0.15)
    return _figure(
        data,
        barmode="stack",
        height=260,
        xaxis=_axis("GiB per GPU"),
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
            y=_positive_or_none(conc[scheme == name]),
            line=dict(color=COLORS[name]),
            hovertemplate=f"{name}: %{{y:,}} sequences at %{{x:,}} tokens<extra></extra>",
        )
        for name in ("paged", "contiguous")
    ]
    win = _vline(window_tokens, f"advertised window {fmt_num(window_tokens)}", True)
    now = _vline(context_tokens, f"this scenario {fmt_num(context_tokens)}", True, y_text=0.15)
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
    return _figure(
        data,
        xaxis=_axis("context length (tokens per sequence)", log=True),
        yaxis=_axis("max concurrent sequences", log=True),
        shapes=[win[0], now[0]],
        annotations=notes,
    )


def kv_attention_figure(frame: pd.DataFrame) -> go.Figure:
    """KV bytes per token (KiB) for MHA, the chosen K/V head count and MQA."""
    labels = [
        "MLA (compressed latent)" if a == "MLA" else f"{a} ({h} KV heads)"
        for a, h in zip(frame["attention"], frame["kv_heads"])
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
    return _figure(
        data,
        showlegend=False,
        yaxis=_axis("KV cache per token, KiB (all layers, all GPUs)"),
        xaxis=_axis("attention", category=True),
    )


# ---------------------------------------------------------------- latency & throughput


def roofline_figure(frame: pd.DataFrame) -> go.Figure:
    """Attainable TFLOP/s per GPU vs arithmetic intensity (log–log) with the prefill and decode points."""
    data = []
    styles = {"roof": dict(color="#000000", width=2), "hardware_peak": dict(color="#7F7F7F", dash="dot", width=1.5)}
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
    return _figure(
        data,
        xaxis=_axis("arithmetic intensity (FLOP per byte moved)", log=True),
        yaxis=_axis("TFLOP/s per GPU", log=True),
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
        s, n = _vline(ridge_batch, f"compute-bound from batch ≈ {fmt_num(ridge_batch)}", True)
        shapes.append(s), notes.append(n)
    if memory_limit < hi:
        shapes.append(
            dict(
                type="rect",
                xref="x",
                yref="paper",
                x0=max(memory_limit, lo),
                x1=hi,
                y0=0,
                y1=1,
                fillcolor=COLORS["lose"],
                opacity=0.08,
                line=dict(width=0),
                layer="below",
            )
        )
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
    s, n = _vline(batch, f"batch {fmt_num(batch)}", True, y_text=0.98 if not notes else 0.8)
    shapes.append(s), notes.append(n)
    return _figure(
        data,
        height=520,
        shapes=shapes,
        annotations=notes,
        xaxis=_axis("batch (concurrent decoding sequences)", log=True, anchor="y2", **_pow2_ticks(x)),
        yaxis=_axis("decode step, ms", domain=[0.55, 1.0]),
        yaxis2=_axis("tokens/s per GPU", domain=[0.0, 0.45], anchor="x"),
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
            hovertemplate="batch %{customdata[0]:,}: TPOT %{y:.3f} ms, %{x:,.0f} tokens/s per GPU, $%{customdata[1]:.4g} per M output tokens<extra></extra>",
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
    return _figure(data, xaxis=_axis("output tokens/s per GPU", log=True), yaxis=_axis("time per output token, ms"))


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
    p = _vline(prompt_tokens, f"prompt {fmt_num(prompt_tokens)}", True, y_text=0.6)
    w = _vline(window_tokens, f"window {fmt_num(window_tokens)}", True)
    return _figure(
        data,
        showlegend=False,
        xaxis=_axis("prompt length (tokens)", log=True),
        yaxis=_axis("time to first token, ms", log=True),
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
    for axis, col, base, label, color in panels:
        data.append(
            dict(
                type="scatter",
                mode="lines+markers",
                name=f"{label}, chunked",
                x=x,
                y=(frame[col] * MS_PER_S).to_numpy(),
                yaxis=axis,
                line=dict(color=color),
                customdata=frame[["chunked_steps"]].to_numpy(),
                hovertemplate=f"chunk %{{x:,}} tokens ({'%{customdata[0]:,}'} steps): {label} %{{y:.4g}} ms<extra></extra>",
            )
        )
        data.append(
            dict(
                type="scatter",
                mode="lines",
                name=f"{label}, no chunking",
                x=[x[0], x[-1]],
                yaxis=axis,
                y=[float(frame[base].iloc[0] * MS_PER_S)] * 2,
                line=dict(color=color, dash="dash"),
                hovertemplate=f"no chunking: {label} %{{y:.4g}} ms<extra></extra>",
            )
        )
    s, n = _vline(chunk_tokens, f"chunk {fmt_num(chunk_tokens)}", True)
    return _figure(
        data,
        height=560,
        shapes=[s],
        annotations=[n],
        xaxis=_axis("chunk size (prefill tokens per step)", log=True, anchor="y2", **_pow2_ticks(x)),
        yaxis=_axis("newcomer TTFT, ms", domain=[0.55, 1.0]),
        yaxis2=_axis("running max ITL, ms", domain=[0.0, 0.45], anchor="x"),
    )


# ---------------------------------------------------------------- speculative decoding


def speedup_colorscale(z_min: float, z_max: float) -> list:
    """Reds below a speedup of 1, greens above, switching exactly at 1 whatever the range."""
    red, pale_red, pale_green, green = "#B2182B", "#FDDBC7", "#D9F0D3", "#1B7837"
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
            marker=dict(symbol="star", size=16, color="#FFFFFF", line=dict(color="#000000", width=1.5)),
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
                line=dict(color="#000000", width=2),
            ),
        )
    return _figure(
        data, showlegend=False, xaxis=_axis("γ (draft tokens per step)", dtick=1), yaxis=_axis("α (acceptance rate)")
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
        dict(
            type="rect",
            xref="paper",
            yref="y",
            x0=0,
            x1=1,
            y0=y_lo,
            y1=1.0,
            fillcolor=COLORS["lose"],
            opacity=0.12,
            line=dict(width=0),
            layer="below",
        ),
        dict(
            type="line", xref="paper", yref="y", x0=0, x1=1, y0=1.0, y1=1.0, line=dict(color=COLORS["lose"], width=1.5)
        ),
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
    s, n = _vline(batch, f"batch {fmt_num(batch)}", True)
    return _figure(
        data,
        showlegend=False,
        shapes=shapes + [s],
        annotations=notes + [n],
        xaxis=_axis("batch (concurrent decoding sequences)", log=True, **_pow2_ticks(x)),
        yaxis=_axis("speedup over plain decoding, ×", range=[y_lo, max(max(y), 1.0) * 1.05]),
    )


# ---------------------------------------------------------------- prompt caching


def cache_cost_figure(frame: pd.DataFrame, hit_rate: float, break_even: Mapping[str, float]) -> go.Figure:
    """USD per million requests vs hit rate for each write policy; break-even hit rates
    (pass none when the prefix is too short to cache) and the scenario's hit rate marked."""
    policy, hit = frame["write_policy"].to_numpy(), frame["hit_rate"].to_numpy()
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
            hovertemplate=f"{POLICY_LABELS[name]}, hit rate %{{x:.2f}}: $%{{customdata[0]:.5f}} per request, $%{{y:,.2f}} per million<extra></extra>",
        )
        for name in POLICY_LABELS
    ]
    shapes, notes = [], []
    for i, (policy, h) in enumerate(break_even.items()):
        s, n = _vline(h, f"{policy} break-even {h:.3f}", False, color=COLORS[policy], y_text=0.98 - 0.1 * i)
        shapes.append(s), notes.append(n)
    s, n = _vline(hit_rate, f"this scenario {hit_rate:.2f}", False, y_text=0.2)
    return _figure(
        data,
        shapes=shapes + [s],
        annotations=notes + [n],
        xaxis=_axis("cache hit rate", range=[0, 1]),
        yaxis=_axis("USD per million requests", rangemode="tozero"),
    )


def break_even_figure(frame: pd.DataFrame, hit_rate: float) -> go.Figure:
    """Break-even hit rate per write policy (bars green when this scenario's hit rate beats it)."""
    data = [
        dict(
            type="bar",
            orientation="h",
            y=[POLICY_LABELS[p] for p in frame["write_policy"]],
            x=frame["break_even_hit_rate"].to_numpy(),
            marker=dict(
                color=[COLORS["win"] if hit_rate > h else COLORS["lose"] for h in frame["break_even_hit_rate"]]
            ),
            hovertemplate="%{y}: caching pays above a %{x:.3f} hit rate<extra></extra>",
        )
    ]
    s, n = _vline(hit_rate, f"this scenario {hit_rate:.2f}", False)
    return _figure(
        data,
        height=240,
        showlegend=False,
        shapes=[s],
        annotations=[n],
        xaxis=_axis("break-even hit rate", range=[0, 1]),
        yaxis=_axis("", category=True),
    )


# ---------------------------------------------------------------- tabs


def _bound(flag: bool) -> str:
    return "compute-bound" if flag else "memory-bound"


def _memory_tab(r: Result) -> list[Chart]:
    m, x, model, gpu = r.metrics, r.inputs, r.resolved.model, r.resolved.gpu
    mem = curves.memory_breakdown(r)
    parts = dict(zip(mem["component"], mem["bytes_per_gpu"]))
    tp, batch = int(x.tp), int(x.batch)
    if not m["fits"]:
        min_tp = int(m["min_tp_that_fits"])
        mem_caption = (
            f"At tp={tp} the weights ({fmt_gib(parts['weights'])}) and reserve leave no room for a sequence's KV cache on a "
            f"{gpu.name}; " + (f"the smallest tp that fits is {min_tp}." if min_tp else "no tp up to 64 fits.")
        )
    elif parts["kv_cache_over_budget"] > 0:
        mem_caption = (
            f"Weights take {fmt_gib(parts['weights'])} per GPU; the batch of {batch} needs "
            f"{fmt_gib(parts['kv_cache_in_use'] + parts['kv_cache_over_budget'])} of KV, "
            f"{fmt_gib(parts['kv_cache_over_budget'])} more than the budget, so at most {fmt_num(m['max_concurrent_sequences'])} sequences fit."
        )
    else:
        mem_caption = (
            f"Weights take {fmt_gib(parts['weights'])} of the {gpu.name}'s {fmt_gib(float(x.memory_bytes))}; the batch of {batch} "
            f"holds {fmt_gib(parts['kv_cache_in_use'])} of KV and {fmt_gib(parts['kv_cache_free'])} of the KV budget is free."
        )
    conc = curves.concurrency_vs_context(r)
    ctx = float(x.prompt_tokens + x.output_tokens)
    window = float(x.context_window_tokens)
    kv = curves.kv_per_token_by_attention(r)
    if model.is_mla:
        kv_caption = (
            f"MLA caches a compressed {fmt_num(m['kv_bytes_per_token'] / KiB)} KiB latent per token; "
            "the MHA/GQA/MQA head-count comparison does not apply to it."
        )
    else:
        kv_caption = (
            f"{model.attention_kind} with {model.kv_heads} KV heads stores {fmt_num(m['kv_bytes_per_token'] / KiB)} KiB per token: "
            f"{m['kv_bytes_per_token_mha'] / m['kv_bytes_per_token']:.3g}× less than MHA "
            f"({fmt_num(m['kv_bytes_per_token_mha'] / KiB)} KiB) and {m['kv_bytes_per_token'] / m['kv_bytes_per_token_mqa']:.3g}× more than MQA."
        )
    return [
        Chart(
            "memory-per-gpu",
            "Memory per GPU",
            mem,
            memory_figure(mem, float(x.memory_bytes), m["usable_bytes_per_gpu"]),
            mem_caption,
        ),
        Chart(
            "concurrency-vs-context",
            "Max concurrency vs context length",
            conc,
            concurrency_figure(conc, window, ctx),
            f"At {fmt_num(ctx)} tokens per sequence paged allocation fits {fmt_num(m['max_concurrent_sequences'])} sequences and "
            f"contiguous {fmt_num(m['max_concurrent_sequences_contiguous'])}; the model's advertised window is {fmt_num(window)} tokens.",
        ),
        Chart(
            "kv-per-token-by-attention",
            "KV cache per token: MHA vs GQA vs MQA",
            kv,
            kv_attention_figure(kv),
            kv_caption,
        ),
    ]


def _latency_tab(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    batch, ridge = float(x.batch), m["ridge_batch"]
    roof = curves.roofline(r)
    pts = roof.set_index("series")["arithmetic_intensity_flop_per_byte"]
    limit = curves.max_batch_that_fits(r)
    dec = curves.decode_vs_batch(r, limit)
    turn = (
        f"decode turns compute-bound at batch ≈ {fmt_num(ridge)}"
        if math.isfinite(ridge)
        else "decode's weight matmuls stay memory-bound at every batch"
    )
    lt = curves.latency_throughput(r, limit)
    first, last = lt.iloc[0], lt.iloc[-1]
    lt_caption = (
        f"From batch {fmt_num(first.batch)} to {fmt_num(last.batch)}, TPOT rises from {fmt_ms(first.tpot_s)} to {fmt_ms(last.tpot_s)} "
        f"while throughput grows from {fmt_num(first.tokens_per_s_per_gpu)} to {fmt_num(last.tokens_per_s_per_gpu)} tokens/s per GPU "
        f"and cost falls from {fmt_usd(first.cost_per_million_output_tokens_usd)} to {fmt_usd(last.cost_per_million_output_tokens_usd)} per M output tokens."
    )
    if not m["fits"]:
        lt_caption = (
            "No sequence fits in memory at this tp; the curve shows what the roofline would give. " + lt_caption
        )
    ttft = curves.ttft_vs_prompt(r)
    return [
        Chart(
            "roofline",
            "Roofline",
            roof,
            roofline_figure(roof),
            f"Prefill runs at {fmt_num(pts['prefill'])} FLOP/byte ({_bound(m['prefill_compute_bound'])}) and decode at "
            f"{fmt_num(pts['decode'])} FLOP/byte ({_bound(m['decode_compute_bound'])}); the derated ridge is at "
            f"{fmt_num(float(x.peak_flop_per_s * x.mfu / (x.bandwidth_bytes_per_s * x.mbu)))} FLOP/byte.",
        ),
        Chart(
            "decode-vs-batch",
            "Decode step time and tokens/s vs batch",
            dec,
            decode_batch_figure(dec, ridge, limit + 0.5, batch),
            f"At batch {fmt_num(batch)} a plain decode step takes {fmt_ms(m['plain_tpot_s'])} "
            f"({fmt_num(batch / m['plain_tpot_s'] / float(x.tp))} tokens/s per GPU); {turn}, and memory holds "
            f"at most {fmt_num(limit)} sequences at once.",
        ),
        Chart("latency-throughput", "Latency–throughput", lt, latency_throughput_figure(lt, batch), lt_caption),
        Chart(
            "ttft-vs-prompt",
            "TTFT vs prompt length",
            ttft,
            ttft_prompt_figure(ttft, float(x.prompt_tokens), float(x.context_window_tokens)),
            f"A {fmt_num(float(x.prompt_tokens))}-token prompt reaches its first token in {fmt_ms(m['ttft_s'])} on an idle replica "
            f"({_bound(m['prefill_compute_bound'])}).",
        ),
    ]


def _chunked_tab(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    ch = curves.chunked_curves(r)
    return [
        Chart(
            "chunked-prefill",
            "Chunked prefill: newcomer TTFT and running streams' ITL",
            ch,
            chunked_figure(ch, float(x.chunk_tokens)),
            f"With {fmt_num(float(x.chunk_tokens))}-token chunks and {fmt_num(float(x.batch))} running streams, a "
            f"{fmt_num(float(x.prompt_tokens))}-token newcomer waits {fmt_ms(m['chunked_ttft_s'])} (unchunked {fmt_ms(m['nochunk_ttft_s'])}) "
            f"and running streams' worst gap is {fmt_ms(m['chunked_max_itl_s'])} (unchunked {fmt_ms(m['nochunk_max_itl_s'])}).",
        )
    ]


def _speculative_tab(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    alpha, gamma, batch = float(x.alpha), float(x.gamma), float(x.batch)
    grid = curves.speculative_grid(r)
    off = (
        ""
        if r.resolved.scenario.spec
        else "Speculative decoding is off in this scenario; these charts show what it would do. "
    )
    verdict = "wins" if m["spec_speedup"] >= 1 else "loses"
    vb = curves.speculative_vs_batch(r)
    losing = vb[vb["loses"]]
    where = (
        f"it drops below 1 from batch {fmt_num(losing['batch'].iloc[0])}"
        if len(losing)
        else f"it stays above 1 up to batch {fmt_num(vb['batch'].iloc[-1])}"
    )
    return [
        Chart(
            "speculative-alpha-gamma",
            "Speculative speedup over α × γ",
            grid,
            speculative_heatmap_figure(grid, alpha, gamma),
            off
            + f"At batch {fmt_num(batch)}, α={alpha:.2f} and γ={int(gamma)} give {m['spec_speedup']:.3g}× ({verdict}); "
            f"{int(grid['loses'].sum())} of {len(grid)} (α, γ) cells lose.",
        ),
        Chart(
            "speculative-vs-batch",
            "Speculative speedup vs batch",
            vb,
            speculative_batch_figure(vb, batch),
            off + f"At α={alpha:.2f}, γ={int(gamma)} the speedup is {vb['speedup'].iloc[0]:.3g}× at batch 1 and "
            f"{vb['speedup'].iloc[-1]:.3g}× at batch {fmt_num(vb['batch'].iloc[-1])}; {where}.",
        ),
    ]


def _cache_tab(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    s = r.resolved.scenario
    cost = curves.cache_cost_curves(r)
    be = curves.cache_break_even(r)
    h = m["cache_hit_rate"]
    warn = ""
    if curves.prefix_below_minimum(r):
        warn = (
            f"Warning: the {fmt_num(float(x.prefix_tokens))}-token prefix is below the model's "
            f"{fmt_num(float(x.min_cacheable_tokens))}-token minimum, so caching is a no-op here. "
        )
    be_map = dict(zip(be["write_policy"], be["break_even_hit_rate"]))
    return [
        Chart(
            "prompt-cache-cost",
            "Prompt caching: cost vs hit rate",
            cost,
            cache_cost_figure(cost, h, {} if warn else be_map),
            warn
            + f"At a {h:.2f} hit rate a request costs {fmt_usd(m['cache_cost_per_request_usd'])} with {s.ttl} writes vs "
            f"{fmt_usd(m['nocache_cost_per_request_usd'])} without caching ({fmt_usd(m['cache_cost_per_request_usd'] * 1e6)} vs "
            f"{fmt_usd(m['nocache_cost_per_request_usd'] * 1e6)} per million requests).",
        ),
        Chart(
            "prompt-cache-break-even",
            "Prompt caching: break-even hit rate",
            be,
            break_even_figure(be, h),
            warn
            + f"5-minute writes pay off above a {be_map['5m']:.3f} hit rate and 1-hour writes above {be_map['1h']:.3f}; "
            f"this scenario's hit rate is {h:.2f}.",
        ),
    ]


_TAB_BUILDERS: dict[str, Callable[[Result], list[Chart]]] = dict(
    zip(TABS, (_memory_tab, _latency_tab, _chunked_tab, _speculative_tab, _cache_tab))
)


def tab_charts(tab: str, result: Result) -> list[Chart]:
    """The charts of one dashboard tab for an evaluated scenario."""
    try:
        build = _TAB_BUILDERS[tab]
    except KeyError:
        raise ValueError(f"tab={tab!r}: unknown tab; choose one of {', '.join(TABS)}") from None
    return build(result)
