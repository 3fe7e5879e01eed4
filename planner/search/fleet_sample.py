"""A fleet behind a load-aware router, confirmed on a bounded sample of it: k = min(r, ``FLEET_SAMPLE_REPLICAS``)
of its r replicas, fed the traffic those k replicas receive (issue 28: the cost grows with the rate per replica,
not with the fleet).

Behind ``round_robin`` (or a random router) every replica sees its own share and nothing else: one replica is
simulated at rate / r (``sample_workload``).  Behind a load-aware router the replicas differ — where a
request goes depends on every replica's state — so they are co-simulated (``fleet.simulate_fleet``), but on
k replicas, not r:

  least_tokens     the k replicas' share of the traffic: the scenario's Poisson arrivals at rate · k / r (a
                   Poisson stream thinned to k / r of it is Poisson at that rate), or of a trace the requests
                   i with i mod r < k (k of every r, in order).  Join-the-shortest-queue over k replicas balances
                   at most as well as over r (fewer replicas to choose from, the same load on each), so the
                   sample's percentiles are an upper bound for the fleet's: conservative.  Measured:
                   docs/simulator.md, "A bounded sample of the fleet" (benchmarks/fleet_sample_bench.py).
  prefix_affinity  ``fleet.py``'s cache-aware rule (SGLang's ``cache_aware``) assigns prefix groups to the
                   replicas as they arrive, each new group to the replica whose cache holds the fewest blocks,
                   so in expectation each replica gets 1 / r of the groups; a group larger than one replica's
                   share is spread by the rule's load balance over several.  The sample keeps what its k
                   replicas would get: a *cold* group (a request's first prefix block names it; at most
                   len / r requests) whole, when its key's hash mod r < k (the groups of k replicas out of r, as
                   a prefix-hash router assigns them), and a *hot* group (more than len / r requests) or a
                   request without shared blocks thinned per request (i mod r < k), as least_tokens.  The
                   scenario's own traffic (one shared system prompt, in a ``hit`` share of the prompts) is one
                   hot group: its Poisson arrivals at rate · k / r, as least_tokens.

How many requests.  The SLO's percentile is the fleet's, over every request the sample serves, so a run
simulates the count that percentile needs (``confirm.Plan``: 3,600 for p99) in all, n / k on each sampled
replica — about the requests of one replica's run, at ≈ 2.7 × its CPU time (every arrival advances the k
replicas to it); the run lasts 1 / k of one replica's, and its first requests meet empty replicas: measured,
its p99 TTFT reads 2 % below that of 1,000 requests per replica (docs/simulator.md), within the spread of
the seeds.  (``sizing.size_fleet``'s table, ``search=none``, simulates k × its per-replica count instead.)

The replica count search is unchanged: it searches r and simulates min(r, K) of them; the answer says so
(``basis_words``: "8 of 270 replicas (least_tokens)").  Seeded: the sample is a function of the seed, the
trace and r alone — the same in a local worker and a Ray task.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from planner.engine.step_time import StepTime
from planner.format import fmt_count
from planner.model.scenario import Router, Scenario
from planner.sim.config import SimConfig
from planner.sim.fleet import simulate_fleet
from planner.sim.results import SimResult
from planner.sim.simulate import simulate
from planner.sim.workload import Workload, scenario_workload, split_round_robin

#: Replicas co-simulated behind a load-aware router (at most; fewer when the fleet is smaller).  8: the sample's
#: p99 TTFT stays within a few per cent above the whole fleet's at equal load per replica (docs/simulator.md,
#: "A bounded sample of the fleet"), at 8 × one replica's run.
FLEET_SAMPLE_REPLICAS = 8
#: Routers whose replicas differ: where a request goes depends on the replicas' state.
LOAD_AWARE: tuple[Router, ...] = ("least_tokens", "prefix_affinity")
_MIX = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: a prefix group's key spread over 0 … r − 1


def sampled_replicas(router: Router, replicas: int) -> int:
    """Replicas simulated to confirm ``replicas`` behind ``router``: one (its share) unless the router is load-aware."""
    return min(replicas, FLEET_SAMPLE_REPLICAS) if router in LOAD_AWARE else 1


def basis_words(router: Router, replicas: int) -> str:
    """What a confirmation simulated, in words: '8 of 270 replicas (least_tokens)', '1 of 136 replicas (its share,
    round_robin)'."""
    k = sampled_replicas(router, replicas)
    how = router if router in LOAD_AWARE else f"its share, {router}"
    return f"{fmt_count(k)} of {fmt_count(replicas, 'replica')} ({how})"


def _group_keys(w: Workload) -> np.ndarray:
    """Per request: the key of its first shared prefix block (its prefix group), −1 where it has none."""
    offsets = w.offsets
    has = offsets[1:] > offsets[:-1]
    first = np.full(len(w), -1, dtype=np.int64)
    first[has] = w.prefix_keys[offsets[:-1][has]]
    return first


def kept_requests(w: Workload, router: Router, replicas: int) -> np.ndarray:
    """Indices of the requests of trace ``w`` the sampled replicas receive (module doc), in arrival order."""
    k = sampled_replicas(router, replicas)
    i = np.arange(len(w))
    keep = (i % replicas) < k
    if router == "prefix_affinity" and w.has_prefixes:
        group = _group_keys(w)
        keys, inverse, counts = np.unique(group, return_inverse=True, return_counts=True)
        cold = (counts <= len(w) / replicas)[inverse] & (group >= 0)
        hashed = (keys.astype(np.uint64) * _MIX) >> np.uint64(32)
        by_group = (hashed % np.uint64(replicas) < np.uint64(k))[inverse]
        keep = np.where(cold, by_group, keep)
    return np.flatnonzero(keep)


def sample_workload(s: Scenario, trace: Workload | None, replicas: int, n: int, router: Router) -> Workload:
    """The first ``n`` requests the sampled replicas of ``replicas`` behind ``router`` receive (module doc), in all:
    one replica's round-robin share when the router is not load-aware — the scenario's Poisson arrivals at
    rate / replicas (its seed), or every r-th request of the trace."""
    k = sampled_replicas(router, replicas)
    if router not in LOAD_AWARE:
        if trace is None:
            return scenario_workload(s, rate_per_s=s.rate / replicas, n=n)
        return split_round_robin(trace, replicas).take(slice(0, n))
    if trace is None:
        return scenario_workload(s, rate_per_s=s.rate * k / replicas, n=n)
    return trace.take(kept_requests(trace, router, replicas)[:n])


def simulate_sample(
    w: Workload,
    cfg: SimConfig,
    step_time: StepTime,
    router: Router,
    replicas: int,
    *,
    stop_on_slo_miss: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """``w`` (``sample_workload``'s) on the sampled replicas of ``replicas`` behind ``router``: the sub-fleet's
    combined result (every request's latencies, the fleet-wide percentiles), or one replica's."""
    k = sampled_replicas(router, replicas)
    if k == 1:
        return simulate(w, cfg, step_time, stop_on_slo_miss=stop_on_slo_miss, detail=False, progress=progress)
    f = simulate_fleet(w, cfg, step_time, k, router, stop_on_slo_miss=stop_on_slo_miss, detail=False, progress=progress)
    return f.combined
