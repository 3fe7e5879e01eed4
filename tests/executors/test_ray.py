"""The same seeded answers through Ray (``ray.init(num_cpus=2)`` started here) as through the local pool:
the search's confirmations and ``kvplan size --executor ray``.  Skipped with its reason where Ray is not
installed (``pip install "kvplan[ray]"``; requirements-dev.txt installs it)."""

from __future__ import annotations

import io

import pytest

from planner.cli.main import main
from planner.executors import make_executor
from planner.executors.local import LocalExecutor
from planner.model.scenario import Scenario
from planner.search.knob_search import search_fleet

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'kvplan[ray]'")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield make_executor("ray")
    ray.shutdown()


def test_a_search_confirmed_through_ray_is_the_local_pools_to_the_byte(local_ray, catalog):
    s = Scenario(model="llama-3.2-1b", rate=20.0, sim_requests=300, search="batch")
    here = search_fleet(s, catalog, gpus=["l4", "h100-sxm"], executor=LocalExecutor(2))
    there = search_fleet(s, catalog, gpus=["l4", "h100-sxm"], executor=local_ray)
    assert there.executor == "ray" and there.complete
    assert there.table.to_csv().encode() == here.table.to_csv().encode()
    assert there.reason == here.reason


def test_the_bounded_second_round_through_ray_is_the_local_pools_to_the_byte(local_ray, catalog):
    """Both rounds (confirm.py, "A bound"): candidates shown unable to win at their ceiling, the same rows."""
    s = Scenario(model="llama-3.1-8b", rate=40.0, sim_requests=400)
    gpus = ["l4", "h100-sxm", "a100-80gb-sxm", "h200"]
    here = search_fleet(s, catalog, gpus=gpus, executor=LocalExecutor(2))
    there = search_fleet(s, catalog, gpus=gpus, executor=local_ray)
    assert here.cannot_win >= 2 and there.cannot_win == here.cannot_win and there.complete
    assert there.table.to_csv().encode() == here.table.to_csv().encode()


def test_a_load_aware_fleets_bounded_sample_through_ray_is_the_local_pools_to_the_byte(local_ray, catalog):
    """Behind least_tokens each run co-simulates min(r, 8) replicas (search/fleet_sample.py): the same bytes."""
    s = Scenario(model="llama-3.1-8b", rate=100.0, prompt=2048, output=128, sim_requests=300, search="batch")
    s = s.with_changes(router="least_tokens")
    here = search_fleet(s, catalog, gpus=["l4"], executor=LocalExecutor(2))
    there = search_fleet(s, catalog, gpus=["l4"], executor=local_ray)
    assert there.complete and here.table["confirmed_on"].str.startswith("8 of ").all()
    assert there.table.to_csv().encode() == here.table.to_csv().encode()


def test_kvplan_size_runs_on_ray(local_ray):
    out, err = io.StringIO(), io.StringIO()
    link = "model=llama-3.2-1b&rate=20&sim_requests=200&gpu=l4"
    code = main(["size", link, "--search", "batch", "--gpus", "l4", "--executor", "ray"], out, err)
    assert code == 0, err.getvalue()
    assert "executor ray" in out.getvalue() and "← best" in out.getvalue()


REPLAY = Scenario(
    model="llama-3.2-1b", gpu="h100-sxm", prompt=200, output=16, rate=200.0, replicas=4, batch=64, chunk=2048
)


def _replayed(requests: int, executor, catalog, task_requests: int):
    from planner.sim.replay import plan_replay, replay
    from planner.sim.replay_sources import SyntheticSource

    src = SyntheticSource(REPLAY, requests)
    plan = plan_replay(REPLAY, catalog, src, task_requests=task_requests)
    return replay(REPLAY, catalog, src, executor, plan)


def _identical(a, b) -> None:
    import numpy as np

    assert a.counts == b.counts and a.summary == b.summary and a.windows == b.windows
    assert all(np.array_equal(a.hists[k].counts, b.hists[k].counts) for k in a.hists)


def test_a_50000_request_trace_replays_on_4_replicas_through_ray_as_on_the_local_pool(local_ray, catalog):
    there = _replayed(50_000, local_ray, catalog, 12_500)
    here = _replayed(50_000, LocalExecutor(2), catalog, 12_500)
    assert there.executor == "ray" and here.executor == "local"
    assert there.counts["requests"] == 50_000 and there.parts == 4  # one part per replica
    _identical(there, here)


@pytest.mark.slow
def test_a_million_request_trace_replays_on_4_replicas_through_ray(local_ray, catalog):
    there = _replayed(1_000_000, local_ray, catalog, 100_000)
    assert there.counts["requests"] == 1_000_000 and there.parts >= 12
    assert there.boundary.exact == there.boundary.boundaries  # every lead-in emptied the replica
    here = _replayed(1_000_000, LocalExecutor(2), catalog, 100_000)
    _identical(there, here)


def test_kvplan_sweep_on_ray_writes_the_local_csv(local_ray, tmp_path):
    args = ["sweep", "model=llama-3.1-8b", "--set", "batch=1:256:x2", "--set", "gpu=h100-sxm,h200"]
    assert main([*args, "--out", str(tmp_path / "here.csv")], io.StringIO(), io.StringIO()) == 0
    assert main([*args, "--out", str(tmp_path / "ray.csv"), "--executor", "ray"], io.StringIO(), io.StringIO()) == 0
    assert (tmp_path / "ray.csv").read_bytes() == (tmp_path / "here.csv").read_bytes()
