"""How many simulated requests a sizing run needs for the percentile its SLO is held to.

The empirical p-quantile of n requests (the inverse empirical CDF, ``results.percentiles``) is the
order statistic X₍ₖ₎, k = ⌈n·p⌉.  For independent requests from any continuous distribution F it lies
between the true quantiles Q(p_lo) and Q(p_hi) exactly when at least k samples fall at or below Q(p_hi)
and fewer than k at or below Q(p_lo); the number at or below Q(u) is Binomial(n, u), so (distribution
free; Wilks 1941; David & Nagaraja, *Order Statistics*, §7.1)

    P(Q(p_lo) ≤ X₍ₖ₎ ≤ Q(p_hi)) = P(Bin(n, p_lo) ≤ k − 1) − P(Bin(n, p_hi) ≤ k − 1).

The sizing confirmation takes the band as half the tail on either side — p99 within [p98.5, p99.5],
p90 within [p85, p95], p99.9 within [p99.85, p99.95] — at ``CONFIDENCE`` = 95 %, and simulates the
fewest requests ``requests_for`` (rounded up to ``ROUND_TO``) for which that probability is at least the
confidence: 1,600 for p99, 200 for p90, 16,000 for p99.9 (``tests/search/test_confidence.py`` pins
them).  Requests in one queue are correlated (a burst delays its neighbours), so the effective sample is
smaller than n; the confirmation therefore also splits the requests over independent sample paths
(seeds) that must each meet the target (``knob_search``).
"""

from __future__ import annotations

import math
from functools import lru_cache

CONFIDENCE = 0.95
#: The band around p: ± this share of the tail 1 − p.
BAND_OF_TAIL = 0.5
ROUND_TO = 100
#: The most requests a confirmation run asks for (beyond it the band is what this many give).
MAX_REQUESTS = 20_000


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(Bin(n, p) ≤ k), summed in log space from the mode outwards (no scipy in the stack)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    lp, lq = math.log(p), math.log1p(-p)
    lgn = math.lgamma(n + 1)

    def term(j: int) -> float:
        return math.exp(lgn - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq)

    mode = min(int((n + 1) * p), n)
    if k < mode:  # the lower tail: sum downwards from k until the terms vanish
        total, j = 0.0, k
        while j >= 0:
            t = term(j)
            total += t
            if t < 1e-18 * max(total, 1e-300):
                break
            j -= 1
        return min(total, 1.0)
    total, j = 0.0, k + 1  # the upper tail above k, subtracted from 1
    while j <= n:
        t = term(j)
        total += t
        if t < 1e-18 * max(total, 1e-300):
            break
        j += 1
    return max(0.0, 1.0 - total)


def band(pct: float) -> tuple[float, float]:
    """(p_lo, p_hi) in percent: p ± half the tail (module doc)."""
    half = BAND_OF_TAIL * (100.0 - pct)
    return pct - half, pct + half


def coverage(n: int, pct: float) -> float:
    """P(the empirical ``pct``-th percentile of n requests lies in ``band(pct)``) (module doc)."""
    lo, hi = (b / 100.0 for b in band(pct))
    k = math.ceil(n * pct / 100.0 - 1e-12)
    return _binom_cdf(k - 1, n, lo) - _binom_cdf(k - 1, n, hi)


@lru_cache(maxsize=64)
def requests_for(pct: float, confidence: float = CONFIDENCE) -> int:
    """The fewest requests (a multiple of ``ROUND_TO``, at most ``MAX_REQUESTS``) whose empirical ``pct``-th
    percentile lies in ``band(pct)`` with probability ≥ ``confidence``, for it and every larger multiple
    checked up to twice it (the coverage wobbles with ⌈n·p⌉)."""
    tail = 1.0 - pct / 100.0
    # normal approximation as the starting point: n ≈ z² p (1 − p) / (BAND_OF_TAIL · tail)²
    z = 1.959963984540054 if confidence == CONFIDENCE else _z(confidence)
    guess = z * z * (pct / 100.0) * tail / (BAND_OF_TAIL * tail) ** 2
    n = max(ROUND_TO, int(0.7 * guess) // ROUND_TO * ROUND_TO)
    while n < MAX_REQUESTS:
        if all(coverage(m, pct) >= confidence for m in range(n, n + 3 * ROUND_TO, ROUND_TO)):
            return n
        n += ROUND_TO
    return MAX_REQUESTS


def _z(confidence: float) -> float:
    """The two-sided standard normal quantile for ``confidence``, by bisection on erf."""
    lo, hi = 0.0, 10.0
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if math.erf(mid / math.sqrt(2.0)) < confidence:
            lo = mid
        else:
            hi = mid
    return hi


def band_text(n: int, pct: float) -> str:
    """'the p99 of 1,600 requests lies in [p98.5, p99.5] with 95 % confidence' for n requests."""
    lo, hi = band(pct)
    return (
        f"the p{pct:g} of {n:,} independent requests lies between the true p{lo:g} and p{hi:g} with "
        f"{coverage(n, pct):.0%} confidence"
    )
