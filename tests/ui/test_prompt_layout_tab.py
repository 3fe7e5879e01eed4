"""AppTest of the "Prompt layout" tab, through a small page that builds the
PageContext the way app.py does and applies ``update_scenario`` requests on the
next run (independent of app.py's sidebar)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from planner.prompts.layout import DEFAULT_LAYOUT, decode, encode
from tests.tab_harness import tab_page


def app(scenario: Scenario | None = None) -> AppTest:
    at = AppTest.from_function(tab_page, args=("ui.tabs.prompt_layout",), default_timeout=30)
    if scenario is not None:
        at.session_state["scenario"] = scenario.model_dump_json()
    return at.run()


def scenario_of(at: AppTest) -> Scenario:
    return Scenario.model_validate_json(at.session_state["scenario"])


def texts(elements) -> str:
    return "\n".join(e.value for e in elements)


EXAMPLE = Scenario(layout=DEFAULT_LAYOUT)


def test_example_layout_shows_the_classic_failure_and_the_fix():
    at = app()
    at.button(key="pl_example_layout").click().run()  # the example is one click away
    assert scenario_of(at).layout == DEFAULT_LAYOUT
    assert not at.exception
    assert "changes on every request" in texts(at.error)
    labels = [m.label for m in at.metric]
    assert labels[:4] == ["API prompt-cache saving", "API cost / request", "API cost / month", "TTFT saved"]
    assert at.metric[0].value == "-19.4%"  # writes, no reads: a surcharge
    assert at.metric[1].value == "$0.0424" and "vs no cache" in at.metric[1].delta
    assert len(at.dataframe) >= 2  # breakpoints and before/after


def test_applying_the_suggestion_updates_the_link_and_clears_the_error():
    at = app(EXAMPLE)
    at.button(key="pl_apply").click().run()
    assert not at.exception
    layout = decode(scenario_of(at).layout)
    assert [b.breakpoint for b in layout.blocks] == [False, True, False, False]
    assert "changes on every request" not in texts(at.error)
    assert "already the cheapest" in texts(at.success)


def test_editing_a_setting_writes_the_layout_into_the_scenario():
    at = app(EXAMPLE)
    users = next(n for n in at.number_input if n.label.startswith("distinct users"))
    users.set_value(250).run()
    assert not at.exception
    assert decode(scenario_of(at).layout).settings.users == 250
    assert encode(decode(scenario_of(at).layout)).startswith(DEFAULT_LAYOUT.split(";")[0])


def test_a_bad_layout_in_the_link_is_reported_by_block():
    at = app(Scenario(layout="t:1500:s|s:lots:s"))
    assert not at.exception
    assert "block 2" in texts(at.error) and "tokens" in texts(at.error)


def test_too_many_breakpoints_is_rejected_with_the_fix():
    at = app(Scenario(layout="s:2000:s:*|s:2000:s:*|s:2000:s:*|s:2000:s:*|m:10:r:*;rpm:30"))
    assert "rejects the request" in texts(at.error)
    assert at.metric[0].value == "rejected" and at.metric[1].value == "rejected (HTTP 400)"


def test_example_usage_log_end_to_end():
    at = app()
    at.button(key="pl_example").click().run()
    assert not at.exception
    assert "doc" in texts(at.error) and "never read from it" in texts(at.error)
    assert "1 of 171 rows rejected" in texts(at.warning) and "line 114" in texts(at.warning)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Requests"] == "170"
    assert metrics["Measured hit rate"] == "87.4%"


def test_tab_is_registered():
    from ui.tabs.prompt_layout import render
    from ui.tabs.registry import CACHING, TABS, Tab

    assert Tab("Prompt layout", render, section=CACHING) in TABS


def test_ten_thousand_invalidated_groups_make_one_box():
    """Each group writing and never reading used to get its own error box (10,000 groups → 10,002 boxes)."""
    from planner.prompts.usage_audit import audit, parse_usage_log
    from ui.tabs.prompt_layout import GROUPS_NAMED, _invalidated_groups

    lines = [  # two requests per group, each writing its prefix again: never a read
        f'{{"group": "g{i}", "input_tokens": 10, "cache_creation_input_tokens": {2000 + i}, "output_tokens": 5}}'
        for i in range(10_000)
        for _ in range(2)
    ]
    report = audit(parse_usage_log("\n".join(lines).encode(), "many.jsonl"), 3e-6, 15e-6, 1.25)

    class Recorder:
        def __init__(self):
            self.errors: list[str] = []

        def error(self, text):
            self.errors.append(text)

    st = Recorder()
    _invalidated_groups(st, report)
    assert len(st.errors) == 1
    box = st.errors[0]
    assert box.startswith("10,000 group(s) wrote to the cache and never read from it")
    assert box.count("\n- ") == GROUPS_NAMED and "g9999" in box  # the biggest writer first
    assert "… and 9,995 more groups, listed in the groups CSV below." in box
