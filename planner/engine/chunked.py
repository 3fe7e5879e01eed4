"""Chunked prefill: a new P-token prompt admitted while B streams decode.

With a token budget C per step (vLLM's ``max_num_batched_tokens``), each step first
schedules one token for each of the B running streams, and the newcomer's prompt gets
what is left: c = C − B tokens per step (Agrawal et al., "Sarathi-Serve", OSDI 2024;
vLLM's scheduler serves running requests before waiting ones).  When B ≥ C no prefill
token fits: the newcomer waits until a stream finishes (TTFT = ∞ under this load).

n_full          = ⌊P / c⌋ full chunks, remainder r = P − n_full · c
newcomer TTFT   = Σ_k t_step(B decodes, chunk k after (k−1)·c cached)
                ≈ n_full · t_step(B + c, past = (n_full−1)·c/2) + t_step(B + r, past = n_full·c)
                  (attention is linear in past, so the mean past is exact for the FLOP term;
                  max() makes the sum approximate)
running ITL     = the largest mixed step: t_step(B decodes + min(c, P) prefill tokens, latest past)
                  (B ≥ C: the plain decode step)
no chunking     : the prompt runs as one prefill step; TTFT = t_prefill(P) and each
                  running stream waits t_prefill(P) + t_decode(B) for its next token.
prefix cache    : a newcomer whose prefix the GPUs' cache holds chunks in only its P − X_hit new
                  tokens, after X_hit cached (``prefix_reuse``); both TTFTs are expected over the hit
                  rate h: h · TTFT(hit) + (1 − h) · TTFT(whole prompt).  The step counts and the
                  running streams' gaps are a whole prompt's (a miss: the worst a stream sees).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.engine.prefix_reuse import any_hit, expected, gpu_cached_tokens, hit_prefill
from planner.engine.roofline import StepCost, decode, decode_context_tokens, prefill, step_cost
from planner.engine.step_times import step_times_s


@dataclass(frozen=True)
class ChunkSteps:
    """The mixed steps that admit a P-token prompt in chunks of c = C − B (module doc)."""

    prefill_tokens: Array  # c = max(C − B, 0): the newcomer's tokens per step
    full_chunks: Array  # n_full = ⌊P/c⌋ (∞ when c = 0)
    rest_tokens: Array  # r = P − n_full·c
    full: StepCost  # B decodes + min(c, P) prefill tokens after (n_full − 1)·c/2 cached (the mean past)
    last: StepCost  # B decodes + the r remaining tokens after n_full·c cached
    worst: tuple[EngineInputs, Array, Array, Array]  # (x, ctx, min(c, P), max(P − c, 0) + cached): ``biggest``'s step

    @cached_property
    def biggest(self) -> StepCost:
        """B decodes + min(c, P) prefill tokens after max(P − c, 0) cached (the worst ITL), computed when
        first asked (a prefix-cache hit's newcomer TTFT needs only ``full`` and ``last``)."""
        x, ctx, first, past = self.worst
        return step_cost(x, seqs=x.batch, ctx=ctx, n=first, past=past)


class ChunkPlan(NamedTuple):
    """The chunk arithmetic of a P-token prompt whose first ``start`` tokens are cached (module doc)."""

    prefill_tokens: Array  # c = max(C − B, 0)
    full_chunks: Array  # n_full = ⌊(P − start)/c⌋ (∞ when c = 0)
    rest_tokens: Array  # r = P − start − n_full·c
    first_tokens: Array  # min(c, P − start): a full chunk's tokens
    full_past: Array  # start + (n_full − 1)·c/2: the full chunks' mean past
    last_past: Array  # start + n_full·c
    biggest_past: Array  # start + max(P − start − c, 0)

    def parts(self, worst: bool = True) -> list[tuple]:
        """(n, past, prompts) of the full, last and (``worst``) biggest chunk steps (``step_times.step_times_s``)."""
        steps = [(self.first_tokens, self.full_past, None), (self.rest_tokens, self.last_past, None)]
        return steps + [(self.first_tokens, self.biggest_past, None)] if worst else steps


def chunk_plan(x: EngineInputs, chunk_tokens=None, cached_tokens=None) -> ChunkPlan:
    """The chunks of ``chunk_steps`` (its arguments), without their steps."""
    budget = x.chunk_tokens if chunk_tokens is None else np.asarray(chunk_tokens, dtype=float)
    c = np.maximum(budget - x.batch, 0.0)
    admits = c > 0
    safe = np.where(admits, c, 1.0)
    start = 0.0 if cached_tokens is None else cached_tokens
    p = x.prompt_tokens - start
    n_full = np.where(admits, np.floor(p / safe), np.inf)
    n_done = np.where(admits, n_full, 0.0)  # finite stand-in where no chunk ever runs
    rest = np.where(admits, p - n_done * safe, 0.0)
    return ChunkPlan(
        prefill_tokens=c,
        full_chunks=n_full,
        rest_tokens=rest,
        first_tokens=np.minimum(c, p),
        full_past=start + np.maximum(n_done - 1.0, 0.0) * c / 2.0,
        last_past=start + n_done * c,
        biggest_past=start + np.maximum(p - c, 0.0),
    )


def chunk_steps(x: EngineInputs, chunk_tokens=None, cached_tokens=None) -> ChunkSteps:
    """The full, last and biggest chunk steps for ``chunk_tokens`` (default: the scenario's chunk) of a
    prompt whose first ``cached_tokens`` (default none) the prefix cache holds: its P − cached new tokens
    are chunked in after them."""
    plan = chunk_plan(x, chunk_tokens, cached_tokens)
    ctx = decode_context_tokens(x)
    return ChunkSteps(
        prefill_tokens=plan.prefill_tokens,
        full_chunks=plan.full_chunks,
        rest_tokens=plan.rest_tokens,
        full=step_cost(x, seqs=x.batch, ctx=ctx, n=plan.first_tokens, past=plan.full_past),
        last=step_cost(x, seqs=x.batch, ctx=ctx, n=plan.rest_tokens, past=plan.last_past),
        worst=(x, ctx, plan.first_tokens, plan.biggest_past),
    )


def _newcomer_ttft_s(plan: ChunkPlan | ChunkSteps, full_s, last_s) -> Array:
    """Σ of a newcomer's chunk steps (module doc), each full one ``full_s``, the last ``last_s``; ∞ when no
    prefill token fits a step."""
    admits = plan.prefill_tokens > 0
    n_done = np.where(admits, plan.full_chunks, 0.0)
    ttft = n_done * full_s + np.where(plan.rest_tokens > 0, last_s, 0.0)
    return np.where(admits, ttft, np.inf)


def chunked_prefill(
    x: EngineInputs, chunk_tokens=None, prefill_s=None, decode_s=None, hit_prefill_s=None
) -> dict[str, MetricValue]:
    """The chunked and unchunked newcomer TTFT (expected over the prefix cache's hits) and the running
    ITL (module doc).  ``prefill_s``, ``decode_s`` and ``hit_prefill_s``: the whole prompt's prefill, the
    decode step and a prefix-cache hit's prefill (``prefix_reuse.hit_prefill``) times when already computed."""
    chunks = chunk_plan(x, chunk_tokens)
    hit = chunk_plan(x, chunk_tokens, gpu_cached_tokens(x)) if any_hit(x) else None
    # every chunk step at once: they share the B running decodes (step_times)
    times = step_times_s(
        x, x.batch, decode_context_tokens(x), chunks.parts() + ([] if hit is None else hit.parts(False))
    )
    admits = chunks.prefill_tokens > 0
    ttft = _newcomer_ttft_s(chunks, times[0], times[1])
    steps = np.where(admits, np.ceil(x.prompt_tokens / np.where(admits, chunks.prefill_tokens, 1.0)), np.inf)
    plain_prefill = prefill(x).time_s if prefill_s is None else prefill_s
    plain_decode = decode(x).time_s if decode_s is None else decode_s
    if hit is not None:
        ttft_hit = _newcomer_ttft_s(hit, times[3], times[4])
        idle = expected(x, hit_prefill(x).time_s if hit_prefill_s is None else hit_prefill_s, plain_prefill)
    else:
        ttft_hit, idle = ttft, plain_prefill
    return {
        "chunked_steps": steps,
        "chunked_ttft_s": np.where(admits, expected(x, ttft_hit, ttft), np.inf),
        "chunked_max_itl_s": np.where(admits, times[2], plain_decode),
        "chunked_mean_itl_s": np.where(admits, ttft / np.where(admits, steps, 1.0), plain_decode),
        "nochunk_ttft_s": idle,
        "nochunk_max_itl_s": plain_prefill + plain_decode,
    }
