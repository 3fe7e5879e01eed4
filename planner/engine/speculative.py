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
Best γ: the highest speedup over every γ the scenario allows, 0 … 16.
The draft's passes run inside the target's scheduler step: they pay their own per-layer
overhead but not a second per-step overhead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue, broadcast_shape
from planner.engine.kernel_step import has_kernels
from planner.engine.roofline import decode, decode_context_tokens, measured_decode_steps, overlapped_s, step_cost

#: every γ a scenario may set (``Scenario.gamma`` ≤ 16): the best-γ search covers them all
GAMMA_GRID = np.arange(0, 17, dtype=float)


def expected_tokens_per_step(alpha, gamma) -> Array:
    """E(α, γ) = (1 − α^(γ+1)) / (1 − α); the α → 1 limit is γ + 1."""
    return tokens_per_step_at(alpha)(gamma)


def tokens_per_step_at(alpha) -> Callable[[Any], Array]:
    """γ ↦ E(α, γ) (``expected_tokens_per_step``) with α's terms taken once (the best-γ search asks 17 γ)."""
    alpha = np.asarray(alpha, dtype=float)
    below = alpha < 1.0
    safe = np.where(below, alpha, 0.5)
    lost = 1.0 - safe

    def at(gamma) -> Array:
        gamma = np.asarray(gamma, dtype=float)
        return np.where(below, (1.0 - safe ** (gamma + 1.0)) / lost, gamma + 1.0)

    return at


def draft_model_inputs(x: EngineInputs) -> EngineInputs:
    """The proposer as a model of its own on the same GPUs (the target's dtypes, tp, context): a draft preset
    (dense), an EAGLE head, or the checkpoint's MTP layers (with their routed experts; MLA's latent replicated)."""
    return x.with_(
        total_params=x.draft_total_params,
        matmul_params=x.draft_matmul_params,
        lm_head_params=x.draft_lm_head_params,
        lookup_params=x.draft_lookup_params,
        layers=x.draft_layers,
        hidden=x.draft_hidden,
        heads=x.draft_heads,
        kv_heads=x.draft_kv_heads,  # the draft runs at the target's tp: its K/V heads split like the target's
        kv_sharded=x.draft_kv_sharded,
        kv_elements_per_token_per_layer=x.draft_kv_elements_per_token_per_layer,
        full_attention_layers=x.draft_layers,
        window_layers=0.0,
        attention_dim_decode=x.draft_attention_dim,
        attention_dim_prefill=x.draft_attention_dim,
        activation_elements_per_token_per_layer=x.draft_activation_elements_per_token_per_layer,
        moe_layers=x.draft_moe_layers,
        experts=x.draft_experts,
        experts_per_token=x.draft_experts_per_token,
        expert_params=x.draft_expert_params,
        state_bytes_per_sequence=0.0,
        step_overhead_s=0.0,  # the draft runs inside the target's step: one scheduler overhead
        host_s_per_seq=0.0,  # … and one pass of the host's work per sequence
        pp=np.ones_like(np.asarray(x.pp, dtype=float)),  # a dense draft on one stage, every dp rank its own
        ep=np.ones_like(np.asarray(x.ep, dtype=float)),
        kernel_set=x.draft_kernel_set,  # the draft's own measured kernels (0: the roofline)
        elementwise_s_per_token=x.elementwise_s_per_token  # ∝ its activation traffic
        * (x.draft_layers * x.draft_activation_elements_per_token_per_layer)
        / np.maximum(x.layers * x.activation_elements_per_token_per_layer, 1.0),
    )


def draft_step_s(x: EngineInputs, batch=None, target_step_s=None) -> Array:
    """The draft's step: its own roofline decode step, or c · the target's step."""
    target = decode(x, batch=batch).time_s if target_step_s is None else target_step_s
    if not np.any(x.has_draft_model > 0):
        return x.draft_ratio * target
    own = decode(draft_model_inputs(x), batch=batch).time_s
    return np.where(x.has_draft_model > 0, own, x.draft_ratio * target)


@dataclass(frozen=True)
class VerifyLines:
    """A dense model's verification pass as lines in dq = q − 1: each part value v1 + dv · dq."""

    mc: tuple[Array, Array]  # matmul compute
    mm: tuple[Array, Array]  # matmul memory
    ac: tuple[Array, Array]  # attention compute
    am: tuple[Array, Array]  # attention memory
    comm: tuple[Array, Array]
    overhead: Array
    overlap: Array


def verify_lines(x: EngineInputs, batch=None) -> VerifyLines:
    """Two exact steps (q = 1, 2) of a dense model give every part's line (``verify_step_s``)."""
    b = x.batch if batch is None else batch
    ctx = decode_context_tokens(x)
    one = step_cost(x, seqs=b, q=1.0, ctx=ctx)
    two = step_cost(x, seqs=b, q=2.0, ctx=ctx)

    def pair(v1, v2):
        return v1, v2 - v1

    return VerifyLines(
        mc=pair(one.matmul_compute_s, two.matmul_compute_s),
        mm=pair(one.matmul_memory_s, two.matmul_memory_s),
        ac=pair(one.attention_compute_s, two.attention_compute_s),
        am=pair(one.attention_memory_s, two.attention_memory_s),
        comm=pair(one.comm_s, two.comm_s),
        overhead=one.overhead_s,
        overlap=x.compute_memory_overlap,
    )


def _on_lines(v: VerifyLines, dq) -> Array:
    def at(line):
        return line[0] + line[1] * dq

    matmul = overlapped_s(at(v.mc), at(v.mm), v.overlap)
    attention = overlapped_s(at(v.ac), at(v.am), v.overlap)
    return v.overhead + matmul + attention + at(v.comm)


def verify_step_s(x: EngineInputs, q, batch=None) -> Array:
    """Target pass over ``q`` = γ + 1 tokens per sequence, for one q or a grid of them.

    For a dense model each part of ``step_cost`` (matmul and attention, compute and memory,
    comm) is affine in q, so the grid is evaluated from two exact steps (q = 1, 2); the two
    parts' rooflines (``overlapped_s``) are taken separately and summed, as
    ``step_cost.time_s`` does.  An MoE model's experts hit are not affine in q: its grid is
    evaluated exactly.
    """
    if np.any(x.experts > 0) or np.any(x.pp > 1) or has_kernels(x):  # pipeline, kernels: not affine in q either
        b = x.batch if batch is None else batch
        return step_cost(x, seqs=b, q=q, ctx=decode_context_tokens(x)).time_s
    return _on_lines(verify_lines(x, batch), np.asarray(q, dtype=float) - 1.0)


def _best_gamma_on_lines(v: VerifyLines, alpha, plain, draft) -> tuple[Array, Array]:
    """(best γ, its speedup) over ``GAMMA_GRID`` for a dense model whose profile has o = 1: the
    gain E(α, γ) · plain / (γ · draft + verify(γ + 1)) evaluated γ by γ in place (no γ × scenarios array)."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in (alpha, plain, draft, *v.mc, *v.mm, *v.ac, *v.am, *v.comm)))
    alpha = np.broadcast_to(np.asarray(alpha, dtype=float), shape)
    below_one = alpha < 1.0
    inv = np.where(below_one, 1.0 / np.where(below_one, 1.0 - alpha, 1.0), 0.0)
    power = alpha.copy()  # α^(γ+1), γ = 0
    base = np.broadcast_to(v.overhead + v.comm[0], shape)
    best_gain = np.full(shape, -np.inf)
    best_g = np.zeros(shape)
    t1, t2, step, gain = (np.empty(shape) for _ in range(4))
    better = np.empty(shape, dtype=bool)
    for g in GAMMA_GRID:
        np.multiply(v.mc[1], g, out=t1)
        t1 += v.mc[0]
        np.multiply(v.mm[1], g, out=t2)
        t2 += v.mm[0]
        np.maximum(t1, t2, out=step)
        np.multiply(v.ac[1], g, out=t1)
        t1 += v.ac[0]
        np.multiply(v.am[1], g, out=t2)
        t2 += v.am[0]
        np.maximum(t1, t2, out=t1)
        step += t1
        np.multiply(v.comm[1] + draft, g, out=t1)  # comm's slope and the γ draft steps
        step += t1
        step += base
        np.subtract(1.0, power, out=gain)
        gain *= inv
        np.copyto(gain, g + 1.0, where=~below_one)
        gain *= plain
        gain /= step
        np.greater(gain, best_gain, out=better)
        np.copyto(best_gain, gain, where=better)
        np.copyto(best_g, g, where=better)
        power *= alpha
    return best_g, best_gain


def _best_gamma_one_by_one(x: EngineInputs, plain, draft) -> tuple[Array, Array]:
    """(best γ, its speedup) over ``GAMMA_GRID``, one exact verification step per γ (measured kernels are not
    affine in q), keeping only the best so far (no γ × scenarios array)."""
    best_gain: Array | None = None
    best_g: Array | None = None
    fast = measured_decode_steps(x, x.batch, decode_context_tokens(x))
    tokens_per_step = tokens_per_step_at(x.alpha)
    for g in GAMMA_GRID:
        verify = fast(g + 1.0) if fast is not None else verify_step_s(x, g + 1.0)
        gain = tokens_per_step(g) * plain / (g * draft + verify)
        if best_gain is None or best_g is None:
            best_gain, best_g = gain, np.zeros(np.shape(gain))
            continue
        better = gain > best_gain
        best_gain = np.where(better, gain, best_gain)
        best_g = np.where(better, g, best_g)
    assert best_gain is not None and best_g is not None
    return best_g, best_gain


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
    dense = not np.any(x.experts > 0) and not np.any(x.pp > 1) and not has_kernels(x)
    lines = verify_lines(x) if dense else None
    verify = _on_lines(lines, x.gamma) if lines is not None else verify_step_s(x, x.gamma + 1.0)
    step = x.gamma * draft + verify
    if lines is not None and np.all(np.asarray(x.compute_memory_overlap) == 1.0):
        best_gamma, best_speedup = _best_gamma_on_lines(lines, x.alpha, plain, draft)
    elif has_kernels(x):
        best_gamma, best_speedup = _best_gamma_one_by_one(x, plain, draft)
    else:
        # one axis for γ in front of every scenario axis (α or the draft ratio may vary alone)
        grid = GAMMA_GRID.reshape((-1,) + (1,) * len(broadcast_shape(x)))
        gains = expected_tokens_per_step(x.alpha, grid) * plain / (grid * draft + verify_step_s(x, grid + 1.0))
        best = np.argmax(gains, axis=0)
        best_gamma = GAMMA_GRID[best]
        best_speedup = np.take_along_axis(gains, best[None, ...], axis=0)[0]
    return {
        "spec_expected_tokens_per_step": e,
        "spec_step_s": step,
        "spec_tpot_s": step / e,
        "spec_speedup": e * plain / step,
        "spec_best_gamma": best_gamma,
        "spec_best_speedup": best_speedup,
    }
