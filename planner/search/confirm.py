"""Stage 2 of the search: the points to confirm and their confirmation by simulation (``knob_search``
module doc), run through an executor (``planner.executors``: the local process pool, or Ray).

**What is simulated.**  Replicas behind a load-independent router are identical and each sees its own
share of the traffic, so one representative replica is simulated at its share (``pools``): the
scenario's Poisson arrivals at rate / r — exactly a random router's share (Poisson thinning), and
burstier than a round-robin router's (every r-th arrival of a Poisson stream has Erlang-r gaps), so the
count is an upper bound for round-robin — or every r-th request of a trace (round-robin exactly).  Its
cost is the same at 10 or 2,000 requests/s: the fleet's size does not enter it.  The replica count is
resolved to ``pools.REPLICA_TOLERANCE`` (4 %) of itself, at least one replica.

**How many requests.**  ``DESIGN_EFFECT`` × ``confidence.requests_for(slo.pct)``: the empirical p99 of
1,800 *independent* requests lies between the true p98.5 and p99.5 with 95 % confidence, but the requests
of one queue are not independent — a burst of arrivals delays every request in it — so one sample path
of n requests carries the information of fewer.  Measured (Llama-3.1-70B 4,000 in / 500 out on one
MI355X tp 2 replica at 10/6 requests/s, 10 seeds): the p99 TTFT of one 1,800-request path has a standard
deviation of 0.29 s around a p99 of 2.3 s, of one 3,600-request path 0.09–0.17 s, so the search simulates
twice the independent count: 3,600 requests for p99 (docs/simulator.md).  A scenario whose
``sim_requests`` is below its default (2,000) simulates that many instead (faster, less certain: the
band is stated with the answer); above the needed count, ``sim_requests``.  Every count tried is
simulated on all of them (``pools.size_pool``; a shorter bracketing sample was tried and dropped: its
first requests meet an empty replica, and its p99 ran 30–40 % below the whole sample's, so it sent the
search the wrong way).  One seed: one sample path, on which the counts compared are coupled (the same
requests, time-scaled).

**Which candidates get the whole sample.**  A GPU whose cheapest point costs more than ``CONFIRM_FAR`` (1.5)
× the cheapest of all cannot win; it is bounded by the first round's answer ("A bound" below) and, only where
that round confirmed nothing, its candidate is sized on the independent count alone (1,800 for
p99: enough to place it, a replica either way does not change the answer), never fewer than the simulator's
default 2,000 (a mean or p50 needs few requests to place, but a shorter run ends before a loaded replica's
queue reaches its steady state: 600 requests had a 70B tp4 replica "meet" a mean TTFT at 1.6 × the rate 4,000
sustain) — ``Plan.far_requests``.

**A bound before the sizing.**  The candidates are confirmed in two rounds.  First each GPU's cheapest point
on the GPUs that can win (``Candidate.lead``); the cheapest of them meeting the SLO costs C.  Then every
other candidate — a GPU's further points, the GPUs that cannot win — with its ``ceiling``: the most
replicas of it that cost no more than C.  It is simulated at the ceiling first; when it misses the SLO
there, every smaller count misses too (the count is monotone, as the sizing's bisection assumes), so its
fleet costs more than C and it cannot be the answer: it is shown as such after that one run (which stops
early, its SLO certainly missed), with the run's binding constraint — not sized further.  When it meets
the SLO there it might win, and it is sized below the ceiling on the whole sample.  A colocated ceiling
below one replica costs no run.  (The answer is the one a full sizing of every candidate gives: a
candidate shown unable to win needs more replicas than any sizing of it could return below C.)

**When.**  The candidates are confirmed cheapest first (every GPU's cheapest before any second point), so
what the time budget leaves unconfirmed is the least likely to win; ``deadline`` (``time.time()``) stops
every candidate still running, and those are reported with the screening model's numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from planner.engine import parallel
from planner.executors import Executor
from planner.model.catalog import Catalog
from planner.model.scenario import NO_PREFILL_POOL, PREFILL_POOL_BATCH, Scenario
from planner.search.confidence import requests_for
from planner.search.grid import COLOCATED, DISAGGREGATED, Base
from planner.search.pools import NOT_IN_TIME, REPLICA_TOLERANCE, PoolSizing, size_pool
from planner.sim.simulate import sim_inputs
from planner.sim.slo import Slo
from planner.sim.workload import Workload

CONFIRM_PER_GPU = 2
#: A GPU's further candidates cost at most this × its cheapest (the others would not win).
CONFIRM_NEAR = 1.25
#: A GPU whose cheapest point costs more than this × the cheapest of all has only that point confirmed.
CONFIRM_FAR = 1.5
#: Requests of one sample path per independent request the percentile needs (module doc: measured).
DESIGN_EFFECT = 2
#: ``sim_requests`` below this (its default) is honoured as a smaller sample; at or above it the search
#: simulates what the percentile needs.
DEFAULT_SIM_REQUESTS = 2000


@dataclass(frozen=True)
class Candidate:
    """A point to confirm: the scenario changes of its replica (the decode pool's when disaggregated)."""

    point: int
    gpu: str
    mode: str
    changes: dict[str, Any]
    guess: int
    prefill_changes: dict[str, Any] = field(default_factory=dict)
    prefill_guess: int = 0
    far: bool = False  # its GPU's cheapest point costs more than CONFIRM_FAR × the cheapest: it cannot win
    lead: bool = False  # its GPU's cheapest point on a GPU that can win: confirmed in the first round
    ceiling: int | None = None  # the most replicas that could still win (module doc); None: sized unbounded
    replica_cost_per_hour_usd: float = 0.0  # one replica's (a colocated point's)


@dataclass(frozen=True)
class Confirmation:
    point: int
    pools: tuple[PoolSizing, ...]  # (colocated,) or (prefill, decode)
    kv_transfer_s: float = 0.0  # disaggregated: the prompt's KV from the prefill to the decode pool

    @property
    def timed_out(self) -> bool:
        return any(p.timed_out for p in self.pools)


@dataclass(frozen=True)
class Plan:
    """How each candidate is confirmed (module doc): requests per run, seeds, deadline, the count's resolution."""

    requests: int
    seeds: tuple[int, ...]
    deadline: float | None = None
    tolerance: float = REPLICA_TOLERANCE
    far_requests: int = 0  # a candidate that cannot win (``Candidate.far``): the independent count alone

    def requests_of(self, c: Candidate) -> int:
        """A candidate that cannot win: the independent count; one bounded by the answer might win: the whole."""
        return self.far_requests if c.far and c.ceiling is None and self.far_requests else self.requests

    @classmethod
    def of(cls, s: Scenario, slo: Slo, deadline: float | None = None, max_requests: int | None = None) -> Plan:
        needed = DESIGN_EFFECT * requests_for(slo.q)
        n = max(needed, s.sim_requests) if s.sim_requests >= DEFAULT_SIM_REQUESTS else s.sim_requests
        if max_requests:
            n = min(n, max_requests)
        # never fewer than the simulator's default sample: a shorter run ends before the queue of a loaded replica
        # reaches its steady state (a mean or median needs few requests to place, but not fewer than that)
        far = min(n, max(requests_for(slo.q), DEFAULT_SIM_REQUESTS))
        return cls(int(n), (s.seed,), deadline, far_requests=int(far))


def point_changes(base_list: Sequence[Base], points: pd.DataFrame, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Scenario changes of the points at index labels ``rows``: their base's, batch, chunk and
    replicas (the decode pool's for a disaggregated point)."""
    out = {}
    for i in rows:
        row: Any = points.loc[i]
        changes = base_list[int(row["base"])].changes | {"batch": int(row["batch"]), "chunk": int(row["chunk"])}
        replicas = row["decode_replicas"] if row["mode"] == DISAGGREGATED else row["replicas"]
        if np.isfinite(replicas):
            changes["replicas"] = int(replicas)
        out[int(row["point"])] = changes
    return out


def pool_changes(base_list: Sequence[Base], points: pd.DataFrame, point: int) -> dict[str, Any]:
    """The prefill-pool keys of point ``point`` (``Scenario.prefill_pool``): a disaggregated point's
    prefill layout, chunk and replica count, or none for a colocated point (a point that makes the
    scenario colocated clears a pool set before)."""
    row: Any = points.loc[points["point"] == point].iloc[0]
    if row["mode"] != DISAGGREGATED or not np.isfinite(row["prefill_replicas"]):
        return dict(NO_PREFILL_POOL)
    lay = base_list[int(row["prefill_base"])].layout
    return {
        "prefill_replicas": int(row["prefill_replicas"]),
        **{f"prefill_{k}": v for k, v in lay.changes().items()},
        "prefill_chunk": int(row["prefill_chunk"]),
    }


def candidates(
    s: Scenario, base_list: Sequence[Base], points: pd.DataFrame, per_gpu: int = CONFIRM_PER_GPU
) -> list[Candidate]:
    """The points to confirm on each GPU (``knob_search`` module doc), in the order they are confirmed:
    every GPU's cheapest point, cheapest first, then the further ones; among equally cheap points the one
    with the most capacity per replica (the most headroom), then the largest batch cap."""
    ok = points[points["meets_slo"] & np.isfinite(points["gpus"])].copy()
    ok["slack"] = -ok["capacity_per_replica_per_s"].fillna(0.0)
    ok["cap"] = -ok["batch"]
    ok = ok.sort_values(["cost_per_hour_usd", "gpus", "slack", "cap"], kind="stable")
    firsts, further = [], []
    far: set[Any] = set()
    cheapest = ok["cost_per_hour_usd"].min() if len(ok) else 0.0
    for _, sub in ok.groupby("gpu", sort=False, observed=True):
        first = sub["cost_per_hour_usd"].iloc[0]
        near = sub[sub["cost_per_hour_usd"] <= CONFIRM_NEAR * first]
        count = per_gpu if first <= CONFIRM_FAR * cheapest else 1
        picked = list(near.drop_duplicates(["layout", "mode", "chunk"]).head(count).index)
        firsts += picked[:1]
        further += picked[1:]
        if first > CONFIRM_FAR * cheapest:
            far |= set(picked)
    lead = {i for i in firsts if i not in far}
    picked = firsts + sorted(further, key=lambda i: (points.loc[i, "cost_per_hour_usd"], i))
    changes = point_changes(base_list, points, picked)
    return [
        _candidate(points.loc[i], changes[int(points.loc[i, "point"])], base_list, i in far, i in lead) for i in picked
    ]


def with_ceilings(cands: Sequence[Candidate], answer_cost_per_hour_usd: float) -> list[Candidate]:
    """The second round's candidates (module doc) with their ceilings under the first round's answer cost: the
    most replicas costing no more than it (a relative 1e-9 for the products' rounding).  A disaggregated
    candidate's two pools trade against each other: it is sized unbounded."""
    out = []
    for c in cands:
        if c.mode == COLOCATED and c.replica_cost_per_hour_usd > 0:
            c = replace(c, ceiling=int(answer_cost_per_hour_usd * (1 + 1e-9) // c.replica_cost_per_hour_usd))
        out.append(c)
    return out


def _candidate(row: pd.Series, c: dict[str, Any], base_list: Sequence[Base], far: bool, lead: bool) -> Candidate:
    c.pop("replicas", None)
    if row["mode"] != DISAGGREGATED:
        per_replica = float(row["gpus_per_replica"]) * float(row["price_per_gpu_hour_usd"])
        return Candidate(
            int(row["point"]),
            row["gpu"],
            COLOCATED,
            c,
            int(row["replicas"]),
            far=far,
            lead=lead,
            replica_cost_per_hour_usd=per_replica if np.isfinite(per_replica) else 0.0,
        )
    lay = base_list[int(row["prefill_base"])].layout
    pre = c | {
        **lay.changes(),
        "chunk": int(row["prefill_chunk"]),
        "batch": min(int(row["prefill_chunk"]), PREFILL_POOL_BATCH) * lay.dp,
        "spec": False,
    }
    return Candidate(
        int(row["point"]),
        row["gpu"],
        DISAGGREGATED,
        c,
        int(row["decode_replicas"]),
        pre,
        int(row["prefill_replicas"]),
        far,
        lead,
    )


def confirm(c: Candidate, s: Scenario, catalog: Catalog, trace: Workload | None, plan: Plan) -> Confirmation:
    """Simulate one candidate (module doc)."""
    slo = Slo.of(s)

    def pool(sc: Scenario, kind: Any, guess: int, target: Slo, ceiling: int | None = None) -> PoolSizing:
        return size_pool(
            sc,
            catalog,
            trace,
            kind,
            guess,
            plan.requests_of(c),
            plan.seeds,
            target,
            deadline=plan.deadline,
            tolerance=plan.tolerance,
            ceiling=ceiling,
        )

    if c.mode == COLOCATED:
        return Confirmation(c.point, (pool(s.with_changes(**c.changes), "colocated", c.guess, slo, c.ceiling),))
    prefill_s, decode_s = s.with_changes(**c.prefill_changes), s.with_changes(**c.changes)
    kv_s = transfer_s(prefill_s, decode_s, catalog, trace, slo)
    # the prefill pool's TTFT plus the transfer must meet the target: the pool is held to what is left of it
    ttft = None if slo.ttft_s is None else max(slo.ttft_s - kv_s, 0.0)
    pre = pool(prefill_s, "prefill", c.prefill_guess, replace(slo, ttft_s=ttft, tpot_s=None, itl_s=None, e2e_s=None))
    dec_slo = slo
    if slo.e2e_s is not None and pre.at is not None:  # the E2EL left after the prefill pool and the transfer
        dec_slo = replace(slo, e2e_s=max(slo.e2e_s - pre.at.worst.ttft_q_s - kv_s, 0.0))
    dec = pool(decode_s, "decode", c.guess, dec_slo)
    return Confirmation(c.point, (pre, dec), kv_s)


def transfer_s(prefill: Scenario, decode: Scenario, catalog: Catalog, trace: Workload | None, slo: Slo) -> float:
    """The KV transfer of the prompt at the SLO's percentile (the scenario's prompt, or the trace's
    percentile prompt) from a prefill instance to a decode instance (``parallel.kv_transfer_s``)."""
    prompt = float(prefill.prompt) if trace is None else float(np.percentile(trace.prompt_tokens, slo.q))
    _, xp = sim_inputs(prefill, catalog)
    _, xd = sim_inputs(decode, catalog)
    return float(np.asarray(parallel.kv_transfer_s(xp, xd, prompt)))


def confirm_task(shared: tuple[Scenario, Catalog, Workload | None, Plan], c: Candidate) -> Confirmation:
    """One executor task (``planner.executors``): ``confirm`` with the search's shared inputs."""
    s, catalog, trace, plan = shared
    return confirm(c, s, catalog, trace, plan)


def timed_out(c: Candidate) -> Confirmation:
    """The confirmation of a candidate the time budget (or a cancel) left unrun."""
    return Confirmation(c.point, (PoolSizing(None, None, None, 0, NOT_IN_TIME, timed_out=True),))


def confirm_stream(
    cands: Sequence[Candidate],
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None,
    plan: Plan,
    executor: Executor,
    tick: Callable[[], None] | None = None,
) -> Iterator[Confirmation]:
    """Each candidate's confirmation as it finishes (module doc).  ``tick`` is called between results (it
    may raise to stop, as the dashboard's cancel does: the work still running is stopped)."""
    for event in executor.run(confirm_task, cands, (s, catalog, trace, plan)):
        if event is None:
            if tick is not None:
                tick()
            continue
        yield event[1]
