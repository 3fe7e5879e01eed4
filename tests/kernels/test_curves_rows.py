"""planner/kernels/curves.py ``_distinct_rows``: the packed-key lookup gives np.unique(axis=0)'s rows and inverse."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from planner.kernels.curves import _distinct_rows


@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.sampled_from([1, 2, 4, 8]), st.integers(1, 64), st.integers(1, 8)), min_size=1
    ),
    st.booleans(),
)
def test_distinct_rows_are_np_uniques(rows, fractional):
    table = np.array(rows, dtype=float)
    if fractional:  # a value that does not pack: the np.unique path
        table[0, 0] += 0.5
    cols = [table[:, j].copy() for j in range(4)]
    unique, inverse = _distinct_rows(cols)
    want, want_inverse = np.unique(table, axis=0, return_inverse=True)
    assert np.array_equal(unique, want) and np.array_equal(inverse, want_inverse.ravel())
