"""A long replay in parts (planner/sim/replay.py): the parts merge into the whole run's counts and
histograms; the boundary check tells when a lead-in was too short; synthetic traffic is generated a range
at a time, the same whatever part asks for it; histograms add exactly and read percentiles within 0.5 %."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.executors.local import LocalExecutor
from planner.model.scenario import Scenario
from planner.sim.histogram import RELATIVE_ACCURACY, Histogram
from planner.sim.replay import ReplayPlan, plan_replay, replay, replay_text
from planner.sim.replay_sources import SyntheticSource, WorkloadSource
from planner.sim.results import percentiles
from planner.sim.workload import scenario_workload

FLEET = Scenario(
    model="llama-3.2-1b", gpu="h100-sxm", prompt=300, output=40, rate=120.0, replicas=4, batch=128, chunk=2048
)


def whole(plan: ReplayPlan, duration_s: float) -> ReplayPlan:
    return ReplayPlan(plan.replicas, plan.router, plan.groups, (0.0, duration_s), 0.0)


def same(a, b) -> bool:
    keep = ("simulated_requests", "steps")  # these count the leads' requests too
    return {k: v for k, v in a.counts.items() if k not in keep} == {
        k: v for k, v in b.counts.items() if k not in keep
    } and all(np.array_equal(a.hists[k].counts, b.hists[k].counts) for k in a.hists)


def test_parts_merge_into_the_whole_run(catalog):
    src = SyntheticSource(FLEET, 6000, block_requests=2000)
    plan = plan_replay(FLEET, catalog, src, task_requests=1000)
    assert plan.groups == 4 and len(plan.edges) - 1 >= 2 and plan.lead_s >= 10.0
    parts = replay(FLEET, catalog, src, LocalExecutor(1), plan)
    one = replay(FLEET, catalog, src, LocalExecutor(1), whole(plan, src.duration_s))
    assert parts.counts["requests"] == one.counts["requests"] == 6000
    assert parts.boundary.exact == parts.boundary.boundaries > 0 and parts.boundary.requests > 0
    assert same(parts, one) and parts.summary["ttft_p99_s"] == one.summary["ttft_p99_s"]
    assert parts.counts["simulated_requests"] > 6000  # the leads


def test_a_load_aware_router_is_split_by_time_only(catalog):
    s = FLEET.with_changes(router="least_tokens", rate=60.0, replicas=2)
    src = SyntheticSource(s, 2000)
    plan = plan_replay(s, catalog, src, task_requests=1000)
    assert plan.groups == 1 and all(p.group == -1 for p in plan.parts)
    z = replay(s, catalog, src, LocalExecutor(1), plan)
    assert z.counts["requests"] == 2000 and z.boundary.boundaries == len(plan.edges) - 2


def test_a_lead_too_short_for_the_load_shows_at_the_boundary(catalog):
    s = FLEET.with_changes(rate=400.0, replicas=1, batch=16, chunk=512, prompt=2000, output=200)  # overloaded
    src = SyntheticSource(s, 3000)
    plan = plan_replay(s, catalog, src, task_requests=1000)
    short = ReplayPlan(plan.replicas, plan.router, plan.groups, plan.edges, 0.5)
    z = replay(s, catalog, src, LocalExecutor(1), short)
    assert z.boundary.exact < z.boundary.boundaries and z.boundary.max_diff_s > 0
    assert "use fewer, longer parts" in replay_text(z)


def test_a_synthetic_range_is_the_same_whoever_asks():
    src = SyntheticSource(FLEET, 30_000, block_requests=7000)
    w, ids = src.between(0.0, src.duration_s + 1)
    assert len(w) == 30_000 and np.array_equal(ids, np.arange(30_000)) and np.all(np.diff(w.arrival_s) >= 0)
    a, b = 40.0, 170.0
    part, part_ids = src.between(a, b)
    keep = (w.arrival_s >= a) & (w.arrival_s < b)
    assert np.array_equal(part.arrival_s, w.arrival_s[keep]) and np.array_equal(part_ids, ids[keep])
    assert np.array_equal(part.prompt_tokens, w.prompt_tokens[keep])
    assert abs(len(w) / src.duration_s - FLEET.rate) / FLEET.rate < 0.05  # the scenario's rate


def test_a_trace_in_memory_is_a_source(catalog):
    w = scenario_workload(FLEET.with_changes(sim_requests=2000, rate=120.0))
    src = WorkloadSource(w, "test trace")
    plan = plan_replay(FLEET, catalog, src, task_requests=1000)
    z = replay(FLEET, catalog, src, LocalExecutor(1), plan)
    one = replay(FLEET, catalog, src, LocalExecutor(1), whole(plan, src.duration_s + 1))
    assert same(z, one) and z.source == "test trace"


@settings(max_examples=30)
@given(
    values=st.lists(st.floats(1e-7, 1e5), min_size=1, max_size=300),
    split=st.integers(0, 300),
    pct=st.sampled_from([50.0, 90.0, 99.0, 99.9]),
)
def test_histograms_add_exactly_and_read_percentiles_within_their_accuracy(values, split, pct):
    x = np.array(values)
    whole_h = Histogram.of(x)
    parts = Histogram.of(x[:split]) + Histogram.of(x[split:])
    assert np.array_equal(whole_h.counts, parts.counts) and whole_h.total == x.size
    exact = percentiles(x, (pct,))[0]
    read = whole_h.quantiles((pct,))[0]
    assert read == pytest.approx(exact, rel=RELATIVE_ACCURACY * 1.0001) or (exact <= 1e-6 and read == 1e-6)


def test_kvplan_replay_prints_and_exports_the_merged_run():
    out, err = io.StringIO(), io.StringIO()
    link = "model=llama-3.2-1b&gpu=h100-sxm&prompt=300&output=40&rate=120&replicas=4&batch=128&chunk=2048"
    code = main(["replay", link, "--requests", "3000", "--task-requests", "1000", "--workers", "1"], out, err)
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "3,000 requests of synthetic Poisson on 4 replica(s)" in text and "exact" in text
    code = main(["replay", link, "--requests", "1200", "--format", "json", "--workers", "1"], out := io.StringIO(), err)
    record = json.loads(out.getvalue())
    assert code == 0 and record["requests"] == 1200 and record["executor"] == "local" and record["parts"] == 4
    bad = io.StringIO()
    assert main(["replay", link, "--requests", "0"], io.StringIO(), bad) == 2 and "--requests 0" in bad.getvalue()
