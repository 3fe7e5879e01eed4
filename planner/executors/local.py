"""The local executor: a process pool on this machine (``planner.executors`` module doc)."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Iterator, Sequence
from typing import Any

from planner.executors.base import POLL_S, Task

_SHARED: dict[str, Any] = {}


def _init(shared: Any) -> None:
    # Ctrl-C is the parent's to handle (it stops the pool); a worker would only print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _SHARED["value"] = shared


def _call(task: tuple[Task, int, Any]) -> tuple[int, Any]:
    fn, i, item = task
    return i, fn(_SHARED.get("value"), item)


class LocalExecutor:
    """``workers`` processes (default: every core); with 1, or one item, the work runs in this process."""

    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = max(1, workers or os.cpu_count() or 1)

    def run(
        self, fn: Task, items: Sequence[Any], shared: Any = None, poll_s: float = POLL_S
    ) -> Iterator[tuple[int, Any] | None]:
        workers = min(self.workers, len(items))
        if workers <= 1:
            for i, item in enumerate(items):
                yield i, fn(shared, item)
            return
        ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        # SIGINT held while the workers fork: a Ctrl-C landing inside a fork was swallowed there (Python reports
        # a KeyboardInterrupt in an at-fork hook as "Exception ignored" and goes on), so the search never
        # stopped; held, it arrives once the pool exists — a KeyboardInterrupt below, which stops the pool —
        # and the workers start with it held too (``_init`` then ignores it)
        blocking = hasattr(signal, "pthread_sigmask")
        if blocking:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pool = ctx.Pool(workers, initializer=_init, initargs=(shared,))
        except BaseException:
            if blocking:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            raise
        try:
            if blocking:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            results = pool.imap_unordered(_call, [(fn, i, item) for i, item in enumerate(items)], chunksize=1)
            for _ in range(len(items)):
                while True:
                    try:
                        event = results.next(timeout=poll_s)
                        break
                    except mp.TimeoutError:
                        yield None
                yield event
            pool.close()
        finally:
            pool.terminate()  # a no-op once closed and drained; stops the rest on an early exit
            pool.join()
