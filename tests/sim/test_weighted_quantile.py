"""``planner.sim.weighted_quantile``: the bucketed weighted percentiles are ``np.quantile``'s inverted CDF to the
bit — ties, heavy buckets, whole weights of any size — and anything it does not cover takes ``np.quantile``."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.sim.weighted_quantile import FAST_MIN_VALUES, _bucketed, weighted_percentiles

QS = [0.0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0]


def _plain(values, qs, weights) -> list[float]:
    return np.quantile(values, np.asarray(qs), method="inverted_cdf", weights=weights).tolist()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    size=st.integers(FAST_MIN_VALUES, 4 * FAST_MIN_VALUES),
    distinct=st.sampled_from([3, 50, 10**9]),
    top_weight=st.sampled_from([1, 32, 10**6]),
)
def test_bucketed_percentiles_are_numpy_s_to_the_bit(seed, size, distinct, top_weight):
    rng = np.random.default_rng(seed)
    values = rng.gamma(2.0, 0.01, size)
    if distinct < 10**9:  # few distinct values: ties across and within buckets
        values = np.round(values * distinct) / distinct
    values[: size // 10] = 0.0075  # one heavy bucket
    weights = rng.integers(1, top_weight + 1, size).astype(float)
    qs = QS + rng.uniform(0.0, 1.0, 5).tolist()
    assert _bucketed(values, np.asarray(qs), weights) is not None
    got = weighted_percentiles(values, qs, weights)
    assert got == _plain(values, qs, weights)  # floats compared exactly


def test_crossings_on_bucket_ends_and_wide_ranges_are_numpy_s():
    """Weights that put a q exactly on a bucket's end; values spanning many octaves (the key shift grows)."""
    size = FAST_MIN_VALUES
    values = np.repeat(np.array([0.001, 0.002, 0.004, 0.008]), size // 4)
    weights = np.ones(size)
    assert weighted_percentiles(values, QS, weights) == _plain(values, QS, weights)
    rng = np.random.default_rng(5)
    wide = np.exp2(rng.uniform(-1000.0, 1000.0, size))
    wide[:10] = 0.0
    assert weighted_percentiles(wide, QS, weights) == _plain(wide, QS, weights)


def test_what_it_does_not_cover_takes_numpy():
    rng = np.random.default_rng(2)
    values = rng.uniform(0.0, 1.0, FAST_MIN_VALUES)
    whole = rng.integers(1, 9, values.size).astype(float)
    q = np.asarray(QS)
    negative, nan = values - 0.5, values.copy()
    nan[3] = np.nan
    for v, w in ((values, whole + 0.5), (values, whole * 0.0 + (np.arange(values.size) > 0)), (negative, whole)):
        assert _bucketed(v, q, w) is None
        assert weighted_percentiles(v, QS, w) == _plain(v, QS, w)
    assert _bucketed(nan, q, whole) is None
    small = values[: FAST_MIN_VALUES - 1]
    assert weighted_percentiles(small, QS, whole[: small.size]) == _plain(small, QS, whole[: small.size])
