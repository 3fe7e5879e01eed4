"""AppTest of the "Simulate & size" tab through a small page that builds the
PageContext the way app.py does and applies ``update_scenario`` on the next run."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from tests.tab_harness import tab_page


def app(scenario: Scenario) -> AppTest:
    at = AppTest.from_function(tab_page, args=("ui.tabs.simulate",), default_timeout=60)
    at.session_state["scenario"] = scenario.model_dump_json()
    return at.run()


def press(at: AppTest, label: str) -> AppTest:
    return next(b for b in at.button if b.label == label).click().run()


def test_simulate_applies_changed_inputs_to_the_scenario_and_shows_results():
    at = app(Scenario(sim_requests=200))
    assert not at.exception
    assert "Press **Simulate one replica**" in at.info[0].value
    at.number_input(key="_sim_w_rate").set_value(4.0)
    at.selectbox(key="_sim_w_dist").set_value("uniform")
    press(at, "Simulate one replica")
    assert not at.exception, [e.message for e in at.exception]
    s = Scenario.model_validate_json(at.session_state["scenario"])
    assert (s.rate, s.dist) == (4.0, "uniform")
    assert [m.label for m in at.metric][:2] == ["p99 TTFT", "p99 inter-token"]
    assert len(at.get("plotly_chart")) == 3  # two CDFs and the timeline
    # the same scenario again: served from the cache, still shown
    at.run()
    assert len(at.get("plotly_chart")) == 3


def test_a_bad_trace_is_reported_by_row_and_nothing_runs():
    at = app(Scenario(sim_requests=100))
    bad = b"arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,-4,5\n"
    at.file_uploader(key="_sim_w_trace").set_value(("trace.csv", bad, "text/csv")).run()
    press(at, "Simulate one replica")
    assert not at.exception
    shown = [e.value.replace("\\", "") for e in at.error]
    assert any("row 2 (line 3): prompt_tokens" in e for e in shown), shown
    assert len(at.get("plotly_chart")) == 0


def test_sizing_shows_the_table_with_the_best_row_and_a_chart():
    at = app(Scenario(sim_requests=20, model="llama-3.2-1b", rate=5.0))
    press(at, "Size the fleet")
    assert not at.exception, [e.message for e in at.exception]
    assert at.success and "Cheapest way to meet" in at.success[0].value
    assert len(at.dataframe) == 2  # colocated table, disaggregated estimate
    assert len(at.get("plotly_chart")) == 1
