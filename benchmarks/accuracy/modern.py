"""2025–26 engines against their published measurements (benchmarks/data/published-serving-2025.json).

Each row becomes the kvplan scenario of the deployment it measured (``scenario_for``), at the engine
version that models it (the row's ``engine_profile``), and is predicted by the metric that is the same
measurement:

  throughput, offline max load   max_throughput_output_tokens_per_s_per_gpu   (engine/saturation.py)
  tpot / itl                     max_throughput_tpot_s at the run's load: every request queued
                                 (all-at-once runs) or the fixed concurrency N (batch = N)
  ttft at a fixed concurrency    chunked_ttft_s beside N − 1 running streams

The engines' scheduler limits are theirs, with sources:

* ``trtllm-bench throughput`` runs without an MoE load balancer (the perf-overview's llm_options set none:
  kvplan's ``eplb = false`` imbalance) and sizes max_batch_size and max_num_tokens itself (tensorrt_llm/bench/build/
  tuning.py ``calc_engine_setting`` / ``finetune_setting``: raw_bs = min(KV requests, 4096) / pp, raw_tokens =
  min(raw_bs · (1 + ISL/OSL), 32768), rounded up to 32/128/256 and 256/512/1024); the KV requests are
  kvplan's own memory plan at ``kv_cache_free_gpu_mem_fraction`` 0.95 ("In many cases, we also use a higher
  KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95", perf-overview.md).  Both are per
  micro-batch: with pipeline parallelism TensorRT-LLM's PyExecutor keeps ``num_micro_batches = pp_size`` in flight
  and its cache managers hold ``max_batch_size * mapping.pp_size`` resident sequences ("Pipeline stages retain
  different in-flight microbatches", tensorrt_llm/_torch/pyexecutor), so the scenario's batch (every sequence in
  flight, docs/model.md §6 "Pipeline") and its step budget are pp × those;
* ``vllm serve`` defaults: max_num_seqs 1024 and max_num_batched_tokens 8192 on GPUs with ≥ 70 GiB that are
  not A100s, else 256 and 2048 (vllm/engine/arg_utils.py ``get_batch_defaults``, "For GPUs like H100 and
  MI300x, use larger default values") — a row's stated ``max-num-seqs N`` (AMD's ROCm runs) is the batch instead;
  SGLang and ``trtllm-serve``: the KV pool's sequences, chunk 8192.

Rows kvplan cannot describe (a model, GPU or length it lacks; MLPerf rows, which state no lengths; runs
whose load is not stated) are listed as pending with the reason.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.accuracy.report import Prediction
from benchmarks.accuracy.rows import Row, dtype_key
from planner.engine.evaluate import compute, inputs_for, resolve, time_basis
from planner.engine.inputs import EngineInputs, stack_inputs
from planner.errors import ProblemsError
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

DATA = Path(__file__).resolve().parent.parent / "data" / "published-serving-2025.json"

#: A row's model (lower case, '_' and ' ' as '-') → kvplan preset: the shape is what matters.
MODEL_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"llama-3\.[13]-70b", "llama-3.1-70b"),
    (r"llama-3\.1-8b", "llama-3.1-8b"),
    (r"llama-3\.1-405b", "llama-3.1-405b"),
    (r"llama-2-70b", "llama-2-70b"),
    (r"llama-4-scout", "llama-4-scout-17b-16e"),
    (r"llama-4-maverick", "llama-4-maverick-17b-128e"),
    (r"qwen3-235b-a22b", "qwen3-235b-a22b"),
    (r"qwen3-30b-a3b", "qwen3-30b-a3b"),
    (r"qwen3-32b", "qwen3-32b"),
    (r"qwen3-8b", "qwen3-8b"),
    (r"gpt-oss-120b", "gpt-oss-120b"),
    (r"gpt-oss-20b", "gpt-oss-20b"),
    (r"deepseek-r1|deepseek-v3(?!\.2)", "deepseek-r1"),
    (r"mixtral-8x7b", "mixtral-8x7b"),
)
#: A row's GPU text → kvplan profile (first match wins: GB300 before B300, the Server Edition before the
#: Workstation Edition).
GPU_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"gb300", "gb300"),
    (r"gb200", "gb200"),
    (r"b300", "b300"),
    (r"\bb200", "b200"),
    (r"h200", "h200"),
    (r"h100", "h100-sxm"),
    (r"a100", "a100-80gb-sxm"),
    (r"mi300x", "mi300x"),
    (r"mi325x", "mi325x"),
    (r"rtx pro 6000 blackwell server edition", "rtx-pro-6000-blackwell-server"),
)
#: Profiles whose kernel tables came after the ``[kernels]`` fit (issue 32: GB300, the RTX PRO 6000 Server
#: Edition).  Their rows were pending when benchmarks/fit_kernels.py fitted, so none entered it: they are
#: predicted as held out whatever ``fit_role`` their id's hash gave them, and the fit leaves them out (its
#: fitted rows stay the ones the shipped ``[kernels]`` sections count).
AFTER_FIT_GPUS = frozenset({"gb300", "rtx-pro-6000-blackwell-server"})
TRTLLM_KV_FRACTION = 0.95
VLLM_LARGE_GPU_GIB = 70.0


class Pending(Exception):
    """A row kvplan cannot describe; the message says why."""


class ModernRow(Row):
    """A 2025–26 row: the shared schema, with mean lengths (a ``vllm bench serve`` run's totals ÷ requests)."""

    prompt: float | None = None  # type: ignore[assignment]
    output: float | None = None  # type: ignore[assignment]
    engine_profile: str | None = None  # the kvplan engine version that models the row (None: none does)


def load_rows(path: Path = DATA) -> list[ModernRow]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [ModernRow.model_validate(r) for r in data["rows"]]


def _model(row: Row) -> str:
    name = re.sub(r"[_ ]", "-", row.model.lower())
    for pattern, key in MODEL_PATTERNS:
        if re.search(pattern, name):
            return key
    raise Pending(f"no preset for {row.model}")


def _gpu(row: Row) -> str:
    name = row.gpu.lower()
    for pattern, key in GPU_PATTERNS:
        if re.search(pattern, name):
            return key
    raise Pending(f"no kvplan profile for {row.gpu}")


def _dtypes(row: Row, model: str) -> dict[str, Any]:
    """wdtype, quant and kvdtype of the row's checkpoint (ModelOpt FP8/FP4 checkpoints quantise the KV cache
    to FP8 when the table states no KV dtype: their hf_quant_config kv_cache_quant_algo)."""
    w = row.wdtype.lower()
    kv_text = row.kvdtype.lower()
    out: dict[str, Any] = {}
    if "mxfp4" in w or model.startswith("gpt-oss"):  # gpt-oss ships MXFP4 experts whatever the column says
        out.update(wdtype="fp4", quant="mxfp4")
    elif "fp4" in w:
        out.update(wdtype="fp4", quant="nvfp4")
    elif "fp8" in w:
        out.update(wdtype="fp8", quant="fp8-block" if model.startswith("deepseek") else "fp8")
    elif w.startswith(("bf16", "fp16")):
        out.update(wdtype="bf16")
    else:
        raise Pending(f"weights {row.wdtype!r} not stated")
    modelopt = row.model.startswith("nvidia/") and out["wdtype"] in ("fp8", "fp4")
    fp8_kv = "fp8" in kv_text or (modelopt and "not stated" in kv_text)
    out["kvdtype"] = "fp8" if fp8_kv else "bf16"
    return out


def _layout(row: Row, moe: bool) -> dict[str, Any]:
    """tp/pp; a TensorRT-LLM MoE run with enable_attention_dp (the tables' MoE recipe) is tp = 1 over dp ranks
    with ep = the GPUs of a stage."""
    pp = int(getattr(row, "pp", 1) or 1)
    gpus = int(getattr(row, "gpus", row.tp) or row.tp)
    if moe and row.engine.startswith("TensorRT-LLM") and "trtllm-bench" in row.engine:
        n = max(gpus // pp, 1)
        return dict(tp=1, dp=n, ep=int(getattr(row, "ep", None) or n), pp=pp) if n > 1 else dict(tp=1, pp=pp)
    return dict(tp=row.tp, pp=pp)


def _limits(row: Row, gpu: str, catalog: Catalog) -> dict[str, Any]:
    """The run's batch and step budget (module doc) before the trtllm-bench heuristic."""
    engine = row.engine
    if "trtllm-bench" in engine:  # the perf-overview recipe sets no MoE load balancer: EPLB off
        return dict(batch=4096, chunk=32768, mem_util=TRTLLM_KV_FRACTION, eplb=False)
    if engine.startswith("vLLM"):
        g = catalog.gpus[gpu]
        large = g.memory_reported_bytes / 2**30 >= VLLM_LARGE_GPU_GIB and "a100" not in gpu
        # the run's own --max-num-seqs where the row states it (AMD's ROCm runs), else vLLM's default
        stated = re.search(r"max-num-seqs (\d+)", str(getattr(row, "concurrency", "") or ""))
        batch = int(stated.group(1)) if stated else 1024 if large else 256
        return dict(batch=batch, chunk=8192 if large else 2048)
    return dict(batch=4096, chunk=8192)


def _concurrency(row: Row) -> int | None:
    """The run's fixed concurrency N (``--max-concurrency N``, or the number the row states), else None."""
    raw = getattr(row, "concurrency", None)
    if isinstance(raw, int | float) and raw >= 1:
        return int(raw)
    text = str(raw or "")
    if text.strip().isdigit():
        return int(text)
    m = re.search(r"max-concurrency[ =](\d+)|concurrency (\d+)", text)
    return int(next(g for g in m.groups() if g)) if m else None


def _unmodelled(row: Row) -> str:
    """Why a row's run is not one kvplan's metrics describe ('' when it is)."""
    text = f"{row.id} {getattr(row, 'concurrency', '')} {row.notes}".lower()
    if "sent at once" in text and "variable" not in text and row.source_group == "gpustack-perf-lab":
        return (
            "every request of a finite ShareGPT run sent at once: its figures are set by the drain of the longest "
            "outputs (variable lengths), not a steady state — the simulator with the run's lengths predicts it"
        )
    if "speculative" in text or "torch_compile" in text:
        return "an engine option kvplan's profile does not model (speculative method, torch.compile)"
    return ""


def scenario_for(row: ModernRow, catalog: Catalog) -> Scenario:
    """The row's deployment as a kvplan scenario (module doc); Pending when kvplan cannot describe it."""
    if row.prompt is None or row.output is None:
        raise Pending("prompt/output lengths not stated")
    if not getattr(row, "engine_profile", None):
        raise Pending("engine version not modelled (MLPerf harness, blog without its load)")
    why = _unmodelled(row)
    if why:
        raise Pending(why)
    model = _model(row)
    gpu = _gpu(row)
    spec = catalog.models[model]
    fields: dict[str, Any] = dict(
        gpu=gpu,
        model=model,
        engine=row.engine_profile,
        prompt=max(int(round(row.prompt)), 1),
        output=max(int(round(row.output)), 1),
        prefix=0,
        **_dtypes(row, model),
        **_layout(row, spec.is_moe),
        **_limits(row, gpu, catalog),
    )
    n = _concurrency(row)
    if n is not None:
        fields["batch"] = n
    fields["chunk"] = max(fields["chunk"], fields["batch"])
    try:
        s = Scenario(**fields)
        resolve(s, catalog)
    except (ProblemsError, ValueError) as exc:
        raise Pending(f"not a kvplan scenario ({str(exc).splitlines()[0][:140]})") from None
    return s


def trtllm_bench_settings(kv_requests: float, prompt: float, output: float, pp: int) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) as trtllm-bench's ``finetune_setting`` picks them (module doc)."""
    raw_bs = min(kv_requests, 4096) / pp
    raw_token = min(raw_bs * (1 + prompt / output), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_token < 4096:
        tokens = max(2048, 256 * math.ceil(raw_token / 256))
    elif raw_token < 8192:
        tokens = 512 * math.ceil(raw_token / 512)
    else:
        tokens = 1024 * math.ceil(raw_token / 1024)
    return bs, tokens


@dataclass(frozen=True)
class Case:
    """One predictable row: its scenario's inputs and the metric that predicts it."""

    row: ModernRow
    scenario: Scenario
    metric: str
    basis: str


def _metric(row: Row) -> str:
    if row.category == "throughput":
        return "max_throughput_output_tokens_per_s_per_gpu"
    if row.category in ("tpot", "itl"):
        return "max_throughput_tpot_s"
    if row.category == "ttft" and _concurrency(row) is not None:
        return "chunked_ttft_s"
    raise Pending(f"{row.category}: queue-dominated or not a kvplan figure")


def cases(rows: Sequence[ModernRow], catalog: Catalog) -> tuple[list[Case], list[str]]:
    """The predictable rows (their scenarios sized as their benchmark sizes them) and the pending ones."""
    out, pending = [], []
    for row in rows:
        try:
            metric = _metric(row)
            s = scenario_for(row, catalog)
            if "trtllm-bench" in row.engine:
                kv = float(compute(inputs_for(resolve(s, catalog)))["max_concurrent_sequences"])
                bs, tokens = trtllm_bench_settings(kv, s.prompt, s.output, s.pp)
                # per micro-batch: TensorRT-LLM keeps pp of them in flight (module doc), kvplan's batch is all of them
                s = s.with_changes(batch=bs * s.pp, chunk=max(tokens, bs) * s.pp)
            if s.gpu in AFTER_FIT_GPUS and row.fit_role == "fit":
                row = row.model_copy(update={"fit_role": "held_out"})
            out.append(Case(row, s, metric, time_basis(resolve(s, catalog))))
        except Pending as exc:
            pending.append(f"{row.id}: {exc}")
    return out, pending


def stacked_inputs(cs: Sequence[Case], catalog: Catalog) -> EngineInputs:
    return stack_inputs([inputs_for(resolve(c.scenario, catalog)) for c in cs])


def predict(cs: Sequence[Case], x: EngineInputs) -> list[Prediction]:
    """Every case's prediction from one vectorised engine call over ``x`` (``stacked_inputs``)."""
    m = compute(x)
    out = []
    for i, c in enumerate(cs):
        v = float(np.asarray(m[c.metric])[i])
        role = "fitted" if c.row.fit_role == "fit" else "held out"
        note = f"{c.metric} [{c.basis}] ({c.row.engine_profile}, {role})"
        out.append(Prediction(c.row.id, c.row.category, c.row.measured, v, note))
    return out


__all__ = [
    "AFTER_FIT_GPUS",
    "Case",
    "Pending",
    "cases",
    "dtype_key",
    "load_rows",
    "predict",
    "scenario_for",
    "stacked_inputs",
]
