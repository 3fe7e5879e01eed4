"""One rounding rule for the batch where decode turns compute-bound (the ridge batch).

The engine's ``ridge_batch`` is a real number (218.4); a batch is a whole number of
sequences, and the step is compute-bound for every batch ≥ the ridge.  So the turn is
told everywhere — the headline's notice, the decode chart's mark and caption, the
advisor's finding — as the first whole batch at or past it, ⌈ridge⌉ (at least 1):
"memory-bound below batch 219, compute-bound from 219".  Pure.
"""

from __future__ import annotations

import math

from planner.format import fmt_count


def first_compute_bound_batch(ridge_batch: float) -> int | None:
    """⌈ridge⌉, at least 1; None when decode never turns compute-bound (an infinite ridge)."""
    ridge = float(ridge_batch)
    if not math.isfinite(ridge):
        return None
    return max(math.ceil(ridge), 1)


def fmt_turn(ridge_batch: float) -> str:
    """The first compute-bound batch as text ("219"), or "never"."""
    first = first_compute_bound_batch(ridge_batch)
    return "never" if first is None else fmt_count(first)
