"""A step's time from measured kernels (docs/model.md §4–5 "Measured kernels"), vectorised.

For the scenarios whose ``kernel_set`` ≥ 1 (``kernel_basis``), one pass of a (micro-)batch — ``seqs``
sequences of q tokens at context ``ctx``, and ``n`` prefill tokens of ``prompts`` prompts after ``past``
cached — on the busiest GPU is the sum of its kernels at the step's shapes (curves of
``planner.kernels.curves``), with T = seqs·q + n tokens of the busiest rank and T_all every rank's:

  matmul     tokens(T) + experts(imb · T_all) + head(seqs·q + prompts) + T · e / tp
               e: the untimed element-wise kernels per token at tp = 1 (norms, RoPE, activation: their traffic at
               a fitted share of the bandwidth)
  attention  decode(seqs, ctx) · ρ_q + prefill(prompts, S_eq)
               ρ_q = max(c·q, m) / max(c, m): the roofline's decode attention at q queries per sequence ÷ at
               one (c its FLOP time at one query, m its KV reads; verification passes — the tables time one
               decode query), 1 for q = 1 (``roofline.decode_attention_ratio``)
               S_eq: the prompt length with the same attention work as n/prompts new tokens after ``past``
               cached, S_eq(S_eq + 1)/2 = (n/p)·(past + (n/p + 1)/2) (the tables have no prefix axis)
  comm       n_AR · allreduce(T) (the table's graph variant for a decode-only step, eager otherwise; the
             roofline's link model where the table has no such GPU count, beyond one node) + the MoE
             exchange of the layout (``parallel.moe_comm_s``)

The overheads (t_step + L · t_layer) are the roofline's terms with the kernel basis's fitted values
(``EngineInputs`` holds them).  Where ``kernel_set`` is 0 the caller keeps the roofline.
"""

from __future__ import annotations

import numpy as np

from planner.engine import parallel
from planner.engine.efficiency import host_bound_s
from planner.engine.inputs import Array, EngineInputs
from planner.kernels.curves import Stack, at_grid, at_grid_batch, at_tokens, stack, token_position


def has_kernels(x: EngineInputs) -> bool:
    return bool(np.any(np.asarray(x.kernel_set) > 0))


def equivalent_prompt_tokens(per_prompt, past) -> Array:
    """S_eq with S_eq(S_eq + 1)/2 = n·(past + (n + 1)/2): the uncached prompt of the same causal attention work."""
    work = per_prompt * (past + (per_prompt + 1.0) / 2.0)
    return (np.sqrt(1.0 + 8.0 * work) - 1.0) / 2.0


def measured_everywhere(x: EngineInputs) -> bool:
    """Every scenario of ``x`` has curves at its layout (no NaN row: the fast decode path below applies)."""
    st = stack(x.kernel_set, x.tp, x.ep, x.dp)
    return bool(np.all(np.asarray(x.kernel_set) > 0)) and bool(np.all(np.isfinite(st.tokens)))


def experts_s(x: EngineInputs, st: Stack, tokens, position=None) -> Array:
    """r_moe · experts(T): the MoE layers' measured expert kernel at T routed tokens, × the engine version's
    ``moe_time_ratio`` (its expert layer ÷ the tables' release's; docs/model.md §4–5)."""
    return at_tokens(st.experts, st.rows, tokens, position) * x.moe_time_ratio


def decode_steps(x: EngineInputs, seqs, ctx, ratio_terms, overhead, roofline_comm):
    """q ↦ a decode (verification) step of ``seqs`` sequences × q tokens at ``ctx`` on measured kernels, for
    plain tensor parallelism: the q-independent parts (decode attention, fixed cost) looked up once — what
    speculation's γ search evaluates 17 times.  ``ratio_terms`` (c, m) of ρ_q; ``roofline_comm(T)`` where
    the all-reduce table has no such GPU count.  Equal to ``roofline.step_cost(x, seqs, q, ctx)`` there."""
    st = stack(x.kernel_set, x.tp, x.ep, x.dp)
    attention = at_grid(st.decode, st.rows, seqs, ctx, 1.0)
    c, m = ratio_terms
    one = np.maximum(c, m)
    positive = one > 0
    safe_one = np.where(positive, one, 1.0)
    moe = bool(np.any(x.experts > 0))
    e = x.elementwise_s_per_token / x.tp

    def at(q: float) -> Array:
        tokens = seqs * q
        position = token_position(tokens)
        t = at_tokens(st.tokens, st.rows, tokens, position) + at_tokens(st.head, st.rows, tokens, position)
        if moe:
            t = t + experts_s(x, st, tokens, position)
        ratio = np.where(positive, np.maximum(c * q, m) / safe_one, 1.0) if q != 1.0 else 1.0
        comm = _comm(x, st, tokens, position, False, roofline_comm(tokens))
        return host_bound_s(x, overhead + (t + e * tokens) + attention * ratio + comm, seqs)

    return at


def _comm(x: EngineInputs, st: Stack, tokens, position, prefill, roofline_tp_s) -> Array:
    """n_AR · the measured all-reduce at T tokens; the roofline's where unmeasured (NaN) or tp = 1 (every
    scenario at tp = 1: the roofline's term as it stands, no curve looked up)."""
    if _no_comm(x):
        rows = () if st.rows is None else st.rows.shape
        shape = np.broadcast_shapes(
            rows, *(np.shape(v) for v in (tokens, x.tp, x.layers, x.dp, x.moe_layers, roofline_tp_s))
        )
        return np.broadcast_to(np.asarray(roofline_tp_s, dtype=float), shape)  # read-only: callers add to it
    if np.ndim(prefill) == 0:
        curve = st.allreduce_eager if bool(prefill) else st.allreduce_graph
        one = at_tokens(curve, st.rows, tokens, position)
    else:
        one = np.where(
            prefill,
            at_tokens(st.allreduce_eager, st.rows, tokens, position),
            at_tokens(st.allreduce_graph, st.rows, tokens, position),
        )
    measured = parallel.tp_allreduces(x) * one
    return np.where(np.isnan(measured) | (x.tp <= 1), roofline_tp_s, measured)


def _no_comm(x: EngineInputs) -> bool:
    return bool(np.all(np.asarray(x.tp) <= 1))


def _prefill_attention(st: Stack, prompts, seq) -> Array:
    """The prefill-attention curve at (prompts ≥ 1, S_eq): ``at_grid``, or ``at_grid_batch`` (the same bits) where
    every scenario has one curve and the same number of prompts (a chunk step's one prompt)."""
    k = np.asarray(prompts)
    seq = np.asarray(seq)
    if st.rows is None and seq.ndim and k.shape in ((), seq.shape) and bool(np.all(k == k.flat[0])):
        return at_grid_batch(st.prefill, float(k.flat[0]), seq, 2.0)
    return at_grid(st.prefill, st.rows, k, seq, 2.0)


def kernel_terms(
    x: EngineInputs, seqs, q, ctx, n, past, prompts, all_tokens, attention_ratio, roofline_tp_s
) -> dict[str, Array]:
    """Each measured term of one pass (module doc), in seconds: ``tokens``, ``head``, ``experts``,
    ``elementwise`` (the matmul group), ``decode`` (× ``ratio``) and ``prefill`` (attention), ``comm`` (the
    tensor-parallel all-reduces).  ``seqs``, ``n`` and ``prompts`` are the busiest rank's, ``all_tokens`` every
    rank's (None: plain tensor parallelism, the experts see the step's own tokens), ``attention_ratio`` ρ_q."""
    st = stack(x.kernel_set, x.tp, x.ep, x.dp)
    decodes = seqs * q
    tokens = decodes + n
    position = token_position(tokens)
    zero = np.zeros(())
    out = dict(
        tokens=at_tokens(st.tokens, st.rows, tokens, position),
        head=at_tokens(st.head, st.rows, decodes + prompts),
        experts=zero,
        elementwise=x.elementwise_s_per_token / x.tp * tokens,
        decode=at_grid(st.decode, st.rows, seqs, ctx, 1.0),
        ratio=np.asarray(attention_ratio, dtype=float),
        prefill=zero,
    )
    if np.any(x.experts > 0):
        if all_tokens is None:  # plain tensor parallelism: the experts see the step's tokens
            out["experts"] = experts_s(x, st, tokens, position)
        else:
            out["experts"] = experts_s(x, st, all_tokens * parallel.expert_imbalance(x))
    prefill = np.asarray(n) > 0
    if np.any(prefill):
        k = np.maximum(prompts, 1.0)
        seq = equivalent_prompt_tokens(n / k, past)
        out["prefill"] = np.where(prefill, _prefill_attention(st, k, seq), 0.0)
    out["comm"] = _comm(x, st, tokens, position, prefill if np.ndim(prefill) else bool(prefill), roofline_tp_s)
    return out


def kernel_parts(
    x: EngineInputs, seqs, q, ctx, n, past, prompts, all_tokens, attention_ratio, roofline_tp_s
) -> tuple[Array, Array, Array]:
    """(matmul, attention, tensor-parallel comm) seconds of one pass: ``kernel_terms`` summed by group."""
    t = kernel_terms(x, seqs, q, ctx, n, past, prompts, all_tokens, attention_ratio, roofline_tp_s)
    matmul = t["tokens"] + t["head"] + t["experts"] + t["elementwise"]
    return matmul, t["decode"] * t["ratio"] + t["prefill"], t["comm"]
