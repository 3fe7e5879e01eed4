"""Runs of mixed steps that differ only in their contexts, advanced in one vectorised call.

A long prompt prefills over several steps: while its chunk takes the whole token budget (chunk −
decodes·q), no other request can be admitted, the decoding set stays the same until its next
completion, and each step is the previous one with the decodes' mean context one token longer and the
chunk's cached context one chunk longer.  ``prefill_run`` advances such a run — from the step just
planned up to (not including) the step that completes the prompt, reaches its next prefix block to
cache, finishes a decode, runs out of free KV blocks, passes ``until_s`` (a fleet's next arrival) or
trips the early SLO stop — with the step times from one ``chunk_run_s`` call and the per-step records
(timeline, ITLs, arrivals queued) written as the step-by-step loop writes them: the results are the
same to the bit (tests/sim/test_golden.py).

Only without speculative decoding (the decode set) and without sliding-window layers (one unit per
block), and only with a step time that has ``chunk_run_s`` (``RooflineStepTime``); otherwise, and for
runs shorter than ``MIN_RUN_STEPS``, the simulator takes one step at a time.
"""

from __future__ import annotations

import numpy as np

from planner.sim.state import Replica, RunState
from planner.sim.steps import most_steps_fitting

#: The fewest steps worth a vectorised run (below it one step at a time is as fast).
MIN_RUN_STEPS = 3
#: The longest run (bounds the arrays).
MAX_RUN_STEPS = 4096


def run_length(run: RunState, rep: Replica, request: int, chunk: int, past: int) -> int:
    """Steps from the planned one on in which ``request`` prefills ``chunk`` tokens and does not finish
    its prefill nor reach its next prefix block to cache, and no decode finishes (module doc)."""
    target = run.prefill_target_tokens[request]
    steps = -(-(target - past) // chunk) - 1  # the steps before the one that completes the prompt
    # step j ≥ 1 would cache a prefix block when past + (j + 1)·chunk reaches the next one (step 0 has)
    steps = min(steps, max((run.register_at[request] - past - 1) // chunk, 1))
    ds = rep.decode_set
    if ds is not None and ds.members:
        steps = min(steps, ds.next_finish() - ds.tick - 1)
    return min(steps, MAX_RUN_STEPS)


def prefill_run(
    run: RunState,
    rep: Replica,
    decoding: list[int],
    request: int,
    chunk: int,
    past: int,
    steps: int,
    until_s: float,
    stop_on_slo_miss: bool,
) -> None:
    """Advance ``rep`` by up to ``steps`` mixed steps of ``decoding`` and ``request``'s chunk (module doc).

    The first step is the one just planned (its blocks reserved, its arrivals queued); the timeline
    record of the last step is the caller's, as for a single step."""
    ds, pool = rep.decode_set, rep.pool
    assert ds is not None
    decodes = len(decoding)
    tick = ds.tick
    if decodes:
        # each step's blocks after the first's: Σ growth up to the last step ≤ the free blocks
        if ds.blocks_needed(tick + steps - 1, pool) > pool.free_blocks:
            steps = most_steps_fitting(lambda s: ds.blocks_needed(tick + s - 1, pool), steps, pool.free_blocks)
        numerators = ds.off_sum + decodes * (tick + np.arange(steps, dtype=np.int64))
        contexts = numerators / decodes  # Σ contexts / decodes, the mean context of each step
    else:
        contexts = np.zeros(steps)
    pasts = past + chunk * np.arange(steps, dtype=np.int64)
    durations_s = run.step_time.chunk_run_s(decodes, 1.0, contexts, chunk, pasts)  # type: ignore[attr-defined]
    clock = np.empty(steps + 1)
    clock[0] = rep.now_s
    clock[1:] = durations_s
    clock = clock.cumsum()  # sequential: each step's end = the previous end + its duration, as step by step
    steps = _stop_within(run, clock, durations_s, decodes, until_s, steps, stop_on_slo_miss)
    durations_s = durations_s[:steps]
    growth = _growth_per_step(rep, tick, steps) if decodes else None
    _book_run(run, rep, clock, durations_s, decodes, growth)
    run.context_tokens[request] = past + steps * chunk
    rep.steps += steps
    if decodes:
        ds.jumped(steps, pool)  # the first step's blocks were reserved before it; this grows the others'


def _stop_within(
    run: RunState, clock: np.ndarray, durations_s: np.ndarray, decodes: int, until_s: float, steps: int, stop: bool
) -> int:
    """The run cut after the step that reaches ``until_s`` or trips the early stop (more ITL tokens over the
    target than the p99 allows), as the step-by-step loop stops there."""
    if until_s < np.inf:
        reached = int(clock[1:].searchsorted(until_s, side="left"))
        steps = min(steps, reached + 1)
    if decodes and stop:
        over = np.cumsum(durations_s[:steps] > run.stop_itl_s) * decodes + run.itl_miss_tokens
        tripped = np.flatnonzero(over > run.itl_miss_limit)
        if tripped.size:
            steps = min(steps, int(tripped[0]) + 1)
    return steps


def _growth_per_step(rep: Replica, tick: int, steps: int) -> list[int]:
    """Blocks the decodes grow at the start of steps 1 … steps − 1 (step 0's were reserved): a member whose
    growth tick is g grows one block at g, g + block, g + 2·block, …"""
    ds, pool = rep.decode_set, rep.pool
    assert ds is not None
    if ds.counted:
        return [0, *ds.growth_counts(steps)[1:]] if steps else []
    out = [0] * steps
    last = tick + steps - 1
    if steps < 2 or not ds.grow_at or ds.grow_at[0][0] > last:
        return out
    epoch, held, block = ds.epoch, pool.held_blocks, pool.block_tokens
    for g, i, e, h in ds.grow_at:
        if g <= last and epoch[i] == e and held[i] == h:
            for t in range(g, last + 1, block):
                out[t - tick] += 1
    return out


def _book_run(
    run: RunState, rep: Replica, clock: np.ndarray, durations_s: np.ndarray, decodes: int, growth: list[int] | None
) -> None:
    """The run's records, step by step as ``advance`` and ``mixed_step`` write them: each step's ITL (one
    value of ``decodes`` tokens), the arrivals queued before steps 1 …, the timeline after steps 0 … − 2
    (the caller records the last), the clock."""
    steps = durations_s.shape[0]
    values = durations_s.tolist()
    times = clock[1 : steps + 1].tolist()
    if decodes:
        rep.itl_values.extend(values)
        rep.itl_weights.extend([decodes] * steps)
        run.itl_miss_tokens += decodes * int(np.count_nonzero(durations_s > run.stop_itl_s))
    if run.log_steps:
        rep.step_log.extend(values)
    arrival, servable, feed, waiting, pool = run.arrival_s, run.servable, rep.feed, rep.waiting, rep.pool
    used = pool.capacity_blocks - pool.free_blocks
    k = rep.next_feed
    for j in range(steps - 1):
        now = times[j]
        rep.timeline_s.append(now)  # after step j: the queue as of its start, the blocks after its growth
        rep.timeline_queue.append(len(waiting))
        rep.timeline_used_units.append(used)
        while k < len(feed) and arrival[feed[k]] <= now:  # queued at the start of step j + 1
            if servable[feed[k]]:
                waiting.append(feed[k])
            else:
                run.done += 1
            k += 1
        if growth is not None:
            used += growth[j + 1]
    rep.next_feed = k
    run.iterations += steps - 1
    rep.now_s = times[-1]
