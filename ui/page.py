"""What every dashboard tab receives: the validated scenario, its engine result,
the catalog, and the streamlit module (injected, never imported here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.engine.evaluate import Result
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario


@dataclass
class PageContext:
    st: Any  # the streamlit module, injected by app.py
    scenario: Scenario
    result: Result | None  # None when the scenario cannot be evaluated
    catalog: Catalog

    def update_scenario(self, **changes: Any) -> None:
        """Ask app.py to apply ``changes`` (Scenario fields) on the next rerun; the link follows."""
        pending = self.st.session_state.setdefault("_pending_scenario_changes", {})
        pending.update(changes)
        self.st.rerun()
