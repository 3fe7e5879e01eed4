"""A closed loop of clients: at most N requests in flight, a new one sent when one finishes.

This is ``vllm bench serve --max-concurrency N`` (vllm/benchmarks/serve.py, v0.33.0: every request
task runs ``async with semaphore:`` around the request, ``semaphore = asyncio.Semaphore(max_concurrency)``,
and the request's ``start_time`` — from which its TTFT and latency count — is taken inside it).
The requests are scheduled at ``scheduled_s`` (the benchmark's ``--request-rate`` arrivals; all 0 at
the default rate ``inf``) and wait, in order, for a free slot:

    start_k = scheduled_k                                   k < N
    start_k = max(scheduled_k, end of the (k − N + 1)-th request to finish)      k ≥ N

(asyncio's semaphore wakes its waiters first come, first served; the (k − N + 1)-th completion is
the first at which fewer than N of the k requests started before request k are still in flight).
A request the server refuses (longer than the context window, larger than the KV cache) returns at
once and frees its slot at its start.

The simulator keeps each request's start in ``RunState.arrival_s``: a request not yet released
waits at +inf (no scheduler step is planned around it) and is released by ``release``.
"""

from __future__ import annotations

import math

import numpy as np


class ClosedLoop:
    """The starts of ``scheduled_s`` (non-decreasing) behind a ``limit``-slot semaphore (module doc)."""

    def __init__(self, scheduled_s: np.ndarray, limit: int):
        if limit < 1:
            raise ValueError(f"max_concurrency={limit}: must be at least 1")
        self.scheduled_s: list[float] = scheduled_s.tolist()
        self.limit = limit
        self.next = min(limit, len(self.scheduled_s))  # the first request still waiting for a slot
        self.in_flight_max = 0  # the most requests started and not finished at once (a check, tests)
        self._in_flight = 0

    def initial_starts(self) -> list[float]:
        """The first ``limit`` requests start when scheduled; the others wait (+inf) for a slot."""
        out = list(self.scheduled_s)
        for k in range(self.next, len(out)):
            out[k] = math.inf
        return out

    def started(self, count: int = 1) -> None:
        """``count`` requests reached the server (bookkeeping for ``in_flight_max``)."""
        self._in_flight += count
        self.in_flight_max = max(self.in_flight_max, self._in_flight)

    def release(self, starts_s: list[float], now_s: float) -> None:
        """A request finished at ``now_s``: the next waiting one starts at max(now, its schedule)."""
        self._in_flight -= 1
        k = self.next
        if k < len(starts_s):
            starts_s[k] = max(now_s, self.scheduled_s[k])
            self.next = k + 1
