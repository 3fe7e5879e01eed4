"""Seeded iteration-level simulation of serving replicas with continuous batching.

Scheduler (vLLM with chunked prefill; Kwon et al. SOSP 2023, Agrawal et al. OSDI 2024):
each step
  1. runs every running sequence that has finished its prefill (a decode: q tokens,
     q = 1, or γ + 1 with speculative decoding); before the step each needs
     ⌈(ctx + q) / block⌉ KV block positions; while the free units do not cover that, the
     newest running request is preempted: its blocks are freed and it goes back to the
     head of the queue, to be recomputed (prefill of prompt + tokens generated so far)
     (``blocks.BlockPool``);
  2. spends the rest of the token budget, chunk − decodes·q, on prefill chunks: first
     the running requests still prefilling, then waiting requests in arrival order,
     each admitted only while running < batch (max_num_seqs) and the blocks of its
     prompt + generated tokens that the prefix cache does not hold fit in the free units;
  3. lasts ``step_time.step_s(decodes, mean decode context, chunks)`` seconds.
The prefill's last step emits the first token (TTFT = its end − arrival); each decode
step emits 1 token, or a ~ min(Geometric(1 − α), γ + 1) tokens with speculative
decoding (P(a = j) = α^(j−1)(1 − α) for j ≤ γ, P(a = γ + 1) = α^γ, so E[a] =
(1 − α^(γ+1))/(1 − α) as in ``speculative.expected_tokens_per_step``).
Prefix caching (``prefix_cache``): a request's prefill starts after the prefix blocks the
replica's cache holds; the blocks it computes are cached as their chunks are scheduled and
shared, counted once, by every request that uses them.  KV capacity: ``memory_plan``'s KV
budget per GPU ÷ bytes of one block; sliding-window layers hold at most their window
(``blocks``).  Requests longer than the model's context window, or needing more units than
the whole pool, are rejected (never run) and count as misses against the TTFT target.

Runs of identical decode steps (no prefill, no admission possible) are advanced in one
vectorised jump up to the next completion, arrival or block shortage.

Inter-token latency (ITL): the time between a request's successive token emissions,
divided by the tokens emitted at once (speculative decoding), weighted per token; a
preempted request's recomputed prefill emits one token, whose ITL runs from the request's
last token before the preemption.  Outputs, percentiles and SLO verdicts: ``results``.
A fleet of replicas behind a router: ``fleet``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from planner.engine.evaluate import Resolved, inputs_for, resolve
from planner.engine.inputs import EngineInputs
from planner.engine.memory import memory_plan
from planner.engine.step_time import RooflineStepTime, StepTime
from planner.errors import ScenarioError
from planner.format import fmt_bytes
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.sim.budget import check_work_budget
from planner.sim.closed_loop import ClosedLoop
from planner.sim.collector import collector_paused
from planner.sim.config import SimConfig
from planner.sim.prefill_run import MIN_RUN_STEPS, prefill_run, run_length
from planner.sim.results import (
    NOT_RUN,
    REJECTED_KV,
    SERVED,
    SimResult,
    downsample_timeline,
    itl_by_request,
    itl_sample,
    per_request_itl_from_runs,
    per_request_itl_p50_max,
    time_mean,
    with_summary,
)
from planner.sim.state import Replica, RunState
from planner.sim.steps import (
    decode_jump,
    enqueue_arrivals,
    mixed_step,
    plan_prefill_chunks,
    preempted,
    retire,
)
from planner.sim.workload import Workload, scenario_workload

__all__ = [
    "SimConfig",
    "advance",
    "assemble",
    "fit_problems",
    "per_request_itl",
    "sim_inputs",
    "simulate",
    "simulate_scenario",
]

#: Iterations between two ``progress`` calls.
PROGRESS_EVERY = 2000


def sim_inputs(s: Scenario, catalog: Catalog) -> tuple[Resolved, EngineInputs]:
    """The scenario resolved against the catalog, and its engine inputs."""
    r = resolve(s, catalog)
    return r, inputs_for(r)


def fit_problems(s: Scenario, r: Resolved, x: EngineInputs) -> list[str]:
    """Why one replica of this scenario cannot run at all (its weights and reserve leave no KV block); [] if it can."""
    plan = memory_plan(x)
    blocks = int(np.asarray(plan["kv_capacity_tokens"]).reshape(()) // np.asarray(x.block_tokens).reshape(()))
    if bool(np.asarray(plan["fits"]).reshape(())) and blocks > 0:
        return []
    weights = float(np.asarray(plan["weight_bytes_per_gpu"]))
    reserve = float(np.asarray(plan["reserve_bytes_per_gpu"]))
    usable = float(np.asarray(plan["usable_bytes_per_gpu"]))
    min_tp = int(np.asarray(plan["min_tp_that_fits"]))
    hint = f"try tp ≥ {min_tp}" if min_tp > s.tp else "try a larger GPU, a smaller model or a lower-precision dtype"
    return [
        f"{r.model.name} at tp {s.tp} on {r.gpu.name} does not fit: weights {fmt_bytes(weights)} + reserve "
        f"{fmt_bytes(reserve)} per GPU leave no room for one sequence's KV cache in the usable "
        f"{fmt_bytes(usable)} ({hint}); nothing to simulate"
    ]


def _iterate(run: RunState, rep: Replica, until_s: float, stop_on_slo_miss: bool) -> None:
    """One scheduler iteration on ``rep``: reserve the decodes' blocks, plan chunks, one step, a run of steps
    that differ only in their contexts (``prefill_run``), or a jump."""
    context, target, step_tokens = run.context_tokens, run.prefill_target_tokens, run.step_tokens
    ds = rep.decode_set
    if ds is not None:
        victims = ds.reserve(rep.pool, rep.running, context, run.generated_tokens)
        decoding = ds.members
    else:
        decoding = [i for i in rep.running if context[i] >= target[i]]
        victims = rep.pool.reserve_decode_step(rep.running, decoding, context, step_tokens)
    if victims:
        preempted(run, rep, victims)
    chunks = None
    budget = run.cfg.chunk_tokens - len(decoding) * step_tokens
    if rep.waiting or rep.prefilling:  # else there is no prefill work to plan
        chunks = plan_prefill_chunks(run, rep, budget)
    if chunks and chunks[0]:
        requests, new, past = chunks
        if run.prefill_runs and len(requests) == 1 and new[0] == budget and not rep.pool.windowed:
            steps = run_length(run, rep, requests[0], budget, past[0])
            if steps >= MIN_RUN_STEPS:
                prefill_run(run, rep, decoding, requests[0], budget, past[0], steps, until_s, stop_on_slo_miss)
                return
        finished = mixed_step(run, rep, decoding, *chunks)
    else:
        finished = decode_jump(run, rep, decoding, until_s)
    if finished:
        retire(run, rep, finished)


def advance(
    run: RunState,
    rep: Replica,
    until_s: float = math.inf,
    stop_on_slo_miss: bool = False,
    progress: Callable[[float], None] | None = None,
) -> None:
    """Run ``rep`` until its clock reaches ``until_s`` (a fleet's next arrival) or it has nothing left to do."""
    arrival_s, feed, waiting, pool = run.arrival_s, rep.feed, rep.waiting, rep.pool
    record_time, record_queue = rep.timeline_s.append, rep.timeline_queue.append
    record_used = rep.timeline_used_units.append
    ttft_miss_limit, itl_miss_limit = run.ttft_miss_limit, run.itl_miss_limit
    while not run.stopped:
        if rep.next_feed < len(feed) and arrival_s[feed[rep.next_feed]] <= rep.now_s:
            enqueue_arrivals(run, rep)
        if not rep.running and not waiting:
            if rep.next_feed >= len(feed) or arrival_s[feed[rep.next_feed]] > until_s:
                return
            rep.now_s = arrival_s[feed[rep.next_feed]]
            continue
        if rep.now_s >= until_s:
            return
        _iterate(run, rep, until_s, stop_on_slo_miss)
        record_time(rep.now_s)
        record_queue(len(waiting))
        record_used(pool.capacity_blocks - pool.free_blocks)
        run.iterations += 1
        if stop_on_slo_miss and (run.ttft_misses > ttft_miss_limit or run.itl_miss_tokens > itl_miss_limit):
            run.stopped = True  # more than 1 % of requests over the TTFT target, or of tokens over the ITL target
        if progress is not None and run.iterations % PROGRESS_EVERY == 0:
            progress(run.done / run.requests)


@collector_paused
def simulate(
    w: Workload,
    cfg: SimConfig,
    step_time: StepTime,
    *,
    stop_on_slo_miss: bool = False,
    detail: bool = True,
    progress: Callable[[float], None] | None = None,
    max_concurrency: int | None = None,
) -> SimResult:
    """Simulate ``w`` on one replica (module doc).  Pure and deterministic for a given seed.

    ``stop_on_slo_miss``: stop as soon as the p99 TTFT or ITL target is certainly missed
    (more than 1 % of requests or tokens over it) or a request does not fit the KV cache.
    ``detail=False`` skips the per-request ITL percentiles (sizing needs only the p99s).
    ``max_concurrency``: a closed loop of that many clients (``closed_loop``): ``w``'s arrivals are
    when each request is scheduled, and the result's ``arrival_s`` when it started (its slot came free).
    Raises ``SimulationBudgetError`` before any work when the run would exceed the work budget.
    """
    check_work_budget(w, cfg, step_time.step_s(1, 1.0, (), ()))
    run = RunState(w, cfg, step_time, detail)
    if max_concurrency is not None:
        run.loop = ClosedLoop(w.arrival_s, max_concurrency)
        run.arrival_s = run.loop.initial_starts()
    rep = Replica(0, cfg, len(w))
    rep.feed = list(range(len(w)))
    run.replica = [0] * len(w)
    run.stopped = stop_on_slo_miss and bool((run.status == REJECTED_KV).any())
    advance(run, rep, math.inf, stop_on_slo_miss, progress)
    result = assemble(run, [rep], w)
    if progress is not None:
        progress(1.0)
    return result


def per_request_itl(run: RunState, reps: Sequence[Replica]) -> tuple[np.ndarray, np.ndarray]:
    n = run.requests
    if not run.detail:
        return np.full(n, np.nan), np.full(n, np.nan)
    if run.speculative:
        values, _, starts = itl_by_request(run.itl_booked, n)
        return per_request_itl_p50_max(values, starts, n)
    logs = [np.array(r.step_log) for r in reps]
    return per_request_itl_from_runs(logs, run.replica, run.decode_runs, run.gaps)


def _timeline(run: RunState, reps: Sequence[Replica]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(times, queue, KV used share, time-mean KV share): one replica's records, or the fleet's sum/mean."""
    capacity = max(run.cfg.capacity_units, 1)
    series = [
        (np.array(r.timeline_s), np.array(r.timeline_queue, dtype=float), np.array(r.timeline_used_units) / capacity)
        for r in reps
    ]
    if len(series) == 1:
        times_s, queue, used = series[0]
        return times_s, queue, used, time_mean(times_s, used)
    times_s = np.unique(np.concatenate([t for t, _, _ in series]))
    queue = np.zeros(times_s.size)
    used = np.zeros(times_s.size)
    for t, q, u in series:
        if t.size:
            at = np.searchsorted(t, times_s, side="right") - 1  # each replica's last record by then
            ok = at >= 0
            queue[ok] += q[at[ok]]
            used[ok] += u[at[ok]]
    used /= len(series)
    return times_s, queue, used, time_mean(times_s, used)


def assemble(
    run: RunState,
    reps: Sequence[Replica],
    w: Workload,
    rows: np.ndarray | None = None,
    itl_per_request: tuple[np.ndarray, np.ndarray] | None = None,
) -> SimResult:
    """The SimResult of a finished (or stopped) run, with its summary: every request, or those in ``rows``
    (one replica of a fleet: ``reps`` is that replica, whose timeline and ITL sample are its own).
    ``itl_per_request``: every request's median and largest ITL, when already computed."""
    cfg = run.cfg
    finish_s = np.array(run.finish_s)
    arrival_s = np.array(run.arrival_s)  # w's, or in a closed loop each request's start
    status = run.status.copy()
    status[np.isnan(finish_s) & (status == SERVED)] = NOT_RUN
    itl_p50_s, itl_max_s = per_request_itl(run, reps) if itl_per_request is None else itl_per_request
    for r in reps:
        r.flush_itl()
    itl_s, itl_weight = itl_sample([piece for r in reps for piece in r.itl_pieces])
    times_s, queue_len, kv_used_frac, kv_mean_frac = _timeline(run, reps)
    times_s, queue_len, kv_used_frac = downsample_timeline(times_s, queue_len, kv_used_frac)
    admitted = np.array(run.admitted)
    caches = [r.cache for r in reps if r.cache is not None]
    pick = slice(None) if rows is None else rows
    return with_summary(
        SimResult(
            config=cfg,
            arrival_s=arrival_s[pick],
            prompt_tokens=w.prompt_tokens[pick].copy(),
            output_tokens=w.output_tokens[pick].copy(),
            cached_tokens=np.array(run.cached_tokens, dtype=np.int64)[pick],
            status=status[pick],
            ttft_s=np.array(run.ttft_s)[pick],
            e2e_s=(finish_s - arrival_s)[pick],
            itl_p50_s=itl_p50_s[pick],
            itl_max_s=itl_max_s[pick],
            preemptions=_preemptions(run, reps)[pick],
            itl_s=itl_s,
            itl_weight=itl_weight,
            timeline_s=times_s,
            queue_len=queue_len,
            kv_used_frac=kv_used_frac,
            kv_used_time_mean_frac=kv_mean_frac,
            steps=sum(r.steps for r in reps),
            stopped_early=run.stopped,
            prefix_blocks=np.where(admitted, run.prefix_blocks_total, 0).astype(np.int64)[pick],
            prefix_hit_blocks=np.array(run.hit_blocks, dtype=np.int64)[pick],
            replica=np.array(run.replica, dtype=np.int64)[pick],
            prefix_cache_max_blocks=float(max((c.max_cached_blocks for c in caches), default=0)),
            prefix_reuse_ceiling_frac=run.reuse_ceiling_frac,
        )
    )


def _preemptions(run: RunState, reps: Sequence[Replica]) -> np.ndarray:
    """Preemptions per request (each request lives on one replica: the sum over replicas)."""
    total = np.zeros(run.requests, dtype=np.int64)
    for r in reps:
        total += np.array(r.pool.preemptions, dtype=np.int64)
    return total


def simulate_scenario(
    s: Scenario,
    catalog: Catalog,
    workload: Workload | None = None,
    step_time: StepTime | None = None,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate the scenario's workload (or ``workload``, e.g. a trace) on one replica.

    Raises ScenarioError when the scenario leaves no KV cache at all (``fit_problems``)."""
    r, x = sim_inputs(s, catalog)
    problems = fit_problems(s, r, x)
    if problems:
        raise ScenarioError(problems)
    return simulate(
        scenario_workload(s) if workload is None else workload,
        SimConfig.from_inputs(x, s),
        RooflineStepTime.from_inputs(x) if step_time is None else step_time,
        progress=progress,
    )
