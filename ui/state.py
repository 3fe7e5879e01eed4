"""What a page run shares: the link ⇄ session state, and the context every tab receives.

Every Scenario field is a session-state key of the same name (the widget keys
are the link keys).  One run goes:

1. ``start_run``: on the session's first run decode ``st.query_params`` with
   ``planner.links.from_query`` into those keys; on later runs put back any key
   whose widget was not drawn last run (Streamlit drops such state), from the
   last valid scenario; then apply the changes a tab asked for with
   ``PageContext.update_scenario``.  All before any widget is created.
2. the sidebar builds a validated Scenario from the keys;
3. ``finish_run``: remember that scenario and write ``to_query(scenario)`` (only
   non-default values, plus ``v=1``) back to the URL when it changed.

``PageContext`` is what every tab and panel receives: the streamlit module
(injected, never imported here), the validated scenario, its engine result, the
catalog, and ``PageData``, the app's cached computations for that scenario.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from planner.engine.evaluate import Result
from planner.errors import format_validation_error
from planner.links import FIELDS, from_query, to_query, to_query_string
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

if TYPE_CHECKING:  # annotations only: the tabs import this module
    import pandas as pd

    from planner.studies.explain import ExplainItem
    from ui.chart import Chart

SCENARIO_KEY = "_scenario"  # the last valid Scenario of this session
FIRST_SCENARIO_KEY = "_first_scenario"  # what the link loaded into (issues show until it changes)
ISSUES_KEY = "_link_issues"
PENDING_KEY = "_pending_scenario_changes"  # written by PageContext.update_scenario


@dataclass(frozen=True)
class LinkNote:
    """One problem met reading the link (``fatal``: the value was rejected)."""

    message: str
    fatal: bool


def used_value(scenario: Scenario, key: str) -> str:
    """A field's value as the page uses it, for "…; using 32"."""
    value = getattr(scenario, key)
    if value is None:
        return "the preset's value"
    if isinstance(value, bool):
        return "on" if value else "off"
    if value == "":
        return "none"
    return repr(value) if isinstance(value, float) else str(value)


def decode_query_params(query_params: Any, catalog: Catalog) -> tuple[Scenario, list[LinkNote]]:
    """``st.query_params`` (every value of a repeated key kept: the CLI's rule and notice, "given 3
    times; the last value is used") → Scenario + notes; a rejected value's note says what is used instead."""
    raw = {key: query_params.get_all(key) for key in query_params}
    scenario, issues = from_query(raw, set(catalog.profile_keys()), set(catalog.models), catalog.engine_aliases())
    notes = []
    for i in issues:
        used = f"; using {used_value(scenario, i.key)}" if i.fatal and i.key in FIELDS else ""
        notes.append(LinkNote(i.message + used, i.fatal))
    return scenario, notes


def apply_changes(base: Scenario, changes: Mapping[str, Any]) -> tuple[Scenario | None, list[str]]:
    """``base`` with ``changes`` applied, validated; (None, problems) when they are not valid."""
    unknown = [k for k in changes if k not in FIELDS]
    if unknown:
        return None, [f"{k}: not a scenario key" for k in unknown]
    try:
        return Scenario.model_validate({**base.model_dump(), **changes}), []
    except ValidationError as exc:
        return None, [format_validation_error(exc)]


def start_run(st: Any, catalog: Catalog) -> list[str]:
    """Fill the scenario keys of session state (see module doc); returns problems with
    changes a tab requested (those changes are dropped)."""
    ss = st.session_state
    if SCENARIO_KEY not in ss:
        scenario, notes = decode_query_params(st.query_params, catalog)
        ss[SCENARIO_KEY] = scenario
        ss[ISSUES_KEY] = notes
        for key in FIELDS:
            ss[key] = getattr(scenario, key)
    else:
        last = ss[SCENARIO_KEY]
        for key in FIELDS:
            if key not in ss:
                ss[key] = getattr(last, key)
    pending = ss.pop(PENDING_KEY, None) or {}
    if not pending:
        return []
    updated, problems = apply_changes(ss[SCENARIO_KEY], pending)
    if updated is not None:
        for key in pending:
            ss[key] = getattr(updated, key)
    return problems


def finish_run(st: Any, scenario: Scenario) -> None:
    """Remember ``scenario`` and make the URL hold it (written only when it differs)."""
    ss = st.session_state
    ss[SCENARIO_KEY] = scenario
    ss.setdefault(FIRST_SCENARIO_KEY, scenario)
    wanted = to_query(scenario)
    current = {key: st.query_params.get_all(key) for key in st.query_params}
    if current != {k: [v] for k, v in wanted.items()}:
        st.query_params.from_dict(wanted)


def still_first_scenario(st: Any) -> bool:
    """Whether the scenario on screen is still the one the link loaded (its notes still apply)."""
    ss = st.session_state
    return ss.get(SCENARIO_KEY) == ss.get(FIRST_SCENARIO_KEY)


def link_notes(st: Any) -> list[LinkNote]:
    """The link's problems, while the scenario is still the one the link loaded."""
    if not still_first_scenario(st):
        return []
    return list(st.session_state.get(ISSUES_KEY, []))


def share_link(scenario: Scenario, base_url: str | None) -> str:
    """The full link of ``scenario``: ``base_url?query`` or, without a base, ``?query``."""
    query = "?" + to_query_string(scenario)
    if not base_url:
        return query
    base = base_url.split("?", 1)[0].split("#", 1)[0]
    return base + ("" if urlsplit(base).path else "/") + query


@dataclass(frozen=True)
class PageData:
    """The app's cached computations for the scenario on screen (app.py keys them by its JSON)."""

    charts: Callable[[str], list[Chart]]  # a chart tab's title -> its charts
    compare_frame: Callable[[], pd.DataFrame]  # the scenario on every GPU profile
    explain_items: Callable[[], list[ExplainItem]]


@dataclass
class PageContext:
    """What every dashboard tab and panel receives."""

    st: Any  # the streamlit module, injected by the app
    scenario: Scenario
    result: Result | None  # None when the scenario cannot be evaluated
    catalog: Catalog
    data: PageData | None = None  # None outside the app (a test page): tabs then compute directly

    def update_scenario(self, **changes: Any) -> None:
        """Ask the app to apply ``changes`` (Scenario fields) on the next rerun; the link follows."""
        pending = self.st.session_state.setdefault(PENDING_KEY, {})
        pending.update(changes)
        self.st.rerun()
