"""First-token latency, time per output token and throughput against published benchmark tables.

Every latency row is predicted three ways (``benchmarks/accuracy/timing_fit.py``):

  in-sample              by the fit over every ``fit_role = "fit"`` row (= the shipped profiles)
  leave-one-source-out   by a fit without the row's own publication (``source_group``)
  leave-one-GPU-out      by a fit without every row on the row's GPU

A row that is not fitted (``fit_role = "held_out"``, or a row added later) is predicted by the
full fit in all three columns: it is held out by construction.  A row whose model or GPU the
catalog lacks is listed as pending, not predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import ValidationError

from benchmarks.accuracy.report import Prediction
from benchmarks.accuracy.rows import Row, gpu_key, model_key
from benchmarks.accuracy.scenarios import scenario_for
from benchmarks.accuracy.timing_fit import KIND_OF, fit_rows, leave_one_out, predict_with
from planner.engine.evaluate import resolve
from planner.errors import ProblemsError
from planner.model.catalog import Catalog

#: category → the engine metric that predicts it
METRIC_FOR = {
    "ttft": "ttft_s",
    "tpot": "plain_tpot_s",
    "throughput": "static_batch_output_tokens_per_s_per_gpu",
    "e2e_latency": "static_batch_latency_s",
}
MODES = ("in-sample", "leave-one-source-out", "leave-one-GPU-out")


@dataclass(frozen=True)
class LatencyReport:
    """Per mode, per category, one Prediction per predicted row; plus the rows left pending."""

    predictions: dict[str, dict[str, list[Prediction]]]
    pending: list[str]


def _predictable(row: Row, catalog: Catalog) -> str | None:
    """None when the catalog can describe the row, else why not."""
    if row.prompt is None or row.output is None:
        return f"{row.id}: prompt or output length not stated"
    if row.category in ("throughput", "e2e_latency") and row.batch is None:
        return f"{row.id}: batch not stated (in-flight batching at an engine-chosen load)"
    try:
        key, gpu = model_key(row), gpu_key(row)
    except KeyError as exc:
        return str(exc.args[0])
    if key not in catalog.models:
        return f"{row.id}: model preset {key!r} not in the catalog yet"
    if catalog.profile(gpu) is None:
        return f"{row.id}: GPU profile {gpu!r} not in the catalog"
    try:
        resolve(scenario_for(row), catalog)
    except (ValidationError, ProblemsError) as exc:
        return f"{row.id}: not a kvplan scenario ({str(exc).splitlines()[0][:120]})"
    return None


def report(rows: Sequence[Row], catalog: Catalog) -> LatencyReport:
    latency = [r for r in rows if r.category in KIND_OF]
    pending = [why for r in latency if (why := _predictable(r, catalog)) is not None]
    usable = [r for r in latency if _predictable(r, catalog) is None]
    fitted = [r for r in usable if r.fit_role == "fit"]
    others = [r for r in usable if r.fit_role != "fit"]
    full = fit_rows(fitted, catalog)
    in_sample = predict_with(full, fitted, catalog)
    by_mode = {
        "in-sample": in_sample,
        "leave-one-source-out": leave_one_out(fitted, catalog, lambda r: r.source_group or r.id),
        "leave-one-GPU-out": leave_one_out(fitted, catalog, gpu_key),
    }
    extra = predict_with(full, others, catalog) if others else np.empty(0)
    out: dict[str, dict[str, list[Prediction]]] = {}
    for mode, values in by_mode.items():
        cats: dict[str, list[Prediction]] = {}
        for r, v in [*zip(fitted, values, strict=True), *zip(others, extra, strict=True)]:
            note = METRIC_FOR[r.category] + ("" if r.fit_role == "fit" else " (not fitted)")
            cats.setdefault(r.category, []).append(Prediction(r.id, r.category, r.measured, float(v), note))
        out[mode] = cats
    return LatencyReport(out, pending)


def predictions(rows: Sequence[Row], catalog: Catalog) -> dict[str, list[Prediction]]:
    """The in-sample predictions per category (the shipped profiles' figures)."""
    latency = [r for r in rows if r.category in KIND_OF and _predictable(r, catalog) is None]
    fitted = [r for r in latency if r.fit_role == "fit"]
    values = predict_with(fit_rows(fitted, catalog), latency, catalog)
    out: dict[str, list[Prediction]] = {}
    for r, v in zip(latency, values, strict=True):
        out.setdefault(r.category, []).append(
            Prediction(r.id, r.category, r.measured, float(v), METRIC_FOR[r.category])
        )
    return out
