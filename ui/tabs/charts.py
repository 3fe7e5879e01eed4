"""The five chart tabs: Memory, Latency & throughput, Chunked prefill, Speculative
decoding, Prompt caching.

``tab_charts(tab, result)`` returns the ``Chart`` list of one tab: key (CSV file
name and widget key), title, the exact frame plotted (from ``planner.studies.curves``),
the figure (``ui.figures.core``) and a one-sentence caption with the scenario's
numbers, every one through ``planner.format``.  ``render(tab)`` is the tab itself:
it draws the charts the app cached for the scenario (``ctx.data``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from planner.engine.evaluate import Result
from planner.engine.metrics import label
from planner.engine.validity import kv_replication_sentence
from planner.format import (
    fmt_bytes,
    fmt_count,
    fmt_num,
    fmt_pct,
    fmt_seconds,
    fmt_sequences,
    fmt_tokens_per_s,
    fmt_usd,
)
from planner.studies import curves
from planner.studies.ridge import fmt_turn
from planner.units import MEGA
from ui.chart import Chart
from ui.figures import core as figures
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import download_csv, md_escape
from ui.headline import ttft_text
from ui.state import PageContext


def _bound(flag: bool) -> str:
    return "compute-bound" if flag else "memory-bound"


# ---------------------------------------------------------------- memory


def _memory_caption(r: Result, parts: dict[str, float]) -> str:
    m, x, gpu = r.metrics, r.inputs, r.resolved.gpu
    batch = fmt_num(float(x.batch))
    total = fmt_bytes(m["memory_total_bytes_per_gpu"])
    engine = r.resolved.engine.name
    if not m["fits"]:
        min_tp = int(m["min_tp_that_fits"])
        why = (
            f"the plan needs {fmt_bytes(parts['over_capacity'])} more than the {gpu.name}'s {total}"
            if parts["over_capacity"] > 0
            else f"the weights ({fmt_bytes(parts['weights'])}), activation peak and non-torch memory leave no room "
            f"for one {fmt_num(float(x.prompt_tokens + x.output_tokens))}-token request's KV cache"
        )
        return f"At tp={int(x.tp)} {why}; " + (
            f"the smallest tp {engine} accepts that fits is {min_tp}." if min_tp else "no tp up to 64 fits."
        )
    visible = (
        gpu.memory_words
        if r.resolved.scenario.cal_total_gib is None
        else f"{gpu.memory_datasheet or fmt_bytes(float(x.memory_bytes))} · {total} in the start-up log"
    )
    head = (
        f"{gpu.name}: {visible}, what {engine} sizes from: weights "
        f"{fmt_bytes(parts['weights'])}, peak activation "
        f"{fmt_bytes(parts['activation'])}, non-torch {fmt_bytes(parts['non_torch'])}, KV cache "
        f"{fmt_bytes(m['kv_budget_bytes_per_gpu'])}"
    )
    if parts["kv_cache_over_budget"] > 0:
        return (
            f"{head}; the batch of {batch} needs {fmt_bytes(parts['kv_cache_over_budget'])} more KV than that, so "
            f"at most {fmt_count(m['feasible_batch'], 'sequence')} fit."
        )
    return f"{head}; the batch of {batch} holds {fmt_bytes(parts['kv_cache_in_use'])} of it."


def _kv_caption(r: Result) -> str:
    m, model = r.metrics, r.resolved.model
    per_token = m["kv_bytes_per_token"]
    if model.is_mla:
        return (
            f"MLA caches a compressed {fmt_bytes(per_token)} latent per token; "
            "the MHA/GQA/MQA head-count comparison does not apply to it."
        )
    return (
        f"{model.attention_kind} with {model.kv_heads} KV heads stores {fmt_bytes(per_token)} per token: "
        f"{fmt_num(m['kv_bytes_per_token_mha'] / per_token)}× less than MHA "
        f"({fmt_bytes(m['kv_bytes_per_token_mha'])}) and "
        f"{fmt_num(per_token / m['kv_bytes_per_token_mqa'])}× more than MQA."
        + kv_heads_below_tp_text(model.kv_heads, int(r.resolved.scenario.tp))
    )


def kv_heads_below_tp_text(kv_heads: int, tp: int) -> str:
    """Why concurrency stops rising below tp KV heads (the cause beside the effect; Explain has the formula):
    each GPU keeps ⌈kv_heads / tp⌉ heads, at least one — vLLM replicates a KV head over tp ÷ kv_heads GPUs."""
    if tp <= 1:
        return ""
    here = (
        f" With {kv_heads} KV heads at tp={tp} that is already so ({tp // max(kv_heads, 1)} copies of each)."
        if kv_heads < tp
        else ""
    )
    return (
        f" At tp={tp} each GPU keeps at least one KV head: below {tp} KV heads vLLM replicates them (tp ÷ KV "
        "heads copies), so the KV cache per GPU — and the concurrency — stops improving although the bars "
        f"(all GPUs together) keep halving.{here}"
    )


def memory_charts(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    mem = curves.memory_breakdown(r)
    parts = dict(zip(mem["component"], mem["bytes_per_gpu"], strict=True))
    conc = curves.concurrency_vs_context(r)
    ctx = float(x.prompt_tokens + x.output_tokens)
    window = float(x.context_window_tokens)
    kv = curves.kv_per_token_by_attention(r)
    return [
        Chart(
            "memory-per-gpu",
            "Memory per GPU",
            mem,
            figures.memory_figure(
                mem, m["memory_total_bytes_per_gpu"], m["usable_bytes_per_gpu"] + m["startup_baseline_bytes_per_gpu"]
            ),
            _memory_caption(r, parts),
        ),
        Chart(
            "concurrency-vs-context",
            "Max concurrency vs context length",
            conc,
            figures.concurrency_figure(conc, window, ctx),
            f"At {fmt_num(ctx)} tokens per sequence the paged KV blocks hold "
            f"{fmt_sequences(m['max_concurrent_sequences'])} at once (vLLM's 'Maximum concurrency' "
            f"{fmt_num(m['max_concurrent_sequences'])}x: {fmt_count(m['kv_blocks'])} blocks ÷ "
            f"{fmt_count(m['kv_blocks_per_request'])} per request) and contiguous allocation "
            f"{fmt_sequences(m['max_concurrent_sequences_contiguous'], None)}; "
            f"the model's advertised window is {fmt_num(window)} tokens."
            + kv_replication_sentence(r.resolved.model, int(r.resolved.scenario.tp)),
        ),
        Chart(
            "kv-per-token-by-attention",
            "KV cache per token: MHA vs GQA vs MQA",
            kv,
            figures.kv_attention_figure(kv),
            _kv_caption(r),
        ),
    ]


# ---------------------------------------------------------------- latency & throughput


def _latency_throughput_caption(r: Result, lt: pd.DataFrame) -> str:
    first, last = lt.iloc[0], lt.iloc[-1]
    text = (
        f"From batch {fmt_num(first.batch)} to {fmt_num(last.batch)}, TPOT rises from {fmt_seconds(first.tpot_s)} "
        f"to {fmt_seconds(last.tpot_s)} while throughput grows from {fmt_num(first.tokens_per_s_per_gpu)} to "
        f"{fmt_num(last.tokens_per_s_per_gpu)} tokens/s per GPU and cost falls from "
        f"{fmt_usd(first.cost_per_million_output_tokens_usd)} to {fmt_usd(last.cost_per_million_output_tokens_usd)} "
        "per M output tokens."
    )
    if not r.metrics["fits"]:
        return "No sequence fits in memory at this tp; the curve shows what the roofline would give. " + text
    return text


def latency_charts(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    batch, ridge = float(x.batch), m["ridge_batch"]
    roof = curves.roofline(r)
    pts = roof.set_index("series")["arithmetic_intensity_flop_per_byte"]
    limit = curves.max_batch_that_fits(r)
    dec = curves.decode_vs_batch(r, limit)
    turn = (
        f"decode turns compute-bound from batch {fmt_turn(ridge)}"
        if math.isfinite(ridge)
        else "decode's weight matmuls stay memory-bound at every batch"
    )
    lt = curves.latency_throughput(r, limit)
    ttft = curves.ttft_vs_prompt(r)
    derated_ridge = float(x.peak_flop_per_s * x.mfu / (x.bandwidth_bytes_per_s * x.mbu))
    return [
        Chart(
            "roofline",
            "Roofline",
            roof,
            figures.roofline_figure(roof),
            f"Prefill runs at {fmt_num(pts['prefill'])} FLOP/byte ({_bound(m['prefill_compute_bound'])}) and decode "
            f"at {fmt_num(pts['decode'])} FLOP/byte ({_bound(m['decode_compute_bound'])}); the derated ridge is at "
            f"{fmt_num(derated_ridge)} FLOP/byte.",
        ),
        Chart(
            "decode-vs-batch",
            "Decode step time and tokens/s vs batch",
            dec,
            figures.decode_batch_figure(dec, ridge, limit + 0.5, batch),
            f"At batch {fmt_num(batch)} a plain decode step takes {fmt_seconds(m['plain_tpot_s'])} "
            f"({fmt_num(batch / m['plain_tpot_s'] / float(x.tp))} tokens/s per GPU); {turn}, and memory holds "
            f"at most {fmt_count(limit)} sequences at once.",
        ),
        Chart(
            "latency-throughput",
            "Latency–throughput",
            lt,
            figures.latency_throughput_figure(lt, batch),
            _latency_throughput_caption(r, lt),
        ),
        Chart(
            "ttft-vs-prompt",
            "TTFT vs prompt length",
            ttft,
            figures.ttft_prompt_figure(ttft, float(x.prompt_tokens), float(x.context_window_tokens)),
            f"On an idle replica, unchunked, a whole {fmt_num(float(x.prompt_tokens))}-token prompt reaches its "
            f"first token in {fmt_seconds(m['ttft_nocache_s'])} ({_bound(m['prefill_compute_bound'])})"
            + _cache_words(m)
            + f"; beside the batch's running streams, in {fmt_num(float(x.chunk_tokens))}-token chunks, it takes "
            f"{ttft_text(m['chunked_ttft_s'])} (the headline's TTFT, the Chunked prefill tab).",
        ),
    ]


def _cache_words(m) -> str:
    """', 52.1 ms with the GPUs' prefix cache (50% of requests find 1,024 cached tokens)', or ''."""
    if not (m["gpu_cache_hit_rate"] > 0 and m["gpu_cached_tokens"] > 0):
        return ""
    return (
        f", {fmt_seconds(m['ttft_s'])} with the GPUs' prefix cache ({fmt_pct(m['gpu_cache_hit_rate'])} of requests "
        f"find {fmt_count(m['gpu_cached_tokens'])} cached tokens)"
    )


# ---------------------------------------------------------------- chunked prefill


def chunked_charts(r: Result) -> list[Chart]:
    m, x = r.metrics, r.inputs
    ch = curves.chunked_curves(r)
    return [
        Chart(
            "chunked-prefill",
            "Chunked prefill: newcomer TTFT and running streams' ITL",
            ch,
            figures.chunked_figure(ch, float(x.chunk_tokens)),
            f"With {fmt_num(float(x.chunk_tokens))}-token chunks and {fmt_num(float(x.batch))} running streams, a "
            f"{fmt_num(float(x.prompt_tokens))}-token newcomer waits {ttft_text(m['chunked_ttft_s'])} "
            f"(unchunked {fmt_seconds(m['nochunk_ttft_s'])}) and running streams' worst gap is "
            f"{fmt_seconds(m['chunked_max_itl_s'])} (unchunked {fmt_seconds(m['nochunk_max_itl_s'])}).",
        )
    ]


# ---------------------------------------------------------------- speculative decoding


def speculative_charts(r: Result) -> list[Chart]:
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
    at = f"α={fmt_num(alpha)} and γ={fmt_num(gamma)}"
    return [
        Chart(
            "speculative-alpha-gamma",
            "Speculative speedup over α × γ",
            grid,
            figures.speculative_heatmap_figure(grid, alpha, gamma),
            off + f"At batch {fmt_num(batch)}, {at} give {fmt_num(m['spec_speedup'])}× ({verdict}); "
            f"{fmt_count(grid['loses'].sum())} of {fmt_count(len(grid))} (α, γ) cells lose.",
        ),
        Chart(
            "speculative-vs-batch",
            "Speculative speedup vs batch",
            vb,
            figures.speculative_batch_figure(vb, batch),
            off + f"At α={fmt_num(alpha)}, γ={fmt_num(gamma)} the speedup is {fmt_num(vb['speedup'].iloc[0])}× at "
            f"batch 1 and {fmt_num(vb['speedup'].iloc[-1])}× at batch {fmt_num(vb['batch'].iloc[-1])}; {where}. "
            f"The chart stops at {fmt_sequences(vb['batch'].iloc[-1])}, what the KV cache holds"
            + ("" if batch <= vb["batch"].iloc[-1] else f" (this scenario's batch of {fmt_num(batch)} does not fit)")
            + ". "
            + curves.spec_defaults_note(r),
        ),
    ]


# ---------------------------------------------------------------- prompt caching


#: The two worlds of prompt caching, as the tab labels them (docs/model.md §9).
GPU_WORLD = "Your GPUs (vLLM/SGLang prefix cache)"
API_WORLD = "API billing (write 1.25×/2×, read 0.1×)"


def _gpu_cache_chart(r: Result) -> Chart:
    """The GPUs' own prefix cache: TTFT and the GPU cost vs its hit rate (``engine.prefix_reuse``)."""
    m = r.metrics
    frame = curves.gpu_cache_curves(r)
    h = float(m["gpu_cache_hit_rate"])
    if m["gpu_cached_tokens"] > 0:
        said = (
            f"A hit reads {fmt_count(m['gpu_cached_tokens'])} cached tokens (the prefix's whole KV blocks, never the "
            f"last prompt token: vLLM get_computed_blocks) and prefills the rest: at a {fmt_num(h)} hit rate the idle "
            f"TTFT is {fmt_seconds(m['ttft_s'])} instead of {fmt_seconds(m['ttft_nocache_s'])}, and the "
            f"{label('output_tokens_per_s_per_gpu')} {fmt_tokens_per_s(m['output_tokens_per_s_per_gpu'])} at "
            f"{fmt_usd(m['cost_per_million_output_tokens_usd'])} per million output tokens."
        )
    else:
        said = "The prefix holds no whole KV block here, so a hit saves nothing."
    return Chart(
        "prompt-cache-gpus",
        f"{GPU_WORLD}: TTFT and GPU cost vs hit rate",
        frame,
        figures.gpu_cache_figure(frame, h),
        said + " The hit rate is gpu_hit (else the hit rate above; the Simulate tab can set it from its measured "
        "cache). The API's bill below is another model: its own hit rate, TTL and prices.",
    )


def cache_charts(r: Result) -> list[Chart]:
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
    be_map = dict(zip(be["write_policy"], be["break_even_hit_rate"], strict=True))
    with_cache, without = m["cache_cost_per_request_usd"], m["nocache_cost_per_request_usd"]
    return [
        _gpu_cache_chart(r),
        Chart(
            "prompt-cache-cost",
            f"{API_WORLD}: cost vs hit rate",
            cost,
            figures.cache_cost_figure(cost, h, {} if warn else be_map),
            warn + f"At a {fmt_num(h)} hit rate a request costs {fmt_usd(with_cache)} with {s.ttl} writes vs "
            f"{fmt_usd(without)} without caching ({fmt_usd(with_cache * MEGA)} vs {fmt_usd(without * MEGA)} "
            "per million requests).",
        ),
        Chart(
            "prompt-cache-break-even",
            f"{API_WORLD}: break-even hit rate",
            be,
            figures.break_even_figure(be, h),
            warn + f"5-minute writes pay off above a {fmt_num(be_map['5m'])} hit rate and 1-hour writes above "
            f"{fmt_num(be_map['1h'])}; this scenario's hit rate is {fmt_num(h)}.",
        ),
    ]


# ---------------------------------------------------------------- the tabs

#: Title of each chart tab → its charts (the registry lists the tabs in page order).
CHART_TABS: dict[str, Callable[[Result], list[Chart]]] = {
    "Memory": memory_charts,
    "Latency & throughput": latency_charts,
    "Chunked prefill": chunked_charts,
    "Speculative decoding": speculative_charts,
    "Prompt caching": cache_charts,
}
TABS: tuple[str, ...] = tuple(CHART_TABS)


def tab_charts(tab: str, result: Result) -> list[Chart]:
    """The charts of one chart tab for an evaluated scenario."""
    try:
        build = CHART_TABS[tab]
    except KeyError:
        raise ValueError(f"tab={tab!r}: unknown tab; choose one of {', '.join(TABS)}") from None
    return build(result)


def draw(st: Any, charts: Sequence[Chart]) -> None:
    """Each chart: its title, the figure, the caption and a CSV button beside it."""
    for chart in charts:
        st.markdown(f"##### {md_escape(chart.title)}")
        st.plotly_chart(chart.figure, key=f"chart-{chart.key}", config=PLOTLY_CONFIG)
        left, right = st.columns([5, 1], vertical_alignment="center")
        if chart.caption:  # names in it (GPU, engine) are data: the whole sentence is shown as plain text
            left.caption(md_escape(chart.caption))
        with right:
            download_csv(st, "CSV", chart.frame, chart.key)


def render(tab: str) -> Callable[[PageContext], None]:
    """The render function of chart tab ``tab`` (charts cached by the app, else built here)."""
    if tab not in CHART_TABS:
        raise ValueError(f"tab={tab!r}: unknown tab; choose one of {', '.join(TABS)}")

    def render_tab(ctx: PageContext) -> None:
        if ctx.result is None:
            raise ValueError("a chart tab needs an evaluated scenario")
        draw(ctx.st, ctx.data.charts(tab) if ctx.data is not None else tab_charts(tab, ctx.result))

    return render_tab
