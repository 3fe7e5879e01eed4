"""A long replay on a fleet, split into parts that run anywhere (``planner.executors``: the local process
pool, or a Ray cluster) and merged exactly.

**Split.**  Behind a load-independent router (``round_robin``) the replicas never interact: replica r
serves requests g ≡ r (mod N) of the traffic, so each replica is a part of its own.  Each replica's
traffic is further cut into time windows [t_k, t_k+1) (a load-aware router's fleet is cut into windows
only, every replica in each part).  A part simulates the requests arriving in [t_k − L, t_k+1 + L) and
counts those arriving in [t_k, t_k+1): the lead-in L before the window fills the replica as the requests
before it would have, the lead-out after it keeps competing with the last counted ones.  The windows are
as many as keep each part under ``TASK_REQUESTS`` requests and the simulator's work budget (``budget``);
L = max(``LEAD_MIN_S``, ``LEAD_REQUESTS`` requests of the part's rate), at most a window.  Times stay the
trace's own (absolute), so a part computes the same floating-point numbers as the whole run would.

**Exactness.**  A replica that empties (no request running or waiting) forgets everything before — but its
prefix cache — so a part whose lead-in contains such a moment reproduces the whole run's results for
every request after it, to the bit.  The merge checks it: the requests of the second half of a part's
lead-in are also the previous part's last counted ones, and their TTFTs must be the same in both
(``boundaries_exact`` of ``boundaries``, the requests compared and the largest difference); the first
half is where the part fills up, and differs.  A boundary that is not exact says the lead was too short
for this load (an overloaded replica never empties): use fewer, longer parts.

**Merge.**  Counts add exactly (requests, served, rejected, tokens, preemptions, goodput, prefix-cache
hits); TTFT, ITL (per token), TPOT and end-to-end latency merge as log-bucket histograms
(``histogram``: integer counts, exact addition; a percentile read from one is within 0.5 % of the exact
order statistic).  The result is the same, to the last count, on any executor and in any order the parts
finish; and with lead-ins that empty the replica, the same as simulating the whole trace at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from planner.engine.step_time import RooflineStepTime
from planner.errors import ScenarioError
from planner.executors import Executor, run_all
from planner.model.catalog import Catalog
from planner.model.scenario import Router, Scenario
from planner.sim.budget import MAX_SIM_STEPS, estimated_steps
from planner.sim.config import SimConfig
from planner.sim.fleet import run_fleet
from planner.sim.histogram import RELATIVE_ACCURACY, Histogram
from planner.sim.replay_sources import TASK_REQUESTS, TraceSource
from planner.sim.results import PERCENTILES, REJECTED_CONTEXT, REJECTED_KV, SERVED, itl_by_request
from planner.sim.simulate import fit_problems, sim_inputs
from planner.sim.slo import Slo
from planner.sim.state import Replica, RunState

#: A part's lead-in and lead-out: at least this long, and this many of its requests.
LEAD_MIN_S = 10.0
LEAD_REQUESTS = 300
#: Routers whose replicas never interact (each replica is a part of its own).
INDEPENDENT_ROUTERS = ("round_robin",)
HISTOGRAMS = ("ttft", "ttft_all", "itl", "tpot", "e2e")
COUNTS = (
    "requests",
    "served",
    "rejected_context",
    "rejected_kv",
    "output_tokens",
    "good",
    "preemptions",
    "prompt_tokens_admitted",
    "cached_tokens",
    "simulated_requests",
    "steps",
)


@dataclass(frozen=True)
class Part:
    """One part: a replica (or the whole fleet: ``group`` −1) over window ``window`` [start, end)."""

    group: int
    window: int
    start_s: float
    end_s: float
    lead_s: float


@dataclass(frozen=True)
class ReplayPlan:
    """How a replay is split (module doc)."""

    replicas: int
    router: Router
    groups: int  # parts per window: the replicas (load-independent router), else 1
    edges: tuple[float, ...]  # t_0 < t_1 < … < t_K
    lead_s: float

    @property
    def parts(self) -> list[Part]:
        groups = range(self.groups) if self.groups > 1 else [-1]
        last = len(self.edges) - 2
        return [
            Part(g, k, self.edges[k], self.edges[k + 1] if k < last else math.inf, self.lead_s)
            for k in range(len(self.edges) - 1)
            for g in groups
        ]


def plan_replay(s: Scenario, catalog: Catalog, source: TraceSource, task_requests: int = TASK_REQUESTS) -> ReplayPlan:
    """The split of ``source`` on the scenario's fleet (module doc)."""
    groups = s.replicas if s.router in INDEPENDENT_ROUTERS and s.replicas > 1 else 1
    per_part = source.requests / groups  # every window's requests of one part
    sample = source.sample(2000)
    _, x = sim_inputs(s, catalog)
    steps_each = estimated_steps(sample, SimConfig.from_inputs(x, s)) / max(len(sample), 1)
    fits = int(0.5 * MAX_SIM_STEPS / steps_each) if steps_each > 0 else task_requests
    size = max(1000, min(task_requests, fits))
    windows = max(1, math.ceil(per_part / size))
    duration = source.duration_s
    edges = tuple(float(v) for v in np.linspace(0.0, duration, windows + 1))
    rate = per_part / duration if duration > 0 else math.inf
    lead = max(LEAD_MIN_S, LEAD_REQUESTS / rate) if rate > 0 else LEAD_MIN_S
    return ReplayPlan(s.replicas, s.router, groups, edges, min(lead, duration / windows) if windows > 1 else 0.0)


@dataclass
class Partial:
    """One part's counted requests (module doc): counts, histograms, span and its boundary requests."""

    counts: dict[str, int]
    hists: dict[str, Histogram]
    first_arrival_s: float
    last_finish_s: float
    lead_ids: np.ndarray  # requests of its lead-in's second half, and their TTFT here
    lead_ttft_s: np.ndarray
    tail_ids: np.ndarray  # its counted requests in the last L/2 before its end (the next part's lead-in)
    tail_ttft_s: np.ndarray
    part: Part = field(default_factory=lambda: Part(-1, 0, 0.0, 0.0, 0.0))


def _request_itl(run: RunState, reps: list[Replica], rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ITLs of requests ``rows`` and their weights in tokens (``results``' per-token sample, by request)."""
    values, weights = [], []
    if run.speculative:
        by_request, tokens, starts = itl_by_request(run.itl_booked, run.requests)
        for i in rows.tolist():
            values.append(by_request[starts[i] : starts[i + 1]])
            weights.append(tokens[starts[i] : starts[i + 1]])
    else:
        logs = [np.asarray(r.step_log) for r in reps]
        for i in rows.tolist():
            log = logs[run.replica[i]]
            values += [log[a:b] for a, b in run.decode_runs[i]]
            if run.gaps[i]:
                values.append(np.asarray(run.gaps[i]))
        weights = [np.ones(v.shape[0], dtype=np.int64) for v in values]
    if not values:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(values), np.concatenate(weights).astype(np.int64)


def _partial(run: RunState, reps: list[Replica], arrival: np.ndarray, ids: np.ndarray, part: Part, cfg) -> Partial:
    status = run.status
    ttft = np.asarray(run.ttft_s, dtype=float)
    finish = np.asarray(run.finish_s, dtype=float)
    output = np.asarray(run.output_tokens, dtype=np.int64)
    counted = (arrival >= part.start_s) & (arrival < part.end_s)
    c = np.flatnonzero(counted)
    served = status[c] == SERVED
    sc = c[served]
    e2e = finish[sc] - arrival[sc]
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(output[sc] > 1, (e2e - ttft[sc]) / (output[sc] - 1), np.nan)
    slo = cfg.slo
    good = np.ones(sc.size, dtype=bool)
    if slo.ttft_s is not None:
        good &= ttft[sc] <= slo.ttft_s
    if slo.goodput_tpot_s is not None:
        good &= (output[sc] <= 1) | (tpot <= slo.goodput_tpot_s)
    if slo.e2e_s is not None:
        good &= e2e <= slo.e2e_s
    itl, itl_w = _request_itl(run, reps, sc)
    preempt = sum(np.asarray(r.pool.preemptions, dtype=np.int64)[c] for r in reps)
    admitted = np.asarray(run.admitted, dtype=bool)[c]
    counts = dict(
        requests=int(c.size),
        served=int(served.sum()),
        rejected_context=int((status[c] == REJECTED_CONTEXT).sum()),
        rejected_kv=int((status[c] == REJECTED_KV).sum()),
        output_tokens=int(output[sc].sum()),
        good=int(good.sum()),
        preemptions=int(np.sum(preempt)),
        prompt_tokens_admitted=int(np.asarray(run.prompt_tokens, dtype=np.int64)[c][admitted].sum()),
        cached_tokens=int(np.asarray(run.cached_tokens, dtype=np.int64)[c][admitted].sum()),
        simulated_requests=int(arrival.size),
        steps=int(sum(r.steps for r in reps)),
    )
    ttft_all = np.where(status[c] == SERVED, ttft[c], np.inf)
    hists = dict(
        ttft=Histogram.of(ttft[sc]),
        ttft_all=Histogram.of(ttft_all),
        itl=Histogram.of(itl, itl_w),
        tpot=Histogram.of(tpot[np.isfinite(tpot)]),
        e2e=Histogram.of(e2e),
    )
    lead = (arrival < part.start_s) & (arrival >= part.start_s - part.lead_s / 2.0)  # the checked half
    tail = counted & (arrival >= part.end_s - part.lead_s / 2.0)
    return Partial(
        counts,
        hists,
        float(arrival[c].min()) if c.size else math.inf,
        float(finish[sc].max()) if sc.size else -math.inf,
        ids[lead],
        np.where(status[lead] == SERVED, ttft[lead], np.inf),
        ids[tail],
        np.where(status[tail] == SERVED, ttft[tail], np.inf),
        part,
    )


def replay_part(shared: tuple[Scenario, Catalog, TraceSource, ReplayPlan], part: Part) -> Partial:
    """One executor task: simulate a part (module doc) and keep what the merge needs."""
    s, catalog, source, plan = shared
    w, ids = source.between(part.start_s - part.lead_s, part.end_s + part.lead_s)
    if part.group >= 0:
        mine = ids % plan.replicas == part.group
        w, ids = w.take(mine), ids[mine]
    r, x = sim_inputs(s, catalog)
    cfg = SimConfig.from_inputs(x, s)
    replicas = 1 if part.group >= 0 else plan.replicas
    run, reps = run_fleet(w, cfg, RooflineStepTime.from_inputs(x), replicas, s.router, detail=True)
    return _partial(run, reps, w.arrival_s, ids, part, cfg)


@dataclass(frozen=True)
class ReplayResult:
    """The merged replay (module doc)."""

    counts: dict[str, int]
    hists: dict[str, Histogram]
    first_arrival_s: float
    last_finish_s: float
    plan: ReplayPlan
    parts: int
    boundary: BoundaryCheck
    slo: Slo
    executor: str
    source: str
    windows: list[dict[str, Any]]

    @property
    def summary(self) -> dict[str, float | bool]:
        """Counts, throughput, goodput, the p50/p90/p99 of TTFT, ITL, TPOT and E2E and each SLO target's statistic
        (``NAME_slo_stat_s``, from the histograms) and whether every one is met."""
        c = self.counts
        span = self.last_finish_s - self.first_arrival_s
        out: dict[str, float | bool] = {k: float(v) for k, v in c.items()}
        for name in ("ttft", "itl", "tpot", "e2e"):
            for p, v in zip(PERCENTILES, self.hists[name].quantiles(PERCENTILES), strict=True):
                out[f"{name}_p{p}_s"] = v
        out["ttft_p99_with_rejected_s"] = self.hists["ttft_all"].quantiles((99,))[0]
        out["duration_s"] = span
        out["output_tokens_per_s"] = c["output_tokens"] / span if span > 0 else math.nan
        out["goodput_frac"] = c["good"] / c["requests"] if c["requests"] else math.nan
        out["prefix_cache_hit_rate_tokens"] = (
            c["cached_tokens"] / c["prompt_tokens_admitted"] if c["prompt_tokens_admitted"] else math.nan
        )
        for name in self.slo.targets:
            h = self.hists["ttft_all" if name == "ttft" else name]
            out[f"{name}_slo_stat_s"] = h.statistic(self.slo.pct)
        out["slo_met"] = bool(
            c["rejected_kv"] == 0
            and c["served"] > 0
            and all(out[f"{n}_slo_stat_s"] <= t for n, t in self.slo.targets.items())
        )
        return out


@dataclass(frozen=True)
class BoundaryCheck:
    """Each boundary's second-half lead-in against the previous part (module doc)."""

    boundaries: int
    exact: int
    requests: int
    max_diff_s: float


def _boundary(partials: Sequence[Partial]) -> BoundaryCheck:
    by = {(p.part.group, p.part.window): p for p in partials}
    boundaries = exact = compared = 0
    worst = 0.0
    for (g, k), p in sorted(by.items()):
        prev = by.get((g, k - 1))
        if prev is None:
            continue
        boundaries += 1
        common, a, b = np.intersect1d(p.lead_ids, prev.tail_ids, return_indices=True)
        x, y = p.lead_ttft_s[a], prev.tail_ttft_s[b]
        compared += int(common.size)
        differ = ~((x == y) | (np.isinf(x) & np.isinf(y)))
        if differ.any():
            worst = max(worst, float(np.nanmax(np.abs(np.where(differ, x - y, 0.0)))))
        else:
            exact += 1
    return BoundaryCheck(boundaries, exact, compared, worst)


def merge(partials: Sequence[Partial], plan: ReplayPlan, s: Scenario, executor: str, source: str) -> ReplayResult:
    """The parts merged (module doc); the parts' order does not matter."""
    counts = {k: sum(p.counts[k] for p in partials) for k in COUNTS}
    hists = {h: sum((p.hists[h] for p in partials), Histogram.empty()) for h in HISTOGRAMS}
    windows = [
        dict(
            window=p.part.window,
            replica=p.part.group if p.part.group >= 0 else "all",
            start_s=p.part.start_s,
            requests=p.counts["requests"],
            ttft_p99_s=p.hists["ttft_all"].quantiles((99,))[0],
            itl_p99_s=p.hists["itl"].quantiles((99,))[0],
        )
        for p in sorted(partials, key=lambda p: (p.part.window, p.part.group))
    ]
    return ReplayResult(
        counts=counts,
        hists=hists,
        first_arrival_s=min(p.first_arrival_s for p in partials),
        last_finish_s=max(p.last_finish_s for p in partials),
        plan=plan,
        parts=len(partials),
        boundary=_boundary(partials),
        slo=Slo.of(s),
        executor=executor,
        source=source,
        windows=windows,
    )


def replay(
    s: Scenario,
    catalog: Catalog,
    source: TraceSource,
    executor: Executor,
    plan: ReplayPlan | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> ReplayResult:
    """Replay ``source`` on the scenario's fleet (``replicas``, ``router``) through ``executor`` (module doc).

    Raises ScenarioError when one replica of the scenario does not fit."""
    r, x = sim_inputs(s, catalog)
    problems = fit_problems(s, r, x)
    if problems:
        raise ScenarioError(problems)
    plan = plan or plan_replay(s, catalog, source)
    parts = plan.parts
    done = [0]

    def note(_i: int, _value: Any) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0] / len(parts), f"Replaying: {done[0]} of {len(parts)} parts ({executor.name})")

    def tick() -> None:
        if progress is not None:
            progress(done[0] / len(parts), f"Replaying: {done[0]} of {len(parts)} parts ({executor.name})")

    partials = run_all(executor, replay_part, parts, (s, catalog, source, plan), on_result=note, on_tick=tick)
    return merge(partials, plan, s, executor.name, source.name)


def replay_text(z: ReplayResult) -> str:
    """The merged replay for a terminal."""
    sm = z.summary
    c = z.counts
    lines = [
        f"{c['requests']:,} requests of {z.source} on {z.plan.replicas} replica(s), router {z.plan.router}: "
        f"{z.parts} parts ({len(z.plan.edges) - 1} windows, lead {z.plan.lead_s:,.0f} s), executor {z.executor}",
        f"served {c['served']:,}, rejected {c['rejected_context'] + c['rejected_kv']:,} "
        f"({c['rejected_kv']:,} over the KV cache); {c['output_tokens']:,} output tokens, "
        f"{sm['output_tokens_per_s']:,.0f}/s; goodput {sm['goodput_frac']:.1%}; {c['preemptions']:,} preemptions",
    ]
    for name, label in (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"), ("e2e", "E2E")):
        values = "  ".join(f"p{p} {sm[f'{name}_p{p}_s']:.4g} s" for p in PERCENTILES)
        lines.append(f"{label:<5} {values}")
    verdict = "yes" if sm["slo_met"] else "no"
    lines.append(
        f"targets ({z.slo.text()}) met: {verdict} "
        f"(statistics from merged histograms, within {RELATIVE_ACCURACY:.1%}; counts exact)"
    )
    b = z.boundary
    off = "" if b.exact == b.boundaries else f"; largest |ΔTTFT| {b.max_diff_s:.3g} s: use fewer, longer parts"
    lines.append(
        f"boundaries: {b.exact} of {b.boundaries} exact ({b.requests:,} lead-in requests compared{off}); "
        f"{c['simulated_requests']:,} requests simulated in all (with the leads), {c['steps']:,} steps"
    )
    return "\n".join(lines) + "\n"
