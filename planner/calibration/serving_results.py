"""Result files of the serving engines' own load generators, read into measured load points.

Two documented formats:

* ``vllm bench serve --save-result`` writes one JSON object per run
  (vllm/benchmarks/serve.py: ``result_json`` = the run's arguments — ``model_id``,
  ``request_rate`` (a number or ``"inf"``), ``max_concurrency`` — merged with its metrics:
  ``completed``, ``duration``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``median_ttft_ms``, ``median_tpot_ms``, ``mean_tpot_ms``,
  ``mean_e2el_ms``, … in milliseconds);
* SGLang ``python -m sglang.bench_serving --output-file`` appends one JSON line per run
  (python/sglang/bench_serving.py: ``backend``, ``request_rate``, ``max_concurrency``,
  ``duration``, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``median_ttft_ms``, ``median_tpot_ms``, ``mean_e2e_latency_ms``,
  ``concurrency``, …).

A file may hold one object, a JSON list of objects, or JSON lines.  Each run becomes a
``ServingRun`` (SI units); its load is the mean concurrency by Little's law, N = request
throughput × mean end-to-end latency (SGLang's own ``concurrency`` where given, else the
configured ``max_concurrency``).  Nothing in a file is executed; a bad file is a
ValueError naming the run and the field.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import format_validation_error
from planner.format import fmt_seconds
from planner.jsonfile import JsonRefused, loads
from planner.units import MS_PER_S, KiB

#: Largest result file read (a summary is ~2 KB; --save-detailed per-request arrays make it larger).
MAX_RESULT_BYTES = 32 * 1024 * KiB
#: Runs one calibration fits (a benchmark sweep is tens of runs): checked right after the JSON is read,
#: before any run is validated or fitted.  The fit costs ≈ ``FIT_SECONDS_PER_RUN`` a run (2–4 ms on this
#: 2-core machine, 100–2,000 runs; 60,000 runs took > 120 s and 3.4 GiB, issue 31 F3).
MAX_RUNS = 1_000
FIT_SECONDS_PER_RUN = 3e-3
#: Latencies a serving engine can measure: no decode step is faster than ``MIN_LATENCY_S`` (0.1 ms:
#: 10,000 tokens/s for one stream), no benchmark median longer than an hour.
MIN_LATENCY_S = 1e-4
MAX_LATENCY_S = 3600.0
Tool = Literal["vllm", "sglang"]


class ServingRun(BaseModel):
    """One load point of a serving benchmark (SI units)."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False
    )  # inf from a huge ratio: refused by name

    tool: Tool
    label: str = Field(max_length=200)
    model_id: str = Field(default="", max_length=300)
    completed: int = Field(ge=1, description="requests that finished")
    duration_s: float = Field(gt=0)
    total_input_tokens: int = Field(ge=1)
    total_output_tokens: int = Field(ge=1)
    request_throughput_per_s: float = Field(gt=0)
    median_ttft_s: float = Field(ge=MIN_LATENCY_S, le=MAX_LATENCY_S)
    median_tpot_s: float = Field(ge=MIN_LATENCY_S, le=MAX_LATENCY_S)
    mean_e2e_s: float | None = Field(default=None, ge=MIN_LATENCY_S, le=24 * MAX_LATENCY_S)
    max_concurrency: int | None = Field(default=None, ge=1)
    mean_concurrency: float | None = Field(default=None, gt=0, description="SGLang's measured mean concurrency")
    request_rate_per_s: float | None = Field(default=None, gt=0, description="None: all at once (inf)")

    @property
    def mean_prompt_tokens(self) -> float:
        return self.total_input_tokens / self.completed

    @property
    def mean_output_tokens(self) -> float:
        return self.total_output_tokens / self.completed

    @property
    def concurrency(self) -> float:
        """Mean requests in flight: Little's law X · E2E, else SGLang's figure, else the configured cap, else 1."""
        if self.mean_e2e_s is not None:
            return max(self.request_throughput_per_s * self.mean_e2e_s, 1.0)
        if self.mean_concurrency is not None:
            return max(self.mean_concurrency, 1.0)
        return float(self.max_concurrency or 1)


def _finite(v: Any) -> float | None:
    """``v`` as a finite float; None for text, booleans, inf/NaN and integers past a float's range."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:  # a JSON integer of hundreds of digits
        return None
    return f if math.isfinite(f) else None


def _ms(d: dict[str, Any], *keys: str) -> float | None:
    """The first of ``keys`` present as a number of milliseconds, in seconds."""
    for k in keys:
        v = _finite(d.get(k))
        if v is not None:
            return v / MS_PER_S
    return None


def _rate(v: Any) -> float | None:
    f = _finite(v)
    return f if f is not None and f > 0 else None  # "inf", null or absent: every request sent at once


def _tool(d: dict[str, Any]) -> Tool:
    if "mean_e2el_ms" in d or "model_id" in d:
        return "vllm"
    if "mean_e2e_latency_ms" in d or "total_output_tokens_retokenized" in d:
        return "sglang"
    raise ValueError(
        "neither a `vllm bench serve` result (mean_e2el_ms, model_id) nor an SGLang bench_serving result "
        "(mean_e2e_latency_ms, total_output_tokens_retokenized)"
    )


def _run(d: Any, label: str) -> ServingRun:
    if not isinstance(d, dict):
        raise ValueError(f"{label}: a run must be a JSON object")
    try:
        tool = _tool(d)
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None
    completed = d.get("completed")
    duration = d.get("duration")
    throughput = d.get("request_throughput")
    done_f, duration_f = _finite(completed), _finite(duration)
    if throughput is None and done_f is not None and duration_f:
        throughput = done_f / duration_f  # older SGLang lines lack it
    data = dict(
        tool=tool,
        label=label,
        model_id=str(d.get("model_id") or d.get("backend") or "")[:300],
        completed=completed,
        duration_s=duration,
        total_input_tokens=d.get("total_input_tokens"),
        total_output_tokens=d.get("total_output_tokens"),
        request_throughput_per_s=throughput,
        median_ttft_s=_ms(d, "median_ttft_ms", "mean_ttft_ms"),
        median_tpot_s=_ms(d, "median_tpot_ms", "mean_tpot_ms", "median_itl_ms"),
        mean_e2e_s=_ms(d, "mean_e2el_ms", "mean_e2e_latency_ms"),
        max_concurrency=d.get("max_concurrency"),
        mean_concurrency=d.get("concurrency") if tool == "sglang" else None,
        request_rate_per_s=_rate(d.get("request_rate")),
    )
    try:
        return ServingRun.model_validate(data)
    except ValidationError as exc:
        raise ValueError(f"{label}: {format_validation_error(exc)}") from None


def check_run_count(runs: int, what: str) -> None:
    """ValueError when ``runs`` is more than one calibration fits (``MAX_RUNS``), with the fit's estimate."""
    if runs > MAX_RUNS:
        raise ValueError(
            f"{what}{runs:,} runs (≈ {fmt_seconds(runs * FIT_SECONDS_PER_RUN)} of fitting); a calibration takes at "
            f"most {MAX_RUNS:,} runs: calibrate on a benchmark sweep's summaries (one run per load point)"
        )


def _json_lines(text: str, name: str) -> list[Any]:
    """One JSON document per non-empty line (SGLang's --output-file)."""
    items = []
    for k, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        try:
            items.append(loads(line, f"{name} line {k + 1}: ", constants=True))
        except JsonRefused as exc:
            if exc.syntax:
                raise ValueError(f"{name}: neither JSON nor JSON lines ({exc})") from None
            raise
    return items


def parse_serving_results(data: bytes, name: str = "file") -> list[ServingRun]:
    """Every run in one result file (module doc); ValueError names the run and the problem."""
    if len(data) > MAX_RESULT_BYTES:
        raise ValueError(f"{name}: larger than {MAX_RESULT_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not UTF-8 text") from None
    try:
        parsed: Any = loads(text, f"{name}: ", constants=True)
        items = parsed if isinstance(parsed, list) else [parsed]
    except JsonRefused as exc:
        if not exc.syntax:
            raise
        items = _json_lines(text, name)
    if not items:
        raise ValueError(f"{name}: no runs")
    check_run_count(len(items), f"{name}: ")
    return [_run(d, f"{name} run {i + 1}" if len(items) > 1 else name) for i, d in enumerate(items)]
