"""A finite run's steady state (``planner.sim.steady``): a burst or a growing queue asks for a longer run, a
steady run does not, and the sizing never confirms an overloaded replica from a short run."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from planner.engine.step_time import RooflineStepTime
from planner.links import from_query
from planner.search.pools import size_pool
from planner.sim import steady
from planner.sim.config import SimConfig
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.slo import Slo
from planner.sim.workload import scenario_workload

# 1B on one MI355X (batch 1,024, chunk 12,288): ~190 requests/s per replica in a long run (module doc of steady)
FAST = "gpu=mi355x&model=llama-3.2-1b&batch=1024&chunk=12288"


def _run(catalog, link: str, rate: float, n: int):
    s, _ = from_query(f"{FAST}&{link}")
    _, x = sim_inputs(s, catalog)
    w = scenario_workload(s, rate_per_s=rate, n=n)
    return simulate(w, SimConfig.from_inputs(x, s), RooflineStepTime.from_inputs(x), detail=False)


def test_a_burst_spans_few_lifetimes_and_asks_for_a_longer_run(catalog):
    burst = _run(catalog, "", 2000.0, 400)  # 400 requests in 0.2 s, each living seconds
    assert steady.lifetimes(burst) < 1.0
    need = steady.steady_requests(burst)
    assert need >= 2 * 400 and need <= steady.MAX_STEADY_REQUESTS
    assert steady.steady_requests(burst, simulated_replicas=1) == need


def test_a_light_long_run_is_steady(catalog):
    light = _run(catalog, "", 20.0, 2000)  # 100 s of arrivals, requests living ~1-3 s
    assert steady.lifetimes(light) >= steady.MIN_LIFETIMES
    assert not steady.drifting(light, 2.0)
    assert steady.steady_requests(light, ttft_target_s=2.0) == 0


def test_a_growing_queue_drifts_and_a_flat_one_does_not(catalog):
    r = _run(catalog, "", 20.0, 300)
    n = r.ttft_s.size
    growing = dataclasses.replace(r, ttft_s=np.linspace(0.1, 3.0, n))
    flat = dataclasses.replace(r, ttft_s=np.full(n, 1.5))
    assert steady.drifting(growing, 2.0) and not steady.drifting(flat, 2.0)
    # a ratio above 1.5 that is a few ms in all is noise, not a queue: under 10 % of the target
    tiny = dataclasses.replace(r, ttft_s=0.005 + 0.045 * np.linspace(0.0, 1.0, n) ** 2)  # thirds 17 → 37 ms
    assert not steady.drifting(tiny, 2.0) and steady.drifting(tiny, 0.1)


def test_until_steady_extends_a_passing_short_run_and_takes_a_trace_as_it_is(catalog):
    sizes: list[int] = []

    def burst(n: int):
        sizes.append(n)
        return _run(catalog, "", 2000.0, n)

    r, judged, ok = steady.until_steady(burst, 400, lambda r: True, bool)
    assert sizes[0] == 400 and len(sizes) >= 2 and sizes == sorted(sizes)
    assert (ok and sizes[-1] < steady.MAX_STEADY_REQUESTS) or (not ok and sizes[-1] == steady.MAX_STEADY_REQUESTS)
    # a failing judgement is never extended
    sizes.clear()
    steady.until_steady(burst, 400, lambda r: False, bool)
    assert sizes == [400]
    # a trace that has no more requests: the run stands as it is
    fixed = _run(catalog, "", 2000.0, 400)
    r, _, ok = steady.until_steady(lambda n: fixed, 400, lambda r: True, bool)
    assert ok and r is fixed


def test_nothing_served_or_one_request_is_not_judged(catalog):
    r = _run(catalog, "", 20.0, 50)
    one = dataclasses.replace(r, arrival_s=r.arrival_s[:1], status=r.status[:1], e2e_s=r.e2e_s[:1])
    assert math.isinf(steady.lifetimes(one))


@pytest.mark.parametrize("checked", [True, False])
def test_a_short_run_never_confirms_an_overloaded_replica(catalog, monkeypatch, checked):
    """2,000 requests/s of 1B on MI355X: 400-request runs alone confirm one replica (a 0.2 s burst); with the
    steady-state checks the pool is sized at 11, where the long run measured ~10.6 (module doc)."""
    s, _ = from_query(f"{FAST}&rate=2000")
    if not checked:
        monkeypatch.setattr(steady, "MIN_LIFETIMES", 0.0)
        monkeypatch.setattr(steady, "DRIFT_RATIO", math.inf)
    p = size_pool(s, catalog, None, "colocated", 10, 400, (0,), Slo.of(s))
    if checked:
        assert p.replicas is not None and 10 <= p.replicas <= 12
    else:
        assert p.replicas == 1  # what the check prevents
