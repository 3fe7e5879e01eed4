"""The decode shortcuts in ``planner.sim.steps`` leave a run as the straightforward computation gives it: a
speculative jump that surely fits the free units (``jump_surely_fits``) skips counting its blocks, and the
ITL-miss count skips the comparison when no step is over the target — on a roomy pool and on one that preempts."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.sim import steps
from planner.sim.config import SimConfig
from planner.sim.fleet import run_fleet
from planner.sim.results import itl_sample
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.workload import scenario_workload

CASES = [
    dict(spec=True, sim_requests=300, rate=5.0),
    dict(spec=True, sim_requests=300, rate=5.0, slo_itl_s=0.008),  # many ITLs over the target
    dict(spec=True, sim_requests=300, rate=3.0, prompt=6000, output=3000, batch=128),  # the pool runs out
]


def _setup(catalog, fields):
    s = Scenario(**fields)
    _, x = sim_inputs(s, catalog)
    return scenario_workload(s), SimConfig.from_inputs(x, s), x


def _fingerprint(r) -> tuple:
    arrays = (r.ttft_s, r.e2e_s, r.itl_p50_s, r.itl_max_s, r.itl_s, r.itl_weight, r.preemptions, r.timeline_s)
    return repr(r.summary), r.steps, tuple(a.tobytes() for a in arrays)


@pytest.mark.parametrize("fields", CASES)
def test_a_jump_that_surely_fits_is_the_counted_jump(catalog, monkeypatch, fields):
    w, cfg, x = _setup(catalog, fields)
    fast = simulate(w, cfg, RooflineStepTime.from_inputs(x))
    monkeypatch.setattr(steps, "jump_surely_fits", lambda *args: False)  # every jump counts its blocks
    counted = simulate(w, cfg, RooflineStepTime.from_inputs(x))
    assert _fingerprint(fast) == _fingerprint(counted)
    if fields.get("batch"):
        assert fast.preemptions.sum() > 0  # the tight pool: jumps cut short by the free units


@pytest.mark.parametrize(
    "fields", [*CASES, dict(sim_requests=300, rate=5.0, slo_itl_s=0.008), dict(sim_requests=300, rate=2.0)]
)
def test_the_itl_miss_count_is_the_sample_s_tokens_over_the_target(catalog, fields):
    """(Speculative or not: a run of decode steps none of which is over the target counts none.)"""
    w, cfg, x = _setup(catalog, fields)
    run, reps = run_fleet(w, cfg, RooflineStepTime.from_inputs(x), 1)
    for r in reps:
        r.flush_itl()
    values, weights = itl_sample([piece for r in reps for piece in r.itl_pieces])
    assert np.isfinite(run.stop_itl_s)
    assert run.itl_miss_tokens == float(weights[values > run.stop_itl_s].sum())
