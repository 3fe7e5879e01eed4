"""Seeded iteration-level simulation of one serving replica with continuous batching.

Scheduler (vLLM with chunked prefill; Kwon et al. SOSP 2023, Agrawal et al. OSDI 2024):
each step
  1. runs every running sequence that has finished its prefill (a decode: q tokens,
     q = 1, or γ + 1 with speculative decoding); before the step each needs
     ⌈(ctx + q) / block⌉ KV blocks; while the free blocks do not cover that, the newest
     running request is preempted: its blocks are freed and it goes back to the head
     of the queue, to be recomputed (prefill of prompt + tokens generated so far)
     (``blocks.BlockPool``);
  2. spends the rest of the token budget, chunk − decodes·q, on prefill chunks: first
     the running requests still prefilling, then waiting requests in arrival order,
     each admitted only while running < batch (max_num_seqs) and its prompt's
     ⌈(prompt + generated) / block⌉ blocks fit in the free blocks;
  3. lasts ``step_time.step_s(decodes, mean decode context, chunks)`` seconds.
The prefill's last step emits the first token (TTFT = its end − arrival); each decode
step emits 1 token, or a ~ min(Geometric(1 − α), γ + 1) tokens with speculative
decoding (P(a = j) = α^(j−1)(1 − α) for j ≤ γ, P(a = γ + 1) = α^γ, so E[a] =
(1 − α^(γ+1))/(1 − α) as in ``speculative.expected_tokens_per_step``).
Prefix-cache hits skip their cached tokens, rounded down to whole blocks and leaving
at least one prompt token to compute; cached blocks are still counted per request
(conservative: no sharing between requests).  KV capacity: ``memory_plan``'s KV budget
per GPU ÷ bytes of one block.  Requests longer than the model's context window, or
needing more blocks than the whole cache, are rejected (never run).

Runs of identical decode steps (no prefill, no admission possible) are advanced in one
vectorised jump up to the next completion, arrival or block shortage.

Inter-token latency (ITL): the time between a request's successive token emissions,
divided by the tokens emitted at once (speculative decoding), weighted per token;
a preempted request's recomputed prefill counts one ITL, measured from the request's
previous prefill completion (not from its last decoded token, so that one ITL also
spans the decode steps before the preemption, which were counted already; kept as it
was, so results stay identical).  Outputs, percentiles and SLO verdicts: ``results``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.engine.evaluate import Resolved, inputs_for, resolve
from planner.engine.inputs import EngineInputs
from planner.engine.memory import memory_plan
from planner.engine.step_time import RooflineStepTime, StepTime
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.serving.acceptance import AcceptanceDraws
from planner.serving.blocks import BlockPool
from planner.serving.results import (
    NOT_RUN,
    REJECTED_CONTEXT,
    REJECTED_KV,
    SERVED,
    SimResult,
    downsample_timeline,
    itl_sample,
    per_request_itl_p50_max,
    time_mean,
    with_summary,
)
from planner.serving.workload import Workload, scenario_workload

#: Longest run of decode steps advanced in one jump (bounds the arrays per jump).
MAX_JUMP_STEPS = 4096
#: With speculative decoding, acceptance draws per jump (per running sequence).
MAX_SPEC_JUMP_STEPS = 64
#: Share of requests (TTFT) or tokens (ITL) over the target that certainly misses the p99.
P99_MISS_FRAC = 0.01
#: Iterations between two ``progress`` calls.
PROGRESS_EVERY = 2000


@dataclass(frozen=True)
class SimConfig:
    """Scheduler limits and targets of one replica (SI units, token counts)."""

    batch: int  # max running sequences (vLLM max_num_seqs)
    chunk_tokens: int  # token budget per step
    block_tokens: int
    kv_capacity_blocks: int
    context_window_tokens: int
    gamma: int  # draft tokens per step; 0 = no speculative decoding
    alpha: float
    seed: int
    slo_ttft_s: float
    slo_tpot_s: float

    @classmethod
    def from_inputs(cls, x: EngineInputs, s: Scenario) -> SimConfig:
        """Limits from the scenario; capacity ⌊kv_capacity_tokens / block⌋ from ``memory_plan``."""
        plan = memory_plan(x)
        blocks = int(np.asarray(plan["kv_capacity_tokens"]).reshape(()) // s.block)
        return cls(
            batch=s.batch,
            chunk_tokens=s.chunk,
            block_tokens=s.block,
            kv_capacity_blocks=blocks,
            context_window_tokens=int(np.asarray(x.context_window_tokens).reshape(())),
            gamma=s.gamma if s.spec else 0,
            alpha=s.alpha,
            seed=s.seed,
            slo_ttft_s=s.slo_ttft_s,
            slo_tpot_s=s.slo_tpot_s,
        )


def sim_inputs(s: Scenario, catalog: Catalog) -> tuple[Resolved, EngineInputs]:
    """The scenario resolved against the catalog, and its engine inputs."""
    r = resolve(s, catalog)
    return r, inputs_for(r)


class _Run:
    """The state of one simulation.  Per-request lists are indexed by request (arrival order);
    ``prefill_target_tokens`` is the context a request's (re)computed prefill reaches."""

    def __init__(self, w: Workload, cfg: SimConfig, step_time: StepTime, detail: bool):
        n = len(w)
        self.cfg, self.step_time, self.detail = cfg, step_time, detail
        self.requests = n
        self.step_tokens = cfg.gamma + 1
        self.speculative = cfg.gamma > 0
        self.draws = AcceptanceDraws(np.random.default_rng([cfg.seed, 1]), cfg.alpha, self.step_tokens)
        block = cfg.block_tokens
        # whole blocks only, and at least one prompt token left to compute (it yields the first token's logits)
        self.cached = np.maximum(np.minimum(w.prefix_hit_tokens, w.prompt_tokens - 1), 0) // block * block
        self.status = np.full(n, SERVED, dtype=np.int64)
        self.status[w.prompt_tokens + w.output_tokens > cfg.context_window_tokens] = REJECTED_CONTEXT
        # ⌈(prompt + output + q) / block⌉: the blocks of the request's last step, at the latest
        lifetime_blocks = -(-(w.prompt_tokens + w.output_tokens + self.step_tokens) // block)
        self.status[(self.status == SERVED) & (lifetime_blocks > cfg.kv_capacity_blocks)] = REJECTED_KV
        servable = self.status == SERVED
        self.ttft_miss_limit = P99_MISS_FRAC * int(servable.sum())
        self.itl_miss_limit = P99_MISS_FRAC * float(np.maximum(w.output_tokens[servable] - 1, 0).sum())

        self.arrival_s: list[float] = w.arrival_s.tolist()
        self.prompt_tokens: list[int] = w.prompt_tokens.tolist()
        self.output_tokens: list[int] = w.output_tokens.tolist()
        self.cached_tokens: list[int] = self.cached.tolist()
        self.servable: list[bool] = servable.tolist()
        self.generated_tokens = [0] * n
        self.context_tokens = [0] * n
        self.prefill_target_tokens = [0] * n
        self.ttft_s = [float("nan")] * n
        self.finish_s = [float("nan")] * n
        self.last_prefill_s = [0.0] * n
        self.itl_parts: list[list[np.ndarray]] = [[] for _ in range(n)] if detail else []
        self.itl_pieces: list[tuple[np.ndarray, np.ndarray | int]] = []
        self.pool = BlockPool(block, cfg.kv_capacity_blocks, n)
        self.waiting: deque[int] = deque()
        self.running: list[int] = []

        self.now_s = 0.0
        self.next_arrival = 0
        self.done = 0
        self.steps = 0
        self.ttft_misses = 0
        self.itl_miss_tokens = 0.0
        self.timeline_s: list[float] = []
        self.timeline_queue: list[int] = []
        self.timeline_used_blocks: list[int] = []


def _enqueue_arrivals(run: _Run) -> None:
    """Queue every request arrived by now; rejected ones are done at once."""
    arrival, servable = run.arrival_s, run.servable
    while run.next_arrival < run.requests and arrival[run.next_arrival] <= run.now_s:
        if servable[run.next_arrival]:
            run.waiting.append(run.next_arrival)
        else:
            run.done += 1
        run.next_arrival += 1


def _plan_prefill_chunks(run: _Run, budget_tokens: int) -> tuple[list[int], list[int], list[int]]:
    """(requests, new tokens, tokens already in the cache) of this step's prefill chunks.

    Running requests still prefilling come first, then waiting requests are admitted
    (``_admit_waiting``), each chunk as large as the remaining token budget allows."""
    chunk_requests: list[int] = []
    new_tokens: list[int] = []
    past_tokens: list[int] = []
    if budget_tokens <= 0:
        return chunk_requests, new_tokens, past_tokens
    context, target = run.context_tokens, run.prefill_target_tokens
    for i in run.running:
        if context[i] < target[i]:
            chunk = min(target[i] - context[i], budget_tokens)
            chunk_requests.append(i)
            new_tokens.append(chunk)
            past_tokens.append(context[i])
            budget_tokens -= chunk
            if budget_tokens <= 0:
                return chunk_requests, new_tokens, past_tokens
    if run.waiting:
        _admit_waiting(run, budget_tokens, chunk_requests, new_tokens, past_tokens)
    return chunk_requests, new_tokens, past_tokens


def _admit_waiting(
    run: _Run, budget_tokens: int, chunk_requests: list[int], new_tokens: list[int], past_tokens: list[int]
) -> None:
    """Admit waiting requests first come, first served while the budget, the batch and the free blocks allow.

    A request (re)computes its prompt and the tokens generated before a preemption; its
    cached prefix is already in the cache.  Its first chunk is appended to the lists."""
    waiting, running, pool, cached = run.waiting, run.running, run.pool, run.cached_tokens
    while budget_tokens > 0 and waiting and len(running) < run.cfg.batch:
        i = waiting[0]
        target = run.prompt_tokens[i] + run.generated_tokens[i]
        if not pool.can_admit(target):
            break
        waiting.popleft()
        running.append(i)
        pool.admit(i, target)
        run.prefill_target_tokens[i] = target
        run.context_tokens[i] = cached[i]
        chunk = min(target - cached[i], budget_tokens)
        chunk_requests.append(i)
        new_tokens.append(chunk)
        past_tokens.append(cached[i])
        budget_tokens -= chunk


def _book_decodes(run: _Run, decoding: list[int], durations_s: np.ndarray, accepted: np.ndarray | None) -> None:
    """Book ``len(durations_s)`` decode steps of ``decoding``: their ITLs, contexts and tokens.

    ``accepted``: tokens each request emits per step (speculative decoding; None = 1 each),
    each step's ITL being its duration / the tokens it emitted."""
    slo_itl_s = run.cfg.slo_tpot_s
    context, generated, itl_parts = run.context_tokens, run.generated_tokens, run.itl_parts
    if accepted is None:
        steps = durations_s.shape[0]
        run.itl_pieces.append((durations_s, len(decoding)))
        run.itl_miss_tokens += len(decoding) * int(np.count_nonzero(durations_s > slo_itl_s))
        for i in decoding:
            context[i] += steps
            generated[i] += steps
        if run.detail:
            for i in decoding:
                itl_parts[i].append(durations_s)
        return
    itl_s = durations_s[None, :] / accepted
    run.itl_pieces.append((itl_s.ravel(), accepted.ravel()))
    run.itl_miss_tokens += float(accepted[itl_s > slo_itl_s].sum())
    gained = accepted.sum(axis=1).tolist()
    for i, tokens in zip(decoding, gained, strict=True):
        context[i] += tokens
        generated[i] += tokens
    if run.detail:
        for row, i in enumerate(decoding):
            itl_parts[i].append(itl_s[row])


def _mixed_step(
    run: _Run, decoding: list[int], chunk_requests: list[int], new_tokens: list[int], past_tokens: list[int]
) -> list[int]:
    """One step of decodes and prefill chunks; returns the requests it finished."""
    context, target = run.context_tokens, run.prefill_target_tokens
    generated, output = run.generated_tokens, run.output_tokens
    decodes = len(decoding)
    mean_context = sum(context[i] for i in decoding) / decodes if decodes else 0.0
    duration_s = run.step_time.step_s(decodes, mean_context, new_tokens, past_tokens)
    run.now_s += duration_s
    run.steps += 1
    finished: list[int] = []
    if decodes:
        accepted = None
        if run.speculative:
            remaining = np.array([output[i] - generated[i] for i in decoding])
            accepted = np.minimum(run.draws.take(decodes, 1), remaining[:, None])
        _book_decodes(run, decoding, np.array([duration_s]), accepted)
        finished = [i for i in decoding if generated[i] >= output[i]]
    for i, chunk in zip(chunk_requests, new_tokens, strict=True):
        context[i] += chunk
        if context[i] >= target[i]:
            _emit_prefill_token(run, i)
            if generated[i] >= output[i]:
                finished.append(i)
    return finished


def _emit_prefill_token(run: _Run, i: int) -> None:
    """A completed prefill emits a token: the first (TTFT), or the next one after a preemption (one ITL)."""
    now_s = run.now_s
    run.generated_tokens[i] += 1
    if run.ttft_s[i] != run.ttft_s[i]:  # NaN: the first token
        run.ttft_s[i] = now_s - run.arrival_s[i]
        run.ttft_misses += run.ttft_s[i] > run.cfg.slo_ttft_s
    else:
        gap_s = now_s - run.last_prefill_s[i]
        run.itl_pieces.append((np.array([gap_s]), 1))
        run.itl_miss_tokens += gap_s > run.cfg.slo_tpot_s
        if run.detail:
            run.itl_parts[i].append(np.array([gap_s]))
    run.last_prefill_s[i] = now_s


def _plain_jump_steps(run: _Run, decoding: list[int], contexts: list[int]) -> int:
    """Steps up to the first completion (≤ MAX_JUMP_STEPS), fewer if the free blocks run out first.

    Step j (0-based) of the jump runs at context + j; it needs ⌈(context + j + q) / block⌉ blocks."""
    output, generated, pool = run.output_tokens, run.generated_tokens, run.pool
    held_blocks = pool.held_blocks
    held = [held_blocks[i] for i in decoding]
    steps = min(min(output[i] - generated[i] for i in decoding), MAX_JUMP_STEPS)
    block = run.cfg.block_tokens
    reach = run.step_tokens + block - 1

    def blocks_needed(jump_steps: int) -> int:
        total = 0
        for context, blocks in zip(contexts, held, strict=True):
            extra = (context + jump_steps - 1 + reach) // block - blocks
            if extra > 0:
                total += extra
        return total

    if blocks_needed(steps) <= pool.free_blocks:
        return steps
    return _most_steps_fitting(blocks_needed, steps, pool.free_blocks)


def _speculative_jump(
    run: _Run, decoding: list[int], contexts: list[int], remaining: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Acceptance draws of the jump and the tokens gained before each of its steps.

    Draws ≤ MAX_SPEC_JUMP_STEPS steps per request; the jump ends at the step in which the
    first request reaches its output length, or earlier if the free blocks run out.
    ``tokens_before[:, j]``: tokens gained before step j; its width is the jump's steps."""
    decodes = len(decoding)
    drawn_steps = int(min(remaining.max(), MAX_SPEC_JUMP_STEPS))
    accepted = run.draws.take(decodes, drawn_steps)
    cumulative = accepted.cumsum(axis=1)
    reached = cumulative >= remaining[:, None]
    first = np.where(reached.any(axis=1), reached.argmax(axis=1), drawn_steps)
    steps = int(min(first.min() + 1, drawn_steps))
    tokens_before = np.concatenate([np.zeros((decodes, 1), dtype=np.int64), cumulative[:, : steps - 1]], axis=1)
    block, pool = run.cfg.block_tokens, run.pool
    reach = np.array(contexts) + run.step_tokens + block - 1
    held_blocks = pool.held_blocks
    held = np.array([held_blocks[i] for i in decoding])

    def blocks_needed(jump_steps: int) -> int:
        return int(np.maximum((reach + tokens_before[:, jump_steps - 1]) // block - held, 0).sum())

    if blocks_needed(steps) > pool.free_blocks:
        steps = _most_steps_fitting(blocks_needed, steps, pool.free_blocks)
    return accepted, tokens_before[:, :steps]


def _most_steps_fitting(blocks_needed: Callable[[int], int], steps: int, free_blocks: int) -> int:
    """The most steps < ``steps`` whose blocks fit in the free blocks, by bisection (1 always
    fits: the first step's blocks were reserved before the jump)."""
    lo, hi = 1, steps
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if blocks_needed(mid) <= free_blocks:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _jump_durations_s(run: _Run, decodes: int, contexts: list[int], growth: np.ndarray) -> np.ndarray:
    """Durations of the jump's steps at mean context (Σ contexts) / decodes + growth[j].

    When the next arrival could be admitted, the jump stops after the step during which it arrives."""
    durations_s = np.asarray(run.step_time.decode_steps_s(decodes, sum(contexts) / decodes + growth), dtype=float)
    cfg = run.cfg
    admissible = not run.waiting and len(run.running) < cfg.batch and cfg.chunk_tokens - decodes * run.step_tokens > 0
    if run.next_arrival < run.requests and admissible:
        ends_s = np.cumsum(durations_s)
        wait_s = run.arrival_s[run.next_arrival] - run.now_s
        steps = min(int(np.searchsorted(ends_s, wait_s, side="left")) + 1, durations_s.shape[0])
        durations_s = durations_s[:steps]
    return durations_s


def _decode_jump(run: _Run, decoding: list[int]) -> list[int]:
    """A run of identical decode steps up to the next completion, arrival or block shortage.

    The mean decode context grows by the tokens gained per step (1 each without
    speculation); durations come from one ``decode_steps_s`` call.  Returns the finished requests."""
    decodes = len(decoding)
    context, generated, output = run.context_tokens, run.generated_tokens, run.output_tokens
    contexts = [context[i] for i in decoding]
    pool, step_tokens = run.pool, run.step_tokens
    accepted: np.ndarray | None = None
    if not run.speculative:
        steps = _plain_jump_steps(run, decoding, contexts)
        durations_s = _jump_durations_s(run, decodes, contexts, np.arange(steps, dtype=float))
        steps = durations_s.shape[0]
        reach = steps - 1 + step_tokens
        pool.grow_each_to(decoding, [c + reach for c in contexts])
    else:
        remaining = np.array([output[i] - generated[i] for i in decoding])
        drawn, tokens_before = _speculative_jump(run, decoding, contexts, remaining)
        durations_s = _jump_durations_s(run, decodes, contexts, tokens_before.sum(axis=0) / decodes)
        steps = durations_s.shape[0]
        before = tokens_before[:, steps - 1]
        accepted = drawn[:, :steps].copy()
        accepted[:, steps - 1] = np.minimum(accepted[:, steps - 1], remaining - before)  # stop at the output length
        gains = before.tolist()
        pool.grow_each_to(decoding, [c + gain + step_tokens for c, gain in zip(contexts, gains, strict=True)])
    run.now_s += float(durations_s.sum())
    run.steps += steps
    _book_decodes(run, decoding, durations_s, accepted)
    return [i for i in decoding if generated[i] >= output[i]]


def _retire(run: _Run, finished: list[int]) -> None:
    """Finished requests leave the batch and free their blocks."""
    gone = set(finished)
    run.running = [i for i in run.running if i not in gone]
    for i in finished:
        run.finish_s[i] = run.now_s
        run.pool.release(i)
        run.done += 1


def simulate(
    w: Workload,
    cfg: SimConfig,
    step_time: StepTime,
    *,
    stop_on_slo_miss: bool = False,
    detail: bool = True,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate ``w`` on one replica (module doc).  Pure and deterministic for a given seed.

    ``stop_on_slo_miss``: stop as soon as the p99 TTFT or ITL target is certainly missed
    (more than 1 % of requests or tokens over it) or a request does not fit the KV cache.
    ``detail=False`` skips the per-request ITL percentiles (sizing needs only the p99s).
    """
    run = _Run(w, cfg, step_time, detail)
    n, arrival_s, pool, waiting = run.requests, run.arrival_s, run.pool, run.waiting
    context, target, step_tokens = run.context_tokens, run.prefill_target_tokens, run.step_tokens
    record_time, record_queue = run.timeline_s.append, run.timeline_queue.append
    record_used_blocks = run.timeline_used_blocks.append
    ttft_miss_limit, itl_miss_limit = run.ttft_miss_limit, run.itl_miss_limit
    stopped = stop_on_slo_miss and bool((run.status == REJECTED_KV).any())
    iterations = 0
    while run.done < n and not stopped:
        if run.next_arrival < n and arrival_s[run.next_arrival] <= run.now_s:
            _enqueue_arrivals(run)
        if not run.running and not waiting:
            if run.next_arrival >= n:
                break
            run.now_s = arrival_s[run.next_arrival]
            continue
        # 1. the decodes (prefill done) get their blocks, preempting the newest while short
        decoding = [i for i in run.running if context[i] >= target[i]]
        for victim in pool.reserve_decode_step(run.running, decoding, context, step_tokens):
            waiting.appendleft(victim)
        # 2. prefill chunks in the rest of the token budget; 3. one mixed step, or a jump over pure decode steps
        chunks = None
        if waiting or len(decoding) < len(run.running):  # else there is no prefill work to plan
            chunks = _plan_prefill_chunks(run, cfg.chunk_tokens - len(decoding) * step_tokens)
        finished = _mixed_step(run, decoding, *chunks) if chunks and chunks[0] else _decode_jump(run, decoding)
        if finished:
            _retire(run, finished)
        record_time(run.now_s)
        record_queue(len(waiting))
        record_used_blocks(pool.capacity_blocks - pool.free_blocks)
        iterations += 1
        if stop_on_slo_miss and (run.ttft_misses > ttft_miss_limit or run.itl_miss_tokens > itl_miss_limit):
            stopped = True  # more than 1 % of requests over the TTFT target, or of tokens over the ITL target
        if progress is not None and iterations % PROGRESS_EVERY == 0:
            progress(run.done / run.requests)
    result = _result(run, w, stopped)
    if progress is not None:
        progress(1.0)
    return result


def _result(run: _Run, w: Workload, stopped: bool) -> SimResult:
    """The SimResult of a finished (or stopped) run, with its summary."""
    n, cfg = run.requests, run.cfg
    finish_s = np.array(run.finish_s)
    status = run.status
    status[np.isnan(finish_s) & (status == SERVED)] = NOT_RUN
    if run.detail:
        itl_p50_s, itl_max_s = per_request_itl_p50_max(run.itl_parts, n)
    else:
        itl_p50_s, itl_max_s = np.full(n, np.nan), np.full(n, np.nan)
    itl_s, itl_weight = itl_sample(run.itl_pieces)
    times_s = np.array(run.timeline_s)
    kv_used_frac = np.array(run.timeline_used_blocks, dtype=float) / max(cfg.kv_capacity_blocks, 1)
    queue_len = np.array(run.timeline_queue, dtype=float)
    kv_mean_frac = time_mean(times_s, kv_used_frac)
    times_s, queue_len, kv_used_frac = downsample_timeline(times_s, queue_len, kv_used_frac)
    return with_summary(
        SimResult(
            config=cfg,
            arrival_s=w.arrival_s.copy(),
            prompt_tokens=w.prompt_tokens.copy(),
            output_tokens=w.output_tokens.copy(),
            cached_tokens=run.cached,
            status=status,
            ttft_s=np.array(run.ttft_s),
            e2e_s=finish_s - w.arrival_s,
            itl_p50_s=itl_p50_s,
            itl_max_s=itl_max_s,
            preemptions=np.array(run.pool.preemptions, dtype=np.int64),
            itl_s=itl_s,
            itl_weight=itl_weight,
            timeline_s=times_s,
            queue_len=queue_len,
            kv_used_frac=kv_used_frac,
            kv_used_time_mean_frac=kv_mean_frac,
            steps=run.steps,
            stopped_early=stopped,
        )
    )


def simulate_scenario(
    s: Scenario,
    catalog: Catalog,
    workload: Workload | None = None,
    step_time: StepTime | None = None,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate the scenario's workload (or ``workload``, e.g. a trace) on one replica."""
    _, x = sim_inputs(s, catalog)
    return simulate(
        scenario_workload(s) if workload is None else workload,
        SimConfig.from_inputs(x, s),
        RooflineStepTime.from_inputs(x) if step_time is None else step_time,
        progress=progress,
    )
