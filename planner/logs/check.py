"""The plan against a real vLLM start-up log: predicted vs logged, term by term.  Pure.

``check_log(scenario, log, catalog)`` runs the plan at the log's own settings (tp,
gpu_memory_utilization, max_num_seqs → batch, max_num_batched_tokens → chunk, max_model_len →
prompt + output, kv_cache_dtype, a load-time ``--quantization fp8``) and sets each memory term
beside the log's.  ``calibration(log)`` is the one-click "use this log's figures": the link keys
``cal_total_gib``, ``cal_weights_gib``, ``cal_act_gib``, ``cal_nontorch_gib`` and
``cal_graph_gib`` (docs/launch.md); with them the plan reproduces the log's KV tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.engine.evaluate import Result, evaluate
from planner.engine.memory import max_concurrency
from planner.logs.vllm_log import TERM_LABELS, VllmStartup
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.units import GiB

#: log memory term → the plan's metric (bytes per GPU)
TERM_METRICS = {
    "total_memory_gib": "memory_total_bytes_per_gpu",
    "requested_memory_gib": "usable_bytes_per_gpu",
    "weights_gib": "weight_bytes_per_gpu",
    "activation_gib": "activation_bytes_per_gpu",
    "non_torch_gib": "non_torch_bytes_per_gpu",
    "kv_cache_gib": "kv_budget_bytes_per_gpu",
    "cuda_graph_gib": "cuda_graph_bytes_per_gpu",
}
#: log term → the calibration link key that takes its value
CALIBRATION_KEYS = {
    "total_memory_gib": "cal_total_gib",
    "weights_gib": "cal_weights_gib",
    "activation_gib": "cal_act_gib",
    "non_torch_gib": "cal_nontorch_gib",
    "cuda_graph_gib": "cal_graph_gib",
}
#: the log's kv_cache_dtype → the plan's kvdtype
KV_DTYPES = {"fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "bfloat16": "bf16", "float16": "fp16"}
#: the log's dtype → the plan's weight dtype (16-bit checkpoints only)
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


@dataclass(frozen=True)
class TermRow:
    term: str
    label: str
    unit: str
    predicted: float | None
    logged: float | None

    @property
    def error_frac(self) -> float | None:
        if self.predicted is None or not self.logged:
            return None
        return self.predicted / self.logged - 1.0


@dataclass(frozen=True)
class LogCheck:
    scenario: Scenario  # the plan at the log's settings
    result: Result
    rows: tuple[TermRow, ...]
    notes: tuple[str, ...]


def _setting_changes(s: Scenario, log: VllmStartup) -> tuple[dict[str, Any], list[str]]:
    """The log's serving settings as scenario changes, and notes on what could not be carried over."""
    changes: dict[str, Any] = {}
    notes: list[str] = []
    if log.tp is not None:
        changes["tp"] = log.tp
    if log.pp not in (None, 1):
        notes.append(f"the log ran pipeline parallelism (pp={log.pp}); kvplan models tp only")
    if log.gpu_memory_utilization is not None:
        changes["mem_util"] = log.gpu_memory_utilization
    if log.max_num_seqs is not None:
        changes["batch"] = log.max_num_seqs
    if log.max_num_batched_tokens is not None:
        changes["chunk"] = log.max_num_batched_tokens
    if log.max_model_len is not None:
        output = min(s.output, log.max_model_len - 1)
        changes["prompt"], changes["output"] = log.max_model_len - output, output
        changes["prefix"] = min(s.prefix, changes["prompt"])
    if log.block_size is not None:
        changes["block"] = log.block_size
    kv = KV_DTYPES.get(log.kv_cache_dtype or "")
    if kv is not None:
        changes["kvdtype"] = kv
    elif log.kv_cache_dtype == "auto" and log.dtype in DTYPES:
        changes["kvdtype"] = DTYPES[log.dtype]
    if log.quantization == "fp8":
        changes["wdtype"], changes["quant"] = "fp8", "fp8"
    elif log.quantization:
        notes.append(
            f"the log's quantization={log.quantization}: the plan keeps wdtype={s.wdtype or 'the checkpoint'}"
            + (f", quant={s.quant}" if s.quant else "")
            + " (kvplan cannot tell the scheme from the log; set it to match the checkpoint)"
        )
    elif log.dtype in DTYPES:
        changes["wdtype"] = DTYPES[log.dtype]
    if log.enable_prefix_caching is not None:
        notes.append(f"prefix caching {'on' if log.enable_prefix_caching else 'off'} in the log (no memory effect)")
    return changes, notes


def log_scenario(s: Scenario, log: VllmStartup) -> tuple[Scenario, list[str]]:
    """``s`` at the log's settings; ScenarioError when the log's settings are outside the scenario's bounds."""
    changes, notes = _setting_changes(s, log)
    return s.with_changes(**changes), notes


def _concurrency_at(result: Result, tokens: int) -> float:
    x = result.inputs.as_arrays()
    return float(np.asarray(max_concurrency(x, float(tokens))))


def check_log(s: Scenario, log: VllmStartup, catalog: Catalog) -> LogCheck:
    """Predicted vs logged per term at the log's settings (module doc); ScenarioError names a setting
    the plan's model cannot take (e.g. the log's tp does not split it)."""
    plan, notes = log_scenario(s, log)
    result = evaluate(plan, catalog)
    m = result.metrics
    rows = [
        TermRow(term, TERM_LABELS[term], "GiB", float(m[metric]) / GiB, getattr(log, term))
        for term, metric in TERM_METRICS.items()
    ]
    rows.append(TermRow("num_gpu_blocks", "KV blocks", "blocks", float(m["kv_blocks"]), log.num_gpu_blocks))
    rows.append(
        TermRow(
            "kv_cache_tokens",
            "GPU KV cache size",
            "tokens",
            float(m["kv_capacity_tokens"]),
            None if log.kv_cache_tokens is None else float(log.kv_cache_tokens),
        )
    )
    tokens = log.concurrency_tokens or plan.prompt + plan.output
    rows.append(
        TermRow(
            "concurrency",
            f"maximum concurrency for {tokens:,} tokens per request",
            "requests",
            _concurrency_at(result, tokens),
            log.concurrency,
        )
    )
    if log.engine_version and not log.engine_version.startswith(result.resolved.engine.version.rsplit(".", 1)[0]):
        notes.append(
            f"the log is vLLM {log.engine_version}; the plan uses the {result.resolved.engine.name} "
            f"{result.resolved.engine.version} profile (its constants differ between releases)"
        )
    if log.v0_engine:
        notes.append("the log is from vLLM's V0 engine, whose profile run and budget differ from V1's")
    if log.model:
        notes.append(f"the log serves {log.model}; the plan's model is {result.resolved.model.name}")
    notes += [f"the log reports an error: {e}" for e in log.errors]
    return LogCheck(plan, result, tuple(rows), tuple(notes))


def calibration(log: VllmStartup) -> dict[str, float]:
    """The link keys that make the plan use the log's own memory terms (only the terms it states)."""
    return {key: float(v) for term, key in CALIBRATION_KEYS.items() if (v := getattr(log, term)) is not None}


def calibrated_scenario(s: Scenario, log: VllmStartup) -> Scenario:
    """The plan at the log's settings with the log's figures (ScenarioError if out of bounds)."""
    plan, _ = log_scenario(s, log)
    return plan.with_changes(**calibration(log))
