"""The Ray executor (``pip install "kvplan[ray]"``; ``planner.executors`` module doc).

Each item is one Ray task (one CPU); ``shared`` goes to the object store once (``ray.put``).  Connecting:
``address`` None starts (or joins) a Ray instance on this machine (``ray.init()``), ``auto`` joins the
cluster this machine is a node of, ``ray://head:10001`` a remote cluster through Ray Client.  The
``planner`` package travels with the job (``runtime_env={"py_modules": [planner]}``), so the cluster's
nodes need Ray and the planner's own dependencies (numpy, pandas, pydantic), not kvplan.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from planner.executors.base import POLL_S, ExecutorError, Task

_REMOTE: dict[str, Any] = {}


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ExecutorError(
            ['--executor ray: Ray is not installed; install it with: pip install "kvplan[ray]"']
        ) from None
    return ray


def _call(fn: Task, shared: Any, item: Any) -> Any:
    return fn(shared, item)


class RayExecutor:
    """Tasks on a Ray cluster (module doc); ``workers``: the most running at once (default: the cluster's CPUs)."""

    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None):
        ray = _ray()
        if not ray.is_initialized():
            planner_dir = str(Path(__file__).resolve().parent.parent)
            try:
                ray.init(
                    address=address,
                    runtime_env={"py_modules": [planner_dir]} if address else None,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ExecutorError([f"--address {address!r}: no Ray cluster to join ({exc})"]) from None
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, min(workers or cpus, cpus))

    def run(
        self, fn: Task, items: Sequence[Any], shared: Any = None, poll_s: float = POLL_S
    ) -> Iterator[tuple[int, Any] | None]:
        ray = _ray()
        remote = _REMOTE.get("call") or _REMOTE.setdefault("call", ray.remote(num_cpus=1)(_call))
        ref = ray.put(shared)
        todo = list(enumerate(items))[::-1]
        running: dict[Any, int] = {}
        try:
            while todo or running:
                while todo and len(running) < self.workers:
                    i, item = todo.pop()
                    running[remote.remote(fn, ref, item)] = i
                done, _ = ray.wait(list(running), num_returns=1, timeout=poll_s)
                if not done:
                    yield None
                    continue
                for r in done:
                    yield running.pop(r), ray.get(r)
        finally:
            for r in running:
                ray.cancel(r, force=True)
