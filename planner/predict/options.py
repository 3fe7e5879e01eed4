"""The settings of one ``vllm bench serve`` run (or ``trtllm-bench throughput`` with
``max_throughput``), validated at the boundary: every option is named as the benchmark names it
and bounded, and a bad one is refused naming the option, the rule and the allowed values.

vLLM's defaults (vllm/benchmarks/serve.py and benchmarks/datasets/datasets.py, v0.33.0):
``--num-prompts`` 1000, ``--request-rate`` inf, ``--burstiness`` 1, ``--max-concurrency`` none,
``--seed`` 0, ``--random-range-ratio`` 0, ``--random-prefix-len`` 0, ``--metric-percentiles`` 99.
Two are kvplan's: ``--random-input-len`` / ``--random-output-len`` default to the link's ``prompt``
and ``output`` (vLLM's own defaults are 1024 and 128: pass them to match a run that relied on
them), and ``--percentile-metrics`` defaults to ttft,tpot,itl,e2el (vLLM's default leaves out
e2el, which its result JSON then lacks).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from planner.errors import ProblemsError
from planner.sim.serve_metrics import DEFAULT_METRICS, DEFAULT_PERCENTILES, LATENCIES

#: The most requests one prediction simulates (the simulator's own run limit, ``Scenario.sim_requests``).
MAX_PROMPTS = 100_000
#: vLLM's defaults (module doc).
VLLM_NUM_PROMPTS = 1000

#: CLI spelling of each field, for messages.
OPTION_NAMES = {
    "num_prompts": "--num-prompts",
    "max_concurrency": "--max-concurrency",
    "request_rate_per_s": "--request-rate",
    "burstiness": "--burstiness",
    "input_len": "--random-input-len",
    "output_len": "--random-output-len",
    "input_range_ratio": "--random-range-ratio",
    "output_range_ratio": "--random-range-ratio",
    "prefix_len": "--random-prefix-len",
    "seed": "--seed",
    "percentile_metrics": "--percentile-metrics",
    "metric_percentiles": "--metric-percentiles",
    "max_throughput": "--max-throughput",
}


class PredictOptions(BaseModel):
    """One benchmark run's settings (module doc).  ``request_rate_per_s`` = inf: every request at t = 0."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    num_prompts: int = Field(default=VLLM_NUM_PROMPTS, ge=1, le=MAX_PROMPTS)
    max_concurrency: int | None = Field(default=None, ge=1, le=1_000_000)
    request_rate_per_s: float = Field(default=math.inf, gt=0)
    burstiness: float = Field(default=1.0, gt=0)
    input_len: int = Field(default=1024, ge=1, le=10_000_000)
    output_len: int = Field(default=128, ge=1, le=1_000_000)
    input_range_ratio: float = Field(default=0.0, ge=0.0, lt=1.0)
    output_range_ratio: float = Field(default=0.0, ge=0.0, lt=1.0)
    prefix_len: int = Field(default=0, ge=0, le=10_000_000)
    seed: int = Field(default=0, ge=0, le=2**32 - 1)
    percentile_metrics: tuple[str, ...] = DEFAULT_METRICS
    metric_percentiles: tuple[float, ...] = DEFAULT_PERCENTILES
    max_throughput: bool = False
    trace_timed: bool = Field(default=False, description="a trace replayed on its own clock (no --request-rate)")

    @field_validator("percentile_metrics")
    @classmethod
    def _known_metrics(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [m for m in v if m not in LATENCIES]
        if bad or not v:
            raise ValueError(f"{', '.join(bad) or 'nothing'}: each one of {', '.join(LATENCIES)}")
        return tuple(dict.fromkeys(v))

    @field_validator("metric_percentiles")
    @classmethod
    def _percentiles(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        if not v or any(not (0.0 < p <= 100.0) for p in v):
            raise ValueError("each percentile must be in (0, 100], e.g. 50,90,99")
        return v

    @model_validator(mode="after")
    def _modes(self) -> PredictOptions:
        if self.max_throughput and (self.max_concurrency is not None or math.isfinite(self.request_rate_per_s)):
            raise ValueError(
                "--max-throughput is trtllm-bench's offline run: every request queued at once; "
                "drop --max-concurrency and --request-rate"
            )
        if self.prefix_len + math.floor(self.input_len * (1 - self.input_range_ratio)) < 1:
            raise ValueError(
                "--random-input-len is too small: with this --random-range-ratio a prompt could have 0 tokens "
                "(vLLM refuses it too); raise --random-input-len or --random-prefix-len, or lower the ratio"
            )
        if self.max_throughput and (self.input_range_ratio or self.output_range_ratio):
            raise ValueError(
                "--max-throughput uses fixed lengths (trtllm-bench's synthetic ISL/OSL): drop --random-range-ratio"
            )
        return self

    @property
    def closed_loop(self) -> bool:
        return self.max_concurrency is not None


def parse_list(text: str, option: str) -> list[str]:
    """A comma-separated CLI value, stripped; empty items dropped."""
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_rate(text: str, option: str) -> float:
    """A positive number or ``inf`` (vLLM accepts ``--request-rate inf``)."""
    try:
        v = float(text)
    except ValueError:
        raise ProblemsError([f"{option} {text!r}: a number > 0, or inf"]) from None
    if not v > 0 or math.isnan(v):
        raise ProblemsError([f"{option} {text!r}: a number > 0, or inf"])
    return v


def parse_percentiles(text: str) -> tuple[float, ...]:
    out = []
    for item in parse_list(text, "--metric-percentiles"):
        try:
            out.append(float(item))
        except ValueError:
            raise ProblemsError([f"--metric-percentiles {item!r}: numbers in (0, 100], e.g. 50,90,99"]) from None
    return tuple(out)


def parse_range_ratio(text: str) -> tuple[float, float]:
    """vLLM's ``--random-range-ratio``: one number for both lengths, or its JSON dict
    ``{"input": R, "output": R}`` (datasets.py ``_parse_range_ratio``)."""
    import json

    try:
        v = float(text)
        return v, v
    except ValueError:
        pass
    try:
        d = json.loads(text)
    except ValueError:
        d = None
    if not isinstance(d, dict) or set(d) != {"input", "output"}:
        raise ProblemsError(
            [
                f"--random-range-ratio {text!r}: a number in [0, 1), or a JSON dict with both keys, "
                'like {"input": 0.3, "output": 0.5}'
            ]
        )
    try:
        return float(d["input"]), float(d["output"])
    except (TypeError, ValueError):
        raise ProblemsError([f"--random-range-ratio {text!r}: the ratios must be numbers in [0, 1)"]) from None


def options(**values: object) -> PredictOptions:
    """``PredictOptions`` or a ProblemsError with one line per bad option, named as the CLI spells it."""
    try:
        return PredictOptions.model_validate(values)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            field = str(e["loc"][0]) if e["loc"] else ""
            name = OPTION_NAMES.get(field, field)
            msg = str(e["msg"]).removeprefix("Value error, ")
            value = e.get("input")
            shown = ",".join(map(str, value)) if isinstance(value, tuple) else repr(value)
            got = f" (got {shown})" if field and not isinstance(value, dict) else ""
            problems.append(f"{name}: {msg}{got}" if name else msg)
        raise ProblemsError(list(dict.fromkeys(problems))) from None
