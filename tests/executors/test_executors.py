"""One executor interface (planner/executors): the local process pool gives the in-process answer, in
item order, and stops its workers when the caller stops early."""

from __future__ import annotations

import os
import time

import pytest

from planner.executors import ExecutorError, make_executor, run_all
from planner.executors.local import LocalExecutor


def square_after(shared, item):
    time.sleep(item[1])
    return shared * item[0] * item[0], os.getpid()


def test_the_pool_returns_every_result_in_item_order():
    items = [(k, 0.05 * (5 - k)) for k in range(6)]  # the first ones finish last
    got = run_all(LocalExecutor(2), square_after, items, shared=3)
    assert [v for v, _ in got] == [3 * k * k for k in range(6)]
    assert {pid for _, pid in got} != {os.getpid()}  # in worker processes
    serial = run_all(LocalExecutor(1), square_after, items, shared=3)
    assert [v for v, _ in serial] == [v for v, _ in got] and {pid for _, pid in serial} == {os.getpid()}


def test_stopping_early_stops_the_workers():
    ex = LocalExecutor(2)
    stream = ex.run(square_after, [(k, 5.0) for k in range(4)], shared=1, poll_s=0.05)
    assert next(stream) is None  # a heartbeat while nothing is done
    start = time.monotonic()
    stream.close()  # the pool is terminated, not drained
    assert time.monotonic() - start < 3.0
    assert not [c for c in __import__("multiprocessing").active_children() if c.is_alive()]


def test_executors_are_chosen_by_name():
    assert make_executor("local", workers=3).workers == 3
    with pytest.raises(ExecutorError, match="one of local, ray"):
        make_executor("dask")
    with pytest.raises(ExecutorError, match="only for --executor ray"):
        make_executor("local", address="auto")


def test_a_sweep_through_the_pool_is_the_in_process_sweep(catalog):
    from planner.model.scenario import Scenario
    from planner.studies.sweep import sweep_chunks

    axes = {"batch": list(range(1, 400, 3)), "gpu": ["h100-sxm", "h200"], "prompt": [512, 2048, 8192]}
    here = [c.to_csv() for c in sweep_chunks(Scenario(), axes, catalog, chunk_rows=97)]
    pooled = [c.to_csv() for c in sweep_chunks(Scenario(), axes, catalog, chunk_rows=97, executor=LocalExecutor(2))]
    assert len(here) > 4 and pooled == here
