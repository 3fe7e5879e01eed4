"""KV-cache capacity and concurrency against vLLM start-up logs ("GPU KV cache size: N tokens",
"Maximum concurrency for N tokens per request")."""

from __future__ import annotations

from benchmarks.accuracy.report import Prediction
from benchmarks.accuracy.rows import Row
from benchmarks.accuracy.scenarios import scenario_for
from planner.engine.evaluate import evaluate
from planner.model.catalog import Catalog

CATEGORY = "kv_capacity"


def predict(row: Row, catalog: Catalog) -> Prediction:
    m = evaluate(scenario_for(row), catalog).metrics
    if row.metric.startswith("Maximum concurrency"):
        return Prediction(row.id, CATEGORY, row.measured, float(m["max_concurrent_sequences"]), "max concurrency")
    return Prediction(row.id, CATEGORY, row.measured, float(m["kv_capacity_tokens"]), "KV tokens")


def predictions(rows: list[Row], catalog: Catalog) -> list[Prediction]:
    return [predict(r, catalog) for r in rows if r.category == CATEGORY]
