"""Latency histograms that add exactly: the partial results of a long replay (``replay``) merge into the
whole run's, whatever machine computed each part and in whatever order.

Buckets are logarithmic (the DDSketch layout: Masson, Rim & Lee, "DDSketch: a fast and fully-mergeable
quantile sketch with relative-error guarantees", VLDB 2019): with γ = (1 + α)/(1 − α), bucket i ≥ 1
holds the values in (x₀·γ^(i−1), x₀·γ^i], bucket 0 every value ≤ x₀ (and 0), and one more bucket +∞
(a request never served).  α = ``RELATIVE_ACCURACY`` = 0.5 %, x₀ = 1 µs, and values up to 10⁶ s have a
bucket of their own (≈ 2,800 buckets); larger finite ones share the last.  Counts are integers (an ITL
bucket counts tokens), so merging is exact addition and the merged histogram is the one the whole run's
values would have filled — the same to the last count on any executor.

A percentile (the inverse empirical CDF, as ``results.percentiles``: the smallest value with at least that
share of the weight at or below it) is read as its bucket's point 2·x₀·γ^i/(γ + 1), within α = 0.5 % of the
exact order statistic for every value above x₀ (bucket 0 reads as x₀; a value in the +∞ bucket as ∞).
A mean is the weighted mean of those points, within α of the exact mean.

A hand-written numpy histogram rather than the ``ddsketch`` package: that package adds one value per
Python call, where a replay's parts add tens of millions of values as arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

RELATIVE_ACCURACY = 0.005
SMALLEST_S = 1e-6
LARGEST_S = 1e6
_GAMMA = (1.0 + RELATIVE_ACCURACY) / (1.0 - RELATIVE_ACCURACY)
_LOG_GAMMA = math.log(_GAMMA)
#: Finite buckets 0 … FINITE − 1, then the +∞ bucket.
FINITE = int(math.ceil(math.log(LARGEST_S / SMALLEST_S) / _LOG_GAMMA)) + 1
BUCKETS = FINITE + 1


def bucket_of(values: np.ndarray) -> np.ndarray:
    """Each value's bucket (module doc)."""
    v = np.asarray(values, dtype=float)
    out = np.zeros(v.shape, dtype=np.int64)
    big = v > SMALLEST_S
    with np.errstate(invalid="ignore", divide="ignore"):
        idx = np.ceil(np.log(v[big] / SMALLEST_S) / _LOG_GAMMA)
    out[big] = np.minimum(np.nan_to_num(idx, posinf=FINITE), FINITE - 1).astype(np.int64)
    out[np.isposinf(v) | np.isnan(v)] = FINITE
    return out


def bucket_value(i: np.ndarray | int) -> np.ndarray:
    """The point read for bucket i: 2·x₀·γ^i/(γ + 1) (x₀ for bucket 0, ∞ for the last)."""
    i = np.asarray(i)
    out = 2.0 * SMALLEST_S * np.power(_GAMMA, i.astype(float)) / (_GAMMA + 1.0)
    out = np.where(i == 0, SMALLEST_S, out)
    return np.where(i >= FINITE, np.inf, out)


@dataclass(frozen=True)
class Histogram:
    """Integer counts per bucket (module doc); ``+`` merges."""

    counts: np.ndarray  # (BUCKETS,) int64

    @classmethod
    def empty(cls) -> Histogram:
        return cls(np.zeros(BUCKETS, dtype=np.int64))

    @classmethod
    def of(cls, values: np.ndarray, weights: np.ndarray | None = None) -> Histogram:
        """The histogram of ``values`` (each counted once, or ``weights`` times: integers)."""
        b = bucket_of(values)
        w = None if weights is None else np.asarray(weights, dtype=np.int64)
        return cls(np.bincount(b, weights=w, minlength=BUCKETS).astype(np.int64))

    def __add__(self, other: Histogram) -> Histogram:
        return Histogram(self.counts + other.counts)

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def quantiles(self, pcts: tuple[float, ...]) -> list[float]:
        """Inverse-CDF percentiles (module doc): NaN when empty."""
        total = self.total
        if total == 0:
            return [float("nan")] * len(pcts)
        cum = np.cumsum(self.counts)
        out = []
        for p in pcts:
            need = max(math.ceil(total * p / 100.0 - 1e-9), 1)
            out.append(float(bucket_value(int(np.searchsorted(cum, need, side="left")))))
        return out

    def mean(self) -> float:
        """The weighted mean of the buckets' points (within α of the exact mean for values above x₀; ∞ when
        any count is in the +∞ bucket, NaN when empty)."""
        total = self.total
        if total == 0:
            return float("nan")
        if self.counts[FINITE]:
            return float("inf")
        points = bucket_value(np.arange(FINITE))
        return float(np.dot(self.counts[:FINITE], points) / total)

    def statistic(self, stat: str | float) -> float:
        """``mean()`` for "mean", else the percentile ``stat`` (the SLO's statistic, ``sim.slo``)."""
        return self.mean() if stat == "mean" else self.quantiles((float(stat),))[0]

    def share_above(self, x: float) -> float:
        """The share of the weight in buckets wholly above ``x`` (a lower bound of the share over it)."""
        total = self.total
        if total == 0:
            return float("nan")
        first = int(bucket_of(np.array([x]))[0]) + 1
        return float(self.counts[first:].sum()) / total
