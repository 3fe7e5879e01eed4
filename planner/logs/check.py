"""The plan against a real start-up log (vLLM or SGLang): predicted vs logged, term by term.  Pure.

``check_log(scenario, log, catalog)`` runs the plan at the log's own settings (tp,
gpu_memory_utilization, max_num_seqs → batch, max_num_batched_tokens → chunk, max_model_len →
prompt + output, kv_cache_dtype, a load-time ``--quantization fp8``) and on the engine version the
log is from (its banner, else its format: ``VllmStartup.release``), unless the scenario pins one
(``engine=vllm@0.19``), and sets each memory term beside the log's, like with like:

  vLLM ≤ 0.26   weights, peak activation (torch peak increase), non-torch, KV budget, CUDA graphs
  vLLM ≥ 0.27   weights, "consumed" (weights + non-torch + kept buffers ↔ the plan's W + N), "peak activation"
                (transient peak + the graph estimate ↔ P + the graphs the budget subtracts), the estimate, KV
  GPU KV cache size   the plan's ``logged_kv_cache_tokens`` (⌊concurrency × max_model_len⌋ from 0.21), not
                the pool's tokens
  SGLang        weights (the free-memory drop over loading), the KV pool (K + V sizes), max_total_num_tokens,
                max_running_requests, mem_fraction_static (``sglang_log``)

``calibration(log)`` is the one-click "use this log's figures": the link keys ``cal_total_gib``,
``cal_weights_gib``, ``cal_act_gib``, ``cal_nontorch_gib`` and ``cal_graph_gib`` (docs/launch.md), each a figure
the log's version subtracts: from a ≥ 0.27 log cal_nontorch = consumed − weights, cal_act = peak − the graph
estimate and cal_graph = the estimate (it prints no non-torch figure, and its peak includes the estimate), and
nothing of what it does not subtract (its DEBUG "torch peak memory increase"); ``calibration_notes`` says what
was refused and why.  With them the plan reproduces the log's KV tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.engine.evaluate import Result, evaluate
from planner.engine.memory import max_concurrency
from planner.format import fmt_bytes
from planner.logs.sglang_log import SGLANG_TERMS, SglangStartup
from planner.logs.vllm_log import TERM_LABELS, VllmStartup
from planner.model.catalog import Catalog
from planner.model.engine_versions import split_key, version_tuple
from planner.model.scenario import Scenario
from planner.units import GiB

StartupLog = VllmStartup | SglangStartup

#: log memory term → the plan's metrics (bytes per GPU) whose sum it is
TERM_METRICS: dict[str, tuple[str, ...]] = {
    "total_memory_gib": ("memory_total_bytes_per_gpu",),
    "requested_memory_gib": ("usable_bytes_per_gpu",),
    "weights_gib": ("weight_bytes_per_gpu",),
    "activation_gib": ("activation_bytes_per_gpu",),
    "non_torch_gib": ("non_torch_bytes_per_gpu",),
    "consumed_gib": ("weight_bytes_per_gpu", "non_torch_bytes_per_gpu"),
    "peak_activation_gib": ("activation_bytes_per_gpu", "cuda_graph_charged_bytes_per_gpu"),
    "cuda_graph_estimate_gib": ("cuda_graph_charged_bytes_per_gpu",),
    "kv_cache_gib": ("kv_budget_bytes_per_gpu",),
    "cuda_graph_gib": ("cuda_graph_bytes_per_gpu",),
}
#: the terms a ≤ 0.26 log and a ≥ 0.27 log set beside the plan (a term the log does not print stays blank)
OLD_TERMS = ("total_memory_gib", "requested_memory_gib", "weights_gib", "activation_gib", "non_torch_gib")
NEW_TERMS = ("total_memory_gib", "requested_memory_gib", "weights_gib", "consumed_gib", "peak_activation_gib")
#: the log's kv_cache_dtype → the plan's kvdtype
KV_DTYPES = {
    "fp8": "fp8",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "int8_per_token_head": "int8",
}
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


def new_format(log: VllmStartup) -> bool:
    """A vLLM ≥ 0.27 log: its summary splits the budget into "consumed" and "peak activation"."""
    release = log.release()
    return log.consumed_gib is not None or (release is not None and release[:2] >= (0, 27))


def log_engine(s: Scenario, log: StartupLog, catalog: Catalog) -> str:
    """The engine version to plan the log with: the scenario's when it names one (``NAME@VERSION``); else the
    profile of the log's engine whose release is the log's (major.minor), or the oldest newer one (a 0.25 log
    runs on 0.33's rules: graphs in the budget, 0.92), or the newest."""
    if "@" in s.engine:
        return s.engine
    name = "sglang" if isinstance(log, SglangStartup) else "vllm"
    release = log.release()
    versions = sorted(
        (version_tuple(p.version)[:2], key) for key, p in catalog.engines.items() if split_key(key)[0] == name
    )
    if not versions:
        return s.engine
    if release is None:
        return versions[-1][1]
    later = [key for v, key in versions if v >= release[:2]]
    return later[0] if later else versions[-1][1]


def _setting_changes(s: Scenario, log: StartupLog) -> tuple[dict[str, Any], list[str]]:
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
    if log.quantization in ("fp8", "fp8_per_tensor"):
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


def serve_defaults(total_gib: float, gpu_name: str, release: tuple[int, ...]) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) ``vllm serve`` picks when given neither (engine/arg_utils.py
    get_batch_defaults, 0.19.0 and 0.33.0): 8,192 / 1,024 on a GPU of ≥ 70 GiB that is not an A100, 2,048 / 256
    otherwise, and from 0.28.0 16,384 / 1,024 at ≥ 160 GiB.  An INFO-level log prints max_num_seqs nowhere."""
    if release[:2] >= (0, 28) and total_gib >= 160:
        return 16384, 1024
    if total_gib >= 70 and "a100" not in gpu_name.lower():
        return 8192, 1024
    return 2048, 256


def log_scenario(s: Scenario, log: StartupLog, catalog: Catalog | None = None) -> tuple[Scenario, list[str]]:
    """``s`` at the log's settings (and, with ``catalog``, on the log's engine version, and vLLM's own
    max_num_seqs / max_num_batched_tokens where the log does not print them); ScenarioError when the log's
    settings are outside the scenario's bounds."""
    changes, notes = _setting_changes(s, log)
    if catalog is not None:
        changes["engine"] = log_engine(s, log, catalog)
        gpu = catalog.profile(s.gpu)
        engine = catalog.engine(changes["engine"])
        if isinstance(log, VllmStartup) and gpu is not None and engine is not None and not log.v0_engine:
            total = log.total_memory_gib or (gpu.memory_reported_bytes or gpu.memory_bytes) / GiB
            chunk, seqs = serve_defaults(total, gpu.name, version_tuple(engine.version))
            if log.max_num_seqs is None:
                changes["batch"] = min(seqs, changes.get("chunk", chunk))
                notes.append(f"max_num_seqs: not in the log; vllm serve's default on this GPU, {changes['batch']:,}")
            if log.max_num_batched_tokens is None:
                changes["chunk"] = chunk
                notes.append(f"max_num_batched_tokens: not in the log; vllm serve's default on this GPU, {chunk:,}")
    return s.with_changes(**changes), notes


def _concurrency_at(result: Result, tokens: int) -> float:
    x = result.inputs.as_arrays()
    return float(np.asarray(max_concurrency(x, float(tokens))))


def _gib(m: dict[str, float | bool], metrics: tuple[str, ...]) -> float:
    return sum(float(m[k]) for k in metrics) / GiB


def _vllm_rows(log: VllmStartup, result: Result) -> list[TermRow]:
    m = result.metrics
    shown = NEW_TERMS if new_format(log) else OLD_TERMS
    terms = [*shown, "kv_cache_gib", "cuda_graph_gib"]
    if log.graphs_in_budget or float(m["cuda_graph_charged_bytes_per_gpu"]) > 0:  # 0.19 prints one it ignores
        terms.insert(len(shown), "cuda_graph_estimate_gib")
    rows = [TermRow(t, TERM_LABELS[t], "GiB", _gib(m, TERM_METRICS[t]), getattr(log, t)) for t in terms]
    rows.append(TermRow("num_gpu_blocks", "KV blocks", "blocks", float(m["kv_blocks"]), log.num_gpu_blocks))
    logged_tokens = None if log.kv_cache_tokens is None else float(log.kv_cache_tokens)
    rows.append(
        TermRow("kv_cache_tokens", _kv_size_label(result), "tokens", float(m["logged_kv_cache_tokens"]), logged_tokens)
    )
    plan = result.resolved.scenario
    tokens = log.concurrency_tokens or plan.prompt + plan.output
    label = f"maximum concurrency for {tokens:,} tokens per request"
    rows.append(TermRow("concurrency", label, "requests", _concurrency_at(result, tokens), log.concurrency))
    return rows


def _kv_size_label(result: Result) -> str:
    if float(np.asarray(result.inputs.kv_size_concurrency)) > 0:
        return "GPU KV cache size (concurrency × max_model_len)"
    return "GPU KV cache size (pool)"


def _vllm_notes(log: VllmStartup, result: Result) -> list[str]:
    notes = []
    engine = result.resolved.engine
    release = log.release()
    if release is not None and version_tuple(engine.version)[:2] != release[:2]:
        shown = log.engine_version or "≥ " + ".".join(map(str, release)) + " (by its format)"
        notes.append(
            f"the log is vLLM {shown}; the plan uses the {engine.label} profile (its constants and rules differ "
            "between releases: each profile names its sources)"
        )
    in_budget = float(np.asarray(result.inputs.graphs_in_budget)) > 0
    if log.graphs_in_budget is not None and log.graphs_in_budget != in_budget:
        said = "subtracted" if log.graphs_in_budget else "did not subtract"
        notes.append(
            f"the log {said} its CUDA-graph estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS); the {engine.label} "
            "profile " + ("does not" if log.graphs_in_budget else "does")
        )
    if log.torch_peak_increase_gib is not None:
        notes.append(
            f"the log's DEBUG 'torch peak memory increase' ({log.torch_peak_increase_gib} GiB) is not what vLLM ≥ 0.27 "
            "subtracts (its budget takes 'consumed' + 'peak activation'): shown as information only"
        )
    if log.v0_engine:
        notes.append("the log is from vLLM's V0 engine, whose profile run and budget differ from V1's")
    return notes


def check_log(s: Scenario, log: StartupLog, catalog: Catalog) -> LogCheck:
    """Predicted vs logged per term at the log's settings (module doc); ScenarioError names a setting
    the plan's model cannot take (e.g. the log's tp does not split it)."""
    plan, notes = log_scenario(s, log, catalog)
    result = evaluate(plan, catalog)
    notes.insert(0, f"the plan runs on {result.resolved.engine.label} ({plan.engine}) at the log's settings")
    if isinstance(log, SglangStartup):
        rows = _sglang_rows(log, result)
    else:
        rows = _vllm_rows(log, result)
        notes += _vllm_notes(log, result)
    if log.model:
        notes.append(f"the log serves {log.model}; the plan's model is {result.resolved.model.name}")
    notes += calibration_notes(log)
    notes += [f"the log reports an error: {e}" for e in log.errors]
    return LogCheck(plan, result, tuple(rows), tuple(notes))


def _sglang_rows(log: SglangStartup, result: Result) -> list[TermRow]:
    m = result.metrics
    rows = [
        TermRow(term, label, unit, float(m[metric]) / (GiB if unit == "GiB" else 1.0), getattr(log, term))
        for term, (label, unit, metric) in SGLANG_TERMS.items()
    ]
    if log.swa_layer_tokens is not None:
        swa = float(m["kv_capacity_tokens"]) * float(np.asarray(result.inputs.swa_ratio))
        rows.append(TermRow("swa_layer_tokens", "window-pool tokens", "tokens", swa, float(log.swa_layer_tokens)))
    return rows


def calibration(log: StartupLog) -> dict[str, float]:
    """The link keys that make the plan use the log's own memory terms: only figures the log's version
    subtracts (module doc)."""
    if isinstance(log, SglangStartup):
        return {} if log.weights_gib is None else {"cal_weights_gib": float(log.weights_gib)}
    out = {}
    if log.total_memory_gib is not None:
        out["cal_total_gib"] = float(log.total_memory_gib)
    if log.weights_gib is not None:
        out["cal_weights_gib"] = float(log.weights_gib)
    if not new_format(log):
        for term, key in (("activation_gib", "cal_act_gib"), ("non_torch_gib", "cal_nontorch_gib")):
            if (v := getattr(log, term)) is not None:
                out[key] = float(v)
        if log.cuda_graph_gib is not None:
            out["cal_graph_gib"] = float(log.cuda_graph_gib)
        return out
    if log.consumed_gib is not None and log.weights_gib is not None:
        out["cal_nontorch_gib"] = round(max(log.consumed_gib - log.weights_gib, 0.0), 2)
    estimate = log.cuda_graph_estimate_gib if log.graphs_in_budget is not False else 0.0
    if log.peak_activation_gib is not None and estimate is not None:
        out["cal_act_gib"] = round(max(log.peak_activation_gib - estimate, 0.0), 2)
        out["cal_graph_gib"] = float(estimate)
    return out


def calibration_notes(log: StartupLog) -> list[str]:
    """What ``calibration`` left out of a log's figures, and why."""
    if isinstance(log, SglangStartup):
        return [
            "calibration from an SGLang log: its weights (the free-memory drop over loading); it prints free memory, "
            "not the device total, so the profile's total and baseline stand"
        ]
    if not new_format(log):
        return []
    out = ["vLLM ≥ 0.27 prints no non-torch figure: cal_nontorch_gib is 'consumed' − weights (non-torch growth and "
           "the torch buffers kept after the profile run, which the plan otherwise counts in its peak)"]  # fmt: skip
    if log.peak_activation_gib is not None and log.cuda_graph_estimate_gib is None and log.graphs_in_budget:
        out.append(
            "not calibrated: peak activation and CUDA graphs — the log's 'peak activation' includes the CUDA-graph "
            "estimate, and it prints no estimate to take out (the V1 runner's 'Estimated CUDA graph memory', 'CUDA "
            "graph pool memory: … (estimated)', or the 'equivalent to --gpu-memory-utilization' line)"
        )
    if log.torch_peak_increase_gib is not None:
        out.append("not calibrated from 'torch peak memory increase': vLLM ≥ 0.27 does not subtract it")
    return out


#: How far a log's total device memory may exceed the plan's GPU's (the driver rounds; a profile's figure
#: may be a little low), and the rounding of each GiB figure a log prints (0.01 GiB) summed over the terms.
TOTAL_TOLERANCE_FRAC = 0.02
PRINT_ROUNDING_GIB = 0.05
#: the calibration's link keys in words (``calibration_problems``)
CAL_LABELS = {
    "cal_weights_gib": "weights",
    "cal_act_gib": "activation peak",
    "cal_nontorch_gib": "non-torch memory",
    "cal_graph_gib": "CUDA-graph memory",
}


def calibration_problems(check: LogCheck, log: StartupLog) -> list[str]:
    """Why the log's figures cannot calibrate the plan (physically impossible on the plan's GPU); [] when they
    can.  The rules, on the figures ``calibration`` would hand out: the total is at most the GPU's
    (``TOTAL_TOLERANCE_FRAC``), weights are more than 0, each figure and the weights + activation + non-torch
    (+ the KV cache the log printed) sum fit in the total (``PRINT_ROUNDING_GIB``)."""
    gpu = check.result.resolved.gpu
    device_gib = float(check.result.metrics["memory_total_bytes_per_gpu"]) / GiB
    figures = calibration(log)
    problems = []
    total = figures.pop("cal_total_gib", None)  # the log's figures are quoted as it prints them (0.01 GiB)
    if total is not None and total > device_gib * (1 + TOTAL_TOLERANCE_FRAC):
        problems.append(
            f"the log's total device memory ({total:g} GiB) is more than a {gpu.name} has "
            f"({fmt_bytes(device_gib * GiB)}): the log is from another GPU (choose it in the plan) or was edited"
        )
        total = None
    weights = figures.get("cal_weights_gib")
    if weights is not None and weights <= 0:
        problems.append("the log's weights are 0 GiB: a model that serves has weights (the load line was edited)")
    room = total if total is not None else device_gib
    terms = {CAL_LABELS[k]: v for k, v in figures.items()}
    kv = getattr(log, "kv_cache_gib", None)
    if kv is not None:
        terms["KV cache"] = float(kv)
    for label, v in terms.items():
        if v > room + PRINT_ROUNDING_GIB:
            problems.append(f"the log's {label} ({v:g} GiB) is more than the device's {room:g} GiB")
    together = sum(v for label, v in terms.items() if label != "CUDA-graph memory")
    if len(terms) > 1 and together > room + PRINT_ROUNDING_GIB:
        problems.append(
            f"the log's {', '.join(t for t in terms if t != 'CUDA-graph memory')} ({together:.2f} GiB together) "
            f"are more than the device's {room:.2f} GiB"
        )
    return [f"not calibrated: {p}" for p in problems]


def calibrated_scenario(s: Scenario, log: StartupLog, catalog: Catalog) -> Scenario:
    """The plan at the log's settings, on its engine version, with the log's figures (ScenarioError if out of
    bounds): the figures describe that version's accounting, so the link pins it."""
    plan, _ = log_scenario(s, log, catalog)
    return plan.with_changes(**calibration(log))
