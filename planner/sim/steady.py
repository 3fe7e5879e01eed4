"""Whether a finite run reaches the steady state a sizing reads from it, and how many requests it needs.

A run starts with an empty replica and ends when its last request finishes, so a run whose arrivals span
only a few request lifetimes is mostly ramp-up and drain: its percentiles describe a burst, not the
traffic.  Worse, an overloaded replica's queue grows for the whole run, and a short run ends before it
shows — Llama-3.2-1B at 20,000 requests/s on 86 MI355X replicas (batch 1,024, chunk 12,288; 233
requests/s each) gives a p99 TTFT of 1.83 s on 3,600 requests, 8.1 s on 10,000 and 26 s on 30,000.

Two tests, both on the run itself:

  lifetimes   a run of n requests arriving over T seconds, whose served requests live W̄ seconds on average
              (arrival to last token), holds L = n·W̄/T requests in flight on average (Little's law), so it
              replaces its in-flight population T/W̄ times.  Steady needs T/W̄ ≥ ``MIN_LIFETIMES`` = 10: the
              ramp-up and the drain each last about one lifetime, so at most ~10 % of the requests see a
              replica filling or emptying.  An overloaded replica cannot meet it: its W̄ grows with the run, to
              ≈ ε·T/2 for a load ε above capacity, so T/W̄ → 2/ε — an overload above 20 % never passes.
  drift       a smaller overload passes that test on a long enough run while its queue still grows: the mean
              TTFT of the last third of the arrivals exceeds the middle third's by more than ``DRIFT_RATIO``
              (1.5) × and by more than ``DRIFT_FRAC`` (10 %) of the TTFT target (of the run's mean E2E
              latency where no TTFT target is set).  A queue growing linearly gives a ratio → 5/3 on long
              runs; a steady one ≈ 1 (measured below: 0.4–1.2 on 3,600–30,000 requests, one seed 1.7 but 22 ms
              apart, well under 10 % of a 2 s target).

A passing run that fails either is simulated again: on n' = max(2n, ⌈1.2·n·K / lifetimes⌉) requests (the
1.2: W̄ grows with the run near capacity), or 2n for drift, up to ``MAX_STEADY_REQUESTS`` per simulated
replica (``until_steady``; ``pools.size_pool``).  A run that is still not steady there fails, its binding
constraint ``NOT_STEADY``.  A trace replay takes the requests the trace has, no more: its length is the traffic.

Measured (the example above, every seed's mean TTFT of the middle and last thirds, seeds 1 and 2): at 102
replicas 3,600 requests give 24 → 30 ms (1.24 ×, 5.5 lifetimes), 12,000 give 34 → 131 ms and 355 → 1,130 ms
(3.2–3.9 ×), 30,000 give 1.39 → 2.42 s; at 106 replicas 12,000 give 27 → 28 ms and 32 → 54 ms, 30,000 a p99
of 0.2–0.3 s; at 110–120 replicas every ratio is 0.9–1.2.  So 102 replicas fail and 106 pass, where the
3,600-request runs alone passed 86.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from planner.sim.results import SimResult
from planner.sim.status import SERVED

J = TypeVar("J")
#: Request lifetimes a run's arrival span must cover (module doc).
MIN_LIFETIMES = 10.0
#: The most requests per simulated replica a run is extended to (≈ 4 CPU s at the simulator's ≈ 10k
#: requests per CPU second on this project's 2-core machine, benchmarks/sim_bench.py).
MAX_STEADY_REQUESTS = 40_000
#: Each extension's margin over the count the measured lifetimes ask for (module doc).
EXTENSION_MARGIN = 1.2
#: A growing queue (module doc): the last third's mean TTFT over the middle third's, and their difference over the
#: TTFT target (or the run's mean E2E latency).
DRIFT_RATIO = 1.5
DRIFT_FRAC = 0.1
#: The binding constraint of a run that is not steady at ``MAX_STEADY_REQUESTS``.
NOT_STEADY = "no steady state"


def lifetimes(r: SimResult) -> float:
    """T / W̄ of run ``r`` (module doc): its arrival span over its served requests' mean E2E latency (∞ with one
    request or nothing served: nothing to judge)."""
    served = r.status == SERVED
    if r.arrival_s.size < 2 or not served.any():
        return math.inf
    span_s = float(r.arrival_s.max() - r.arrival_s.min())
    mean_e2e_s = float(np.mean(r.e2e_s[served]))
    return span_s / mean_e2e_s if mean_e2e_s > 0 else math.inf


def _mean_s(x: np.ndarray) -> float:
    """The mean of the finite values (served requests), ∞ when there are none."""
    finite = x[np.isfinite(x)]
    return float(finite.mean()) if finite.size else math.inf


def drifting(r: SimResult, ttft_target_s: float | None = None) -> bool:
    """Whether run ``r``'s queue still grows (module doc: the last third's mean TTFT against the middle third's)."""
    third = r.ttft_s.size // 3
    if third < 1:
        return False
    middle_s, last_s = _mean_s(r.ttft_s[third : 2 * third]), _mean_s(r.ttft_s[2 * third :])
    scale_s = ttft_target_s if ttft_target_s else _mean_s(np.where(r.status == SERVED, r.e2e_s, np.nan))
    return last_s > DRIFT_RATIO * middle_s and last_s - middle_s > DRIFT_FRAC * scale_s


def steady_requests(r: SimResult, simulated_replicas: int = 1, ttft_target_s: float | None = None) -> int:
    """The requests (over ``simulated_replicas`` co-simulated replicas) a rerun of ``r`` needs to be steady; 0 when
    it is (module doc), capped at ``MAX_STEADY_REQUESTS`` per replica."""
    n = int(r.arrival_s.size)
    turns = lifetimes(r)
    if turns < MIN_LIFETIMES:
        need = max(2 * n, math.ceil(EXTENSION_MARGIN * n * MIN_LIFETIMES / turns))
    elif drifting(r, ttft_target_s):
        need = 2 * n
    else:
        return 0
    return min(need, MAX_STEADY_REQUESTS * simulated_replicas)


def until_steady(
    simulate_n: Callable[[int], SimResult],
    n: int,
    judge: Callable[[SimResult], J],
    met: Callable[[J], bool],
    simulated_replicas: int = 1,
    ttft_target_s: float | None = None,
) -> tuple[SimResult, J, bool]:
    """Run ``simulate_n(n)``; while its judgement is met but the run is not steady, rerun it longer (module doc).
    Returns the last run, its judgement and whether it may stand: steady, failed anyway, or a workload with no
    more requests (a trace)."""
    r = simulate_n(n)
    j = judge(r)
    while met(j):
        need = steady_requests(r, simulated_replicas, ttft_target_s)
        if need == 0:
            return r, j, True
        if need <= r.arrival_s.size:  # at the cap already
            return r, j, False
        longer = simulate_n(need)
        if longer.arrival_s.size <= r.arrival_s.size:  # a trace with no more requests: its length is the traffic
            return longer, judge(longer), True
        r, j = longer, judge(longer)
    return r, j, True
