"""The simulator's work budget: a run that would hold a core or gigabytes for minutes is refused
before it starts, naming its estimate and the limit (issue 20's heavy link and heavy trace)."""

from __future__ import annotations

import io
import time
import tracemalloc

import pytest

from planner.cli.main import main
from planner.links import from_query
from planner.sim.budget import MAX_SIM_STEPS, SimulationBudgetError, estimated_steps
from planner.sim.simulate import simulate_scenario
from planner.sim.traces import parse_trace

HEAVY_LINK = "sim_requests=100000&rate=100000&prompt=100000&prefix=0&chunk=16&batch=16"


def test_the_heavy_link_is_refused_at_once_with_its_estimate(catalog):
    s, issues = from_query(HEAVY_LINK)
    assert not [i for i in issues if i.fatal]
    tracemalloc.start()
    t0 = time.perf_counter()
    with pytest.raises(SimulationBudgetError) as exc:
        simulate_scenario(s, catalog)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.perf_counter() - t0 < 5.0 and peak < 500 * 2**20  # refused before the work, not after
    (line,) = exc.value.problems
    assert "scheduler steps" in line and f"the limit is {MAX_SIM_STEPS:,} steps" in line


def test_the_heavy_trace_is_refused_before_it_runs(catalog):
    """200,000 rows of `0,100000,20000` (inside the trace row limit) used to take 88 s and 7 GiB."""
    rows = "\n".join("0,100000,20000" for _ in range(200_000))
    trace = parse_trace(("arrival_s,prompt_tokens,output_tokens\n" + rows + "\n").encode())
    s, _ = from_query("model=llama-3.1-8b&prefix=0")
    with pytest.raises(SimulationBudgetError, match="output tokens"):
        simulate_scenario(s, catalog, workload=trace.workload)


def test_the_cli_exits_2_with_the_budget_message():
    out, err = io.StringIO(), io.StringIO()
    assert main(["simulate", HEAVY_LINK], out=out, err=err) == 2
    assert "error: simulation: ≈" in err.getvalue() and "Traceback" not in err.getvalue()


def test_ordinary_runs_are_far_inside_the_budget(catalog):
    from planner.sim.config import SimConfig
    from planner.sim.simulate import sim_inputs
    from planner.sim.workload import scenario_workload

    s, _ = from_query("")
    _, x = sim_inputs(s, catalog)
    assert estimated_steps(scenario_workload(s), SimConfig.from_inputs(x, s)) < MAX_SIM_STEPS / 50


#: Issue 31 F2: arrivals 1,000 s apart, each request alone on the replica: 299 decode steps each, 30 M steps in
#: all (86 s, 3.6 GiB, then a MemoryError traceback), while the estimate assumed full batches (≈ 30 k steps).
SPACED_LINK = "rate=0.001&sim_requests=100000&dist=fixed&prompt=16&output=299&batch=1024&chunk=2048"


@pytest.mark.parametrize(
    "link,words",
    [
        (SPACED_LINK, "scheduler steps"),
        (SPACED_LINK + "&replicas=256", "scheduler steps"),
        ("sim_requests=100000&replicas=256", "replicas × requests"),
    ],
)
def test_f2_spaced_arrivals_and_many_replicas_are_refused_at_once(link, words):
    out, err = io.StringIO(), io.StringIO()
    tracemalloc.start()
    t0 = time.perf_counter()
    code = main(["simulate", link], out=out, err=err)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert code == 2, err.getvalue()
    assert time.perf_counter() - t0 < 10 and peak < 500 * 2**20
    assert words in err.getvalue() and "the limit is" in err.getvalue() and "Traceback" not in err.getvalue()


def test_the_estimate_follows_spaced_arrivals(catalog):
    """2,000 requests 1,000 s apart: the run takes 2,000 × (1 prefill + 298 decode) steps; the estimate is the
    same to within a few percent, where the full-batch estimate was 100 times lower."""
    from planner.sim.fleet import simulate_fleet_scenario

    s, _ = from_query(SPACED_LINK.replace("100000", "2000"))
    real = simulate_fleet_scenario(s, catalog).combined.steps
    estimate = _estimate(s, catalog)
    assert real == pytest.approx(2000 * 299, rel=0.01)
    assert estimate == pytest.approx(real, rel=0.05)


def test_the_estimate_stays_near_the_real_steps_under_load(catalog):
    """At the scenario defaults (busy replica, full batches) the estimate is within 3× of the real steps, so an
    ordinary run is not refused for work it will not do."""
    from planner.sim.fleet import simulate_fleet_scenario

    for link in ("", "rate=40&replicas=4", "rate=2&output=1024"):
        s, _ = from_query(link)
        real = simulate_fleet_scenario(s, catalog).combined.steps
        assert real / 1.05 <= _estimate(s, catalog) <= 3 * real, link


def _estimate(s, catalog) -> float:
    from planner.engine.step_time import RooflineStepTime
    from planner.sim.config import SimConfig
    from planner.sim.simulate import sim_inputs
    from planner.sim.workload import scenario_workload

    _, x = sim_inputs(s, catalog)
    fastest_s = RooflineStepTime.from_inputs(x).step_s(1, 1.0, (), ())
    return estimated_steps(scenario_workload(s), SimConfig.from_inputs(x, s), fastest_s, s.replicas)
