"""A fleet: N identical replicas behind a router, simulated together on one trace.

Each replica is the simulator of ``simulate`` with its own KV pool, prefix cache, queue and
clock; a request lives on the replica the router sends it to, when it arrives.  Routers:

  round_robin      request k (arrival order) goes to replica k mod N;
  least_tokens     to the replica with the fewest outstanding tokens: Σ over its queued
                   requests of prompt + output, and over its running ones of the prefill
                   left + output left (the router is told each request's output length, as
                   the trace records it; a real router can only estimate it);
  prefix_affinity  SGLang's cache-aware policy (sgl-router, ``CacheAwareConfig`` defaults:
                   cache_threshold 0.5, balance_abs_threshold 32, balance_rel_threshold 1.1):
                   with loads = requests queued or running per replica, if max − min > 32
                   and max > 1.1 · min, to the least loaded; otherwise to the replica whose
                   cache holds the longest prefix of the prompt if that is more than half of
                   it, else to the replica whose cache holds the fewest blocks.  The router
                   sees each replica's real prefix cache (as one fed by KV-cache events does,
                   e.g. llm-d's precise prefix-cache scorer); SGLang's router approximates it
                   with a tree of the prompts it routed.

Co-simulation: before routing a request arriving at t, every replica is advanced to its
first step boundary at or after t (a jump over decode steps stops there), so the router
sees each replica's state at that boundary.  Round-robin needs no state: its replicas run
one after another.  Results: ``FleetResult`` (every request, fleet-wide percentiles, and
each replica's own result).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import get_args

import numpy as np
import pandas as pd

from planner.engine.step_time import RooflineStepTime, StepTime
from planner.errors import ScenarioError
from planner.format import fmt_count, fmt_pct, fmt_seconds
from planner.model.catalog import Catalog
from planner.model.scenario import Router, Scenario
from planner.sim.budget import check_work_budget
from planner.sim.collector import collector_paused
from planner.sim.config import SimConfig
from planner.sim.results import REJECTED_KV, SERVED, SimResult
from planner.sim.simulate import advance, assemble, fit_problems, per_request_itl, sim_inputs, simulate
from planner.sim.state import Replica, RunState
from planner.sim.workload import Workload, scenario_workload

ROUTERS: tuple[Router, ...] = get_args(Router)
#: sgl-router CacheAwareConfig defaults (module doc).
CACHE_THRESHOLD = 0.5
BALANCE_ABS_THRESHOLD = 32
BALANCE_REL_THRESHOLD = 1.1
#: Routed requests between two ``progress`` calls.
PROGRESS_EVERY = 500


@dataclass(frozen=True)
class FleetResult:
    """A simulated fleet: ``combined`` holds every request (its summary is the fleet's), ``replicas`` each one's."""

    combined: SimResult
    replicas: list[SimResult]
    router: Router


def outstanding_tokens(run: RunState, rep: Replica) -> int:
    """Prefill and output tokens still to process on ``rep`` (queued: prompt + output)."""
    context, target, generated = run.context_tokens, run.prefill_target_tokens, run.generated_tokens
    prompt, output = run.prompt_tokens, run.output_tokens
    total = sum(max(target[i] - context[i], 0) + output[i] - generated[i] for i in rep.running)
    total += sum(prompt[i] + output[i] for i in rep.waiting)
    return total + sum(prompt[i] + output[i] for i in rep.feed[rep.next_feed :])


def queued_or_running(rep: Replica) -> int:
    return len(rep.running) + len(rep.waiting) + len(rep.feed) - rep.next_feed


def _least_tokens(run: RunState, reps: list[Replica], i: int) -> int:
    loads = [outstanding_tokens(run, r) for r in reps]
    return loads.index(min(loads))


def _prefix_affinity(run: RunState, reps: list[Replica], i: int) -> int:
    loads = [queued_or_running(r) for r in reps]
    low, high = min(loads), max(loads)
    if high - low > BALANCE_ABS_THRESHOLD and high > BALANCE_REL_THRESHOLD * low:
        return loads.index(low)
    keys, ends, prompt = run.keys[i], run.ends[i], run.prompt_tokens[i]
    held = [r.cache.holds(keys, ends, prompt - 1) if keys and r.cache is not None else 0 for r in reps]
    best = max(range(len(reps)), key=lambda k: (held[k], -loads[k], -k))
    if held[best] > CACHE_THRESHOLD * prompt:
        return best
    sizes = [r.cache.size_blocks() if r.cache is not None else 0 for r in reps]
    return min(range(len(reps)), key=lambda k: (sizes[k], loads[k], k))


PICKERS: dict[str, Callable[[RunState, list[Replica], int], int]] = {
    "least_tokens": _least_tokens,
    "prefix_affinity": _prefix_affinity,
}


@collector_paused
def simulate_fleet(
    w: Workload,
    cfg: SimConfig,
    step_time: StepTime,
    replicas: int,
    router: Router = "round_robin",
    *,
    stop_on_slo_miss: bool = False,
    detail: bool = True,
    progress: Callable[[float], None] | None = None,
) -> FleetResult:
    """Simulate ``w`` on ``replicas`` replicas behind ``router`` (module doc).  Pure and seeded."""
    run, reps = run_fleet(
        w, cfg, step_time, replicas, router, stop_on_slo_miss=stop_on_slo_miss, detail=detail, progress=progress
    )
    per_request = per_request_itl(run, reps)
    combined = assemble(run, reps, w, itl_per_request=per_request)
    combined.summary["replicas"] = float(replicas)
    parts = [
        assemble(run, [rep], w, rows=np.array(rep.feed, dtype=np.int64), itl_per_request=per_request) for rep in reps
    ]
    if progress is not None:
        progress(1.0)
    return FleetResult(combined, parts, router)


@collector_paused
def run_fleet(
    w: Workload,
    cfg: SimConfig,
    step_time: StepTime,
    replicas: int,
    router: Router = "round_robin",
    *,
    stop_on_slo_miss: bool = False,
    detail: bool = True,
    progress: Callable[[float], None] | None = None,
) -> tuple[RunState, list[Replica]]:
    """The fleet's run, before its results are assembled: the shared state and each replica's (``replay``
    reads the per-request state of the requests it counts)."""
    if router not in ROUTERS:
        raise ValueError(f"router={router!r}: one of {', '.join(ROUTERS)}")
    check_work_budget(w, cfg, step_time.step_s(1, 1.0, (), ()), replicas)
    n = len(w)
    run = RunState(w, cfg, step_time, detail)
    reps = [Replica(k, cfg, n) for k in range(replicas)]
    run.stopped = stop_on_slo_miss and bool((run.status == REJECTED_KV).any())
    if router == "round_robin":
        for k, rep in enumerate(reps):
            rep.feed = list(range(k, n, replicas))
            for i in rep.feed:
                run.replica[i] = k
        for k, rep in enumerate(reps):
            advance(run, rep, math.inf, stop_on_slo_miss)
            if progress is not None:
                progress((k + 1) / replicas)
    else:
        _routed(run, reps, PICKERS[router], stop_on_slo_miss, progress)
    return run, reps


def _routed(
    run: RunState,
    reps: list[Replica],
    pick: Callable[[RunState, list[Replica], int], int],
    stop_on_slo_miss: bool,
    progress: Callable[[float], None] | None,
) -> None:
    """Route each request when it arrives, every replica advanced to that moment first."""
    arrival = run.arrival_s
    for i in range(run.requests):
        t = arrival[i]
        for rep in reps:
            advance(run, rep, t, stop_on_slo_miss)
        if run.stopped:
            return
        k = pick(run, reps, i) if len(reps) > 1 else 0
        reps[k].feed.append(i)
        run.replica[i] = k
        if progress is not None and i % PROGRESS_EVERY == 0:
            progress(0.9 * i / run.requests)
    for rep in reps:
        advance(run, rep, math.inf, stop_on_slo_miss)


def replica_frame(f: FleetResult) -> pd.DataFrame:
    """One row per replica: requests routed, load, latency, KV use and prefix-cache hit rates."""
    span_s = float(f.combined.summary["duration_s"])
    rows = []
    for k, r in enumerate(f.replicas):
        sm = r.summary
        tokens = float(r.output_tokens[r.status == SERVED].sum())
        rows.append(
            dict(
                replica=k,
                requests=int(sm["requests"]),
                served_requests=int(sm["served_requests"]),
                output_tokens_per_s=tokens / span_s if span_s > 0 else float("nan"),
                ttft_p99_s=sm["ttft_p99_s"],
                itl_p99_s=sm["itl_p99_s"],
                kv_used_mean_frac=sm["kv_used_mean_frac"],
                queue_max=sm["queue_max"],
                preemptions=int(sm["preemptions"]),
                prefix_cache_hit_rate_tokens=sm["prefix_cache_hit_rate_tokens"],
                prefix_cache_hit_rate_requests=sm["prefix_cache_hit_rate_requests"],
                prefix_cache_max_blocks=sm["prefix_cache_max_blocks"],
            )
        )
    return pd.DataFrame(rows)


def fleet_text(f: FleetResult) -> str:
    """The per-replica table for a terminal (after the fleet's ``summary_text``; the same formatters)."""
    lines = [
        f"{len(f.replicas)} replicas, router {f.router}:",
        f"{'replica':>7}{'requests':>10}{'tokens/s':>10}{'p99 TTFT':>11}{'p99 ITL':>11}{'KV used':>9}"
        f"{'prefix hit':>12}",
    ]
    for row in replica_frame(f).to_dict("records"):
        lines.append(
            f"{row['replica']:>7}{fmt_count(row['requests']):>10}{fmt_count(row['output_tokens_per_s']):>10}"
            f"{fmt_seconds(row['ttft_p99_s']):>11}{fmt_seconds(row['itl_p99_s']):>11}"
            f"{fmt_pct(row['kv_used_mean_frac']):>9}{fmt_pct(row['prefix_cache_hit_rate_tokens']):>12}"
        )
    return "\n".join(lines) + "\n"


def simulate_fleet_scenario(
    s: Scenario,
    catalog: Catalog,
    workload: Workload | None = None,
    step_time: StepTime | None = None,
    progress: Callable[[float], None] | None = None,
) -> FleetResult:
    """``workload`` (default: the scenario's Poisson arrivals, ``rate`` to the whole fleet) on the
    scenario's ``replicas`` replicas behind its ``router``; one replica is ``simulate`` itself.

    Raises ScenarioError when the scenario leaves no KV cache at all (``fit_problems``)."""
    r, x = sim_inputs(s, catalog)
    problems = fit_problems(s, r, x)
    if problems:
        raise ScenarioError(problems)
    w = scenario_workload(s) if workload is None else workload
    cfg = SimConfig.from_inputs(x, s)
    timer = RooflineStepTime.from_inputs(x) if step_time is None else step_time
    if s.replicas == 1:
        one = simulate(w, cfg, timer, progress=progress)
        one.summary["replicas"] = 1.0
        return FleetResult(one, [one], s.router)
    return simulate_fleet(w, cfg, timer, s.replicas, s.router, progress=progress)
