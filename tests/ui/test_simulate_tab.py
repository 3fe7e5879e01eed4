"""AppTest of the "Simulate & size" tab through a small page that builds the
PageContext the way app.py does and applies ``update_scenario`` on the next run."""

from __future__ import annotations

import gzip

from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from tests.tab_harness import tab_page
from tests.ui.shown import plain


def app(scenario: Scenario) -> AppTest:
    at = AppTest.from_function(tab_page, args=("ui.tabs.simulate",), default_timeout=60)
    at.session_state["scenario"] = scenario.model_dump_json()
    return at.run()


def press(at: AppTest, label: str) -> AppTest:
    return next(b for b in at.button if b.label == label).click().run()


def charts(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


def test_simulate_applies_changed_inputs_to_the_scenario_and_shows_results():
    at = app(Scenario(sim_requests=200))
    assert not at.exception
    assert "Press **Simulate**" in at.info[0].value
    at.number_input(key="_sim_w_rate").set_value(4.0)
    at.selectbox(key="_sim_w_dist").set_value("uniform")
    press(at, "Simulate")
    assert not at.exception, [e.message for e in at.exception]
    s = Scenario.model_validate_json(at.session_state["scenario"])
    assert (s.rate, s.dist) == (4.0, "uniform")
    assert [m.label for m in at.metric] == [
        "p99 TTFT",
        "p99 ITL",
        "Output tokens/s",
        "Goodput",
        "Prefix-cache hits",
    ]
    assert charts(at) == 4  # three CDFs (TTFT, TPOT, ITL) and the timeline
    # the same scenario again: served from the cache, still shown
    at.run()
    assert charts(at) == 4
    verdict = plain(" ".join(x.value for x in [*at.success, *at.warning]))
    assert "p99 TTFT ≤ 2.00 s and p99 ITL ≤ 50.0 ms at this load" in verdict


def test_the_slo_statistic_and_targets_are_the_forms_and_the_hit_rate_can_feed_the_headline():
    at = app(Scenario(sim_requests=200))
    at.selectbox(key="_sim_w_slo_pct").set_value("mean")
    at.number_input(key="_sim_w_slo_tpot_s").set_value(0.05)
    at.number_input(key="_sim_w_slo_itl_s").set_value(None)
    press(at, "Simulate")
    assert not at.exception, [e.message for e in at.exception]
    s = Scenario.model_validate_json(at.session_state["scenario"])
    assert (s.slo_pct, s.slo_tpot_s, s.slo_itl_s) == ("mean", 0.05, None)
    assert [m.label for m in at.metric][:2] == ["mean TTFT", "mean TPOT"]
    verdict = plain(" ".join(x.value for x in [*at.success, *at.warning]))
    assert "mean TTFT ≤ 2.00 s and mean per-request TPOT ≤ 50.0 ms" in verdict
    use = next(b for b in at.button if b.key == "_sim_w_use_hit")
    assert "Use the simulated hit rate" in use.label
    use.click().run()
    s = Scenario.model_validate_json(at.session_state["scenario"])
    # 200 Poisson requests, each sharing the 1,024-token prefix with probability 0.5, nearly all found
    assert s.gpu_hit is not None and abs(s.gpu_hit - s.hit) < 0.1


def test_a_bundled_trace_is_previewed_then_replayed_with_its_prefix_cache_hits():
    at = app(Scenario(gpu="h200", tp=4, batch=256, chunk=8192))
    at.selectbox(key="_sim_w_trace").set_value("mooncake-synthetic")
    at.number_input(key="_sim_w_trace_duration_s").set_value(120.0)
    press(at, "Simulate")
    assert not at.exception, [e.message for e in at.exception]
    s = Scenario.model_validate_json(at.session_state["scenario"])
    assert (s.trace, s.trace_duration_s) == ("mooncake-synthetic", 120.0)
    assert any("requests over" in c.value and "repeat an earlier prompt" in c.value for c in at.caption)
    # issue 30: the intro describes the trace chosen, not the generated prompts
    intro = at.caption[0].value
    assert "bundled trace Mooncake synthetic" in intro and "Generated prompts" not in intro
    assert charts(at) == 2 + 4  # arrival rate and lengths, then three CDFs and the timeline
    hits = next(m for m in at.metric if m.label == "Prefix-cache hits")
    assert hits.value != "0%" and "%" in hits.value


def test_a_fleet_shows_each_replica():
    at = app(Scenario(sim_requests=300, rate=8.0, replicas=3, router="least_tokens"))
    press(at, "Simulate")
    assert not at.exception, [e.message for e in at.exception]
    assert "3 replicas" in at.subheader[0].value
    assert len(at.dataframe) == 1 and charts(at) == 5  # CDFs, timeline, per-replica load


def test_a_layout_that_does_not_fit_gives_a_message_not_empty_charts():
    at = app(Scenario(model="llama-3.1-70b", sim_requests=50))
    press(at, "Simulate")
    assert not at.exception
    shown = plain(" ".join(e.value for e in at.error))
    assert "the weights do not fit at tp = 1" in shown and "the smallest tp that fits is 2" in shown
    assert "nan" not in shown.lower() and charts(at) == 0 and not at.metric


def test_a_bad_trace_is_reported_by_row_and_nothing_runs():
    at = app(Scenario(sim_requests=100))
    bad = b"arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,-4,5\n"
    at.file_uploader(key="_sim_w_upload").set_value(("trace.csv", bad, "text/csv")).run()
    press(at, "Simulate")
    assert not at.exception
    shown = [e.value.replace("\\", "") for e in at.error]
    assert any("row 2 (line 3): prompt_tokens" in e for e in shown), shown
    assert charts(at) == 0


def test_an_uploaded_gzip_burstgpt_trace_is_read():
    rows = "".join(f"{t},ChatGPT,{200 + t},{20 + t % 7},0,Conversation log\n" for t in range(0, 120, 2))
    data = gzip.compress(("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n" + rows).encode())
    at = app(Scenario())
    at.file_uploader(key="_sim_w_upload").set_value(("burst.csv.gz", data, "application/gzip")).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("60 requests over" in c.value and "no prefix information" in c.value for c in at.caption)
    assert charts(at) == 2


def test_sizing_shows_the_table_with_the_best_row_and_a_chart():
    at = app(Scenario(sim_requests=20, model="llama-3.2-1b", rate=5.0))
    press(at, "Size the fleet")
    assert not at.exception, [e.message for e in at.exception]
    assert at.success and "Cheapest way to meet" in at.success[0].value
    assert len(at.dataframe) == 2  # colocated table, disaggregated estimate
    assert charts(at) == 1


def test_a_sizing_row_with_a_pipeline_layout_becomes_that_layout(catalog):
    """'Simulate this row' on a GPU × layout table (search=none) keeps the row's pp/ep/dp, not only its tp."""
    import pandas as pd

    from planner.search.sizing import Sizing
    from ui.tabs.sizing_view import row_changes

    s = Scenario(model="llama-3.1-405b", batch=64, search="none")
    row = pd.Series(dict(gpu="h100-sxm", tp=8, pp=2, ep=1, dp=1, replicas=3))
    z = Sizing(
        table=pd.DataFrame([row]),
        best=None,
        reason="",
        disaggregated=pd.DataFrame(),
        rate_per_s=1.0,
        mean_output_tokens=64.0,
        requests_per_simulation=20,
    )
    moved = s.with_changes(**row_changes(s, z, row))
    assert (moved.gpu, moved.tp, moved.pp, moved.replicas, moved.batch) == ("h100-sxm", 8, 2, 3, 64)


def test_the_sizing_caption_names_the_cap_only_where_it_bound_the_count():
    """Issue 30: "simulates 2,000 requests per replica (at most 1,000, …)" — a search's count beside the plain
    sizing's cap."""
    from planner.search.sizing import SIZING_MAX_REQUESTS
    from ui.tabs.sizing_view import requests_text

    assert requests_text(2_000, searched=True) == "each run simulates 2,000 requests per replica"
    assert requests_text(400, searched=False) == "each run simulates 400 requests per replica"
    capped = requests_text(SIZING_MAX_REQUESTS, searched=False)
    assert "cap" in capped and "at most" not in capped
