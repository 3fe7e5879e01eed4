"""KV-cache capacity and concurrency against vLLM start-up logs ("GPU KV cache size: N tokens",
"Maximum concurrency for N tokens per request").

Rows carry ``split``: ``in_sample`` (the 18 rows vLLM's empirical memory constants are fitted on,
``benchmarks/fit_vllm_memory.py``) or ``held_out`` (never fitted).  A held-out row names its preset
(``preset``) or is matched to one by its Hugging Face id (a preset's ``source`` link); ``pending``
says why a row cannot be predicted (no preset yet, the V0 engine …); a row's ``pp`` (dp, ep) is its layout.  Each row
runs at its log's settings: max_num_seqs as ``batch``, max_num_batched_tokens as ``chunk``,
max_model_len as prompt + output, gpu_memory_utilization, block size, dtypes and ``quant``.
"""

from __future__ import annotations

import re
from typing import Any

from benchmarks.accuracy.report import Prediction
from benchmarks.accuracy.rows import DEFAULT_ROW_ENGINE, MODEL_KEYS, Row, gpu_key, load_rows
from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.launch.ids import hf_repo_id, same_checkpoint
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

CATEGORY = "kv_capacity"
#: vLLM 0.19's (and 0.33's) max_num_seqs for ``vllm serve`` on a ≥ 70 GiB GPU (engine/arg_utils.py:2242) when a row
#: does not say.
DEFAULT_MAX_NUM_SEQS = 1024


def split(row: Row) -> str:
    return str(getattr(row, "split", "in_sample"))


def kv_rows(rows: list[Row] | None = None) -> list[Row]:
    return [r for r in (load_rows() if rows is None else rows) if r.category == CATEGORY]


def in_sample_rows(rows: list[Row] | None = None) -> list[Row]:
    return [r for r in kv_rows(rows) if split(r) == "in_sample"]


def held_out_rows(rows: list[Row] | None = None) -> list[Row]:
    return [r for r in kv_rows(rows) if split(r) == "held_out"]


def preset_key(row: Row, catalog: Catalog) -> str | None:
    """The kvplan preset describing the row's model: named, listed in ``MODEL_KEYS``, or the preset
    whose Hugging Face id (its ``source`` link) is the row's model."""
    named = getattr(row, "preset", None)
    if named:
        return str(named)
    if row.model in MODEL_KEYS:
        return MODEL_KEYS[row.model]
    for key, spec in sorted(catalog.models.items()):
        repo = hf_repo_id(spec)
        if repo and same_checkpoint(repo, row.model):
            return key
    return None


def pending_reason(row: Row, catalog: Catalog) -> str | None:
    """Why the row cannot be predicted, or None."""
    reason = getattr(row, "pending", None)
    if reason:
        return str(reason)
    if preset_key(row, catalog) is None:
        return f"no preset for {row.model} in the catalog yet"
    return None


def row_engine(row: Row, catalog: Catalog) -> str:
    """The engine version whose rules the row's log was printed by: ``vllm@0.19`` for a vLLM 0.19.x log,
    ``vllm@0.33`` for a 0.33.x one (the log's major.minor), else ``DEFAULT_ROW_ENGINE``."""
    m = re.search(r"vLLM ([0-9]+\.[0-9]+)", row.engine)
    key = f"vllm@{m.group(1)}" if m else ""
    return key if key in catalog.engines else DEFAULT_ROW_ENGINE


def row_scenario(row: Row, catalog: Catalog) -> Scenario:
    """The row's deployment as a kvplan scenario at its log's settings, on the engine version it logs."""
    fields: dict[str, Any] = dict(
        engine=row_engine(row, catalog),
        gpu=gpu_key(row),
        model=preset_key(row, catalog),
        tp=row.tp,
        wdtype=row.wdtype,
        kvdtype=row.kvdtype,
        prompt=row.prompt,
        output=row.output,
        prefix=0,
        batch=getattr(row, "max_num_seqs", None) or DEFAULT_MAX_NUM_SEQS,
        block=row.block_size or 16,
    )
    if row.max_model_len is not None:
        fields["prompt"], fields["output"] = row.max_model_len - 1, 1
    if row.mem_util is not None:
        fields["mem_util"] = row.mem_util
    if row.max_num_batched_tokens is not None:
        fields["chunk"] = row.max_num_batched_tokens
    quant = getattr(row, "quant", None)
    if quant:
        fields["quant"] = quant
    for key in ("pp", "dp", "ep"):  # a multi-GPU layout (issue 15): vLLM's min blocks over the pipeline stages
        if getattr(row, key, None):
            fields[key] = getattr(row, key)
    return Scenario(**fields)


def predict(row: Row, catalog: Catalog) -> Prediction:
    s = row_scenario(row, catalog)
    try:
        m = evaluate(s, catalog).metrics
    except ScenarioError as exc:
        raise ValueError(f"{row.id}: {'; '.join(exc.problems)}") from None
    if row.metric.startswith("Maximum concurrency"):
        return Prediction(row.id, CATEGORY, row.measured, float(m["max_concurrent_sequences"]), "max concurrency")
    return Prediction(row.id, CATEGORY, row.measured, float(m["kv_capacity_tokens"]), "KV tokens")


def predictions(rows: list[Row], catalog: Catalog, which: str | None = None) -> list[Prediction]:
    """Predictions for the kv rows of ``rows`` (``which``: 'in_sample', 'held_out' or None for all)
    that can be predicted (``pending_reason`` is None)."""
    chosen = [r for r in kv_rows(rows) if which is None or split(r) == which]
    return [predict(r, catalog) for r in chosen if pending_reason(r, catalog) is None]


def pending(rows: list[Row], catalog: Catalog) -> list[tuple[str, str]]:
    """(row id, reason) of every kv row that cannot be predicted yet."""
    return [(r.id, reason) for r in kv_rows(rows) if (reason := pending_reason(r, catalog)) is not None]
