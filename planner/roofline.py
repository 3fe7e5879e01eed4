"""Roofline step times: prefill, decode and mixed steps, per GPU of a TP group.

One scheduler step processes ``seqs`` running sequences with ``q`` new tokens
each at context ``ctx`` (decode: q = 1; speculative verification: q = γ + 1),
plus ``n`` prefill tokens of one prompt whose first ``past`` tokens are cached.

FLOP   = 2 · (N_active − N_head) · T + 2 · N_head · T_logits  (T = seqs·q + n; Kaplan et al. 2020;
         the LM head runs only for tokens that need logits: T_logits = seqs·q + [n > 0])
       + 2 · h · d_att · layers_eff · (seqs·q·ctx + n·(past + (n+1)/2))    (causal attention)
bytes  = weights touched + seqs·KV(ctx) + past·KV/token    (KV read)
       + T · KV/token                                      (KV written)
       + T · layers · activation elements / tp · 2 B       (activations)
time   = max(FLOP / (tp · peak · MFU), bytes / (bandwidth · MBU)) + t_comm
t_comm = 2 · layers · (2 (tp−1)/tp · T · hidden · 2 B / link + latency),  tp > 1
         (Megatron-LM: two all-reduces per layer; ring all-reduce cost)
Weights touched: all weights except an untied input-embedding table (a lookup reads
only T of its rows, neglected); MoE: dense part + moe_layers · E · (1 − (1 − k/E)^T)
experts (expected distinct experts hit by T tokens routed uniformly).
d_att = d_qk + d_v per head; sliding-window layers attend to at most W keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .inputs import EngineInputs
from .memory import kv_bytes_per_sequence, kv_bytes_per_token_per_layer
from .units import ACTIVATION_BYTES


@dataclass(frozen=True)
class StepCost:
    flop: np.ndarray  # per GPU
    bytes: np.ndarray  # per GPU
    compute_s: np.ndarray
    memory_s: np.ndarray
    comm_s: np.ndarray

    @property
    def time_s(self) -> np.ndarray:
        return np.maximum(self.compute_s, self.memory_s) + self.comm_s

    @property
    def compute_bound(self) -> np.ndarray:
        return self.compute_s >= self.memory_s

    @property
    def arithmetic_intensity(self) -> np.ndarray:
        """FLOP per byte moved."""
        return self.flop / self.bytes


def weight_bytes_touched_per_gpu(x: EngineInputs, tokens) -> np.ndarray:
    """Weights read in a step of ``tokens`` tokens: not the untied embedding table (a
    lookup); for MoE only the experts hit."""
    if not np.any(x.experts > 0):  # no MoE in this batch of scenarios: every weight is read
        return (x.total_params - x.lookup_params) * x.weight_bytes_per_param / x.tp
    dense = x.total_params - x.lookup_params - x.moe_layers * x.experts * x.expert_params
    miss_one = 1.0 - np.clip(x.experts_per_token / np.maximum(x.experts, 1.0), 0.0, 1.0)
    hit = x.experts * (1.0 - miss_one**tokens)
    return (dense + x.moe_layers * hit * x.expert_params) * x.weight_bytes_per_param / x.tp


def _attended_layer_keys(x: EngineInputs, keys) -> np.ndarray:
    """Σ over layers of keys attended: full layers see ``keys``, window layers min(keys, W)."""
    return x.full_attention_layers * keys + x.window_layers * np.minimum(keys, x.window_tokens)


def attention_flop(x: EngineInputs, queries, keys, dim) -> np.ndarray:
    """2 · h · d_att · Σ_layers keys · queries (QKᵀ and AV, 2 FLOP per MAC)."""
    return 2.0 * x.heads * dim * queries * _attended_layer_keys(x, keys)


def comm_s(x: EngineInputs, tokens) -> np.ndarray:
    """Two ring all-reduces per layer of a (tokens × hidden) bf16 activation."""
    msg = tokens * x.hidden * ACTIVATION_BYTES
    ring = 2.0 * (x.tp - 1.0) / x.tp * msg / x.link_bytes_per_s
    return np.where(x.tp > 1, 2.0 * x.layers * (ring + x.collective_latency_s), 0.0)


def step_cost(x: EngineInputs, seqs=0.0, q=1.0, ctx=0.0, n=0.0, past=0.0) -> StepCost:
    """Cost of one mixed step (see module doc).  All arguments broadcast."""
    seqs, q, ctx, n, past = (np.asarray(v, dtype=float) for v in (seqs, q, ctx, n, past))
    tokens = seqs * q + n
    logit_tokens = seqs * q + (n > 0)
    flop = (
        2.0 * (x.matmul_params - x.lm_head_params) * tokens
        + 2.0 * x.lm_head_params * logit_tokens
        + attention_flop(x, seqs * q, ctx, x.attention_dim_decode)
        + attention_flop(x, n, past + (n + 1.0) / 2.0, x.attention_dim_prefill)
    ) / x.tp
    kv_tok = x.layers * kv_bytes_per_token_per_layer(x)
    bytes_ = (
        weight_bytes_touched_per_gpu(x, tokens)
        + seqs * kv_bytes_per_sequence(x, ctx)
        + kv_bytes_per_sequence(x, past)
        + tokens * kv_tok
        + tokens * x.layers * x.activation_elements_per_token_per_layer / x.tp * ACTIVATION_BYTES
    )
    return StepCost(
        flop=flop,
        bytes=bytes_,
        compute_s=flop / (x.peak_flop_per_s * x.mfu),
        memory_s=bytes_ / (x.bandwidth_bytes_per_s * x.mbu),
        comm_s=comm_s(x, tokens),
    )


def prefill(x: EngineInputs, tokens=None, past=0.0) -> StepCost:
    """Prefill of one prompt on an idle replica (TTFT): ``tokens`` new after ``past`` cached."""
    return step_cost(x, n=x.prompt_tokens if tokens is None else tokens, past=past)


def decode_context_tokens(x: EngineInputs) -> np.ndarray:
    """Mean context over a generation: prompt + output / 2."""
    return x.prompt_tokens + x.output_tokens / 2.0


def decode(x: EngineInputs, batch=None, ctx=None) -> StepCost:
    """One decode step for ``batch`` sequences at context ``ctx``."""
    return step_cost(
        x,
        seqs=x.batch if batch is None else batch,
        ctx=decode_context_tokens(x) if ctx is None else ctx,
    )


def ridge_batch(x: EngineInputs) -> np.ndarray:
    """Batch where a decode step turns compute-bound: t_compute(B) = t_memory(B).

    t_c = B·f/(peak·MFU),  t_m = (W + B·b)/(bw·MBU), with f, b the per-sequence FLOP
    and bytes of one step (attention and KV included) and W the weights read (all experts).
    B* = (W/bw') / (f/peak' − b/bw'); ``inf`` when attention keeps the step memory-bound
    at every batch (f/peak' ≤ b/bw').
    """
    ctx = decode_context_tokens(x)
    peak = x.peak_flop_per_s * x.mfu
    bw = x.bandwidth_bytes_per_s * x.mbu
    w = (x.total_params - x.lookup_params) * x.weight_bytes_per_param / x.tp
    f = (2.0 * x.matmul_params + attention_flop(x, 1.0, ctx, x.attention_dim_decode)) / x.tp
    b = (
        kv_bytes_per_sequence(x, ctx)
        + x.layers * kv_bytes_per_token_per_layer(x)
        + x.layers * x.activation_elements_per_token_per_layer / x.tp * ACTIVATION_BYTES
    )
    denom = f / peak - b / bw
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (w / bw) / np.where(denom > 0, denom, 1.0), np.inf)
