"""Request generation: length distributions, Poisson arrivals, shared prefix blocks, windows and scaling."""

from __future__ import annotations

import numpy as np
import pytest

from planner.errors import TraceError
from planner.model.scenario import Scenario
from planner.sim.workload import (
    PREFIX_BLOCK_TOKENS,
    Workload,
    chain_keys,
    lengths,
    poisson_workload,
    prefix_block_ends,
    scenario_workload,
    split_round_robin,
    time_scaled,
    time_window,
)


@pytest.mark.parametrize("dist", ["uniform", "lognormal"])
def test_lengths_have_the_requested_mean_and_spread(dist):
    x = lengths(np.random.default_rng(0), dist, mean=2000, spread=0.4, n=200_000)
    assert x.min() >= 1 and x.dtype == np.int64
    assert x.mean() == pytest.approx(2000, rel=0.01)
    assert x.std() / x.mean() == pytest.approx(0.4, rel=0.02)


def test_fixed_and_zero_spread_are_constant():
    rng = np.random.default_rng(0)
    assert set(lengths(rng, "fixed", 300, 0.9, 50)) == {300}
    assert set(lengths(rng, "lognormal", 300, 0.0, 50)) == {300}


def test_poisson_rate_and_seed():
    w = poisson_workload(4.0, 20_000, "lognormal", 0.5, 1000, 200, 0.3, 512, seed=3)
    assert np.all(np.diff(w.arrival_s) >= 0)
    assert w.rate_per_s == pytest.approx(4.0, rel=0.02)
    sharing = np.diff(w.offsets) > 0
    assert sharing.mean() == pytest.approx(0.3, abs=0.01)
    assert np.all(w.prefix_ends <= np.repeat(w.prompt_tokens, np.diff(w.offsets)))
    again = poisson_workload(4.0, 20_000, "lognormal", 0.5, 1000, 200, 0.3, 512, seed=3)
    assert np.array_equal(w.arrival_s, again.arrival_s) and np.array_equal(w.prompt_tokens, again.prompt_tokens)


def test_another_rate_scales_the_same_arrivals():
    s = Scenario(sim_requests=100)
    a, b = scenario_workload(s), scenario_workload(s, rate_per_s=s.rate / 4)
    assert b.arrival_s == pytest.approx(4 * a.arrival_s)
    assert np.array_equal(a.prompt_tokens, b.prompt_tokens)


def test_round_robin_split():
    w = poisson_workload(1.0, 10, "fixed", 0.0, 10, 10, 0.0, 0, seed=0)
    parts = [split_round_robin(w, 3, i) for i in range(3)]
    assert [len(p) for p in parts] == [4, 3, 3]
    assert np.array_equal(np.sort(np.concatenate([p.arrival_s for p in parts])), w.arrival_s)


def test_prefix_blocks_are_512_tokens_and_the_last_one_shorter():
    assert prefix_block_ends(1024) == [512, 1024]
    assert prefix_block_ends(1100) == [512, 1024, 1100]
    assert prefix_block_ends(300) == [300] and prefix_block_ends(0) == []
    assert PREFIX_BLOCK_TOKENS == 512


def test_chain_keys_match_only_with_the_same_parents():
    counts, keys = chain_keys([["a", 1, 2], ["a", 1, 3], ["b", 1, 2]], [[512, 1024, 1536]] * 3)
    assert counts.tolist() == [3, 3, 3]
    a, b, c = keys[:3].tolist(), keys[3:6].tolist(), keys[6:].tolist()
    assert a[:2] == b[:2] and a[2] != b[2]  # same first two blocks, different third
    assert not set(c) & set(a)  # a different first block: nothing shared after it either
    _, other_end = chain_keys([["a"], ["a"]], [[512], [500]])
    assert other_end[0] != other_end[1]  # the same id over fewer tokens is another block


def test_poisson_requests_share_the_system_prompt_and_the_ceiling_counts_reuse():
    w = poisson_workload(1.0, 400, "fixed", 0.0, 2048, 10, 0.5, 1024, seed=1)
    sharing = np.diff(w.offsets) > 0
    keys = [tuple(w.prefix_blocks(i)[0].tolist()) for i in np.flatnonzero(sharing)]
    assert len(set(keys)) == 1 and len(keys[0]) == 2  # one 1,024-token prefix of two blocks
    reuse = w.reusable_prefix_tokens()
    first = int(np.flatnonzero(sharing)[0])
    assert reuse[first] == 0 and set(reuse[sharing].tolist()[1:]) == {1024} and not reuse[~sharing].any()


def test_take_keeps_each_requests_blocks():
    w = poisson_workload(1.0, 50, "fixed", 0.0, 2048, 10, 0.5, 1024, seed=2)
    part = w.take(np.arange(50) % 3 == 1)
    for k, i in enumerate(range(1, 50, 3)):
        assert np.array_equal(part.prefix_blocks(k)[0], w.prefix_blocks(i)[0])
        assert part.prompt_tokens[k] == w.prompt_tokens[i]


def test_window_and_scale():
    w = Workload(np.arange(10.0) + 5.0, np.full(10, 100), np.full(10, 10))
    part = time_window(w, 2.0, 3.0)  # recorded t = 7, 8, 9 → 0, 1, 2
    assert part.arrival_s.tolist() == [0.0, 1.0, 2.0]
    assert time_window(w, 8.0, None).arrival_s.tolist() == [0.0, 1.0]
    assert time_scaled(w, 4.0).rate_per_s == pytest.approx(4 * w.rate_per_s)
    with pytest.raises(TraceError, match="no requests"):
        time_window(w, 100.0, 5.0)
    with pytest.raises(TraceError, match="positive"):
        time_scaled(w, 0.0)
