"""Memory plan per GPU: weights, KV cache, activation reserve, concurrency.

All functions take ``EngineInputs`` (arrays broadcast) and return arrays.

KV bytes per token        = 2 · layers · kv_heads · head_dim · kv_dtype_bytes
                            (MLA: layers · (kv_lora_rank + rope_dim) · kv_dtype_bytes)
                            — NVIDIA, "Mastering LLM Techniques: Inference Optimization" (2023);
                            DeepSeek-V2 paper §2.1 for MLA.
KV bytes for L tokens     = per-layer-token bytes · (full_layers · L + window_layers · min(L, W))
                            + fixed state of the state layers (linear attention, Mamba) / tp
Weights per GPU           = params · bytes_per_param / tp
Reserve per GPU           = 512 MiB workspace + step_tokens · activation elements/layer / tp · 2 B
                            + sampled sequences · vocab · 4 B (fp32 logits)
KV budget per GPU         = capacity · mem_util − weights/tp − reserve
Max concurrency (paged)   = most N with N·KV(⌈L/block⌉·block) + reserve(batch N) ≤ usable − weights/tp
                            — Kwon et al., SOSP 2023
Max concurrency (contig.) = the same with KV(max(window, L))       (worst-case reservation)
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue, Quantity, broadcast_shape
from planner.units import ACTIVATION_BYTES, MiB

#: CUDA context aside, what a serving process allocates outside weights and KV
#: regardless of load (cuBLAS/NCCL workspaces, CUDA-graph pools).
FIXED_WORKSPACE_BYTES = 512 * MiB
LOGIT_BYTES = 4.0  # fp32 logits for sampling
TP_CANDIDATES = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)


def kv_bytes_per_token_per_layer(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """Bytes one token adds to one layer's cache on one GPU.

    With tensor parallelism K/V heads are split across ranks: each holds
    ⌈g / tp⌉ heads (replicated when tp > g).  The MLA latent is replicated.
    """
    tp = x.tp if tp is None else tp
    per_layer = x.kv_elements_per_token_per_layer * x.kv_bytes_per_element
    share = np.ceil(x.kv_heads / tp) / x.kv_heads
    return per_layer * np.where(x.kv_sharded > 0, share, 1.0)


def kv_bytes_per_token(x: EngineInputs) -> Array:
    """Whole-model KV bytes per token (all attention layers, all GPUs): 2·L·g·k·b (MLA: L·(r+k_rope)·b)."""
    return kv_layers(x) * x.kv_elements_per_token_per_layer * x.kv_bytes_per_element


def kv_layers(x: EngineInputs) -> Array:
    """Layers that cache K/V: full plus sliding/chunked attention (state layers cache none)."""
    return x.full_attention_layers + x.window_layers


def kv_bytes_per_token_for_heads(x: EngineInputs, kv_heads: Quantity) -> Array:
    """What the cache would cost per token with ``kv_heads`` K/V heads (MHA = heads, MQA = 1):
    2 · L · g · k · b.  For an MLA model k is the mean of its expanded K and V head dims."""
    return 2 * kv_layers(x) * kv_heads * x.head_dim * x.kv_bytes_per_element


def kv_cached_layer_tokens(x: EngineInputs, context_tokens: Quantity) -> Array:
    """Σ over layers of tokens cached: full layers keep L, sliding-window layers min(L, W)."""
    return x.full_attention_layers * context_tokens + x.window_layers * np.minimum(context_tokens, x.window_tokens)


def kv_bytes_per_sequence(x: EngineInputs, context_tokens: Quantity, tp: Quantity | None = None) -> Array:
    """KV bytes of one sequence of ``context_tokens`` on one GPU, plus the state layers' fixed
    state (split over the tp ranks with their heads, as vLLM's MambaStateShapeCalculator does)."""
    state = x.state_bytes_per_sequence / (x.tp if tp is None else tp)
    return kv_bytes_per_token_per_layer(x, tp) * kv_cached_layer_tokens(x, context_tokens) + state


def weight_bytes_total(x: EngineInputs) -> Array:
    return x.total_params * x.weight_bytes_per_param


def weight_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    tp = x.tp if tp is None else tp
    return weight_bytes_total(x) / tp


def step_tokens(x: EngineInputs) -> Array:
    """Largest number of tokens one scheduler step processes: max(chunk budget, batch)."""
    return np.maximum(x.chunk_tokens, x.batch)


def reserve_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """Activation and workspace reserve, from the tokens batched per step (see module doc)."""
    tp = x.tp if tp is None else tp
    acts = step_tokens(x) * x.activation_elements_per_token_per_layer / tp * ACTIVATION_BYTES
    logits = x.batch * x.vocab * LOGIT_BYTES
    return FIXED_WORKSPACE_BYTES + acts + logits


def kv_budget_raw_bytes(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """capacity · mem_util − weights/tp − reserve (negative when the weights do not fit)."""
    return x.memory_bytes * x.mem_util - weight_bytes_per_gpu(x, tp) - reserve_bytes_per_gpu(x, tp)


def context_tokens(x: EngineInputs) -> Array:
    return x.prompt_tokens + x.output_tokens


def paged_context_tokens(x: EngineInputs) -> Array:
    """Tokens a paged sequence reserves: its context rounded up to whole blocks."""
    return np.ceil(context_tokens(x) / x.block_tokens) * x.block_tokens


def contiguous_context_tokens(x: EngineInputs) -> Array:
    """Tokens a contiguous allocator reserves: the whole window (or the context, if longer)."""
    return np.maximum(x.context_window_tokens, context_tokens(x))


def max_sequences(x: EngineInputs, seq_bytes: Quantity, tp: Quantity | None = None) -> Array:
    """Most sequences N that fit together, counting the reserve they themselves need.

    The reserve grows with the batch (logits, and activations once N > C), so N solves
    N·s + max(C, N)·a + N·ℓ ≤ A,  A = usable − weights/tp − workspace,
    a = activation bytes per step token, ℓ = logit bytes per sequence:
    N₁ = ⌊(A − C·a) / (s + ℓ)⌋ if N₁ ≤ C, else N₂ = ⌊A / (s + a + ℓ)⌋  (≥ C then).
    """
    tp = x.tp if tp is None else tp
    avail = x.memory_bytes * x.mem_util - weight_bytes_per_gpu(x, tp) - FIXED_WORKSPACE_BYTES
    act = x.activation_elements_per_token_per_layer / tp * ACTIVATION_BYTES
    logit = x.vocab * LOGIT_BYTES
    n1 = np.floor((avail - x.chunk_tokens * act) / (seq_bytes + logit))
    n2 = np.floor(avail / (seq_bytes + act + logit))
    return np.maximum(np.where(n1 <= x.chunk_tokens, n1, n2), 0.0)


def memory_plan(x: EngineInputs) -> dict[str, MetricValue]:
    """The per-GPU memory plan and concurrency limits (see module doc)."""
    raw = kv_budget_raw_bytes(x)
    budget = np.maximum(raw, 0.0)
    per_tok_gpu = kv_layers(x) * kv_bytes_per_token_per_layer(x)
    seq_actual = kv_bytes_per_sequence(x, context_tokens(x))
    seq_paged = kv_bytes_per_sequence(x, paged_context_tokens(x))
    seq_contig = kv_bytes_per_sequence(x, contiguous_context_tokens(x))
    capacity_tokens = np.floor(budget / per_tok_gpu / x.block_tokens) * x.block_tokens
    max_paged = max_sequences(x, seq_paged)
    max_contig = max_sequences(x, seq_contig)
    return {
        "kv_bytes_per_token": kv_bytes_per_token(x),
        "kv_bytes_per_token_per_gpu": per_tok_gpu,
        "kv_bytes_per_sequence": kv_bytes_per_sequence(x, context_tokens(x), tp=1.0),
        "weight_bytes_total": weight_bytes_total(x),
        "weight_bytes_per_gpu": weight_bytes_per_gpu(x),
        "reserve_bytes_per_gpu": reserve_bytes_per_gpu(x),
        "usable_bytes_per_gpu": x.memory_bytes * x.mem_util,
        "kv_budget_bytes_per_gpu": budget,
        "fits": (raw > 0) & (max_paged >= 1),
        "kv_capacity_tokens": capacity_tokens,
        "max_concurrent_sequences": max_paged,
        "max_concurrent_sequences_contiguous": max_contig,
        "kv_waste_frac_paged": 1.0 - seq_actual / seq_paged,
        "kv_waste_frac_contiguous": 1.0 - seq_actual / seq_contig,
        "batch_fits_memory": max_paged >= x.batch,
        "min_tp_that_fits": min_tp_that_fits(x),
    }


def min_tp_that_fits(x: EngineInputs) -> Array:
    """Smallest tp in 1, 2, 4 … 64 where weights + reserve leave room for one sequence; 0 if none."""
    tps = TP_CANDIDATES.reshape((-1,) + (1,) * len(broadcast_shape(x)))
    seq = kv_bytes_per_sequence(x, paged_context_tokens(x), tps)
    ok = np.asarray(max_sequences(x, seq, tps) >= 1)
    first = np.argmax(ok, axis=0)
    return np.where(ok.any(axis=0), TP_CANDIDATES[first], 0.0)
