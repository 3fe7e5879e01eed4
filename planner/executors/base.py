"""What every executor shares (``planner.executors`` module doc): the protocol, its task type, errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from planner.errors import ProblemsError

EXECUTORS = ("local", "ray")
#: Seconds between two ``None`` heartbeats while no piece finishes.
POLL_S = 0.25

Task = Callable[[Any, Any], Any]


class ExecutorError(ProblemsError):
    """An executor that cannot start (Ray missing, no cluster at the address)."""


class Executor(Protocol):
    """What the search, the sweep and the replay need of an executor (module doc)."""

    name: str
    workers: int

    def run(
        self, fn: Task, items: Sequence[Any], shared: Any = None, poll_s: float = POLL_S
    ) -> Iterator[tuple[int, Any] | None]: ...
