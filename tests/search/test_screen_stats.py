"""The screening model computes the statistic the SLO holds (planner/search/screen_stats.py, issue 26): the
mean or a percentile of TTFT, per-request TPOT, ITL and E2EL, near what the simulator measures at the same
load, and a mean target lets a configuration carry more than a p99 one."""

from __future__ import annotations

import pytest

from planner.model.scenario import Scenario
from planner.search.grid import score
from planner.search.knob_search import traffic_stats
from planner.sim.simulate import simulate_scenario
from planner.sim.slo import TPOT, statistic

#: Llama-3.1-8B on one H100 at batch 32, chunk 2,048; 12 requests/s over the replicas the screen sizes
BASE = dict(model="llama-3.1-8b", rate=12.0, search="none", slo_tpot_s=0.05, slo_e2e_s=30.0, sim_requests=1500)


def _point(catalog, **kw):
    s = Scenario(**(BASE | kw))
    z = score(s, catalog, traffic_stats(s, None), ["h100-sxm"])
    return s, z.points[z.points["layout"] == "tp1"].iloc[0]


@pytest.mark.parametrize("pct", ["mean", 99.0])
def test_the_screen_is_near_the_simulation_for_every_latency(catalog, pct):
    s, p = _point(catalog, slo_pct=pct)
    r = simulate_scenario(s.with_changes(rate=s.rate / float(p["replicas"])), catalog)
    for name in ("ttft", "tpot", "itl", "e2e"):
        screened, simulated = float(p[f"{name}_q_s"]), statistic(r, name, pct)
        assert screened == pytest.approx(simulated, rel=0.25), (name, screened, simulated)


def test_a_mean_target_carries_more_than_a_p99_one(catalog):
    tight = dict(slo_tpot_s=0.012, slo_itl_s=None, slo_e2e_s=None, slo_ttft_s=None)
    _, mean = _point(catalog, slo_pct="mean", **tight)
    _, p99 = _point(catalog, slo_pct=99.0, **tight)
    assert mean["capacity_per_replica_per_s"] > p99["capacity_per_replica_per_s"] > 0
    assert p99["binding"] == TPOT
    assert p99["tpot_q_s"] > mean["tpot_q_s"]
