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

import numpy as np

from planner.engine.inputs import EngineInputs
from planner.engine.roofline import decode, decode_context_tokens, prefill, step_cost


def chunked_prefill(x: EngineInputs, chunk_tokens=None) -> dict[str, np.ndarray]:
    c = x.chunk_tokens if chunk_tokens is None else np.asarray(chunk_tokens, dtype=float)
    p = x.prompt_tokens
    ctx = decode_context_tokens(x)
    n_full = np.floor(p / c)
    rest = p - n_full * c
    full = step_cost(x, seqs=x.batch, ctx=ctx, n=np.minimum(c, p), past=np.maximum(n_full - 1.0, 0.0) * c / 2.0)
    last = step_cost(x, seqs=x.batch, ctx=ctx, n=rest, past=n_full * c)
    ttft = n_full * full.time_s + np.where(rest > 0, last.time_s, 0.0)
    biggest = step_cost(x, seqs=x.batch, ctx=ctx, n=np.minimum(c, p), past=np.maximum(p - c, 0.0))
    steps = np.ceil(p / c)
    plain_prefill = prefill(x).time_s
    plain_decode = decode(x).time_s
    return {
        "chunked_steps": steps,
        "chunked_ttft_s": ttft,
        "chunked_max_itl_s": biggest.time_s,
        "chunked_mean_itl_s": ttft / steps,
        "nochunk_ttft_s": plain_prefill,
        "nochunk_max_itl_s": plain_prefill + plain_decode,
    }
