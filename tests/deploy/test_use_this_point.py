"""A disaggregated point of the search (Search & frontier's "Use this point", ``Screened.changes``) becomes a
scenario whose link carries its prefill pool, and that scenario deploys as the two pools the search priced;
a colocated point clears a pool set before."""

from __future__ import annotations

from planner.deploy.fleet import build_fleet
from planner.model.scenario import Scenario
from planner.search.knob_search import screen_points


def test_a_disaggregated_point_deploys_as_the_pools_the_search_priced(catalog):
    s = Scenario(model="llama-3.1-8b", rate=20, search="batch,disagg")
    z = screen_points(s, catalog, gpus=["h100-sxm"])
    p = z.points
    row = p[(p["mode"] == "disaggregated") & p["meets_slo"]].iloc[0]
    used = s.with_changes(**z.changes(int(row["point"])))
    assert used.prefill_replicas == int(row["prefill_replicas"]) and used.replicas == int(row["decode_replicas"])
    prefill, decode = build_fleet(used, catalog).pools
    assert (prefill.role, prefill.replicas, prefill.layout) == ("prefill", used.prefill_replicas, row["prefill_layout"])
    assert prefill.scenario.chunk == int(row["prefill_chunk"]) and not prefill.scenario.spec
    assert (decode.replicas, decode.layout, decode.scenario.batch) == (used.replicas, row["layout"], int(row["batch"]))
    colocated = p[(p["mode"] == "colocated") & p["meets_slo"]].iloc[0]
    back = used.with_changes(**z.changes(int(colocated["point"])))
    assert back.prefill_replicas == 0 and back.prefill_chunk is None
    assert [q.role for q in build_fleet(back, catalog).pools] == ["colocated"]
