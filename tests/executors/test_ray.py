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


def test_kvplan_size_runs_on_ray(local_ray):
    out, err = io.StringIO(), io.StringIO()
    link = "model=llama-3.2-1b&rate=20&sim_requests=200&gpu=l4"
    code = main(["size", link, "--search", "batch", "--gpus", "l4", "--executor", "ray"], out, err)
    assert code == 0, err.getvalue()
    assert "executor ray" in out.getvalue() and "← best" in out.getvalue()
