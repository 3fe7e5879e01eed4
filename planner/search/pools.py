"""One replica of a searched configuration simulated on its share of the user's traffic: colocated,
or one pool of a disaggregated (prefill/decode) deployment.

  colocated      the replica's round-robin share: the scenario's Poisson arrivals at rate / r (its
                 seed), or every r-th request of the trace; behind a load-aware ``router`` (least_tokens,
                 prefix_affinity) a bounded sample of the fleet instead: min(r, 8) replicas co-simulated on
                 the traffic they receive (``fleet_sample``)
  prefill pool   the same share with every output cut to one token: the replica prefills each prompt
                 and emits its first token; the deployment's TTFT is that plus the prompt's KV transfer
                 to the decode pool (``search.transfer_s``), so the search holds this pool to the TTFT
                 target less the transfer (the decode pool's first step is not counted)
  decode pool    the share with prefills free (``DecodeOnlyStepTime``): a step lasts the decode step
                 of its running sequences, as on a vLLM decode instance whose KV connector loads each
                 prompt's cache without a forward pass; its token budget admits every prompt at once
                 (one token each in vLLM), while the batch cap and the KV blocks still bound admission,
                 so its ITL and KV occupancy are the decode pool's (a pool's replica is simulated at its share
                 whatever the router: kvplan does not model the router of a disaggregated deployment)
A replica count passes when every seed's run meets the SLO (``slo.verdict``: each set target's
statistic): several sample paths instead of one, so the answer does not turn on one seed's tail.

Every count tried is simulated on ``n`` requests (``size_pool``): from the analytic guess by steps, then
a bisection, to r − s failing and r passing, s = max(1, ⌊``tolerance`` · r⌋) (``replicas.fewest_passing``);
the first step from a passing guess is scaled by how far its run was below the targets.
A failing run stops as soon as the SLO is certainly missed, so the failures are cheap.  ``ceiling``: the
most replicas at which the configuration could still be the search's answer (what its cheapest confirmed
fleet costs, in replicas of this one); the count is simulated there first, and when it fails there the
sizing stops — by monotonicity every smaller count fails too, so the fleet costs more than the answer
(``cannot_win``) — else the count is sized below it.  ``deadline``
(seconds since the epoch, ``time.time()``: comparable across processes and machines) ends the sizing when
it passes — between runs, and inside a run at the simulator's next progress call — with ``timed_out``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from planner.engine.step_time import RooflineStepTime, StepTime
from planner.model.catalog import Catalog
from planner.model.scenario import MAX_REPLICAS, Router, Scenario
from planner.search.fleet_sample import basis_words, sample_workload, sampled_replicas, simulate_sample
from planner.search.replicas import fewest_passing
from planner.sim.budget import SimulationBudgetError
from planner.sim.config import SimConfig
from planner.sim.results import NOT_RUN, SimResult
from planner.sim.simulate import fit_problems, sim_inputs
from planner.sim.slo import Slo, Verdict, verdict
from planner.sim.steady import NOT_STEADY, until_steady
from planner.sim.workload import Workload

PoolKind = Literal["colocated", "prefill", "decode"]
#: The replica count is resolved to this share of itself (at least one replica; ``replicas.fewest_passing``):
#: about what a 3,600-request p99 resolves (docs/simulator.md, "Which counts").
REPLICA_TOLERANCE = 0.04
NOT_IN_TIME = "not confirmed within the time budget"
CANNOT_WIN = "cannot win: costs more than the answer"


class OutOfTime(Exception):
    """The sizing's time budget ran out (raised from the simulator's progress call, caught by ``size_pool``)."""


def deadline_check(deadline: float | None) -> Callable[[float], None] | None:
    """A progress callback raising ``OutOfTime`` once ``deadline`` (``time.time()``) has passed."""
    if deadline is None:
        return None

    def check(_frac: float) -> None:
        if time.time() > deadline:
            raise OutOfTime

    return check


#: The decode pool's token budget: every admitted prompt fits in one step.
DECODE_POOL_BUDGET_TOKENS = 1 << 40


@dataclass(frozen=True)
class DecodeOnlyStepTime:
    """A step time whose prefill chunks cost nothing (the decode pool, module doc)."""

    inner: StepTime

    def step_s(self, seqs: int, ctx: float, new: Sequence[float] = (), past: Sequence[float] = ()) -> float:
        return self.inner.step_s(seqs, ctx, (), ()) if seqs else 0.0

    def decode_steps_s(self, seqs: int, ctx: np.ndarray) -> np.ndarray:
        return self.inner.decode_steps_s(seqs, ctx)


@dataclass(frozen=True)
class PoolRun:
    """One simulated replica count: the verdict of each seed that ran (it stops at the first miss)."""

    replicas: int
    verdicts: tuple[Verdict, ...]
    simulated: int = 1  # replicas co-simulated (``fleet_sample``: a bounded sample behind a load-aware router)
    basis: str = ""  # what was simulated, in words (``fleet_sample.basis_words``: '8 of 270 replicas (least_tokens)')

    @property
    def met(self) -> bool:
        return all(v.met for v in self.verdicts)

    @property
    def worst(self) -> Verdict:
        """The run that failed, else the one with the largest TTFT percentile."""
        failed = [v for v in self.verdicts if not v.met]
        return failed[0] if failed else max(self.verdicts, key=lambda v: v.ttft_q_s)


@dataclass(frozen=True)
class PoolSizing:
    """The fewest replicas of one pool that meet the SLO in simulation (None: none tried did, or the time
    budget ran out first: ``timed_out``)."""

    replicas: int | None
    at: PoolRun | None  # the passing run
    below: PoolRun | None  # the count below it that failed (what binds there), None when replicas = 1
    simulations: int
    problem: str = ""
    timed_out: bool = False
    requests: int = 0  # simulated in all (every run, stopped ones to where they stopped)
    cannot_win: bool = False  # it misses the SLO at ``ceiling`` replicas (``below``; none run when ceiling is 0)


def _met(v: Verdict) -> bool:
    return v.met


def _setup(s: Scenario, catalog: Catalog, kind: PoolKind) -> tuple[SimConfig, StepTime]:
    r, x = sim_inputs(s, catalog)
    problems = fit_problems(s, r, x)
    if problems:
        raise ValueError(problems[0])
    cfg = SimConfig.from_inputs(x, s)
    timer: StepTime = RooflineStepTime.from_inputs(x)
    if kind == "decode":
        cfg = replace(cfg, chunk_tokens=DECODE_POOL_BUDGET_TOKENS)
        timer = DecodeOnlyStepTime(timer)
    return cfg, timer


def size_pool(
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None,
    kind: PoolKind,
    guess: int,
    n: int,
    seeds: Sequence[int],
    slo: Slo,
    deadline: float | None = None,
    tolerance: float = 0.0,
    ceiling: int | None = None,
) -> PoolSizing:
    """Fewest replicas of configuration ``s`` in pool ``kind`` meeting ``slo`` on every seed (module doc):
    from the analytic ``guess`` by steps and a bisection on runs of ``n`` requests (``replicas.fewest_passing``,
    resolved to ``tolerance``); at most ``ceiling`` (module doc: else ``cannot_win``)."""
    if ceiling is not None and ceiling < 1:
        return PoolSizing(None, None, None, 0, CANNOT_WIN, cannot_win=True)
    try:
        cfg, timer = _setup(s, catalog, kind)
    except ValueError as exc:
        return PoolSizing(None, None, None, 0, str(exc))
    cfg = replace(cfg, slo=slo)  # the early stop holds the targets the verdict does
    runs: dict[tuple[int, int], PoolRun] = {}
    router: Router = s.router if kind == "colocated" else "round_robin"  # a pool's replicas: its share each
    count = [0, 0]
    tick = deadline_check(deadline)

    def run(replicas: int, m: int) -> PoolRun:
        if (replicas, m) not in runs:
            if deadline is not None and time.time() > deadline:
                raise OutOfTime
            verdicts = []
            k = sampled_replicas(router, replicas)
            for seed in seeds:

                def simulate_n(n: int, seed: int = seed) -> SimResult:
                    w = sample_workload(s.with_changes(seed=seed), trace, replicas, n, router)
                    if kind == "prefill":
                        w = replace(w, output_tokens=np.ones_like(w.output_tokens))
                    stop = slo.early_stop_valid
                    result = simulate_sample(
                        w, replace(cfg, seed=seed), timer, router, replicas, stop_on_slo_miss=stop, progress=tick
                    )
                    count[0] += 1
                    count[1] += int((result.status != NOT_RUN).sum())
                    return result

                _, v, steady = until_steady(simulate_n, m, lambda r: verdict(r, slo), _met, k, slo.ttft_s)
                verdicts.append(v if steady else replace(v, met=False, failed=(NOT_STEADY,)))
                if not verdicts[-1].met:
                    break
            runs[replicas, m] = PoolRun(replicas, tuple(verdicts), k, basis_words(router, replicas))
        return runs[replicas, m]

    guess = min(max(int(guess), 1), MAX_REPLICAS)
    limit = min(max(4 * guess, guess + 8), MAX_REPLICAS)
    try:
        if ceiling is not None:
            bound = run(ceiling, n)
            if not bound.met:
                return PoolSizing(None, None, bound, count[0], CANNOT_WIN, requests=count[1], cannot_win=True)
            guess, limit = min(guess, ceiling), ceiling
        first = run(guess, n)
        best = fewest_passing(lambda r: run(r, n).met, guess, limit, tolerance, _first_step(first, slo))
    except SimulationBudgetError as exc:
        return PoolSizing(None, None, None, count[0], "not simulated: " + "; ".join(exc.problems), requests=count[1])
    except OutOfTime:
        return PoolSizing(None, None, None, count[0], NOT_IN_TIME, timed_out=True, requests=count[1])
    if best is None:
        problem = f"misses the SLO in simulation up to {limit} replicas"
        return PoolSizing(None, runs.get((limit, n)), None, count[0], problem, requests=count[1])
    failed = [r for (r, _), pr in runs.items() if r < best and not pr.met]  # what binds: the count below that failed
    below = runs[max(failed), n] if failed else None
    return PoolSizing(best, runs[best, n], below, count[0], requests=count[1])


def _first_step(first: PoolRun, slo: Slo) -> int:
    """The first step away from the guess, from how far its run was from the targets: a run at a fraction m
    of its tighter target (m = max of each target's statistic over the target) steps down by r·(1 − m)/2 (at most
    half of r) — a guess well above the answer is left in a few runs, not one replica at a time.  A failing
    run (its percentiles partial when it stopped early) steps by the tolerance's step."""
    if not first.met or first.replicas < 4:
        return 0
    v = first.worst
    m = max((v.value(n) / t if t > 0 else 0.0 for n, t in slo.targets.items()), default=0.0)
    return int(min(first.replicas * max(1.0 - m, 0.0) / 2.0, first.replicas / 2.0))
