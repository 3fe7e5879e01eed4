"""planner/kernels/curves.py's fast lookups, each the plain one to the bit: ``at_grid_batch`` (one batch size's
lookup, the simulator's runs of decode steps) is ``at_grid`` at an array of that batch — inside and beyond both
grids, either sequence power; ``at_tokens`` on whole token counts (a curve's table) is the interpolation."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.kernels.curves import (
    BATCH_GRID,
    SEQ_GRID,
    TOKEN_GRID,
    TOKEN_PER_OCTAVE,
    WHOLE_MIN_SIZE,
    WHOLE_TOKENS,
    WholeTokens,
    _interpolated,
    _position,
    at_grid,
    at_grid_batch,
    at_tokens,
    token_position,
)

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


@settings(max_examples=200)
@given(
    batch=st.one_of(st.integers(1, 1 << 14).map(float), st.floats(1.0, 3.0 * BATCH_GRID[-1])),
    seed=st.integers(0, 2**31 - 1),
    size=st.integers(0, 400),
    power=st.sampled_from([1.0, 2.0]),
)
def test_one_batch_lookup_of_any_sequence_lengths_is_the_array_lookup_to_the_bit(batch, seed, size, power):
    """Unsorted lengths on every scale (below one token, near the grid's end where the clamps act, beyond it),
    grid points themselves, and a 2-D array of them: the segment table's gather is ``at_grid``'s four takes."""
    rng = np.random.default_rng(seed)
    seq = np.exp2(rng.uniform(-2.0, np.log2(SEQ_GRID[-1]) + 2.0, size))
    seq[: size // 4] = SEQ_GRID[rng.integers(0, SEQ_GRID.size, size // 4)]  # exactly on grid points
    if size % 3 == 0:
        seq[size // 2 :] = rng.uniform(0.5 * SEQ_GRID[-1], SEQ_GRID[-1], size - size // 2)
    for lengths in (seq, seq.reshape(2, -1) if size % 2 == 0 else seq[::-1]):
        want = at_grid(FLAT, None, np.full(lengths.shape, batch), lengths, power)
        got = at_grid_batch(FLAT, batch, lengths, power)
        assert got.shape == want.shape and np.array_equal(got.view(np.int64), want.view(np.int64))


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


def test_a_kv_bound_decode_skips_the_attention_ratio_to_the_bit(catalog, monkeypatch):
    """``MeasuredStep._kv_bound``: where the KV reads outweigh the q-fold FLOPs, ρ_q = 1 exactly, so the run of
    speculative decode steps skipping the ratio is the ratio's computation; where they do not (or barely), the
    ratio is computed."""
    from dataclasses import replace

    from planner.engine.kernel_step_time import MeasuredStep
    from planner.engine.step_time import RooflineStepTime
    from planner.model.scenario import Scenario
    from planner.sim.simulate import sim_inputs

    _, x = sim_inputs(Scenario(spec=True), catalog)
    timer = RooflineStepTime.from_inputs(x)
    step = timer.target
    assert isinstance(step, MeasuredStep)
    ctx = np.concatenate([[0.0, 1.0], 1500.25 + np.arange(40, dtype=float), [3e5, 7e6]])
    # c·q just below m, c·q just above m (the margin's two sides), and compute-bound (ρ > 1)
    ratios = (1.0 - 2e-9, 1.0 - 1e-12, 2.0)
    steps = [step] + [replace(step, decode_attn_s=step.kv_decode_s / timer.q * r) for r in ratios]
    assert [s._kv_bound(32.0, timer.q, ctx) for s in steps] == [True, True, False, False]
    assert not step._kv_bound(32.0, timer.q, ctx - 1.0)  # a negative context: keys < 0
    fast = [[s.decode_time_s(seqs, timer.q, ctx) for seqs in (1, 7, 300)] for s in steps]
    monkeypatch.setattr(MeasuredStep, "_kv_bound", lambda self, seqs, q, ctx: False)
    for s, got in zip(steps, fast, strict=True):
        for seqs, values in zip((1, 7, 300), got, strict=True):
            want = s.decode_time_s(seqs, timer.q, ctx)
            assert np.array_equal(values.view(np.int64), want.view(np.int64))


def test_a_mixed_step_s_scalar_terms_are_the_plain_lookups_to_the_bit(catalog):
    """``MeasuredStep.scalar_time_s``: S_eq in floats is ``equivalent_prompt_tokens``'s, and the kept last decode
    lookup gives what a fresh step (nothing kept) gives, whatever was asked in between."""
    from planner.engine.kernel_step import equivalent_prompt_tokens
    from planner.engine.kernel_step_time import MeasuredStep, _equivalent_prompt_tokens
    from planner.engine.step_time import RooflineStepTime
    from planner.model.scenario import Scenario
    from planner.sim.simulate import sim_inputs

    rng = np.random.default_rng(4)
    for n, p in zip(rng.integers(1, 1 << 20, 2000).tolist(), rng.integers(0, 1 << 24, 2000).tolist(), strict=True):
        assert _equivalent_prompt_tokens(n, p) == float(equivalent_prompt_tokens(n, p))
        assert _equivalent_prompt_tokens(n + 0.5, p + 0.25) == float(equivalent_prompt_tokens(n + 0.5, p + 0.25))
    _, x = sim_inputs(Scenario(spec=True), catalog)
    kept = RooflineStepTime.from_inputs(x).target
    assert isinstance(kept, MeasuredStep)
    for seqs, q, ctx, new, past in [
        (7, 5.0, 900.5, (512,), (0,)),
        (7, 1.0, 900.5, (), ()),
        (9, 1.0, 900.5, (), ()),
    ] * 3:
        fresh = RooflineStepTime.from_inputs(x).target
        assert kept.scalar_time_s(seqs, q, ctx, new, past) == fresh.scalar_time_s(seqs, q, ctx, new, past)


TOKEN_CURVE = np.cumsum(_RNG.uniform(1e-7, 1e-4, TOKEN_GRID.size))


def _plain(curve, tokens):
    """``at_tokens`` the long way: the grid position of every count, linear between grid points."""
    return _interpolated(curve, None, tokens, _position(tokens, TOKEN_PER_OCTAVE, TOKEN_GRID.size))


@settings(max_examples=200)
@given(
    size=st.integers(WHOLE_MIN_SIZE, 5000),
    top=st.integers(1, WHOLE_TOKENS - 1),
    seed=st.integers(0, 2**31 - 1),
)
def test_whole_token_counts_read_from_the_table_are_the_lookup_to_the_bit(size, top, seed):
    tokens = np.random.default_rng(seed).integers(0, top + 1, size).astype(float)
    position = token_position(tokens)
    assert isinstance(position, WholeTokens)
    got = at_tokens(TOKEN_CURVE, None, tokens, position)
    want = _plain(TOKEN_CURVE, tokens)
    assert got.shape == want.shape and np.array_equal(got.view(np.int64), want.view(np.int64))
    strided = tokens[::3]  # a view, not a fresh array
    if strided.size >= WHOLE_MIN_SIZE:
        assert np.array_equal(at_tokens(TOKEN_CURVE, None, strided).view(np.int64), want[::3].view(np.int64))


def test_counts_the_table_does_not_hold_take_the_plain_lookup():
    whole = np.arange(WHOLE_MIN_SIZE, dtype=float)
    for tokens in (whole + 0.5, whole + WHOLE_TOKENS - 10, whole - 3.0, whole[: WHOLE_MIN_SIZE - 1]):
        position = token_position(tokens)
        assert not isinstance(position, WholeTokens)
        got = at_tokens(TOKEN_CURVE, None, tokens, position)
        assert np.array_equal(got.view(np.int64), _plain(TOKEN_CURVE, tokens).view(np.int64))
    rows = np.zeros(WHOLE_MIN_SIZE, dtype=np.intp)  # a stack of curves: the plain lookup at each element's row
    two = np.stack([TOKEN_CURVE, 2.0 * TOKEN_CURVE])
    got = at_tokens(two, rows + 1, whole)
    want = _interpolated(two, rows + 1, whole, _position(whole, TOKEN_PER_OCTAVE, TOKEN_GRID.size))
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
