"""One replica's scheduler steps (``simulate``'s module doc): admission with prefix-cache look-ups,
prefill chunks, mixed steps, jumps over runs of identical decode steps, retirement.

Every function takes the shared ``RunState`` and the ``Replica`` it acts on."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from planner.sim.blocks import BlockPool
from planner.sim.state import NEVER, Replica, RunState

#: Longest run of decode steps advanced in one jump (bounds the arrays per jump).
MAX_JUMP_STEPS = 4096
#: With speculative decoding, acceptance draws per jump (per running sequence).
MAX_SPEC_JUMP_STEPS = 64


def enqueue_arrivals(run: RunState, rep: Replica) -> None:
    """Queue every request routed here that has arrived by now; rejected ones are done at once (and,
    in a closed loop, free their client's slot: ``closed_loop``)."""
    arrival, servable, feed, loop = run.arrival_s, run.servable, rep.feed, run.loop
    k, now = rep.next_feed, rep.now_s
    while k < len(feed) and arrival[feed[k]] <= now:
        i = feed[k]
        if loop is not None:
            loop.started()
        if servable[i]:
            rep.waiting.append(i)
        else:
            run.done += 1
            if loop is not None:  # refused at once: its client's slot is free again
                loop.release(arrival, arrival[i])
        k += 1
    rep.next_feed = k


def plan_prefill_chunks(run: RunState, rep: Replica, budget_tokens: int) -> tuple[list[int], list[int], list[int]]:
    """(requests, new tokens, tokens already in the cache) of this step's prefill chunks.

    Running requests still prefilling (``rep.prefilling``, in admission order) come first, then
    waiting requests are admitted (``admit_waiting``), each chunk as large as the budget allows."""
    chunk_requests: list[int] = []
    new_tokens: list[int] = []
    past_tokens: list[int] = []
    if budget_tokens <= 0:
        return chunk_requests, new_tokens, past_tokens
    context, target, register_at = run.context_tokens, run.prefill_target_tokens, run.register_at
    for i in rep.prefilling:
        chunk = min(target[i] - context[i], budget_tokens)
        chunk_requests.append(i)
        new_tokens.append(chunk)
        past_tokens.append(context[i])
        budget_tokens -= chunk
        if context[i] + chunk >= register_at[i]:
            register_prefix_blocks(run, rep, i, context[i] + chunk)
        if budget_tokens <= 0:
            return chunk_requests, new_tokens, past_tokens
    if rep.waiting:
        admit_waiting(run, rep, budget_tokens, chunk_requests, new_tokens, past_tokens)
    return chunk_requests, new_tokens, past_tokens


def admit_waiting(
    run: RunState,
    rep: Replica,
    budget_tokens: int,
    chunk_requests: list[int],
    new_tokens: list[int],
    past_tokens: list[int],
) -> None:
    """Admit waiting requests first come, first served while the budget, the batch and the free units allow.

    A request (re)computes its prompt and the tokens generated before a preemption, minus the
    prefix blocks the cache holds (found up to prompt − 1 tokens; vLLM ``get_computed_blocks``).
    Its first chunk is appended to the lists."""
    waiting, running, pool, cache = rep.waiting, rep.running, rep.pool, rep.cache
    block = pool.block_tokens
    while budget_tokens > 0 and waiting and len(running) < run.cfg.batch:
        i = waiting[0]
        target = run.prompt_tokens[i] + run.generated_tokens[i]
        positions = pool.blocks_for(target)
        if pool.charge(positions, run.max_shared_blocks[i]) > pool.free_blocks:
            break  # it cannot fit even if the cache held its whole prefix: no look-up needed
        keys = run.keys[i]
        found = extra = shared = 0
        if keys and cache is not None:
            found, extra = cache.lookup(keys, run.ends[i], run.prompt_tokens[i] - 1)
            shared = run.cum_blocks[i][found - 1] if found else 0
        if pool.charge(positions, shared) + extra > pool.free_blocks:
            break
        waiting.popleft()
        running.append(i)
        rep.prefilling.append(i)
        if found and cache is not None:
            cache.use(i, keys, found)
        pool.admit(i, target, shared)
        cached = shared * block
        if not run.admitted[i]:
            run.admitted[i] = True
            run.cached_tokens[i] = cached
            run.hit_blocks[i] = found
        run.start(i, found)
        run.prefill_target_tokens[i] = target
        run.context_tokens[i] = cached
        chunk = min(target - cached, budget_tokens)
        chunk_requests.append(i)
        new_tokens.append(chunk)
        past_tokens.append(cached)
        budget_tokens -= chunk
        if cached + chunk >= run.register_at[i]:
            register_prefix_blocks(run, rep, i, cached + chunk)


def register_prefix_blocks(run: RunState, rep: Replica, i: int, context_tokens: int) -> None:
    """Cache the prefix blocks request i's prefill reaches with the chunk just scheduled (vLLM caches
    full blocks in ``allocate_slots``, when the step is scheduled: a request scheduled after it in
    the same step finds them)."""
    keys, ends = run.keys[i], run.ends[i]
    if rep.cache is None:
        j = len(keys)
    else:
        j, shared = rep.cache.register_computed(i, keys, ends, run.cum_blocks[i], run.next_unit[i], context_tokens)
        rep.pool.shared_blocks[i] += shared
    run.next_unit[i] = j
    run.register_at[i] = ends[j] if j < len(keys) else NEVER


def book_decodes(
    run: RunState,
    rep: Replica,
    decoding: list[int],
    durations_s: np.ndarray,
    accepted: np.ndarray | None,
    durations: list[float] | None = None,
    gained: np.ndarray | None = None,
) -> None:
    """Book ``len(durations_s)`` decode steps of ``decoding``: their ITLs (and, with speculative
    decoding, contexts and tokens: without it the replica's ``DecodeSet`` tick carries them).

    ``accepted``: tokens each request emits per step (speculative decoding; None = 1 each),
    each step's ITL being its duration / the tokens it emitted.  ``durations``: ``durations_s`` as a
    list, where the caller has it (without speculative decoding the ITLs are booked one value per step,
    into the replica's lists, as ``prefill_run`` books them: no array per jump).  ``gained``: each request's
    tokens over the steps (``accepted``'s row sums), where the caller has them."""
    slo_itl_s = run.stop_itl_s
    if accepted is None:  # the decode set's tick carries the contexts and tokens
        decodes = len(decoding)
        values = durations_s.tolist() if durations is None else durations
        rep.itl_values.extend(values)
        rep.itl_weights.extend([decodes] * durations_s.shape[0])
        if slo_itl_s < math.inf and max(values, default=0.0) > slo_itl_s:  # (none over: nothing to count)
            run.itl_miss_tokens += decodes * int(np.count_nonzero(durations_s > slo_itl_s))
        return
    context, generated = run.context_tokens, run.generated_tokens
    itl_s = durations_s[None, :] / accepted
    rep.add_itl_piece(itl_s.ravel(), accepted.ravel())
    # an ITL is its step ÷ tokens ≥ 1, never above the step: no step over the target, no ITL over it
    if slo_itl_s < math.inf and float(durations_s.max()) > slo_itl_s:
        run.itl_miss_tokens += float(accepted[itl_s > slo_itl_s].sum())
    gains = (accepted.sum(axis=1) if gained is None else gained).tolist()
    for i, tokens in zip(decoding, gains, strict=True):
        context[i] += tokens
        generated[i] += tokens
    if run.detail:  # row r's ITLs are request decoding[r]'s: grouped by request once, after the run
        run.itl_booked.append((decoding, itl_s, accepted))


def mixed_step(
    run: RunState,
    rep: Replica,
    decoding: list[int],
    chunk_requests: list[int],
    new_tokens: list[int],
    past_tokens: list[int],
) -> list[int]:
    """One step of decodes and prefill chunks; returns the requests it finished."""
    context, target = run.context_tokens, run.prefill_target_tokens
    generated, output = run.generated_tokens, run.output_tokens
    ds = rep.decode_set
    decodes = len(decoding)
    if ds is not None:
        mean_context = ds.mean_context() if decodes else 0.0
    else:
        mean_context = sum(context[i] for i in decoding) / decodes if decodes else 0.0
    duration_s = run.step_time.step_s(decodes, mean_context, new_tokens, past_tokens)
    rep.now_s += duration_s
    rep.steps += 1
    if run.log_steps:
        rep.step_log.append(duration_s)
    finished: list[int] = []
    if decodes:
        if ds is not None:
            rep.add_itl(duration_s, decodes)
            if duration_s > run.stop_itl_s:
                run.itl_miss_tokens += decodes
            ds.tick += 1
            finished = ds.pop_finished()
        else:
            remaining = np.array([output[i] - generated[i] for i in decoding])
            accepted = np.minimum(run.draws.take(decodes, 1), remaining[:, None])
            book_decodes(run, rep, decoding, np.array([duration_s]), accepted, gained=accepted[:, 0])
            finished = [i for i in decoding if generated[i] >= output[i]]
    for i, chunk in zip(chunk_requests, new_tokens, strict=True):
        context[i] += chunk
        if context[i] >= target[i]:
            rep.prefilling.remove(i)
            emit_prefill_token(run, rep, i)
            if generated[i] >= output[i]:
                finished.append(i)
            elif ds is not None:
                ds.enter(i, context[i], generated[i], output[i], rep.pool)
    return finished


def emit_prefill_token(run: RunState, rep: Replica, i: int) -> None:
    """A completed prefill emits a token: the first (TTFT), or the next one after a preemption
    (one ITL, from the request's last token before it)."""
    now_s = rep.now_s
    run.generated_tokens[i] += 1
    if run.ttft_s[i] != run.ttft_s[i]:  # NaN: the first token
        run.ttft_s[i] = now_s - run.arrival_s[i]
        run.ttft_misses += run.ttft_s[i] > run.stop_ttft_s
    else:
        gap_s = now_s - run.last_token_s[i]
        rep.add_itl(gap_s, 1)
        run.itl_miss_tokens += gap_s > run.stop_itl_s
        if run.detail:
            if run.speculative:
                run.itl_booked.append(([i], np.full((1, 1), gap_s), np.ones((1, 1), dtype=np.int64)))
            else:
                run.gaps[i].append(gap_s)
    run.last_token_s[i] = now_s
    run.decode_from[i] = rep.steps  # it decodes from the next step on


def end_decode_run(run: RunState, rep: Replica, i: int) -> None:
    """Request i stops decoding (finished or preempted): record its run of decode steps (detail)."""
    start = run.decode_from[i]
    if start >= 0:
        if run.detail and start < rep.steps:
            run.decode_runs[i].append((start, rep.steps))
        run.decode_from[i] = -1


def preempted(run: RunState, rep: Replica, victims: list[tuple[int, bool]]) -> None:
    """Put preempted requests back at the head of the queue; a decoding one's last token was just now."""
    for victim, was_decoding in victims:
        if was_decoding:
            run.last_token_s[victim] = rep.now_s
            end_decode_run(run, rep, victim)
        else:
            rep.prefilling.remove(victim)
        rep.waiting.appendleft(victim)


def plain_jump_steps(rep: Replica, decoding: list[int], contexts: list[int], steps: int, step_tokens: int) -> int:
    """``steps`` (to the first completion, ≤ MAX_JUMP_STEPS), fewer if the free units run out first.

    Step j (0-based) of the jump runs at context + j; it needs ⌈(context + j + q) / block⌉ positions."""
    pool = rep.pool
    held_blocks = pool.held_blocks
    held = [held_blocks[i] for i in decoding]
    block = pool.block_tokens
    reach = step_tokens + block - 1
    growth = pool.growth

    def blocks_needed(jump_steps: int) -> int:
        total = 0
        for context, blocks in zip(contexts, held, strict=True):
            extra = (context + jump_steps - 1 + reach) // block - blocks
            if extra > 0:
                total += extra
        return total

    def units_needed(jump_steps: int) -> int:
        return sum(
            growth(blocks, (context + jump_steps - 1 + reach) // block)
            for context, blocks in zip(contexts, held, strict=True)
        )

    needed = units_needed if pool.windowed else blocks_needed
    if needed(steps) <= pool.free_blocks:
        return steps
    return most_steps_fitting(needed, steps, pool.free_blocks)


def jump_surely_fits(pool: BlockPool, decodes: int, steps: int, step_tokens: int) -> bool:
    """Every step of a speculative jump fits the free units, without looking at the rows: the first step's
    positions were reserved before the jump (``reserve_decode_step``: held ≥ ⌈(context + q) / block⌉) and a row
    gains ≤ q tokens a step, so by the last step it needs ≤ ⌈(steps − 1)·q / block⌉ more positions (a ceiling
    is subadditive), each ≤ full + window weight units — if every row at that bound fits, the exact count
    (``speculative_jump``'s ``blocks_needed``) fits too."""
    per_row = ((steps - 1) * step_tokens + pool.block_tokens - 1) // pool.block_tokens
    return (pool.full_weight + pool.window_weight) * decodes * per_row <= pool.free_blocks


def speculative_jump(
    run: RunState, rep: Replica, decoding: list[int], contexts: list[int], remaining: np.ndarray, most_remaining: int
) -> tuple[np.ndarray, np.ndarray]:
    """Acceptance draws of the jump and the tokens gained before each of its steps.

    Draws ≤ MAX_SPEC_JUMP_STEPS steps per request; the jump ends at the step in which the
    first request reaches its output length, or earlier if the free units run out.
    ``tokens_before[:, j]``: tokens gained before step j; its width is the jump's steps.
    ``most_remaining``: ``remaining``'s largest (the caller has it as a Python int)."""
    decodes = len(decoding)
    drawn_steps = min(most_remaining, MAX_SPEC_JUMP_STEPS)
    accepted = run.draws.take(decodes, drawn_steps)
    cumulative = accepted.cumsum(axis=1)
    # each row's first step reaching its output length = the steps before it (its cumulative sum grows)
    first = (cumulative < remaining[:, None]).sum(axis=1)
    steps = min(int(first.min()) + 1, drawn_steps)
    tokens_before = np.zeros((decodes, steps), dtype=np.int64)
    tokens_before[:, 1:] = cumulative[:, : steps - 1]
    pool = rep.pool
    block, q = pool.block_tokens, run.step_tokens
    a, b, cap = pool.full_weight, pool.window_weight, pool.window_cap
    if jump_surely_fits(pool, decodes, steps, q):
        return accepted, tokens_before
    reach = np.array(contexts) + (q + block - 1)
    held_blocks = pool.held_blocks
    held = np.array([held_blocks[i] for i in decoding])

    def blocks_needed(jump_steps: int) -> int:
        positions = (reach + tokens_before[:, jump_steps - 1]) // block
        extra = a * np.maximum(positions - held, 0)
        if b:
            extra += b * np.maximum(np.minimum(positions, cap) - np.minimum(held, cap), 0)
        return int(extra.sum())

    if blocks_needed(steps) > pool.free_blocks:
        steps = most_steps_fitting(blocks_needed, steps, pool.free_blocks)
    return accepted, tokens_before[:, :steps]


def most_steps_fitting(blocks_needed: Callable[[int], int], steps: int, free_blocks: int) -> int:
    """The most steps < ``steps`` whose units fit in the free units, by bisection (1 always
    fits: the first step's blocks were reserved before the jump)."""
    lo, hi = 1, steps
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if blocks_needed(mid) <= free_blocks:
            lo = mid
        else:
            hi = mid - 1
    return lo


def jump_durations_s(
    run: RunState, rep: Replica, decodes: int, mean_context: float, growth: np.ndarray, until_s: float
) -> np.ndarray:
    """Durations of the jump's steps at mean context ``mean_context`` (Σ contexts / decodes) + growth[j].

    The jump stops after the step during which ``until_s`` falls (a fleet's next arrival), or the
    next request routed here arrives when it could be admitted."""
    durations_s = np.asarray(run.step_time.decode_steps_s(decodes, mean_context + growth), dtype=float)
    cfg = run.cfg
    horizon_s = until_s
    if rep.next_feed < len(rep.feed):
        admissible = (
            not rep.waiting and len(rep.running) < cfg.batch and cfg.chunk_tokens - decodes * run.step_tokens > 0
        )
        if admissible:
            horizon_s = min(horizon_s, run.arrival_s[rep.feed[rep.next_feed]])
    if horizon_s < math.inf:
        ends_s = durations_s.cumsum()
        steps = int(ends_s.searchsorted(horizon_s - rep.now_s, side="left")) + 1
        if steps < durations_s.shape[0]:
            durations_s = durations_s[:steps]
    return durations_s


def decode_jump(run: RunState, rep: Replica, decoding: list[int], until_s: float) -> list[int]:
    """A run of identical decode steps up to the next completion, arrival or unit shortage.

    The mean decode context grows by the tokens gained per step (1 each without
    speculation); durations come from one ``decode_steps_s`` call.  Returns the finished requests."""
    decodes = len(decoding)
    context, generated, output = run.context_tokens, run.generated_tokens, run.output_tokens
    pool, step_tokens, ds = rep.pool, run.step_tokens, rep.decode_set
    accepted: np.ndarray | None = None
    if ds is not None:
        tick = ds.tick
        steps = min(ds.next_finish() - tick, MAX_JUMP_STEPS)
        if pool.windowed:
            offsets = ds.ctx_off
            contexts = [offsets[i] + tick for i in decoding]
            steps = plain_jump_steps(rep, decoding, contexts, steps, step_tokens)
        elif ds.blocks_needed(tick + steps - 1, pool) > pool.free_blocks:
            steps = most_steps_fitting(lambda s: ds.blocks_needed(tick + s - 1, pool), steps, pool.free_blocks)
        # Σ contexts = Σ ctx_off + decodes · tick exactly (integers): the same mean context as summing them
        durations_s = jump_durations_s(run, rep, decodes, ds.mean_context(), np.arange(steps, dtype=float), until_s)
        steps = durations_s.shape[0]
        ds.jumped(steps, pool)
    else:
        contexts = [context[i] for i in decoding]
        left = [output[i] - generated[i] for i in decoding]
        remaining = np.array(left)
        drawn, tokens_before = speculative_jump(run, rep, decoding, contexts, remaining, max(left))
        mean_context = sum(contexts) / decodes
        durations_s = jump_durations_s(run, rep, decodes, mean_context, tokens_before.sum(axis=0) / decodes, until_s)
        steps = durations_s.shape[0]
        before = tokens_before[:, steps - 1]
        accepted = drawn[:, :steps].copy()
        last = accepted[:, steps - 1]
        np.minimum(last, remaining - before, out=last)  # stop at the output length
        gains = before.tolist()
        pool.grow_each_to(decoding, [c + gain + step_tokens for c, gain in zip(contexts, gains, strict=True)])
    rep.now_s += float(durations_s.sum())
    rep.steps += steps
    if accepted is None:
        durations = durations_s.tolist()
        if run.log_steps:  # (never with speculative decoding)
            rep.step_log.extend(durations)
        book_decodes(run, rep, decoding, durations_s, None, durations)
    else:
        book_decodes(run, rep, decoding, durations_s, accepted, gained=before + accepted[:, steps - 1])
    if ds is not None:
        return ds.pop_finished()
    return [i for i in decoding if generated[i] >= output[i]]


def retire(run: RunState, rep: Replica, finished: list[int]) -> None:
    """Finished requests leave the batch and free their blocks."""
    gone = set(finished)
    rep.running = [i for i in rep.running if i not in gone]
    ds = rep.decode_set
    for i in finished:
        if ds is not None and ds.member[i]:
            run.context_tokens[i], run.generated_tokens[i] = ds.leave(i)
        run.finish_s[i] = rep.now_s
        end_decode_run(run, rep, i)
        rep.pool.release(i)
        run.done += 1
        if run.loop is not None:  # a closed loop's client sends its next request
            run.loop.release(run.arrival_s, rep.now_s)
