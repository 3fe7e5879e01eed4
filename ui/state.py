"""The shareable link ⇄ session state.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from planner.errors import format_validation_error
from planner.links import FIELDS, from_query, to_query, to_query_string
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

SCENARIO_KEY = "_scenario"  # the last valid Scenario of this session
FIRST_SCENARIO_KEY = "_first_scenario"  # what the link loaded into (issues show until it changes)
ISSUES_KEY = "_link_issues"
PENDING_KEY = "_pending_scenario_changes"  # written by ui.page.PageContext.update_scenario


@dataclass(frozen=True)
class LinkNote:
    """One problem met reading the link (``fatal``: the value was rejected)."""

    message: str
    fatal: bool


def decode_query_params(query_params: Any, catalog: Catalog) -> tuple[Scenario, list[LinkNote]]:
    """``st.query_params`` (every value of a repeated key kept) → Scenario + notes."""
    raw = {key: query_params.get_all(key) for key in query_params}
    scenario, issues = from_query(raw, set(catalog.profile_keys()), set(catalog.models))
    return scenario, [LinkNote(i.message, i.fatal) for i in issues]


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


def link_notes(st: Any) -> list[LinkNote]:
    """The link's problems, while the scenario is still the one the link loaded."""
    ss = st.session_state
    if ss.get(SCENARIO_KEY) != ss.get(FIRST_SCENARIO_KEY):
        return []
    return list(ss.get(ISSUES_KEY, []))


def share_link(scenario: Scenario, base_url: str | None) -> str:
    """The full link of ``scenario``: ``base_url?query`` or, without a base, ``?query``."""
    query = "?" + to_query_string(scenario)
    if not base_url:
        return query
    base = base_url.split("?", 1)[0].split("#", 1)[0]
    return base + ("" if urlsplit(base).path else "/") + query
