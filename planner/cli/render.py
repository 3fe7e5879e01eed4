"""Terminal renderers for the CLI's text and JSON output (no pandas)."""

from __future__ import annotations

from typing import Any

from planner.engine.evaluate import evaluate
from planner.export import present_metrics, present_value
from planner.links import FIELDS
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario


def scenario_row(scenario: Scenario, catalog: Catalog) -> dict[str, Any]:
    """Inputs (link keys) then every metric, presented: the same cells, in the same order, as the
    one-row CSV (``studies.sweep.scenario_frame``), without building a DataFrame."""
    result = evaluate(scenario, catalog)
    row = {k: present_value(k, getattr(scenario, k)) for k in FIELDS}
    row.update(present_metrics(result.metrics))
    return row


def text_rows(row: dict[str, Any]) -> str:
    """``key  value`` lines, the keys padded to one column."""
    width = max(len(k) for k in row)
    return "".join(f"{k:<{width}}  {v}\n" for k, v in row.items())


def log_check_text(check: Any) -> str:
    """``kvplan check-log``'s table: each term predicted, logged and the error; then the notes."""
    lines = [f"{'term':<48}{'predicted':>14}{'logged':>14}{'error':>9}"]
    for r in check.rows:
        pred = "—" if r.predicted is None else f"{r.predicted:,.2f}"
        logged = "—" if r.logged is None else f"{r.logged:,.2f}"
        err = "" if r.error_frac is None else f"{r.error_frac:+.1%}"
        lines.append(f"{(r.label + ' (' + r.unit + ')'):<48}{pred:>14}{logged:>14}{err:>9}")
    lines += [f"note: {n}" for n in check.notes]
    return "\n".join(lines) + "\n"
