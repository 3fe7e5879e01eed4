"""The closed loop of clients (vllm bench serve --max-concurrency): never more than N in flight, a new
request when one finishes, and an open loop unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.sim.closed_loop import ClosedLoop
from planner.sim.config import SimConfig
from planner.sim.results import SERVED
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.slo import Slo
from planner.sim.workload import Workload
from tests.sim.test_simulate import ConstantStep


def _most_in_flight(start_s: np.ndarray, end_s: np.ndarray) -> int:
    """The most requests with start ≤ t < end at any t (an end frees its slot before a start at the same t;
    ends are start + e2e, which may round a last bit above the finish time the next start equals)."""
    events = sorted([(e - 1e-9, -1) for e in end_s] + [(s, 1) for s in start_s])
    level = peak = 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    return peak


def _config(catalog, **changes) -> tuple[SimConfig, RooflineStepTime]:
    s = Scenario(**({"batch": 256, "chunk": 2048} | changes))
    _, x = sim_inputs(s, catalog)
    return SimConfig.from_inputs(x, s), RooflineStepTime.from_inputs(x)


@settings(max_examples=25)
@given(
    n=st.integers(1, 60),
    limit=st.integers(1, 12),
    rate=st.sampled_from([np.inf, 0.5, 5.0, 50.0]),
    seed=st.integers(0, 10_000),
)
def test_never_more_than_n_in_flight_and_a_new_request_when_one_finishes(catalog, n, limit, rate, seed):
    rng = np.random.default_rng(seed)
    scheduled = np.zeros(n) if np.isinf(rate) else np.cumsum(rng.exponential(1.0 / rate, n))
    w = Workload(scheduled, rng.integers(1, 3000, n), rng.integers(1, 300, n), "test")
    cfg, step = _config(catalog)
    r = simulate(w, cfg, step, max_concurrency=limit)
    end = r.arrival_s + r.e2e_s
    assert (r.status == SERVED).all()
    assert _most_in_flight(r.arrival_s, end) <= limit
    # request k waits for the (k − N + 1)-th completion, or starts when scheduled
    done = np.sort(end)
    for k in range(n):
        expected = scheduled[k] if k < limit else max(scheduled[k], done[k - limit])
        assert r.arrival_s[k] == pytest.approx(expected, abs=1e-12)
    assert (r.arrival_s >= scheduled).all()


def test_with_unlimited_concurrency_the_loop_changes_nothing(catalog):
    rng = np.random.default_rng(3)
    w = Workload(np.cumsum(rng.exponential(0.1, 80)), rng.integers(1, 2000, 80), rng.integers(1, 200, 80), "test")
    cfg, step = _config(catalog)
    open_loop, closed = simulate(w, cfg, step), simulate(w, cfg, step, max_concurrency=10_000)
    assert np.array_equal(open_loop.arrival_s, w.arrival_s)
    for field in ("arrival_s", "ttft_s", "e2e_s", "itl_s"):
        assert np.array_equal(getattr(open_loop, field), getattr(closed, field)), field


def test_concurrency_one_runs_the_requests_back_to_back():
    w = Workload(np.zeros(3), np.array([100, 100, 100]), np.array([5, 5, 5]), "test")
    cfg = SimConfig(
        batch=8, chunk_tokens=512, block_tokens=16, kv_capacity_blocks=10_000, context_window_tokens=10_000,
        gamma=0, alpha=0.0, seed=0, slo=Slo(ttft_s=1.0, itl_s=1.0),
    )  # fmt: skip
    r = simulate(w, cfg, ConstantStep(0.01), max_concurrency=1)
    # each request: one prefill step, then 4 decode steps, 5 × 10 ms; the next starts when it ends
    assert r.arrival_s == pytest.approx([0.0, 0.05, 0.10])
    assert r.ttft_s == pytest.approx([0.01] * 3)
    assert r.e2e_s == pytest.approx([0.05] * 3)


def test_a_refused_request_frees_its_slot_at_once():
    # request 1 is longer than the context window: the server refuses it, the next one starts right away
    w = Workload(np.zeros(3), np.array([100, 50_000, 100]), np.array([5, 5, 5]), "test")
    cfg = SimConfig(
        batch=8, chunk_tokens=512, block_tokens=16, kv_capacity_blocks=10_000, context_window_tokens=10_000,
        gamma=0, alpha=0.0, seed=0, slo=Slo(ttft_s=1.0, itl_s=1.0),
    )  # fmt: skip
    r = simulate(w, cfg, ConstantStep(0.01), max_concurrency=1)
    assert r.status[1] != SERVED
    assert r.arrival_s[1] == pytest.approx(0.05) and r.arrival_s[2] == pytest.approx(0.05)


def test_the_loop_refuses_no_slots():
    with pytest.raises(ValueError, match="at least 1"):
        ClosedLoop(np.zeros(3), 0)
