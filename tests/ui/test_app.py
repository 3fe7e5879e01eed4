"""The dashboard (app.py + ui/) through streamlit's AppTest, and its pure helpers.

AppTest runs the real script in-process: widgets → metrics, link in → widgets,
widget change → link out, bad links, tab failures.  Every GPU × model preset
goes through the pure tab functions; AppTest draws every tab for a subset that
covers each GPU and each model once (one AppTest run per tab is the slow part).
"""

from __future__ import annotations

import itertools
import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from planner.cli.main import main as cli_main
from planner.engine.evaluate import evaluate
from planner.export import frame_to_csv
from planner.format import fmt_bytes, fmt_pct, fmt_seconds, fmt_tokens_per_s, fmt_usd
from planner.links import FIELDS, from_query, to_query, to_query_string
from planner.model.custom_model import decode_model, encode_model
from planner.model.scenario import Scenario
from planner.sim.slo import Slo
from planner.studies.compare import compare_gpus
from planner.studies.explain import explain
from planner.studies.sweep import scenario_frame
from tests.tab_harness import run_app
from tests.ui.shown import on_page, page_link, shown_metrics
from ui import headline, sidebar
from ui import state as link_state
from ui.format import frame_csv, md_escape
from ui.tabs import compare, registry
from ui.tabs.charts import TABS

CORE_TABS = (*TABS, "Compare GPUs", "Explain")


def expected_metrics(scenario: Scenario, catalog) -> dict[str, str]:
    result = evaluate(scenario, catalog)
    baseline = headline.mha_baseline(scenario, result.resolved.model)
    mha = evaluate(baseline, catalog) if baseline else None
    smaller = headline.feasible_scenario(result)
    feasible = evaluate(smaller, catalog) if smaller is not None else None
    return {h.label: h.value for h in headline.headline_items(result, mha, feasible)}


def link_of(at: AppTest) -> dict[str, str]:
    return {k: at.query_params[k] for k in at.query_params}


def tab_names(at: AppTest) -> list[str]:
    """The labels of the page's tab rows: the sections, and the open section's own tabs."""
    return [t.label for t in at.tabs]


# --- pure helpers ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, text",
    [(0, "0 B"), (1000, "1000 B"), (131072, "128 KiB"), (1.5 * 2**30, "1.50 GiB"), (1023.9 * 2**20, "1,024 MiB")],
)
def test_fmt_bytes(value, text):
    assert fmt_bytes(value) == text


@pytest.mark.parametrize(
    "value, text", [(0.0644, "64.4 ms"), (2.48, "2.48 s"), (4.2e-5, "42.0 µs"), (0.0099996, "10.0 ms")]
)
def test_fmt_seconds(value, text):
    assert fmt_seconds(value) == text


def test_fmt_money_rate_and_percent():
    assert fmt_usd(0.2453) == "$0.245"
    assert fmt_usd(-0.00166) == "-$0.00166"
    assert fmt_usd(1234.5) == "$1,234.50"
    assert fmt_tokens_per_s(3385.2) == "3,385 tok/s"
    assert fmt_pct(-0.75, signed=True) == "-75.0%"


def test_md_escape_leaves_no_live_markup():
    hostile = "![x](http://e.example/x.png) <img src=x onerror=alert(1)> :red[hi] $x$ **b**"
    escaped = md_escape(hostile)
    assert re.search(r"(?<!\\)[\[\]()<>:$*!]", escaped) is None


def test_field_bounds_come_from_the_scenario():
    assert sidebar.field_bounds("batch") == (1, 65_536, False)  # one instance of dp engines (Scenario.batch)
    assert sidebar.field_bounds("slo_ttft_s") == (0.0, 3600.0, True)
    assert sidebar.divisors(32) == [1, 2, 4, 8, 16, 32]


def test_scenario_from_state_keeps_the_link_minimal(catalog):
    base = catalog.models["llama-3.1-8b"]
    state = Scenario().model_dump() | {"kv_heads": base.kv_heads, "custom": "L2-H8-A2-G1-D4-F8-V10-C100"}
    scenario, problems = sidebar.scenario_from_state(state, base)
    assert problems == [] and scenario == Scenario()
    mla = catalog.models["deepseek-v3"]
    scenario, _ = sidebar.scenario_from_state(Scenario(model="deepseek-v3").model_dump() | {"kv_heads": 4}, mla)
    assert scenario.kv_heads is None
    _, problems = sidebar.scenario_from_state(
        Scenario().model_dump() | {"custom": "bad code!", "model": "custom"}, base
    )
    assert problems and "custom" in problems[0]


def test_share_link_round_trips(catalog):
    s = Scenario(gpu="h200", batch=64, kv_heads=4, alpha=0.123456789)
    link = link_state.share_link(s, "http://127.0.0.1:8501")
    assert link == "http://127.0.0.1:8501/?" + to_query_string(s)
    assert link_state.share_link(s, "https://x.example/app/?old=1#top") == "https://x.example/app/?" + to_query_string(
        s
    )
    assert from_query(link, set(catalog.gpus), set(catalog.models)) == (s, [])
    assert link_state.share_link(s, None) == "?" + to_query_string(s)


def test_scenario_csv_is_the_cli_csv(catalog, capsys):
    s = Scenario(gpu="h200", batch=65, kv_heads=4, spec=True)
    assert cli_main(["evaluate", "?" + to_query_string(s), "--format", "csv"]) == 0
    assert capsys.readouterr().out == frame_to_csv(scenario_frame(s, catalog))


def test_chart_csv_is_neutralised_and_has_no_missing_markers(catalog):
    frame = compare_gpus(Scenario(model="llama-3.1-405b"), catalog)  # some rows fit at no tp: empty cells
    frame.loc[0, "note"] = "=HYPERLINK(1)"
    text = frame_csv(frame)
    assert "<NA>" not in text and "nan" not in text.lower() and "'=HYPERLINK(1)" in text


def test_every_gpu_and_model_through_the_page_functions(catalog):
    """Headline, notices, Explain and Compare for every GPU × model preset (the charts of
    every pair are built in tests/test_charts.py; AppTest draws every tab below)."""
    for gpu, model in itertools.product(sorted(catalog.gpus), sorted(catalog.models)):
        s = Scenario(gpu=gpu, model=model)
        result = evaluate(s, catalog)
        baseline = headline.mha_baseline(s, result.resolved.model)
        items = headline.headline_items(result, evaluate(baseline, catalog) if baseline else None)
        assert len(items) == len(headline.KEYS) and all(i.value and "nan" not in i.value for i in items), (gpu, model)
        assert headline.notices(result) and explain(result)
    for model in sorted(catalog.models):
        frame = compare_gpus(Scenario(model=model), catalog)
        assert len(compare.compare_display_frame(frame)) == len(catalog.gpus)
        assert compare.cheapest_sentence(frame, Slo())


# --- AppTest ---------------------------------------------------------------------------------


def test_default_page_shows_the_engine_numbers(catalog):
    at = run_app()
    assert shown_metrics(at) == expected_metrics(Scenario(), catalog)
    plan = [t.title for t in registry.sections(registry.TABS)[registry.PLAN]]
    assert tab_names(at) == [registry.PLAN, *plan, *registry.SECTIONS[1:]]  # the Plan section opens first
    assert set(CORE_TABS) - {"Prompt caching", "Explain"} <= set(plan)
    assert link_of(at) == page_link(Scenario(), catalog) == {"v": "1", "engine": catalog.engine("vllm").key}
    assert not at.warning


def test_widgets_drive_the_metrics_and_the_link(catalog):
    at = run_app()
    at.number_input(key="batch").set_value(100)
    at.select_slider(key="kv_heads").set_value(2)
    at.selectbox(key="gpu").set_value("h200")
    at.toggle(key="spec").set_value(True)
    at.run()
    assert not at.exception
    want = Scenario(gpu="h200", batch=100, kv_heads=2, spec=True)
    assert shown_metrics(at) == expected_metrics(want, catalog)
    assert link_of(at) == page_link(want, catalog)
    assert [c.value for c in at.code] == ["?" + to_query_string(on_page(want, catalog))]  # the Share popover
    at.select_slider(key="kv_heads").set_value(8).run()  # back to the preset's value: leaves the link
    assert "kv_heads" not in link_of(at)


LINK_SCENARIO = Scenario(
    gpu="h200",
    tp=2,
    model="qwen2.5-7b",
    kv_heads=2,
    heads=28,
    layers=30,
    wdtype="fp8",
    kvdtype="fp8",
    batch=77,
    prompt=3000,
    output=300,
    chunk=1000,
    hit=0.33,
    prefix=1000,
    rpm=2.5,
    ttl="1h",
    min_prefix=512,
    price_in=3.5,
    price_out=15.25,
    spec=True,
    gamma=3,
    alpha=0.66,
    draft="qwen2.5-0.5b",
    gpu_price=4.25,
    mfu=0.45,
    mbu=0.75,
    mem_util=0.85,
    block=32,
    slo_ttft_s=1.5,
    slo_tpot_s=0.0125,
    slo_itl_s=0.04,
    slo_e2e_s=30.0,
    slo_pct="mean",
    rate=3.5,
    seed=7,
)


def test_link_restores_every_widget_exactly(catalog):
    at = run_app({k: v for k, v in to_query(LINK_SCENARIO).items()})
    assert not at.warning
    widgets = {}
    for kind in ("selectbox", "slider", "select_slider", "number_input", "toggle", "radio"):
        for w in getattr(at, kind):
            if w.key in FIELDS:
                widgets[w.key] = w.value
    for key, value in widgets.items():
        assert value == getattr(on_page(LINK_SCENARIO, catalog), key), key
    assert {
        "gpu",
        "tp",
        "model",
        "kv_heads",
        "batch",
        "chunk",
        "hit",
        "prefix",
        "ttl",
        "alpha",
        "gpu_price",
        "slo_tpot_s",
        "slo_itl_s",
        "slo_e2e_s",
        "slo_pct",
    } <= widgets.keys()
    assert link_of(at) == page_link(LINK_SCENARIO, catalog)
    assert shown_metrics(at) == expected_metrics(LINK_SCENARIO, catalog)


def test_bad_link_warns_names_each_key_and_loads_the_rest(catalog):
    at = run_app({"gpu": "nope", "batch": "abc", "foo": "1", "prompt": "4096"})
    text = " ".join(w.value for w in at.warning)
    for key in ("gpu", "batch", "foo"):
        assert key in text
    assert at.number_input(key="prompt").value == 4096
    assert shown_metrics(at) == expected_metrics(Scenario(prompt=4096), catalog)
    assert link_of(at) == page_link(Scenario(prompt=4096), catalog)
    at.number_input(key="batch").set_value(8).run()  # the warning goes once the user moves on
    assert not at.warning


def test_hostile_link_text_is_escaped():
    at = run_app({"![x](http://e.example/x.png)": "1", "gpu": "<img src=x onerror=alert(1)>"})
    body = " ".join(w.value for w in at.warning)
    assert "e.example/x.png" in body.replace("\\", "") and "img src" in body
    assert re.search(r"(?<!\\)[\[\]<>()]", body) is None


def test_prefix_follows_a_shorter_prompt():
    at = run_app({"prefix": "2000"})
    at.number_input(key="prompt").set_value(1500).run()
    assert at.number_input(key="prefix").value == 1500
    assert link_of(at)["prefix"] == "1500"


def test_kv_heads_slider_follows_the_head_count():
    at = run_app()
    assert at.select_slider(key="kv_heads").options == [
        str(d) + o for d, o in zip([1, 2, 4, 8, 16, 32], [" MQA", " GQA", " GQA", " GQA", " GQA", " MHA"], strict=True)
    ]
    at.number_input(key="heads").set_value(30).run()
    assert at.select_slider(key="kv_heads").value == 10  # 8 does not divide 30: the closest divisor
    assert link_of(at)["kv_heads"] == "10"
    at = run_app({"model": "deepseek-v3"})
    assert not [w for w in at.select_slider if w.key == "kv_heads"]


def test_switching_to_custom_starts_from_the_shape_on_screen(catalog):
    at = run_app({"layers": "20"})
    at.selectbox(key="model").set_value("custom").run()
    code = at.text_input(key="custom").value
    assert decode_model(code).layers == 20
    assert link_of(at)["model"] == "custom" and "layers" not in link_of(at)
    at.selectbox(key="model").set_value("mistral-7b").run()
    assert "custom" not in link_of(at) and at.number_input(key="layers").value is None


HF_CONFIG = {
    "model_type": "llama",
    "num_hidden_layers": 16,
    "hidden_size": 2048,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 8192,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "tie_word_embeddings": True,
}


def test_pasted_hf_config_becomes_a_custom_link(catalog):
    at = run_app()
    at.text_area(key="_hf_text").set_value(json.dumps(HF_CONFIG))
    at.button(key="_hf_go").click().run()
    assert not at.exception and at.success
    link = link_of(at)
    assert link["model"] == "custom"
    spec = decode_model(link["custom"])
    assert (spec.layers, spec.heads, spec.kv_heads) == (16, 32, 8)
    assert link["custom_name"] == "llama"  # no _name_or_path, no file name: the model type
    want = Scenario(model="custom", custom=encode_model(spec), custom_name="llama")
    assert shown_metrics(at) == expected_metrics(want, catalog)


def test_uploaded_hf_config_loads_on_upload(catalog):
    at = run_app()
    config = HF_CONFIG | {"num_key_value_heads": 4, "num_hidden_layers": 12}
    at.file_uploader(key="_hf_file").set_value(("config.json", json.dumps(config).encode(), "application/json")).run()
    assert not at.exception and at.success
    spec = decode_model(link_of(at)["custom"])
    assert (spec.layers, spec.kv_heads) == (12, 4)
    assert at.select_slider(key="kv_heads").value == 4
    too_big = b" " * 1_000_001
    at.file_uploader(key="_hf_file").set_value(("config.json", too_big, "application/json")).run()
    assert "larger than" in " ".join(e.value for e in at.error) and link_of(at)["custom"] == encode_model(spec)


def test_bad_hf_config_is_reported_and_changes_nothing(catalog):
    at = run_app()
    at.text_area(key="_hf_text").set_value('{"model_type": "llama", "hidden_size": "wide"}')
    at.button(key="_hf_go").click().run()
    assert not at.exception
    assert "hidden\\_size" in " ".join(e.value for e in at.error)
    assert link_of(at) == page_link(Scenario(), catalog)


def test_tab_requested_changes_apply_before_the_widgets(catalog):
    at = run_app()
    at.session_state[link_state.PENDING_KEY] = {"batch": 5, "rate": 9.5}
    at.run()
    assert at.number_input(key="batch").value == 5
    assert link_of(at) == page_link(Scenario(batch=5, rate=9.5), catalog)
    at.session_state[link_state.PENDING_KEY] = {"batch": 0}
    at.run()
    assert any("batch" in w.value for w in at.warning) and at.number_input(key="batch").value == 5


def test_a_failing_tab_shows_an_error_and_the_page_survives(monkeypatch):
    def broken(ctx):
        raise ValueError("boom <b>")

    monkeypatch.setattr(registry, "TABS", (*registry.TABS, registry.Tab("Broken", broken)))
    monkeypatch.setattr(registry, "PANELS", (registry.Panel("broken panel", broken), *registry.PANELS))
    at = run_app(tab="Broken")
    errors = [e.value for e in at.error]
    # the exception's type only: its text (and any path in it) goes to the server log, never to a visitor
    assert len(errors) == 2 and all("ValueError" in e and "boom" not in e for e in errors)
    assert len(at.metric) == len(headline.KEYS) and "Broken" in tab_names(at)


def test_every_tab_named_by_its_old_title_opens_in_its_section():
    """Issue 30: fourteen tabs in one row hid six behind a "›" at 1280 px.  Sections of at most five tabs;
    a tab named by its title (``_tab``, as before the sections) opens its section and itself."""
    grouped = registry.sections(registry.TABS)
    assert list(grouped) == list(registry.SECTIONS) and all(len(g) <= 5 for g in grouped.values())
    assert sum(len(g) for g in grouped.values()) == len(registry.TABS) == 14
    at = run_app()
    for tab in ("Check a log", "Search & frontier", "Prompt layout", "Compare scenarios"):
        at.session_state["_tab"] = tab
        at.run()
        assert not at.exception, (tab, [e.message for e in at.exception])
        section = registry.section_of(tab, registry.TABS)
        assert at.session_state["_section"] == section and tab in tab_names(at)
        assert at.session_state["_tab"] == tab
    # a click on another section (the widget) is not undone by the tab named before
    at.session_state["_section"] = registry.PLAN
    at.run()
    assert "Memory" in tab_names(at) and at.session_state["_tab"] == "Memory"


def representative_combos(catalog) -> list[tuple[str, str]]:
    """Each GPU once and each model once."""
    gpus, models = sorted(catalog.gpus), sorted(catalog.models)
    n = max(len(gpus), len(models))
    return [(gpus[i % len(gpus)], models[i % len(models)]) for i in range(n)]


def test_every_tab_renders_for_each_gpu_and_each_model(catalog):
    """Each GPU and each model once; each tab on every other combination, in turn (every tab still sees
    half of the GPUs and models, every combination half of the tabs: the suite's time budget)."""
    for i, (gpu, model) in enumerate(representative_combos(catalog)):
        at = run_app({"gpu": gpu, "model": model})
        for tab in [t.title for t in registry.TABS][i % 2 :: 2]:
            at.session_state["_tab"] = tab
            at.run()
            assert not at.exception, (gpu, model, tab, [e.message for e in at.exception])
            failed = [e.value for e in at.error if "could not be drawn" in e.value]
            assert not failed, (gpu, model, tab, failed)
