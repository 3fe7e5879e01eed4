"""An imported ``vllm bench serve --save-result`` file beside ``kvplan predict`` for the same settings,
field by field (the Cross-check tab; ``benchmarks/predict_accuracy.py`` compares the published runs the
same way).

The run's settings come from the file (vllm/benchmarks/serve.py v0.33.0 ``result_json``):
``num_prompts``, ``request_rate`` (a number or "inf"), ``burstiness``, ``max_concurrency``; the lengths
from ``input_lens`` / ``output_lens`` when it was saved with ``--save-detailed`` (every request's own),
else every request at the run's means, ``total_input_tokens`` and ``total_output_tokens`` ÷ the
requests that completed (a dataset's spread is not in the summary: the page says so).  The server is the
scenario the page describes.

Compared fields: the summary rows (``SUMMARY_FIELDS``) and every latency statistic the file holds
(``LATENCY_KEY``: mean, median and each percentile of TTFT, TPOT, ITL, E2EL; the prediction reports
the same percentiles), each with error = (predicted − measured) / measured.  Older vLLM releases wrote
the same keys (0.11 printed "Total Token throughput"; the JSON key was ``total_token_throughput``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.calibration.serving_results import MAX_RESULT_BYTES
from planner.errors import format_validation_error
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.predict.options import MAX_PROMPTS, PredictOptions, options
from planner.predict.run import Prediction, predict
from planner.predict.vllm_report import vllm_json
from planner.sim.serve_metrics import LATENCIES
from planner.sim.workload import Workload

#: (JSON key, what it is, unit) for the summary rows, in vLLM's printout order.
SUMMARY_FIELDS = (
    ("completed", "Successful requests", "requests"),
    ("duration", "Benchmark duration", "s"),
    ("request_throughput", "Request throughput", "req/s"),
    ("output_throughput", "Output token throughput", "tok/s"),
    ("total_token_throughput", "Total token throughput", "tok/s"),
    ("max_concurrent_requests", "Peak concurrent requests", "requests"),
)
#: A latency statistic's key in the file: mean_ttft_ms, median_itl_ms, p99_tpot_ms, p99.9_e2el_ms …
LATENCY_KEY = re.compile(r"^(mean|median|p(\d+(?:\.\d+)?))_(" + "|".join(LATENCIES) + r")_ms$")


def latency_fields(keys: list[str]) -> list[tuple[str, str, str]]:
    """(key, label, unit) of the latency statistics among ``keys``: per latency in vLLM's order, mean,
    median, then the percentiles rising."""
    found = [(k, m) for k in keys if (m := LATENCY_KEY.match(k))]
    order = list(LATENCIES)

    def rank(item: tuple[str, re.Match[str]]) -> tuple[int, int, float]:
        _, m = item
        stat = m.group(1)
        return order.index(m.group(3)), {"mean": 0, "median": 1}.get(stat, 2), float(m.group(2) or 0)

    out = []
    for key, m in sorted(found, key=rank):
        stat = m.group(1)
        word = {"mean": "Mean", "median": "Median"}.get(stat, stat.upper())
        out.append((key, f"{word} {LATENCIES[m.group(3)][0]}", "ms"))
    return out


def percentiles_in(keys: list[str]) -> tuple[float, ...]:
    """The percentiles the file reports (``p99_ttft_ms`` → 99.0), rising; vLLM's default 99 when none."""
    found = {float(m.group(2)) for k in keys if (m := LATENCY_KEY.match(k)) and m.group(2)}
    return tuple(sorted(found)) or (99.0,)


class VllmResult(BaseModel):
    """The part of a ``--save-result`` file the prediction needs (its other keys are kept as they are)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)

    completed: int = Field(ge=1, le=MAX_PROMPTS)
    num_prompts: int | None = Field(default=None, ge=1, le=MAX_PROMPTS)
    total_input_tokens: int = Field(ge=1)
    total_output_tokens: int = Field(ge=1)
    request_rate: float | str = "inf"
    burstiness: float = Field(default=1.0, gt=0)
    max_concurrency: int | None = Field(default=None, ge=1)
    input_lens: list[int] | None = Field(default=None, max_length=MAX_PROMPTS)
    output_lens: list[int] | None = Field(default=None, max_length=MAX_PROMPTS)


@dataclass(frozen=True)
class RunSettings:
    """A result file's benchmark settings as a prediction's input."""

    options: PredictOptions
    workload: Workload | None  # every request's own lengths (--save-detailed), else None
    lengths: str  # how the lengths were chosen, in words
    measured: dict[str, float]  # the file's values of ``fields``
    fields: tuple[tuple[str, str, str], ...]  # (key, label, unit) compared, in order


def _rate(v: float | str, name: str) -> float:
    if isinstance(v, str):
        if v.strip().lower() == "inf":
            return math.inf
        raise ValueError(f'{name}: request_rate {v!r}: a number or "inf"')
    if not v > 0:
        raise ValueError(f'{name}: request_rate {v!r}: must be > 0 or "inf"')
    return float(v)


def read_result(data: bytes, name: str = "file") -> dict[str, Any]:
    """The first run of a ``vllm bench serve`` result file (one JSON object, or JSON lines of them)."""
    if len(data) > MAX_RESULT_BYTES:
        raise ValueError(f"{name}: larger than {MAX_RESULT_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text") from None

    def reject(constant: str) -> None:
        raise ValueError(f"{name}: {constant} is not allowed (numbers must be finite)")

    try:
        first = text.strip().splitlines()[0] if text.strip() else ""
        parsed = json.loads(text, parse_constant=reject) if text.lstrip().startswith("{") else None
    except json.JSONDecodeError:
        parsed = json.loads(first, parse_constant=reject) if first.startswith("{") else None  # JSON lines: the first
    except RecursionError:
        raise ValueError(f"{name}: JSON nested too deeply to read") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"{name}: expected the JSON object `vllm bench serve --save-result` writes")
    return parsed


def run_settings(raw: dict[str, Any], name: str = "file") -> RunSettings:
    """The settings of the run ``raw`` (module doc); ValueError naming the file and the field."""
    try:
        r = VllmResult.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"{name}: {format_validation_error(exc)}") from None
    rate = _rate(r.request_rate, name)
    n = r.num_prompts or r.completed
    workload = None
    if r.input_lens and r.output_lens and len(r.input_lens) == len(r.output_lens) and min(r.output_lens) > 0:
        prompt = np.maximum(np.array(r.input_lens, dtype=np.int64), 1)
        output = np.array(r.output_lens, dtype=np.int64)
        workload = Workload(np.zeros(prompt.size), prompt, output, "vllm-detailed", name=name)
        n = prompt.size
        lengths = f"every request's own lengths ({n} saved with --save-detailed)"
    mean_in = max(round(r.total_input_tokens / r.completed), 1)
    mean_out = max(round(r.total_output_tokens / r.completed), 1)
    if workload is None:
        lengths = (
            f"every request at the run's means, {mean_in} in / {mean_out} out (the dataset's spread is not in "
            "the file: save it with --save-detailed to predict with each request's own lengths)"
        )
    keys = [k for k, v in raw.items() if _number(v)]
    opts = options(
        num_prompts=n,
        max_concurrency=r.max_concurrency,
        request_rate_per_s=rate,
        burstiness=r.burstiness,
        input_len=mean_in,
        output_len=mean_out,
        metric_percentiles=percentiles_in(keys),
    )
    fields = [f for f in SUMMARY_FIELDS if f[0] in keys] + latency_fields(keys)
    return RunSettings(opts, workload, lengths, {key: float(raw[key]) for key, _, _ in fields}, tuple(fields))


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class FieldRow:
    key: str
    label: str
    unit: str
    measured: float
    predicted: float | None

    @property
    def error_frac(self) -> float | None:
        if self.predicted is None or self.measured == 0:
            return None
        return (self.predicted - self.measured) / self.measured


def compare(settings: RunSettings, predicted: dict[str, Any]) -> list[FieldRow]:
    """Each field the measurement holds, beside the prediction's (``vllm_report.vllm_json``)."""
    rows = []
    for key, label, unit in settings.fields:
        value = predicted.get(key)
        shown = float(value) if value is not None and _number(value) else None
        rows.append(FieldRow(key, label, unit, settings.measured[key], shown))
    return rows


def crosscheck(s: Scenario, catalog: Catalog, settings: RunSettings) -> tuple[Prediction, list[FieldRow]]:
    """``kvplan predict`` for the file's settings against the server ``s``, and the fields side by side."""
    p = predict(s, catalog, settings.options, settings.workload)
    return p, compare(settings, vllm_json(p))
