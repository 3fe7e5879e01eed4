"""Multi-GPU serving figures: the engine's parallel layouts against published deployments (issue 15).

Rows of ``published-serving.json`` (held out: nothing here is fitted):

  multi_gpu_prefill   per-GPU prefill tokens/s of a deployment: tokens_per_device / t_step, the step prefilling
                      dp · tokens_per_device tokens of prompt-length prompts over the instance (``roofline.step_cost``)
  multi_gpu_decode    per-GPU output tokens/s: batch_per_device / t_step, the decode step of dp · batch_per_device
                      sequences at context_tokens
  multi_gpu_ratio     a published ratio of two scenarios (numerator / denominator) of one ``quantity``: either of
                      the above, or serving_output_tokens_per_s (output tokens/s with the prefill included, at the
                      largest batch ≤ the scenario's that the KV cache holds)

Each row's ``scenario`` is a kvplan link's keys (the layout: tp, dp, ep, pp, tbo, redundant_experts …).
One constant is fitted here: ``parallel_layout.TBO_OVERLAP_FRAC`` to ``TBO_FIT_ROW`` (``--fit-tbo``).
"""

from __future__ import annotations

from typing import Any

from benchmarks.accuracy.report import Prediction
from benchmarks.accuracy.rows import Row
from planner.engine.evaluate import evaluate, inputs_for, resolve
from planner.engine.roofline import step_cost
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

CATEGORIES = ("multi_gpu_prefill", "multi_gpu_decode", "multi_gpu_ratio")


def _prefill_per_gpu(keys: dict[str, Any], catalog: Catalog, tokens_per_device: float) -> float:
    s = Scenario(**keys)
    x = inputs_for(resolve(s, catalog))
    n = s.dp * tokens_per_device
    return tokens_per_device / float(step_cost(x, n=n, prompts=n / s.prompt).time_s)


def _decode_per_gpu(keys: dict[str, Any], catalog: Catalog, per_device: float, context: float) -> float:
    s = Scenario(**keys)
    x = inputs_for(resolve(s, catalog))
    return per_device / float(step_cost(x, seqs=per_device * s.dp, ctx=context).time_s)


def _serving(keys: dict[str, Any], catalog: Catalog) -> float:
    s = Scenario(**keys)
    first = evaluate(s, catalog).metrics
    fits = max(int(min(s.batch, first["feasible_batch"])), 1)
    return float(evaluate(s.with_changes(batch=fits), catalog).metrics["output_tokens_per_s"])


def _quantity(row: Row, keys: dict[str, Any], catalog: Catalog) -> float:
    extra = row.model_extra or {}
    kind = extra.get("quantity") or row.category
    if kind in ("multi_gpu_prefill", "prefill_tokens_per_s_per_gpu"):
        return _prefill_per_gpu(keys, catalog, float(extra["tokens_per_device"]))
    if kind in ("multi_gpu_decode", "decode_tokens_per_s_per_gpu"):
        return _decode_per_gpu(keys, catalog, float(extra["batch_per_device"]), float(extra["context_tokens"]))
    if kind == "serving_output_tokens_per_s":
        return _serving(keys, catalog)
    raise ValueError(f"{row.id}: unknown quantity {kind!r}")


def predict(row: Row, catalog: Catalog) -> Prediction:
    extra = row.model_extra or {}
    if row.category == "multi_gpu_ratio":
        top, bottom = _quantity(row, extra["numerator"], catalog), _quantity(row, extra["denominator"], catalog)
        note = "ratio (in-sample: TBO_OVERLAP_FRAC is fitted to it)" if row.id == TBO_FIT_ROW else "ratio"
        return Prediction(row.id, row.category, row.measured, top / bottom, note)
    layout = {k: v for k, v in extra["scenario"].items() if k in ("tp", "dp", "ep", "pp", "tbo", "redundant_experts")}
    note = " ".join(f"{k}={v}" for k, v in layout.items())
    return Prediction(row.id, row.category, row.measured, _quantity(row, extra["scenario"], catalog), note)


def predictions(rows: list[Row], catalog: Catalog) -> dict[str, list[Prediction]]:
    """Per category, every multi-GPU row's prediction (held out but ``TBO_FIT_ROW``)."""
    return {c: [predict(r, catalog) for r in rows if r.category == c] for c in CATEGORIES}


#: The row ``parallel_layout.TBO_OVERLAP_FRAC`` is fitted to (its prediction is in-sample; the rest held out).
TBO_FIT_ROW = "P05_P06_sglang_dsv3_decode_tbo_ratio"


def _decode_step_s(keys: dict[str, Any], catalog: Catalog, per_device: float, context: float, tbo: float) -> float:
    s = Scenario(**keys)
    x = inputs_for(resolve(s, catalog))
    x = x.with_(tbo=x.tbo * 0.0 + tbo)
    return float(step_cost(x, seqs=per_device * s.dp, ctx=context).time_s)


def fit_tbo(rows: list[Row], catalog: Catalog) -> float:
    """The overlap share f at which the model gives the TBO on/off ratio of ``TBO_FIT_ROW`` (bisection on
    [0, 1]; 1 when even a perfect overlap falls short of it)."""
    row = next(r for r in rows if r.id == TBO_FIT_ROW)
    extra = row.model_extra or {}
    per, ctx = float(extra["batch_per_device"]), float(extra["context_tokens"])
    off = _decode_step_s(extra["denominator"], catalog, per, ctx, 0.0)
    lo, hi = 0.0, 1.0
    if off / _decode_step_s(extra["numerator"], catalog, per, ctx, 1.0) <= row.measured:
        return 1.0
    for _ in range(50):
        mid = (lo + hi) / 2.0
        ratio = off / _decode_step_s(extra["numerator"], catalog, per, ctx, mid)
        lo, hi = (mid, hi) if ratio < row.measured else (lo, mid)
    return (lo + hi) / 2.0


if __name__ == "__main__":  # benchmarks/accuracy/multi_gpu.py --fit-tbo: the value of TBO_OVERLAP_FRAC
    import sys

    from benchmarks.accuracy.rows import load_rows
    from planner.model.catalog import load_catalog

    if "--fit-tbo" in sys.argv[1:]:
        print(f"TBO_OVERLAP_FRAC = {fit_tbo(load_rows(), load_catalog()):.3f}")
