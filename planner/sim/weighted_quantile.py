"""Weighted inverse-CDF percentiles of a large sample without sorting it: ``np.quantile(values, q,
method="inverted_cdf", weights=weights)`` to the bit, for the ITL sample (a value per decode step, weighted
by its tokens).

NumPy sorts the values (an argsort, then both arrays gathered in that order), forms cdf = cumsum(weights) /
Σ weights and takes, for each q, the value at the first sorted position i with cdf[i] ≥ q.  With whole
weights > 0 whose total is below 2⁵³ every partial sum is exact, so cdf[i] = fl(C_i / W) with C_i the
exact weight of the values at or before i — whatever the order among equal values (the first such i lies
in the block of the value whose weight crosses q·W, wherever ties fall).  So any sorted order gives the
same answer, and only the values near each q's crossing need sorting:

  a non-negative finite float's bit pattern read as an int64 grows with the value, so its top bits
  (``key``: sign, exponent and a few mantissa bits) bucket the values in order; the buckets' weights
  (one ``bincount``) and their running sum give, for each q, the bucket holding its crossing (the first
  whose end has fl(C / W) ≥ q), and that bucket alone is sorted, its running weights starting from the
  exact weight of the buckets before it.

Anything else (fractional or zero weights, negative or non-finite values, small samples) takes
``np.quantile`` itself.  tests/sim/test_weighted_quantile.py compares the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Samples smaller than this take ``np.quantile`` (its sort is cheap there).
FAST_MIN_VALUES = 1 << 14
#: Mantissa bits kept in a bucket key at first (2⁸ buckets per octave); fewer while the keys span more
#: than ``MAX_BUCKETS``.
KEY_MANTISSA_BITS = 8
MAX_BUCKETS = 1 << 16
_EXACT_WEIGHT_TOTAL = float(2**53)
_INF_BITS = 0x7FF0000000000000


def weighted_percentiles(values: np.ndarray, qs: Sequence[float] | np.ndarray, weights: np.ndarray) -> list[float]:
    """``np.quantile(values, qs, method="inverted_cdf", weights=weights).tolist()`` (module doc); qs in [0, 1]."""
    q = np.asarray(qs, dtype=float)
    fast = _bucketed(values, q, weights) if values.ndim == 1 and values.size >= FAST_MIN_VALUES else None
    if fast is None:
        return np.quantile(values, q, method="inverted_cdf", weights=weights).tolist()
    return fast


def _bucketed(values: np.ndarray, q: np.ndarray, weights: np.ndarray) -> list[float] | None:
    """The percentiles by buckets of the values' bit patterns (module doc); None where that does not apply."""
    if values.dtype != np.float64 or weights.shape != values.shape or q.ndim != 1:
        return None
    if not (q.size and bool(np.all((q >= 0.0) & (q <= 1.0)))):
        return None
    w = np.asarray(weights, dtype=float)
    total = float(w.sum())
    if not (0.0 < total < _EXACT_WEIGHT_TOTAL) or float(w.min()) <= 0.0 or not np.array_equal(w, np.floor(w)):
        return None  # only whole weights > 0 give exact running sums in any order
    bits = np.ascontiguousarray(values).view(np.int64)
    low, high = int(bits.min()), int(bits.max())
    if low < 0 or high >= _INF_BITS:
        return None  # a negative value (or −0.0), ∞ or NaN: the bit order is not the value order
    shift = 52 - KEY_MANTISSA_BITS
    while (high >> shift) - (low >> shift) >= MAX_BUCKETS:
        shift += 1
    key = bits >> shift
    key -= low >> shift
    ends = np.cumsum(np.bincount(key, weights=w))  # exact: whole weights, total < 2⁵³
    # the bucket of each q's crossing: the first whose end's fl(C / W) ≥ q (as np.quantile's cdf ≥ q)
    crossing = np.minimum(np.searchsorted(ends / total, q, side="left"), ends.size - 1).tolist()
    out: list[float] = []
    for qi, b in zip(q.tolist(), crossing, strict=True):
        inside = key == b
        part, part_w = values[inside], w[inside]
        order = np.argsort(part)
        cdf = np.cumsum(part_w[order])
        cdf += ends[b - 1] if b > 0 else 0.0
        cdf /= total
        j = min(int(np.searchsorted(cdf, qi, side="left")), part.size - 1)
        out.append(float(part[order[j]]))
    return out
