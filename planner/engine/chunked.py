"""Chunked prefill: a new P-token prompt admitted while B streams decode.

With a token budget C per step, the prompt is split into n = ⌈P/C⌉ chunks;
each step processes one chunk plus one token for each of the B running
streams (Agrawal et al., "Sarathi-Serve", OSDI 2024; vLLM chunked prefill).

newcomer TTFT   = Σ_k t_step(B decodes, chunk k after (k−1)·C cached tokens)
                ≈ n_full · t_step(C, past = (n_full−1)·C/2) + t_step(r, past = n_full·C),
                  r = P − n_full·C (attention is linear in past, so the mean past is exact
                  for the FLOP term; max() makes the sum approximate)
running ITL     = the largest mixed step: t_step(B decodes + min(C, P) prefill tokens, latest past)
no chunking     : the prompt runs as one prefill step; TTFT = t_prefill(P) and each
                  running stream waits t_prefill(P) + t_decode(B) for its next token.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.engine.roofline import StepCost, decode, decode_context_tokens, prefill, step_cost


class ChunkSteps(NamedTuple):
    """The mixed steps that admit a P-token prompt in chunks of C (module doc)."""

    full_chunks: Array  # n_full = ⌊P/C⌋
    rest_tokens: Array  # r = P − n_full·C
    full: StepCost  # B decodes + min(C, P) prefill tokens after (n_full − 1)·C/2 cached (the mean past)
    last: StepCost  # B decodes + the r remaining tokens after n_full·C cached
    biggest: StepCost  # B decodes + min(C, P) prefill tokens after max(P − C, 0) cached (the worst ITL)


def chunk_steps(x: EngineInputs, chunk_tokens=None) -> ChunkSteps:
    """The full, last and biggest chunk steps for ``chunk_tokens`` (default: the scenario's chunk)."""
    c = x.chunk_tokens if chunk_tokens is None else np.asarray(chunk_tokens, dtype=float)
    p = x.prompt_tokens
    ctx = decode_context_tokens(x)
    n_full = np.floor(p / c)
    rest = p - n_full * c
    return ChunkSteps(
        full_chunks=n_full,
        rest_tokens=rest,
        full=step_cost(x, seqs=x.batch, ctx=ctx, n=np.minimum(c, p), past=np.maximum(n_full - 1.0, 0.0) * c / 2.0),
        last=step_cost(x, seqs=x.batch, ctx=ctx, n=rest, past=n_full * c),
        biggest=step_cost(x, seqs=x.batch, ctx=ctx, n=np.minimum(c, p), past=np.maximum(p - c, 0.0)),
    )


def chunked_prefill(x: EngineInputs, chunk_tokens=None) -> dict[str, MetricValue]:
    c = x.chunk_tokens if chunk_tokens is None else np.asarray(chunk_tokens, dtype=float)
    p = x.prompt_tokens
    chunks = chunk_steps(x, c)
    ttft = chunks.full_chunks * chunks.full.time_s + np.where(chunks.rest_tokens > 0, chunks.last.time_s, 0.0)
    steps = np.ceil(p / c)
    plain_prefill = prefill(x).time_s
    plain_decode = decode(x).time_s
    return {
        "chunked_steps": steps,
        "chunked_ttft_s": ttft,
        "chunked_max_itl_s": chunks.biggest.time_s,
        "chunked_mean_itl_s": ttft / steps,
        "nochunk_ttft_s": plain_prefill,
        "nochunk_max_itl_s": plain_prefill + plain_decode,
    }
