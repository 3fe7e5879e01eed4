"""``planner.sim.collector``: the garbage collector is off during a run and as it was after it (errors too),
and a run gives the same result with it paused as without the pause."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.sim.collector import collector_paused
from planner.sim.config import SimConfig
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.workload import scenario_workload


@collector_paused
def _state(fail: bool = False) -> bool:
    if fail:
        raise RuntimeError("inside")
    return gc.isenabled()


def test_the_collector_is_off_inside_and_restored_after():
    assert gc.isenabled()
    assert _state() is False and gc.isenabled()
    with pytest.raises(RuntimeError):
        _state(fail=True)
    assert gc.isenabled()
    gc.disable()
    try:
        assert _state() is False and not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()


@pytest.mark.parametrize("fields", [dict(sim_requests=300), dict(sim_requests=300, rate=5.0, spec=True)])
def test_a_run_is_the_same_with_the_collector_paused(catalog, fields):
    s = Scenario(**fields)
    _, x = sim_inputs(s, catalog)
    cfg, w = SimConfig.from_inputs(x, s), scenario_workload(s)
    paused = simulate(w, cfg, RooflineStepTime.from_inputs(x))
    plain = simulate.__wrapped__(w, cfg, RooflineStepTime.from_inputs(x))  # type: ignore[attr-defined]
    assert repr(paused.summary) == repr(plain.summary)  # every float as its repr: every bit
    for name in ("ttft_s", "e2e_s", "itl_p50_s", "itl_max_s", "itl_s", "itl_weight", "timeline_s"):
        assert np.array_equal(getattr(paused, name), getattr(plain, name), equal_nan=True)
