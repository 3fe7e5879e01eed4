"""One table of metrics: the engine returns exactly the metrics ``METRICS`` documents, and
docs/model.md lists each one."""

from __future__ import annotations

from planner.engine.evaluate import evaluate
from planner.engine.metrics import BOUND_COLUMNS, METRICS
from planner.export import present_metrics
from planner.model.scenario import Scenario
from tests.paths import ROOT


def test_compute_returns_exactly_the_documented_metrics(catalog):
    assert list(evaluate(Scenario(), catalog).metrics) == list(METRICS)


def test_every_metric_is_in_the_model_doc():
    doc = (ROOT / "docs" / "model.md").read_text(encoding="utf-8")
    assert [k for k in METRICS if f"`{k}`" not in doc] == []


def test_export_rules_are_applied(catalog):
    m = dict(evaluate(Scenario(model="llama-3.1-405b", gpu="l4"), catalog).metrics)
    m["ridge_batch"], m["min_tp_that_fits"] = float("inf"), 0.0
    cells = present_metrics(m)
    assert cells["min_tp_that_fits"] == "none" and cells["ridge_batch"] == "never"
    assert cells["fits"] == "false"
    assert set(BOUND_COLUMNS.values()) == {"prefill_bound", "decode_bound"}
    assert cells["prefill_bound"] in ("compute", "memory")
