"""Roofline step times: prefill, decode and mixed steps, per GPU of a TP group.

One scheduler step processes ``seqs`` running sequences with ``q`` new tokens
each at context ``ctx`` (decode: q = 1; speculative verification: q = γ + 1),
plus ``n`` prefill tokens of one prompt whose first ``past`` tokens are cached.

A step is two operator groups that run one after the other, each with its own
roofline (per-operator roofline, as in LLM-Viewer; docs/model.md §4–5):
  matmul    F_mm  = [2 · (N_active − N_head) · T + 2 · N_head · T_logits] / tp   (T = seqs·q + n;
                    Kaplan et al. 2020; the LM head runs only for tokens that need
                    logits: T_logits = seqs·q + [n > 0])
            B_mm  = weights touched + T · layers · activation elements / tp · 2 B
  attention F_att = 2 · h · d_att · layers_eff · (seqs·q·ctx + n·(past + (n+1)/2)) / tp  (causal)
            B_att = seqs·KV(ctx) + past·KV/token   (KV read)  + T · KV/token  (KV written)
time   = R(F_mm / peak′, B_mm / bw′) + R(F_att / (a_c · peak′), B_att / (a_m · bw′)) + t_comm
         R(c, m) = max(c, m) + (1 − o) · min(c, m)       (o = 1: the roofline, max(c, m))
         peak′ = peak · MFU, bw′ = bandwidth · MBU (one GPU)
         o, a_c, a_m: the profile's compute_memory_overlap, attention_compute_frac and
         attention_bandwidth_frac — 1 in every datasheet profile (the plain roofline);
         measured by ``python -m planner bench`` for a calibrated one (docs/model.md §4)
t_comm = 2 · layers · (2 (tp−1)/tp · T · hidden · 2 B / link + latency),  tp > 1
         (Megatron-LM: two all-reduces per layer; ring all-reduce cost)
Totals kept for display: flop = F_mm + F_att, bytes = B_mm + B_att,
compute_s = Σ part FLOP / its rate, memory_s = Σ part bytes / its rate (the
single-roofline view; the step time is NOT max(compute_s, memory_s));
compute_bound = the matmul part is.
Weights touched: all weights except an untied input-embedding table (a lookup reads
only T of its rows, neglected); MoE: dense part + moe_layers · E · (1 − (1 − k/E)^T)
experts (expected distinct experts hit by T tokens routed uniformly).
d_att = d_qk + d_v per head; sliding-window layers attend to at most W keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue, Quantity
from planner.engine.memory import kv_bytes_per_sequence, kv_bytes_per_token_per_layer, kv_layers
from planner.units import ACTIVATION_BYTES


@dataclass(frozen=True)
class StepCost:
    """Per-GPU cost of one step: totals plus the two operator groups (module doc)."""

    matmul_flop: Array  # F_mm
    matmul_bytes: Array  # B_mm
    attention_flop: Array  # F_att
    attention_bytes: Array  # B_att
    s_per_flop: Array  # 1 / (peak · MFU)
    s_per_byte: Array  # 1 / (bandwidth · MBU)
    comm_s: Array
    overlap: Quantity = 1.0  # o in overlapped_s
    attention_s_per_flop_factor: Quantity = 1.0  # 1 / a_c
    attention_s_per_byte_factor: Quantity = 1.0  # 1 / a_m

    @property
    def flop(self) -> Array:
        return self.matmul_flop + self.attention_flop

    @property
    def bytes(self) -> Array:
        return self.matmul_bytes + self.attention_bytes

    @property
    def compute_s(self) -> Array:
        """Each part's FLOP at its rate, summed (display; the step time sums the parts' rooflines)."""
        return self.matmul_compute_s + self.attention_compute_s

    @property
    def memory_s(self) -> Array:
        """Each part's bytes at its rate, summed (display)."""
        return self.matmul_memory_s + self.attention_memory_s

    @property
    def matmul_compute_s(self) -> Array:
        return self.matmul_flop * self.s_per_flop

    @property
    def matmul_memory_s(self) -> Array:
        return self.matmul_bytes * self.s_per_byte

    @property
    def attention_compute_s(self) -> Array:
        return self.attention_flop * self.s_per_flop * self.attention_s_per_flop_factor

    @property
    def attention_memory_s(self) -> Array:
        return self.attention_bytes * self.s_per_byte * self.attention_s_per_byte_factor

    @property
    def matmul_s(self) -> Array:
        return overlapped_s(self.matmul_compute_s, self.matmul_memory_s, self.overlap)

    @property
    def attention_s(self) -> Array:
        return overlapped_s(self.attention_compute_s, self.attention_memory_s, self.overlap)

    @property
    def time_s(self) -> Array:
        """R(matmul) + R(attention) + t_comm (module doc)."""
        return self.matmul_s + self.attention_s + self.comm_s

    @property
    def compute_bound(self) -> MetricValue:
        """The weight matmuls (the part that changes regime with batch) are compute-bound."""
        return self.matmul_compute_s >= self.matmul_memory_s


def overlapped_s(compute_s, memory_s, overlap):
    """Time of an operator group that must do ``compute_s`` of arithmetic and ``memory_s`` of
    memory traffic:  max(c, m) + (1 − o) · min(c, m).

    o = 1: the two hide under each other completely — the roofline, max(c, m) (Williams,
    Waterman & Patterson 2009).  o = 0: they run back to back, c + m (what the
    Execution-Cache-Memory model of Hager & Wellein assumes for a CPU core's loads and
    arithmetic).  o < 0: slower than back to back (a kernel that re-packs its operand on
    every call).  Datasheet profiles keep o = 1; ``python -m planner bench`` measures it
    (docs/benchmark.md).  Also the simulator's per-step path (``step_time``) — keep in step.
    """
    lo = np.minimum(compute_s, memory_s)
    return np.maximum(compute_s, memory_s) + (1.0 - overlap) * lo


def weight_bytes_read_per_gpu(x: EngineInputs) -> Array:
    """W = (N − N_lookup) · b_w / tp: every weight but an untied embedding table (a lookup), every expert."""
    return (x.total_params - x.lookup_params) * x.weight_bytes_per_param / x.tp


def weight_bytes_touched_per_gpu(x: EngineInputs, tokens) -> Array:
    """Weights read in a step of ``tokens`` tokens: not the untied embedding table (a
    lookup); for MoE only the experts hit."""
    if not np.any(x.experts > 0):  # no MoE in this batch of scenarios: every weight is read
        return weight_bytes_read_per_gpu(x)
    dense = x.total_params - x.lookup_params - x.moe_layers * x.experts * x.expert_params
    miss_one = 1.0 - np.clip(x.experts_per_token / np.maximum(x.experts, 1.0), 0.0, 1.0)
    hit = x.experts * (1.0 - miss_one**tokens)
    return (dense + x.moe_layers * hit * x.expert_params) * x.weight_bytes_per_param / x.tp


def _attended_layer_keys(x: EngineInputs, keys) -> Array:
    """Σ over layers of keys attended: full layers see ``keys``, window layers min(keys, W)."""
    return x.full_attention_layers * keys + x.window_layers * np.minimum(keys, x.window_tokens)


def attention_flop(x: EngineInputs, queries, keys, dim) -> Array:
    """2 · h · d_att · Σ_layers keys · queries (QKᵀ and AV, 2 FLOP per MAC)."""
    return 2.0 * x.heads * dim * queries * _attended_layer_keys(x, keys)


def activation_bytes_per_token(x: EngineInputs) -> Array:
    """Activation traffic of one token through the matmuls: layers · a / tp · 2 B."""
    return x.layers * x.activation_elements_per_token_per_layer / x.tp * ACTIVATION_BYTES


def comm_s(x: EngineInputs, tokens) -> Array:
    """Two ring all-reduces per layer of a (tokens × hidden) bf16 activation."""
    msg = tokens * x.hidden * ACTIVATION_BYTES
    ring = 2.0 * (x.tp - 1.0) / x.tp * msg / x.link_bytes_per_s
    return np.where(x.tp > 1, 2.0 * x.layers * (ring + x.collective_latency_s), 0.0)


def step_cost(x: EngineInputs, seqs=0.0, q=1.0, ctx=0.0, n=0.0, past=0.0) -> StepCost:
    """Cost of one mixed step (see module doc).  All arguments broadcast."""
    seqs, q, ctx, n, past = (np.asarray(v, dtype=float) for v in (seqs, q, ctx, n, past))
    tokens = seqs * q + n
    logit_tokens = seqs * q + (n > 0)
    matmul_flop = (2.0 * (x.matmul_params - x.lm_head_params) * tokens + 2.0 * x.lm_head_params * logit_tokens) / x.tp
    attention_flop_ = (
        attention_flop(x, seqs * q, ctx, x.attention_dim_decode)
        + attention_flop(x, n, past + (n + 1.0) / 2.0, x.attention_dim_prefill)
    ) / x.tp
    kv_tok = kv_layers(x) * kv_bytes_per_token_per_layer(x)
    return StepCost(
        matmul_flop=matmul_flop,
        matmul_bytes=weight_bytes_touched_per_gpu(x, tokens) + tokens * activation_bytes_per_token(x),
        attention_flop=attention_flop_,
        # the prefill chunk's cache (and a hybrid's state) is read only when there is a chunk
        attention_bytes=seqs * kv_bytes_per_sequence(x, ctx)
        + np.where(n > 0, kv_bytes_per_sequence(x, past), 0.0)
        + tokens * kv_tok,
        s_per_flop=1.0 / (x.peak_flop_per_s * x.mfu),
        s_per_byte=1.0 / (x.bandwidth_bytes_per_s * x.mbu),
        comm_s=comm_s(x, tokens),
        overlap=x.compute_memory_overlap,
        attention_s_per_flop_factor=1.0 / x.attention_compute_frac,
        attention_s_per_byte_factor=1.0 / x.attention_bandwidth_frac,
    )


def prefill(x: EngineInputs, tokens=None, past=0.0) -> StepCost:
    """Prefill of one prompt on an idle replica (TTFT): ``tokens`` new after ``past`` cached."""
    return step_cost(x, n=x.prompt_tokens if tokens is None else tokens, past=past)


def decode_context_tokens(x: EngineInputs) -> Array:
    """Mean context over a generation: prompt + output / 2."""
    return x.prompt_tokens + x.output_tokens / 2.0


def decode(x: EngineInputs, batch=None, ctx=None) -> StepCost:
    """One decode step for ``batch`` sequences at context ``ctx``."""
    return step_cost(
        x,
        seqs=x.batch if batch is None else batch,
        ctx=decode_context_tokens(x) if ctx is None else ctx,
    )


def ridge_batch(x: EngineInputs) -> Array:
    """Batch where the decode step's weight matmuls turn compute-bound.

    Matmul part at batch B: t_c = B · 2·N_matmul/tp / peak′,  t_m = (W + B · β_act) / bw′,
    W = weights per GPU read (all experts), β_act = layers · a / tp · 2 B.  Attention is a
    separate roofline (KV reads, memory-bound) added on top, so the turn does not
    depend on context:  B* = (W/bw′) / (2·N_matmul/tp/peak′ − β_act/bw′);
    ``inf`` when the denominator ≤ 0.
    """
    peak = x.peak_flop_per_s * x.mfu
    bw = x.bandwidth_bytes_per_s * x.mbu
    w = weight_bytes_read_per_gpu(x)
    denom = 2.0 * x.matmul_params / x.tp / peak - activation_bytes_per_token(x) / bw
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, (w / bw) / np.where(denom > 0, denom, 1.0), np.inf)
