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
