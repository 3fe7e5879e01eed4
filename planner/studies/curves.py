"""Chart data: one engine call per curve, returned as a long-form DataFrame.

Every function takes an ``engine.Result`` and sweeps one quantity of its
``EngineInputs`` as a numpy array through the engine (``compute``,
``step_cost``, ``memory_plan`` …) in a single vectorised call — no Python loop
over points.  Columns are SI with the unit in the name (``_bytes``, ``_s``,
``_per_s``, ``_usd``); figures convert for display (``ui.figures.core``).
Frames never hold NaN or inf.  Formulas and grids: ``docs/dashboard.md``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.engine.chunked import chunked_prefill
from planner.engine.evaluate import Result, compute
from planner.engine.memory import (
    context_tokens,
    kv_allocated_bytes_per_sequence,
    max_concurrency,
    memory_plan,
)
from planner.engine.memory import max_batch_that_fits as engine_max_batch_that_fits
from planner.engine.prompt_cache import (
    break_even_hit_rate,
    cacheable_prefix_tokens,
    nocache_cost_usd,
    request_cost_usd,
)
from planner.engine.roofline import prefill
from planner.engine.speculative import expected_tokens_per_step, speedup
from planner.format import whole_sequences
from planner.model.api_pricing import CACHE_WRITE_MULTIPLIER
from planner.units import MEGA

CONTEXT_MIN_TOKENS = 256
CONTEXT_POINTS = 48
BATCH_GRID_MIN_TOP = 512
BATCH_GRID_MAX = 2**16
ROOFLINE_POINTS = 64
CHUNK_MIN_TOKENS = 16
PROMPT_MIN_TOKENS = 16
PROMPT_POINTS = 40
ALPHA_GRID = np.round(np.arange(0.0, 1.0 + 1e-9, 0.05), 2)
GAMMA_GRID = np.arange(1.0, 13.0)
SPEC_BATCH_MAX = 1024
#: Where the sidebar's speculative defaults come from and where they hold (the speedup charts' captions;
#: research notes in catalog/speculative.json).  α = 0.70 at γ = 4 gives (1 − α^5)/(1 − α) = 2.77 tokens
#: per target pass: EAGLE-3's published acceptance length on MT-bench at T = 1 (Llama-3.1-8B head 2.77,
#: Llama-3.3-70B head 2.88); a draft cost of 0.05 is about an EAGLE-3 head beside an 8B target (0.42 B
#: of 8 B parameters).  Published speedups shrink with the batch: EAGLE-3 1.38× at batch 64 in SGLang
#: (arXiv:2503.01840); vLLM's n-gram and draft-model runs turn to a slowdown at high QPS (vLLM blog).
SPEC_DEFAULTS_NOTE = (
    "Defaults: α 0.70 at γ 4 is 2.77 tokens per target pass — EAGLE-3's published acceptance length on "
    "MT-bench (Llama-3.1-8B head 2.77, Llama-3.3-70B head 2.88, T = 1); draft cost 0.05 is an EAGLE-3 head "
    "beside an 8B target (0.42 B of 8 B parameters). They hold at small batches on chat-like text: published "
    "speedups shrink as the batch grows (EAGLE-3 1.38× at batch 64 in SGLang, arXiv:2503.01840; vLLM's "
    "n-gram and draft-model runs turn to a slowdown at high load), and code or summaries accept more."
)


def spec_defaults_note(r: Result) -> str:
    """Where α and the draft cost come from: a method's published acceptance (``spec_rules.spec_defaults``' notes,
    when ``spec_method`` is set), else the generic defaults (``SPEC_DEFAULTS_NOTE``)."""
    s = r.resolved.scenario
    if not s.spec_method:
        return SPEC_DEFAULTS_NOTE
    said = [n for n in r.resolved.notes if n.startswith(("α = ", "γ = ", "no acceptance of "))]
    return " ".join(f"{n[:1].upper() if n[:1].isascii() else n[:1]}{n[1:]}." for n in said) or (
        f"α {s.alpha:g} and draft cost {s.draft_ratio:g} are this scenario's own values."
    )


HIT_RATE_GRID = np.round(np.linspace(0.0, 1.0, 101), 2)
WRITE_POLICIES = ("none", "5m", "1h")


def _f(v) -> float:
    return float(np.asarray(v))


def _grid(points, *extra) -> np.ndarray:
    """Sorted unique integers of ``points`` plus ``extra`` values (marks land on the curve)."""
    vals = np.concatenate([np.asarray(points, dtype=float).ravel(), np.asarray(extra, dtype=float).ravel()])
    return np.unique(np.round(vals[np.isfinite(vals) & (vals >= 1)]))


def pow2_grid(lo: float, hi: float, *extra) -> np.ndarray:
    """1, 2, 4 … style grid: lo·2^k up to the first value ≥ hi, plus ``extra``."""
    n = int(np.ceil(np.log2(max(hi, lo) / lo) - 1e-9))
    return _grid(lo * 2.0 ** np.arange(n + 1), *extra)


def log_grid(lo: float, hi: float, points: int, *extra) -> np.ndarray:
    return _grid(np.geomspace(lo, max(hi, lo), points), *extra)


# ---------------------------------------------------------------- memory


def memory_breakdown(result: Result) -> pd.DataFrame:
    """Per-GPU memory as the engine lays it out (``engine.memory``), in device order: the start-up
    baseline (CUDA context), then the engine's budget — weights, peak activation, non-torch memory,
    the KV cache held by the current batch and the free rest of it — then the CUDA graphs (vLLM 0.19
    captures them outside the budget) and what is left unallocated; beyond the device, any KV the
    batch needs past the budget and any memory the plan needs past the total.

    kv_in_use = min(batch · allocated KV per sequence, budget); kv_free = budget − kv_in_use;
    placed = every component on the device; unallocated = max(total − placed, 0), over_capacity =
    max(placed − total, 0) (where the model fits, total − placed is the start-up headroom).  The first
    eight components sum to the total the driver reports (``memory_total_bytes_per_gpu``) plus
    ``over_capacity``.
    """
    x = result.inputs.as_arrays()
    m = result.metrics
    budget = m["kv_budget_bytes_per_gpu"]
    demand = _f(x.batch * kv_allocated_bytes_per_sequence(x, context_tokens(x)))
    in_use = min(demand, budget)
    placed = sum(
        m[k]
        for k in (
            "startup_baseline_bytes_per_gpu",
            "weight_bytes_per_gpu",
            "activation_bytes_per_gpu",
            "non_torch_bytes_per_gpu",
            "kv_budget_bytes_per_gpu",
            "cuda_graph_bytes_per_gpu",
        )
    )
    headroom = m["memory_total_bytes_per_gpu"] - placed
    rows = {
        "startup_baseline": m["startup_baseline_bytes_per_gpu"],
        "weights": m["weight_bytes_per_gpu"],
        "activation": m["activation_bytes_per_gpu"],
        "non_torch": m["non_torch_bytes_per_gpu"],
        "kv_cache_in_use": in_use,
        "kv_cache_free": budget - in_use,
        "cuda_graphs": m["cuda_graph_bytes_per_gpu"],
        "unallocated": max(headroom, 0.0),
        "kv_cache_over_budget": max(demand - budget, 0.0),
        "over_capacity": max(-headroom, 0.0),
    }
    return pd.DataFrame({"component": list(rows), "bytes_per_gpu": [float(v) for v in rows.values()]})


def concurrency_vs_context(result: Result) -> pd.DataFrame:
    """Max concurrent sequences vs context length, paged (vLLM's blocks ÷ blocks per request,
    fractional) vs contiguous (whole sequences) (``memory_plan`` swept over prompt = L, output = 0).
    Grid: log-spaced 256 … ≥ 2 × window, plus the
    window and the scenario's context."""
    x = result.inputs
    window = _f(x.context_window_tokens)
    ctx_now = _f(context_tokens(x.as_arrays()))
    grid = log_grid(
        CONTEXT_MIN_TOKENS, max(2 * window, 2 * ctx_now, 2 * CONTEXT_MIN_TOKENS), CONTEXT_POINTS, window, ctx_now
    )
    plan = memory_plan(x.with_(prompt_tokens=grid, output_tokens=0.0).as_arrays())
    n = len(grid)
    return pd.DataFrame(
        {
            "context_tokens": np.tile(grid, 2).astype(int),
            "scheme": np.repeat(["paged", "contiguous"], n),
            "max_concurrent_sequences": np.concatenate(
                [
                    np.broadcast_to(plan["max_concurrent_sequences"], n),
                    np.broadcast_to(plan["max_concurrent_sequences_contiguous"], n),
                ]
            ),
            "within_context_window": np.tile(grid <= window, 2),
        }
    )


def kv_per_token_by_attention(result: Result) -> pd.DataFrame:
    """Whole-model KV bytes per token with every query head its own K/V (MHA), the
    scenario's K/V heads, and one shared K/V head (MQA).  MLA models: the latent only
    (a head-count comparison does not describe a compressed cache)."""
    model = result.resolved.model
    m = result.metrics
    if model.is_mla:
        return pd.DataFrame(
            {
                "attention": ["MLA"],
                "kv_heads": [model.kv_heads],
                "kv_bytes_per_token": [m["kv_bytes_per_token"]],
                "current": [True],
            }
        )
    kinds = [
        ("MHA", model.heads, m["kv_bytes_per_token_mha"]),
        (model.attention_kind, model.kv_heads, m["kv_bytes_per_token"]),
        ("MQA", 1, m["kv_bytes_per_token_mqa"]),
    ]
    rows: dict[int, tuple[str, float | bool]] = {}
    for name, heads, value in kinds:  # three fixed bars, de-duplicated when the model is itself MHA or MQA
        rows.setdefault(heads, (name, value))
    return pd.DataFrame(
        {
            "attention": [v[0] for v in rows.values()],
            "kv_heads": list(rows),
            "kv_bytes_per_token": [float(v[1]) for v in rows.values()],
            "current": [h == model.kv_heads for h in rows],
        }
    )


# ---------------------------------------------------------------- latency & throughput


def roofline(result: Result) -> pd.DataFrame:
    """Attainable FLOP/s per GPU vs arithmetic intensity, and the scenario's two steps.

    roof (efficiency-derated) = min(peak · MFU, AI · bw · MBU); hardware roof = min(peak, AI · bw)
    point: AI = FLOP / bytes of the step; achieved = FLOP / step time (below the roof only by
    tensor-parallel communication).  Grid: log-spaced 0.1 … ≥ 10 × the largest AI shown.
    """
    x = result.inputs.as_arrays()
    m = result.metrics
    peak, bw = _f(x.peak_flop_per_s), _f(x.bandwidth_bytes_per_s)
    peak_eff, bw_eff = peak * _f(x.mfu), bw * _f(x.mbu)
    points = {
        "prefill": (m["prefill_flop"], m["prefill_bytes"], m["ttft_nocache_s"]),
        "decode": (m["decode_flop"], m["decode_bytes"], m["plain_tpot_s"]),
    }
    point_ai = np.array([f / b for f, b, _ in points.values()])
    ridge = peak_eff / bw_eff
    top = 10 * max(point_ai.max(), peak / bw, ridge)
    ai = np.unique(np.concatenate([np.geomspace(0.1, top, ROOFLINE_POINTS), [ridge, peak / bw]]))
    roof = np.minimum(peak_eff, ai * bw_eff)
    hw = np.minimum(peak, ai * bw)
    n = len(ai)
    point_att = np.minimum(peak_eff, point_ai * bw_eff)
    point_ach = np.array([f / t for f, _, t in points.values()])
    return pd.DataFrame(
        {
            "series": ["roof"] * n + ["hardware_peak"] * n + list(points),
            "arithmetic_intensity_flop_per_byte": np.concatenate([ai, ai, point_ai]),
            "attainable_flop_per_s": np.concatenate([roof, hw, point_att]),
            "achieved_flop_per_s": np.concatenate([roof, hw, point_ach]),
        }
    )


def max_batch_that_fits(result: Result) -> int:
    """Largest batch whose sequences fit at once beside the activation peak that batch itself
    causes (``memory.max_batch_that_fits``; the batch is vLLM's max_num_seqs); 0 when none fits."""
    x = result.inputs.as_arrays()
    hi = float(np.asarray(max_concurrency(x.with_(batch=1.0), context_tokens(x))))
    if hi < 1:
        return 0
    return int(np.asarray(engine_max_batch_that_fits(x, 1.0, min(hi, BATCH_GRID_MAX))))


def decode_vs_batch(result: Result, limit: int | None = None) -> pd.DataFrame:
    """Plain decode step time and tokens/s vs batch: one ``compute`` over a log2 batch grid
    1 … max(batch, largest batch that fits, 512) (extended to 2 × the compute-bound turn when
    finite, at most 65,536), plus the scenario's batch and the memory limit and one past it.
    tokens/s = B / t_step; ``fits_memory``: B ≤ max concurrency at that batch.
    ``limit``: ``max_batch_that_fits(result)`` if already known."""
    x = result.inputs
    m = result.metrics
    ridge = m["ridge_batch"]
    limit = max_batch_that_fits(result) if limit is None else limit
    top = max(_f(x.batch), limit, BATCH_GRID_MIN_TOP)
    if np.isfinite(ridge):
        top = max(top, 2 * ridge)
    top = min(top, BATCH_GRID_MAX)
    grid = pow2_grid(1, top, _f(x.batch), limit, limit + 1)
    grid = grid[grid <= BATCH_GRID_MAX]
    out = compute(x.with_(batch=grid))
    n = len(grid)
    b = lambda k: np.broadcast_to(out[k], n)  # noqa: E731
    return pd.DataFrame(
        {
            "batch": grid.astype(int),
            "decode_step_s": b("plain_tpot_s"),
            "decode_compute_s": b("decode_compute_s"),
            "decode_memory_s": b("decode_memory_s"),
            "decode_comm_s": b("decode_comm_s"),
            "tokens_per_s": grid / b("plain_tpot_s"),
            "tokens_per_s_per_gpu": grid / b("plain_tpot_s") / _f(x.tp),
            "compute_bound": b("decode_compute_bound"),
            "fits_memory": b("batch_fits_memory"),
        }
    )


def latency_throughput(result: Result, limit: int | None = None) -> pd.DataFrame:
    """TPOT vs output tokens/s per GPU and $/M output tokens over batch 1 … the largest batch
    that fits (log2 grid; speculative decoding included when it is on).  When no sequence
    fits the grid runs 1 … batch with ``fits_memory`` False.  ``limit`` as in ``decode_vs_batch``."""
    x = result.inputs
    limit = max_batch_that_fits(result) if limit is None else limit
    top = float(limit) or _f(x.batch)
    grid = pow2_grid(1, top, top, min(_f(x.batch), top))
    grid = grid[grid <= top]
    out = compute(x.with_(batch=grid))
    n = len(grid)
    b = lambda k: np.broadcast_to(out[k], n)  # noqa: E731
    return pd.DataFrame(
        {
            "batch": grid.astype(int),
            "tpot_s": b("tpot_s"),
            "tokens_per_s_per_gpu": b("decode_tokens_per_s_per_gpu"),
            "cost_per_million_output_tokens_usd": b("cost_per_million_output_tokens_usd"),
            "fits_memory": b("batch_fits_memory"),
        }
    )


def ttft_vs_prompt(result: Result) -> pd.DataFrame:
    """TTFT of one prompt on an idle replica (``roofline.prefill``) vs prompt length,
    log-spaced 16 … max(window, prompt), plus the scenario's prompt."""
    x = result.inputs
    window, p = _f(x.context_window_tokens), _f(x.prompt_tokens)
    grid = log_grid(PROMPT_MIN_TOKENS, max(window, p, 2 * PROMPT_MIN_TOKENS), PROMPT_POINTS, p)
    cost = prefill(x.as_arrays(), tokens=grid)
    return pd.DataFrame(
        {
            "prompt_tokens": grid.astype(int),
            "ttft_s": np.broadcast_to(cost.time_s, grid.shape),
            "compute_bound": np.broadcast_to(cost.compute_bound, grid.shape),
            "within_context_window": grid <= window,
        }
    )


# ---------------------------------------------------------------- chunked prefill


def chunked_curves(result: Result) -> pd.DataFrame:
    """Newcomer TTFT and running streams' largest inter-token gap vs chunk size
    (``chunked.chunked_prefill`` over a 16·2^k grid up to ≥ prompt + batch, plus the scenario's
    chunk and prompt + batch), with the no-chunking values on every row.  The step budget
    covers the B decodes first, so only chunks above B admit the newcomer: smaller ones
    (TTFT never) are left out."""
    x = result.inputs.as_arrays()
    p, b_ = _f(x.prompt_tokens), _f(x.batch)
    top = max(p + b_, CHUNK_MIN_TOKENS)
    grid = pow2_grid(CHUNK_MIN_TOKENS, top, _f(x.chunk_tokens), top)
    grid = grid[grid > b_]
    out = chunked_prefill(x, chunk_tokens=grid)
    n = len(grid)
    b = lambda k: np.broadcast_to(out[k], n)  # noqa: E731
    return pd.DataFrame(
        {
            "chunk_tokens": grid.astype(int),
            "chunked_steps": b("chunked_steps").astype(int),
            "newcomer_ttft_s": b("chunked_ttft_s"),
            "running_itl_s": b("chunked_max_itl_s"),
            "nochunk_newcomer_ttft_s": b("nochunk_ttft_s"),
            "nochunk_running_itl_s": b("nochunk_max_itl_s"),
        }
    )


# ---------------------------------------------------------------- speculative decoding


def speculative_grid(result: Result) -> pd.DataFrame:
    """Speedup over α (0 … 1 step 0.05) × γ (1 … 12) at the scenario's batch (one
    ``speculative.speedup`` call).  ``loses``: speedup < 1 (slower than plain decoding)."""
    x = result.inputs.as_arrays()
    a, g = np.meshgrid(ALPHA_GRID, GAMMA_GRID, indexing="ij")
    s = speedup(x, alpha=a, gamma=g)
    return pd.DataFrame(
        {
            "alpha": a.ravel(),
            "gamma": g.ravel().astype(int),
            "expected_tokens_per_step": expected_tokens_per_step(a, g).ravel(),
            "speedup": s.ravel(),
            "loses": s.ravel() < 1.0,
        }
    )


def spec_batch_top(result: Result) -> int:
    """The largest batch the speedup-vs-batch chart draws: the sequences the KV cache holds (whole, at least
    one), at most ``SPEC_BATCH_MAX`` — a batch memory cannot hold is not one the GPU runs (issue 30: the
    chart ran to 1,024 where 102 sequences fit)."""
    held = float(result.metrics["max_concurrent_sequences"])
    return int(min(SPEC_BATCH_MAX, max(1.0, whole_sequences(held)))) if np.isfinite(held) else SPEC_BATCH_MAX


def speculative_vs_batch(result: Result) -> pd.DataFrame:
    """Speedup at the scenario's α, γ vs batch 1, 2, 4 … up to the batch that fits in KV (``spec_batch_top``),
    plus that batch and the scenario's batch where it fits."""
    x = result.inputs.as_arrays()
    top = spec_batch_top(result)
    grid = pow2_grid(1, top, top, *([_f(x.batch)] if _f(x.batch) <= top else []))
    grid = grid[grid <= top]
    s = np.broadcast_to(speedup(x, batch=grid), grid.shape)
    return pd.DataFrame({"batch": grid.astype(int), "speedup": s, "loses": s < 1.0})


# ---------------------------------------------------------------- prompt caching


def prefix_below_minimum(result: Result) -> bool:
    """True when a non-empty prefix is shorter than the model's minimum cacheable prompt."""
    x = result.inputs.as_arrays()
    return bool(_f(x.prefix_tokens) > 0 and _f(cacheable_prefix_tokens(x)) == 0)


def cache_cost_curves(result: Result) -> pd.DataFrame:
    """Cost per request and per million requests vs hit rate (0 … 1 step 0.01) for no
    cache and 5-minute / 1-hour writes (``prompt_cache.request_cost_usd``, one call).
    ``below_minimum``: the prefix is too short to cache, so every policy costs the same."""
    x = result.inputs.as_arrays()
    w = np.array([CACHE_WRITE_MULTIPLIER[p] for p in WRITE_POLICIES[1:]])
    cached = request_cost_usd(x, HIT_RATE_GRID[:, None], w[None, :])
    none = np.broadcast_to(nocache_cost_usd(x), HIT_RATE_GRID.shape)[:, None]
    cost = np.concatenate([none, np.broadcast_to(cached, (len(HIT_RATE_GRID), len(w)))], axis=1)
    n, k = cost.shape
    return pd.DataFrame(
        {
            "cache_hit_rate": np.repeat(HIT_RATE_GRID, k),
            "write_policy": np.tile(WRITE_POLICIES, n),
            "write_multiplier": np.tile(np.concatenate([[1.0], w]), n),
            "cost_per_request_usd": cost.ravel(),
            "cost_per_million_requests_usd": cost.ravel() * MEGA,
            "below_minimum": prefix_below_minimum(result),
        }
    )


def gpu_cache_curves(result: Result) -> pd.DataFrame:
    """The GPUs' own prefix cache (``engine.prefix_reuse``) vs its hit rate (0 … 1 step 0.01, one ``compute``):
    idle TTFT, the newcomer's TTFT beside the batch, output tokens/s per GPU (prefill included) and the GPU
    cost per million output tokens computed from it; the newcomer's column is left out where it never starts
    (the batch takes the whole step budget) and the cost where the GPU has no price."""
    out = compute(result.inputs.as_arrays().with_(gpu_hit_rate=HIT_RATE_GRID))
    n = HIT_RATE_GRID.size
    names = ("ttft_s", "chunked_ttft_s", "output_tokens_per_s_per_gpu", "cost_per_million_output_tokens_usd")
    columns = {k: np.broadcast_to(np.asarray(out[k], dtype=float), n) for k in names}
    kept = {k: v for k, v in columns.items() if np.isfinite(v).all() and (k != names[3] or v.any())}
    return pd.DataFrame({"gpu_cache_hit_rate": HIT_RATE_GRID, **kept})


def cache_break_even(result: Result) -> pd.DataFrame:
    """Break-even hit rate h* = (w − 1) / (w − r) per write policy and the cost per request
    there (equal to no caching by definition)."""
    x = result.inputs.as_arrays()
    w = np.array([CACHE_WRITE_MULTIPLIER[p] for p in WRITE_POLICIES[1:]])
    h = break_even_hit_rate(w, _f(x.cache_read_multiplier))
    return pd.DataFrame(
        {
            "write_policy": list(WRITE_POLICIES[1:]),
            "write_multiplier": w,
            "break_even_hit_rate": h,
            "cost_per_request_usd": np.broadcast_to(request_cost_usd(x, h, w), w.shape),
            "below_minimum": prefix_below_minimum(result),
        }
    )
