"""First-token latency, time per output token and throughput against published benchmark tables."""

from __future__ import annotations

from benchmarks.accuracy.report import Prediction
from benchmarks.accuracy.rows import Row
from benchmarks.accuracy.scenarios import scenario_for
from planner.engine.evaluate import evaluate
from planner.model.catalog import Catalog

#: category → the engine metric that predicts it
METRIC_FOR = {"ttft": "ttft_s", "tpot": "tpot_s", "throughput": "decode_tokens_per_s_per_gpu"}


def predict(row: Row, catalog: Catalog) -> Prediction:
    m = evaluate(scenario_for(row), catalog).metrics
    metric = METRIC_FOR[row.category]
    return Prediction(row.id, row.category, row.measured, float(m[metric]), metric)


def predictions(rows: list[Row], catalog: Catalog) -> dict[str, list[Prediction]]:
    out: dict[str, list[Prediction]] = {}
    for r in rows:
        if r.category in METRIC_FOR:
            out.setdefault(r.category, []).append(predict(r, catalog))
    return out
