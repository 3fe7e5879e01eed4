"""planner/kernels/curves.py ``at_grid_batch``: one batch size's lookup (the simulator's runs of decode steps) is
``at_grid`` at an array of that batch, to the bit — inside and beyond both grids, either sequence power."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.kernels.curves import BATCH_GRID, SEQ_GRID, at_grid, at_grid_batch

_RNG = np.random.default_rng(11)
FLAT = _RNG.uniform(1e-6, 1e-2, BATCH_GRID.size * SEQ_GRID.size)


@settings(max_examples=300)
@given(
    batch=st.one_of(st.integers(1, 1 << 14).map(float), st.floats(1.0, 3.0 * BATCH_GRID[-1])),
    start=st.floats(0.0, 2.0 * SEQ_GRID[-1]),
    steps=st.integers(1, 300),
    power=st.sampled_from([1.0, 2.0]),
)
def test_one_batch_lookup_is_the_array_lookup_to_the_bit(batch, start, steps, power):
    seq = start + np.arange(steps, dtype=float)
    want = at_grid(FLAT, None, np.full(seq.shape, batch), seq, power)
    got = at_grid_batch(FLAT, batch, seq, power)
    assert got.shape == want.shape and np.array_equal(got.view(np.int64), want.view(np.int64))
    again = at_grid_batch(FLAT, batch, seq, power)  # the batch's cached position gives the same values
    assert np.array_equal(again.view(np.int64), want.view(np.int64))


def test_a_speculative_decode_pair_is_the_two_decode_lookups_to_the_bit(catalog):
    """``MeasuredStep.decode_pair_s``: the target's run at q and its draft share at q = 1 from one attention lookup."""
    from planner.engine.kernel_step_time import MeasuredStep
    from planner.engine.step_time import RooflineStepTime
    from planner.model.scenario import Scenario
    from planner.sim.simulate import sim_inputs

    _, x = sim_inputs(Scenario(spec=True), catalog)
    timer = RooflineStepTime.from_inputs(x)
    step = timer.target
    assert isinstance(step, MeasuredStep) and timer.draft is None and timer.gamma > 0
    for seqs in (1, 7, 32, 300, 5000):
        ctx = 1500.25 + np.arange(40, dtype=float)
        t, one = step.decode_pair_s(seqs, timer.q, ctx)
        assert np.array_equal(t.view(np.int64), step.decode_time_s(seqs, timer.q, ctx).view(np.int64))
        assert np.array_equal(one.view(np.int64), step.decode_time_s(seqs, 1.0, ctx).view(np.int64))
        want = step.decode_time_s(seqs, timer.q, ctx) + timer.gamma * (
            timer.draft_ratio * step.decode_time_s(seqs, 1.0, ctx)
        )
        assert np.array_equal(timer.decode_steps_s(seqs, ctx).view(np.int64), want.view(np.int64))
