"""Speculative decoding (Leviathan, Kalman & Matias, ICML 2023; Chen et al. 2023).

A draft proposes γ tokens; the target verifies them in one pass of γ + 1
tokens per sequence.  With i.i.d. acceptance α the expected tokens per pass is
    E(α, γ) = (1 − α^(γ+1)) / (1 − α)          (γ + 1 when α = 1; 1 when γ = 0)
Step time    = γ · t_draft(B) + t_verify(B, γ + 1)
  t_draft  = the draft preset's own decode step at batch B, or c · t_target(B) (cost ratio c)
  t_verify = target roofline step with B·(γ+1) tokens at the same context
Speedup      = E · t_target(B) / step time.  With t_verify = t_target this is the
paper's (1 − α^(γ+1)) / ((1 − α)(γc + 1)); the roofline makes the gain fade once
the verification pass turns compute-bound (large batch).
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue, broadcast_shape
from planner.engine.roofline import (
    decode,
    decode_context_tokens,
    overlapped_s,
    step_cost,
    weight_bytes_touched_per_gpu,
)

GAMMA_GRID = np.arange(0, 13, dtype=float)


def expected_tokens_per_step(alpha, gamma) -> Array:
    """E(α, γ) = (1 − α^(γ+1)) / (1 − α); the α → 1 limit is γ + 1."""
    alpha = np.asarray(alpha, dtype=float)
    gamma = np.asarray(gamma, dtype=float)
    safe = np.where(alpha < 1.0, alpha, 0.5)
    return np.where(alpha < 1.0, (1.0 - safe ** (gamma + 1.0)) / (1.0 - safe), gamma + 1.0)


def draft_model_inputs(x: EngineInputs) -> EngineInputs:
    """The draft preset as a dense model on the same GPUs (same dtypes, tp, context)."""
    return x.with_(
        total_params=x.draft_total_params,
        matmul_params=x.draft_matmul_params,
        lm_head_params=x.draft_lm_head_params,
        lookup_params=x.draft_lookup_params,
        layers=x.draft_layers,
        hidden=x.draft_hidden,
        heads=x.draft_heads,
        kv_heads=x.draft_kv_heads,  # the draft runs at the target's tp: its K/V heads split like the target's
        kv_sharded=1.0,
        kv_elements_per_token_per_layer=x.draft_kv_elements_per_token_per_layer,
        full_attention_layers=x.draft_layers,
        window_layers=0.0,
        attention_dim_decode=x.draft_attention_dim,
        attention_dim_prefill=x.draft_attention_dim,
        activation_elements_per_token_per_layer=x.draft_activation_elements_per_token_per_layer,
        moe_layers=0.0,
        experts=0.0,
        expert_params=0.0,
        state_bytes_per_sequence=0.0,
    )


def draft_step_s(x: EngineInputs, batch=None, target_step_s=None) -> Array:
    """The draft's step: its own roofline decode step, or c · the target's step."""
    target = decode(x, batch=batch).time_s if target_step_s is None else target_step_s
    own = decode(draft_model_inputs(x), batch=batch).time_s
    return np.where(x.has_draft_model > 0, own, x.draft_ratio * target)


def verify_step_s(x: EngineInputs, q, batch=None) -> Array:
    """Target pass over ``q`` = γ + 1 tokens per sequence, for one q or a grid of them.

    Each part of ``step_cost`` (matmul and attention, compute and memory) is affine in q
    except the MoE weights touched, so the grid is evaluated from two exact steps
    (q = 1, 2) plus the exact weights term; the two parts' rooflines (``overlapped_s``) are
    taken separately and summed, as ``step_cost.time_s`` does.
    """
    b = x.batch if batch is None else batch
    ctx = decode_context_tokens(x)
    one = step_cost(x, seqs=b, q=1.0, ctx=ctx)
    two = step_cost(x, seqs=b, q=2.0, ctx=ctx)
    bw = x.bandwidth_bytes_per_s * x.mbu
    w1 = weight_bytes_touched_per_gpu(x, b * 1.0) / bw
    w2 = weight_bytes_touched_per_gpu(x, b * 2.0) / bw
    dq = np.asarray(q, dtype=float) - 1.0

    def line(v1, v2):
        return v1 + (v2 - v1) * dq

    weights = weight_bytes_touched_per_gpu(x, b * (dq + 1.0)) / bw if np.any(x.experts > 0) else w1
    matmul = overlapped_s(
        line(one.matmul_compute_s, two.matmul_compute_s),
        line(one.matmul_memory_s - w1, two.matmul_memory_s - w2) + weights,
        x.compute_memory_overlap,
    )
    attention = overlapped_s(
        line(one.attention_compute_s, two.attention_compute_s),
        line(one.attention_memory_s, two.attention_memory_s),
        x.compute_memory_overlap,
    )
    return matmul + attention + line(one.comm_s, two.comm_s)


def spec_step_s(x: EngineInputs, gamma=None, batch=None) -> Array:
    g = x.gamma if gamma is None else np.asarray(gamma, dtype=float)
    return g * draft_step_s(x, batch=batch) + verify_step_s(x, g + 1.0, batch=batch)


def speedup(x: EngineInputs, alpha=None, gamma=None, batch=None) -> Array:
    a = x.alpha if alpha is None else alpha
    g = x.gamma if gamma is None else gamma
    plain = decode(x, batch=batch).time_s
    return expected_tokens_per_step(a, g) * plain / spec_step_s(x, gamma=g, batch=batch)


def speculative(x: EngineInputs, plain_step_s=None) -> dict[str, MetricValue]:
    plain = decode(x).time_s if plain_step_s is None else plain_step_s
    draft = draft_step_s(x, target_step_s=plain)
    e = expected_tokens_per_step(x.alpha, x.gamma)
    step = x.gamma * draft + verify_step_s(x, x.gamma + 1.0)
    # one axis for γ in front of every scenario axis (α or the draft ratio may vary alone)
    grid = GAMMA_GRID.reshape((-1,) + (1,) * len(broadcast_shape(x)))
    gains = expected_tokens_per_step(x.alpha, grid) * plain / (grid * draft + verify_step_s(x, grid + 1.0))
    best = np.argmax(gains, axis=0)
    return {
        "spec_expected_tokens_per_step": e,
        "spec_step_s": step,
        "spec_tpot_s": step / e,
        "spec_speedup": e * plain / step,
        "spec_best_gamma": GAMMA_GRID[best],
        "spec_best_speedup": np.take_along_axis(gains, best[None, ...], axis=0)[0],
    }
