"""The times alone of several mixed steps that share their running decodes (a chunked prompt's steps), fast.

Each is ``roofline.step_cost(x, seqs, 1, ctx, n, past, prompts).time_s`` to the bit (tests/engine/
test_fast_paths.py).  Where every scenario is plain tensor parallelism inside one node and has every kernel
measured, a step is timed by its kernels alone (``kernel_step`` module doc) — the roofline's FLOP, byte and
part totals, which ``step_cost`` keeps for display and as the stand-in where a kernel is not measured, are
not computed — and what the steps share is computed once: the decode attention at (seqs, ctx), and the
matmul, all-reduce and overhead terms of each distinct (n, prompts) (a chunked prompt's full and biggest
chunk steps differ only in their past).  Anywhere else each step is ``step_cost`` itself.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from planner.engine import parallel
from planner.engine.efficiency import host_bound_s, overhead_s
from planner.engine.inputs import Array, EngineInputs, broadcast_shape
from planner.engine.kernel_step import (
    _comm,
    _prefill_attention,
    equivalent_prompt_tokens,
    experts_s,
    has_kernels,
    measured_everywhere,
)
from planner.engine.roofline import comm_s, step_cost
from planner.kernels.curves import at_grid, at_tokens, stack, token_position

#: One step of ``step_times_s``: (n prefill tokens, past cached before them, prompts or None: 1 where n > 0).
Part = tuple[object, object, object]


def step_times_s(x: EngineInputs, seqs, ctx, parts: Sequence[Part]) -> list[Array]:
    """``step_cost(x, seqs=seqs, ctx=ctx, n=n, past=past, prompts=prompts).time_s`` for each (n, past, prompts)
    of ``parts`` (module doc)."""
    return [t for t, _ in step_times_and_overheads_s(x, seqs, ctx, parts)]


def step_times_and_overheads_s(x: EngineInputs, seqs, ctx, parts: Sequence[Part]) -> list[tuple[Array, Array]]:
    """(``time_s``, ``overhead_s``) of each step of ``step_times_s``."""
    seqs, ctx = np.asarray(seqs, dtype=float), np.asarray(ctx, dtype=float)
    steps = [
        (np.asarray(n, dtype=float), np.asarray(past, dtype=float), None if k is None else np.asarray(k, dtype=float))
        for n, past, k in parts
    ]
    times = None
    if parallel.simple(x) and has_kernels(x) and measured_everywhere(x):
        times = _measured_times_s(x, seqs, ctx, steps)
    if times is None:
        costs = [step_cost(x, seqs=seqs, ctx=ctx, n=n, past=past, prompts=k) for n, past, k in steps]
        return [(c.time_s, c.overhead_s) for c in costs]
    return times


def _measured_times_s(x: EngineInputs, seqs, ctx, steps) -> list[tuple[Array, Array]] | None:
    """The kernel basis's step times, in ``roofline.pass_cost`` / ``_measured`` / ``kernel_parts``' order of
    operations (q = 1: ρ_q = 1; no exchange, no pipeline, nothing hidden); None where some step has a term that
    is not finite (the caller's ``step_cost`` then puts the roofline's there) or a shape ``step_cost`` would not."""
    st = stack(x.kernel_set, x.tp, x.ep, x.dp)
    q = np.asarray(1.0)
    decodes = seqs * q
    decode = at_grid(st.decode, st.rows, seqs, ctx, 1.0) * np.asarray(np.ones(()), dtype=float)  # × ρ_1
    moe = bool(np.any(x.experts > 0))
    zero = np.zeros(())
    shared: dict[tuple[int, int], tuple] = {}
    times = []
    for n, past, prompts in steps:
        k = (n > 0).astype(float) if prompts is None else prompts
        key = (id(n), id(prompts))
        if key not in shared:
            tokens = decodes + n
            position = token_position(tokens)
            matmul = at_tokens(st.tokens, st.rows, tokens, position) + at_tokens(st.head, st.rows, decodes + k)
            matmul = matmul + (experts_s(x, st, tokens, position) if moe else zero)
            matmul = matmul + x.elementwise_s_per_token / x.tp * tokens
            prefill = np.asarray(n) > 0
            comm = _comm(
                x, st, tokens, position, prefill if np.ndim(prefill) else bool(prefill), comm_s(x, tokens) - 0.0
            )
            shared[key] = (n, prompts, matmul, comm + 0.0, overhead_s(x, tokens, n), prefill)  # n, prompts: ids kept
        _, _, matmul, comm, overhead, prefill = shared[key]
        attention = zero
        if np.any(prefill):
            per = np.maximum(k, 1.0)
            attention = np.where(prefill, _prefill_attention(st, per, equivalent_prompt_tokens(n / per, past)), 0.0)
        attention = decode + attention
        if not (np.isfinite(matmul).all() and np.isfinite(attention).all() and np.isfinite(comm).all()):
            return None
        times.append((host_bound_s(x, overhead + (matmul + attention + comm - 0.0) + 0.0, decodes, k), overhead))
    full = np.broadcast_shapes(broadcast_shape(x), seqs.shape, ctx.shape, *(np.shape(v) for s in steps for v in s))
    return times if all(t.shape == full for t, _ in times) else None
