"""Runs of mixed steps advanced in one call (``planner.sim.prefill_run``) give the step-by-step loop's
results to the bit: every array, the summary, the timeline and the step count."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.sim import prefill_run
from planner.sim.config import SimConfig
from planner.sim.fleet import simulate_fleet
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.workload import scenario_workload
from tests.sim.test_golden import fingerprint


class StepByStep:
    """The same step time without ``chunk_run_s``: the simulator takes one step at a time."""

    def __init__(self, inner: RooflineStepTime):
        self.inner = inner

    def step_s(self, seqs, ctx, new=(), past=()):
        return self.inner.step_s(seqs, ctx, new, past)

    def decode_steps_s(self, seqs, ctx):
        return self.inner.decode_steps_s(seqs, ctx)


def _both(s: Scenario, catalog, kv_blocks: int | None = None, replicas: int = 1, router="round_robin", **kw):
    _, x = sim_inputs(s, catalog)
    cfg = SimConfig.from_inputs(x, s)
    if kv_blocks is not None:
        cfg = dataclasses.replace(cfg, kv_capacity_blocks=kv_blocks)
    timer = RooflineStepTime.from_inputs(x)
    w = scenario_workload(s)
    if replicas > 1:
        run = lambda t: simulate_fleet(w, cfg, t, replicas, router, **kw).combined  # noqa: E731
    else:
        run = lambda t: simulate(w, cfg, t, **kw)  # noqa: E731
    return run(timer), run(StepByStep(timer))


def test_a_long_prompt_prefills_in_runs_with_the_same_results(catalog, monkeypatch):
    runs = []
    real = prefill_run.prefill_run

    def counted(*args, **kw):
        runs.append(args[6])  # the steps asked for
        return real(*args, **kw)

    monkeypatch.setattr("planner.sim.simulate.prefill_run", counted)
    s = Scenario(model="llama-3.1-70b", tp=8, prompt=4000, output=200, rate=2.0, batch=256, chunk=512, sim_requests=300)
    fast, slow = _both(s, catalog)
    assert len(runs) > 50 and max(runs) >= 5  # the case exercises runs
    assert fingerprint(fast) == fingerprint(slow)


@settings(max_examples=25)
@given(
    prompt=st.integers(300, 9000),
    output=st.integers(1, 300),
    rate=st.floats(0.5, 40.0),
    chunk=st.sampled_from([256, 512, 1024, 2048]),
    batch=st.sampled_from([4, 32, 256]),
    hit=st.sampled_from([0.0, 0.5]),
    kv_blocks=st.sampled_from([None, 900, 3000]),
    dist=st.sampled_from(["fixed", "lognormal"]),
    stop=st.booleans(),
)
def test_runs_equal_one_step_at_a_time(catalog, prompt, output, rate, chunk, batch, hit, kv_blocks, dist, stop):
    s = Scenario(
        prompt=prompt,
        output=output,
        rate=rate,
        chunk=chunk,
        batch=batch,
        hit=hit,
        dist=dist,
        sim_requests=150,
        slo_tpot_s=0.03,
    )
    fast, slow = _both(s, catalog, kv_blocks=kv_blocks, stop_on_slo_miss=stop)
    assert fingerprint(fast) == fingerprint(slow)


@settings(max_examples=8)
@given(router=st.sampled_from(["least_tokens", "prefix_affinity", "round_robin"]), rate=st.floats(2.0, 30.0))
def test_runs_equal_one_step_at_a_time_in_a_fleet(catalog, router, rate):
    """Co-simulated replicas stop each run at the next arrival anywhere (``until_s``)."""
    s = Scenario(prompt=3000, output=60, rate=rate, chunk=512, batch=64, hit=0.5, sim_requests=200)
    fast, slow = _both(s, catalog, replicas=3, router=router)
    assert fingerprint(fast) == fingerprint(slow)
    assert np.array_equal(fast.replica, slow.replica)
