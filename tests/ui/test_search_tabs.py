"""AppTest of the "Search & frontier" and "Compare scenarios" tabs through the one-tab page
(tests/tab_harness.py), which applies ``update_scenario`` like app.py."""

from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from planner.search.knob_search import screen_points
from planner.studies.baseline import pin_query
from tests.tab_harness import tab_page

SMALL = Scenario(model="llama-3.2-1b", rate=20.0, sim_requests=200, gpu="l4")


def app(tab: str, scenario: Scenario) -> AppTest:
    at = AppTest.from_function(tab_page, args=(tab,), default_timeout=120)
    at.session_state["scenario"] = scenario.model_dump_json()
    return at.run()


def press(at: AppTest, label: str) -> AppTest:
    return next(b for b in at.button if b.label == label).click().run()


def scenario_of(at: AppTest) -> Scenario:
    return Scenario.model_validate_json(at.session_state["scenario"])


def test_the_frontier_draws_every_point_and_a_point_becomes_the_scenario():
    at = app("ui.tabs.frontier", SMALL)
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.get("plotly_chart")) == 2  # the two frontiers
    assert any("configurations scored" in m.value for m in at.markdown)
    pick = at.selectbox(key="_fr_w_point")
    point = pick.value
    pick.set_value(point)
    press(at, "Use this point")
    assert not at.exception, [e.message for e in at.exception]
    s = scenario_of(at)
    assert s != SMALL and s.replicas >= 1
    # the scenario is now that point: the chart marks it
    assert any("The star is this scenario" in c.value for c in at.caption)
    # and Back restores the scenario before it, exactly
    press(at, "Back to the previous scenario")
    assert not at.exception, [e.message for e in at.exception]
    assert scenario_of(at) == SMALL
    assert not [b for b in at.button if b.label == "Back to the previous scenario"]


def test_a_click_on_a_frontier_point_selects_it_and_leaves_the_scenario_alone():
    """Issue 30: the first click used to rewrite the whole scenario (GB200 tp=8) with no undo."""
    at = app("ui.tabs.frontier", SMALL)
    points = screen_points(SMALL, load_catalog()).points
    first = at.selectbox(key="_fr_w_point").value
    feasible = points[points["meets_slo"].astype(bool) & (points["point"] != first)]
    clicked = int(feasible["point"].iloc[len(feasible) // 2])  # any feasible point, on a frontier or not
    at.session_state["fr-chart-throughput_frontier"] = {"selection": {"points": [{"customdata": [clicked]}]}}
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert scenario_of(at) == SMALL  # the click changed nothing
    assert at.selectbox(key="_fr_w_point").value == clicked  # it is selected, for "Use this point"
    press(at, "Use this point")
    assert scenario_of(at) != SMALL


def test_the_knobs_and_the_slo_are_link_keys_and_the_search_confirms_by_simulation():
    at = app("ui.tabs.frontier", SMALL)
    at.checkbox(key="_fr_w_kvdtype").check()
    at.selectbox(key="_fr_w_slo_pct").set_value(95.0)
    press(at, "Search and confirm by simulation")
    assert not at.exception, [e.message for e in at.exception]
    s = scenario_of(at)
    assert (s.search, s.slo_pct) == ("batch,chunk,kvdtype", 95.0)
    assert at.success and "Cheapest way to meet p95 TTFT" in at.success[0].value
    assert any(d for d in at.dataframe)
    press(at, "Simulate this row")
    assert not at.exception, [e.message for e in at.exception]
    assert [m.label for m in at.metric][:2] == ["p95 TTFT", "p95 ITL"]
    assert any("replicas (round_robin router) meet" in x.value for x in at.success)


def test_pinning_a_baseline_compares_every_headline_metric():
    at = app("ui.tabs.scenarios", SMALL)
    assert "Pin this scenario" in at.info[0].value
    press(at, "Pin this scenario as the baseline")
    s = scenario_of(at)
    assert s.base == pin_query(SMALL)
    at.session_state["scenario"] = s.with_changes(batch=64).model_dump_json()
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    table = at.dataframe[0].value
    assert list(table.columns) == ["metric", "pinned", "current", "change", "better"]
    assert "Output tok/s per GPU, prefill included" in set(table["metric"]) and len(table) == 11
    assert any("batch 32 → 64" in m.value for m in at.markdown)
    press(at, "Unpin")
    assert scenario_of(at).base == ""


def test_sizing_tunes_the_knobs_and_a_row_can_be_simulated():
    at = AppTest.from_function(tab_page, args=("ui.tabs.simulate",), default_timeout=120)
    at.session_state["scenario"] = SMALL.model_dump_json()
    at.run()
    press(at, "Size the fleet")
    assert not at.exception, [e.message for e in at.exception]
    assert "Cheapest way to meet" in at.success[0].value
    table = at.dataframe[0].value
    assert {"batch", "chunk", "binding"} <= set(table.columns)
    assert table["step times"].str.match(r"(measured kernels|fitted roofline) \(").all(), table["step times"]
    assert any("link key search" in c.value for c in at.caption)
    press(at, "Simulate this row")
    assert not at.exception, [e.message for e in at.exception]
    s = scenario_of(at)
    best = table.iloc[0]
    assert (s.batch, s.chunk, s.replicas) == (best["batch"], best["chunk"], best["replicas"])
    assert [m.label for m in at.metric][:2] == ["p99 TTFT", "p99 ITL"]


def test_the_search_and_a_point_run_in_the_workers_with_the_busy_rule(monkeypatch):
    """Search & frontier runs go to ui/jobs.py's workers (results in its byte-bounded cache), and a
    visitor whose previous run still runs is told so instead of starting another."""
    from ui import jobs
    from ui.tabs import frontier

    at = app("ui.tabs.frontier", SMALL)
    press(at, "Search and confirm by simulation")
    assert not at.exception, [e.message for e in at.exception]
    assert "search|" + scenario_of(at).model_dump_json() in jobs.RESULTS

    class Full:
        def find(self, key):
            return None

        def submit(self, session, key, kind, payload):
            raise jobs.Busy("your previous run is still running")

    monkeypatch.setattr(frontier, "WORKERS", Full())
    press(at, "Simulate this point")
    assert not at.exception, [e.message for e in at.exception]
    assert any("Not started" in w.value and "still running" in w.value for w in at.warning)  # (Markdown-escaped)


def test_the_screen_is_cached_across_the_knobs_it_sweeps(catalog):
    """A searched batch or chunk (and the fleet-only replicas and router) leave the screen as it is: the
    tab's cache key drops them, and the screen itself does not read them."""
    from planner.search.knob_search import screen_points
    from ui.tabs.frontier import screen_key

    s = Scenario(model="llama-3.2-1b", rate=20.0, gpu="l4")
    moved = s.with_changes(batch=96, chunk=512, replicas=3, router="least_tokens")
    assert screen_key(moved) == screen_key(s) and screen_key(s.with_changes(prompt=4000)) != screen_key(s)
    a, b = screen_points(s, catalog, gpus=["l4"]).points, screen_points(moved, catalog, gpus=["l4"]).points
    pd.testing.assert_frame_equal(a, b)
    assert screen_key(s.with_changes(search="chunk", batch=96)) != screen_key(s.with_changes(search="chunk"))


def test_the_star_is_the_scenarios_own_layout(catalog):
    """A tp8·pp2 scenario's point is the tp8·pp2 one, not the one-node tp8 point with the same knobs."""
    from planner.search.knob_search import screen_points
    from ui.tabs.frontier import current_point

    s = Scenario(model="llama-3.1-405b", gpu="h100-sxm", tp=8, pp=2)
    points = screen_points(s, catalog, gpus=["h100-sxm"]).points.sort_values("pp", kind="stable")  # tp8 rows first
    assert {"tp8", "tp8·pp2"} <= set(points["layout"].astype(str))
    me = points[points["point"] == current_point(points, s, catalog.models[s.model])].iloc[0]
    assert me["layout"] == "tp8·pp2"
