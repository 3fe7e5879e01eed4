"""A minimal page for AppTest of one dashboard tab: it keeps the scenario in session
state, applies ``ctx.update_scenario`` changes like app.py does, and renders the tab."""

from __future__ import annotations


def tab_page(tab_module: str) -> None:
    """AppTest.from_function target: ``AppTest.from_function(tab_page, args=("ui.tabs.simulate",))``."""
    import importlib

    import streamlit as st

    from planner.engine.evaluate import evaluate
    from planner.errors import ScenarioError
    from planner.model.catalog import load_catalog
    from planner.model.scenario import Scenario
    from ui.state import PageContext

    render = importlib.import_module(tab_module).render
    ss = st.session_state
    scenario = Scenario.model_validate_json(ss["scenario"]) if "scenario" in ss else Scenario()
    pending = ss.pop("_pending_scenario_changes", None)
    if pending:
        scenario = Scenario.model_validate({**scenario.model_dump(), **pending})
    ss["scenario"] = scenario.model_dump_json()
    catalog = load_catalog()
    try:
        result = evaluate(scenario, catalog)
    except ScenarioError:
        result = None
    render(PageContext(st, scenario, result, catalog))


def run_app(query: dict[str, str] | None = None, tab: str | None = None, timeout_s: float = 90):
    """AppTest of the whole app.py opened on the link ``query`` (and the tab ``tab``), run once, with no
    exception on the page."""
    from streamlit.testing.v1 import AppTest

    from tests.paths import APP

    at = AppTest.from_file(APP, default_timeout=timeout_s)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if tab:
        at.session_state["_tab"] = tab
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at
