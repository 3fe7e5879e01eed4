"""One replica of a searched configuration simulated on its share of the user's traffic: colocated,
or one pool of a disaggregated (prefill/decode) deployment.

  colocated      the replica's round-robin share: the scenario's Poisson arrivals at rate / r (its
                 seed), or every r-th request of the trace
  prefill pool   the same share with every output cut to one token: the replica prefills each prompt
                 and emits its first token; the deployment's TTFT is that plus the prompt's KV transfer
                 to the decode pool (``search.transfer_s``), so the search holds this pool to the TTFT
                 target less the transfer (the decode pool's first step is not counted)
  decode pool    the share with prefills free (``DecodeOnlyStepTime``): a step lasts the decode step
                 of its running sequences, as on a vLLM decode instance whose KV connector loads each
                 prompt's cache without a forward pass; its token budget admits every prompt at once
                 (one token each in vLLM), while the batch cap and the KV blocks still bound admission,
                 so its ITL and KV occupancy are the decode pool's
A replica count passes when every seed's run meets the SLO (``slo.verdict``: each set target's
statistic): several sample paths instead of one, so the answer does not turn on one seed's tail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from planner.engine.step_time import RooflineStepTime, StepTime
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.search.replicas import fewest_passing
from planner.sim.budget import SimulationBudgetError
from planner.sim.config import SimConfig
from planner.sim.simulate import fit_problems, sim_inputs, simulate
from planner.sim.slo import Slo, Verdict, verdict
from planner.sim.workload import Workload, scenario_workload, split_round_robin

PoolKind = Literal["colocated", "prefill", "decode"]
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


def share_workload(s: Scenario, trace: Workload | None, replicas: int, n: int) -> Workload:
    """One replica's round-robin share: Poisson at rate / replicas (the scenario's seed), or the trace's."""
    if trace is None:
        return scenario_workload(s, rate_per_s=s.rate / replicas, n=n)
    return split_round_robin(trace, replicas).take(slice(0, n))


@dataclass(frozen=True)
class PoolRun:
    """One simulated replica count: the verdict of each seed that ran (it stops at the first miss)."""

    replicas: int
    verdicts: tuple[Verdict, ...]

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
    """The fewest replicas of one pool that meet the SLO in simulation (None: none tried did)."""

    replicas: int | None
    at: PoolRun | None  # the passing run
    below: PoolRun | None  # replicas − 1 (what binds there), None when replicas = 1
    simulations: int
    problem: str = ""


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
) -> PoolSizing:
    """Fewest replicas of configuration ``s`` in pool ``kind`` meeting ``slo`` on every seed (module doc):
    the analytic ``guess`` first, then steps of 1, 2, 4 … and a bisection (``replicas.fewest_passing``)."""
    try:
        cfg, timer = _setup(s, catalog, kind)
    except ValueError as exc:
        return PoolSizing(None, None, None, 0, str(exc))
    cfg = replace(cfg, slo=slo)  # the early stop holds the targets the verdict does
    runs: dict[int, PoolRun] = {}
    count = [0]

    def run(replicas: int) -> PoolRun:
        if replicas not in runs:
            verdicts = []
            for seed in seeds:
                w = share_workload(s.with_changes(seed=seed), trace, replicas, n)
                if kind == "prefill":
                    w = replace(w, output_tokens=np.ones_like(w.output_tokens))
                result = simulate(
                    w, replace(cfg, seed=seed), timer, stop_on_slo_miss=slo.early_stop_valid, detail=False
                )
                count[0] += 1
                verdicts.append(verdict(result, slo))
                if not verdicts[-1].met:
                    break
            runs[replicas] = PoolRun(replicas, tuple(verdicts))
        return runs[replicas]

    guess = max(int(guess), 1)
    limit = max(4 * guess, guess + 8)
    try:
        best = fewest_passing(lambda r: run(r).met, guess, limit)
    except SimulationBudgetError as exc:
        return PoolSizing(None, None, None, count[0], "not simulated: " + "; ".join(exc.problems))
    if best is None:
        return PoolSizing(None, runs.get(limit), None, count[0], f"misses the SLO in simulation up to {limit} replicas")
    return PoolSizing(best, runs[best], runs.get(best - 1), count[0])
