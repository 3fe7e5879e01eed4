"""The checks in order, the ranking, and the findings as a table, JSON-ready records and text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from planner.engine.evaluate import evaluate
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.studies.advisor.checks import cost, memory, throughput
from planner.studies.advisor.context import SEVERITY_RANK, Context, Finding

CHECKS: tuple[Callable[[Context], Finding | None], ...] = (
    memory.weights_fit,
    memory.kv_concurrency,
    memory.kv_room,
    throughput.decode_regime,
    throughput.chunk_balance,
    throughput.speculative,
    cost.prefix_below_minimum,
    cost.cache_surcharge,
    throughput.tp_comm,
    cost.cheaper_gpu,
)


def rank(items: list[Finding]) -> list[Finding]:
    """Severity first (high → info), then the size of the predicted effect, largest first."""
    return sorted(items, key=lambda f: (SEVERITY_RANK[f.severity], -f.effect_magnitude, f.id))


def findings(scenario: Scenario, catalog: Catalog) -> list[Finding]:
    """Every finding for ``scenario``, ranked.  Raises ScenarioError if it cannot be evaluated."""
    ctx = Context(scenario, evaluate(scenario, catalog), catalog)
    return rank([found for check in CHECKS if (found := check(ctx)) is not None])


FRAME_COLUMNS = (
    "rank",
    "id",
    "severity",
    "title",
    "explanation",
    "action",
    "predicted_effect",
    "metric",
    "before",
    "after",
)


def findings_frame(items: list[Finding]) -> pd.DataFrame:
    """One row per finding in rank order (the findings CSV; export with ``export.frame_to_csv``)."""
    rows = [{"rank": i, **{k: getattr(f, k) for k in FRAME_COLUMNS[1:]}} for i, f in enumerate(items, start=1)]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def finding_record(f: Finding) -> dict[str, Any]:
    """A finding as plain JSON-ready data (alternatives included)."""
    return {
        "id": f.id,
        "severity": f.severity,
        "title": f.title,
        "explanation": f.explanation,
        "action": f.action,
        "predicted_effect": f.predicted_effect,
        "metric": f.metric,
        "before": f.before,
        "after": f.after,
        "changed_keys": dict(f.changed_keys),
        "alternatives": [
            {"action": o.action, "changed_keys": dict(o.changed_keys), "metric": o.metric, "after": o.after}
            for o in f.alternatives
        ],
    }


def findings_text(items: list[Finding]) -> str:
    """The ranked findings as plain text, one block per finding."""
    if not items:
        return "No findings.\n"
    lines = []
    for i, f in enumerate(items, start=1):
        lines += [
            f"{i}. [{f.severity.upper()}] {f.title}",
            f"   {f.explanation}",
            f"   Action: {f.action}",
            f"   Effect: {f.predicted_effect}",
        ]
        lines += [f"   Also:   {o.action}" for o in f.alternatives]
    return "\n".join(lines) + "\n"
