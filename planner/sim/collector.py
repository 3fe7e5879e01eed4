"""Python's cyclic garbage collector paused while a simulation runs.

A run allocates millions of small objects that are never part of a reference cycle (heap entries, floats,
per-request lists and tuples); reference counting frees them, but every 700 net allocations the collector
walks the young generation, every tenth such pass the next, and now and then the whole heap — the run's own
long-lived records, the catalog, the workload — to find cycles that are not there: about 5 % of a
10,000-request run's CPU time (0.07 of 1.5 CPU s by ``gc.callbacks``, 0.2 of 4 s speculating).  The
collector is switched off for the call and back on after it, only when it was on (a caller that turned it
off keeps it off; nested runs leave it to the outermost).  Results do not depend on it: collection only
frees unreachable cycles (tests/sim/test_collector.py).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def collector_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` with the cyclic garbage collector off while it runs (module doc)."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused
