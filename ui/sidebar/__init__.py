"""The sidebar: one widget per Scenario field, keyed by the field's name (= its link key).

Bounds come from the Scenario's pydantic field constraints, so the widgets can
only produce values the Scenario accepts; the few cross-field rules (prefix ≤
prompt, kv_heads divides heads, no kv_heads/head_dim for MLA) are enforced on
the session state before the widgets are drawn.  ``render`` returns the
validated Scenario plus one line per value it had to adjust.

Modules: options (choices, bounds, labels), rules (state → Scenario), widgets, model_section,
serving_section, advanced_section; ``render`` draws them in order.
"""

from __future__ import annotations

from typing import Any

from planner.links import DEFAULTS
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from ui.sidebar.advanced_inputs import advanced_section, prompt_cache_section
from ui.sidebar.model_inputs import custom_name_from, import_message, model_section
from ui.sidebar.options import (
    BATCH_STOPS,
    CHUNK_OPTIONS,
    divisors,
    field_bounds,
    gpu_label,
    gpu_options,
    model_label,
    model_options,
)
from ui.sidebar.rules import base_model, enforce_cross_field_rules, profile_in_force, scenario_from_state
from ui.sidebar.serving_inputs import hardware_section, speculative_section, workload_section
from ui.state import SCENARIO_KEY

__all__ = [
    "BATCH_STOPS",
    "CHUNK_OPTIONS",
    "base_model",
    "custom_name_from",
    "divisors",
    "enforce_cross_field_rules",
    "field_bounds",
    "gpu_label",
    "gpu_options",
    "import_message",
    "model_label",
    "model_options",
    "profile_in_force",
    "render",
    "scenario_from_state",
]


def render(st: Any, catalog: Catalog) -> tuple[Scenario, list[str]]:
    """Draw the sidebar (inside ``with st.sidebar``); returns the Scenario and adjustment notes."""
    ss = st.session_state
    if catalog.profile(ss.get("gpu", "")) is None and catalog.gpus:
        ss["gpu"] = DEFAULTS.gpu if DEFAULTS.gpu in catalog.gpus else sorted(catalog.gpus)[0]
    base, base_problem = base_model(ss, catalog)
    notes = enforce_cross_field_rules(ss, base)
    hardware_section(st, catalog)
    model_section(st, catalog, base, base_problem)
    workload_section(st)
    prompt_cache_section(st, base)
    speculative_section(st, catalog)
    advanced_section(st, catalog)
    scenario, problems = scenario_from_state(ss, base)
    if scenario is None:
        notes += [f"{p}; showing the last valid scenario" for p in problems]
        scenario = ss.get(SCENARIO_KEY, DEFAULTS)
    return scenario, notes
