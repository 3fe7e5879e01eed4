"""One interface for running independent pieces of work in parallel: the search's confirmations, sweeps and
long fleet replays.

``Executor.run(fn, items, shared)`` applies ``fn(shared, item)`` to every item and yields ``(index, result)``
as each finishes (``None`` every ``poll_s`` seconds while none does, so the caller can report progress,
check its time budget or stop); closing the iterator early — a ``break``, an exception, Ctrl-C — stops
the work still running.  ``shared`` is sent to each worker once (a catalog, a trace), not with every item.
Callers put results back in item order, so a seeded answer is the same whichever executor ran it and in
whatever order its pieces finished.

  local   ``LocalExecutor``: a process pool on this machine (``workers`` processes, default every core;
          forked where the platform allows, so ``shared`` is inherited, not copied); 1 worker = in this
          process, one item after another
  ray     ``RayExecutor`` (``pip install "kvplan[ray]"``): tasks on a Ray cluster (``address``: ``auto``
          for the cluster this machine belongs to, ``ray://host:10001`` for a remote one, None for a
          local instance started here); ``planner`` is shipped to the workers with the job
          (``runtime_env`` ``py_modules``), so the cluster needs only Ray and numpy, pandas and pydantic

``make_executor(kind, address, workers)`` picks one by name (``EXECUTORS``), as the CLI's ``--executor``
and ``--address`` do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from planner.executors.base import EXECUTORS, POLL_S, Executor, ExecutorError, Task

__all__ = ["EXECUTORS", "POLL_S", "Executor", "ExecutorError", "Task", "make_executor", "run_all"]


def make_executor(kind: str = "local", address: str | None = None, workers: int | None = None) -> Executor:
    """The executor named ``kind`` (``EXECUTORS``); ExecutorError naming what is missing."""
    if kind == "local":
        if address:
            raise ExecutorError([f"--address {address!r}: only for --executor ray (the local pool runs here)"])
        from planner.executors.local import LocalExecutor

        return LocalExecutor(workers)
    if kind == "ray":
        from planner.executors.ray_executor import RayExecutor

        return RayExecutor(address, workers)
    raise ExecutorError([f"executor {kind!r}: one of {', '.join(EXECUTORS)}"])


def run_all(
    executor: Executor,
    fn: Task,
    items: Sequence[Any],
    shared: Any = None,
    on_result: Callable[[int, Any], None] | None = None,
    on_tick: Callable[[], None] | None = None,
) -> list[Any]:
    """Every item's result, in item order (``on_result`` as each arrives, ``on_tick`` on each heartbeat)."""
    out: list[Any] = [None] * len(items)
    for event in executor.run(fn, items, shared):
        if event is None:
            if on_tick is not None:
                on_tick()
            continue
        i, value = event
        out[i] = value
        if on_result is not None:
            on_result(i, value)
    return out
