"""The benchmark's results file: schema, validation, and its three exports.

``BenchResults`` (pydantic, extra fields forbidden, no NaN/inf) is both what
``run.py`` writes and the gate for any file read back (the dashboard's upload,
the committed files): ``parse_results`` returns a validated object or raises
``ValueError`` with one ``field: message`` per problem.  Files are plain JSON;
nothing is executed or unpickled.

Exports: the JSON itself; a CSV with one row per (case, profile) through
``planner.export`` (formula-like cells neutralised); and the calibrated
hardware profile as TOML in the ``hardware_profiles/`` schema (``GpuProfileFile``).
"""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner import jsonfile, tomlfile
from planner.bench.plan import PHASES, Phase
from planner.errors import format_validation_error
from planner.export import frame_to_csv, present_frame
from planner.model.specs import KEY_PATTERN, GpuProfileFile, ModelSpec
from planner.units import MiB

SCHEMA_VERSION: Final = 2
#: Largest results file accepted (a full run is ~60 KB).
MAX_RESULTS_BYTES = 5 * MiB
_STRICT = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

ProfileLabel = Literal["datasheet", "calibrated"]


class DeviceInfo(BaseModel):
    model_config = _STRICT

    kind: Literal["cpu", "cuda"]
    name: str = Field(min_length=1, max_length=200)
    slug: str = Field(pattern=KEY_PATTERN, description="file stem of the results and the calibrated profile key")
    backend: Literal["numpy", "torch"]
    dtype: Literal["fp32", "bf16"]
    bytes_per_element: float = Field(gt=0, le=8)
    threads: int | None = Field(ge=1, le=4096)
    thread_note: str = Field(max_length=300)
    malloc_note: str = Field(max_length=200)
    linear_note: str = Field(default="", max_length=400, description="the linear layers' kernels and weight layout")
    llc_bytes: float | None = Field(ge=0, le=1e12)
    memory_bytes: float = Field(gt=0, le=1e14)
    host: str = Field(max_length=200)
    date_utc: str = Field(max_length=40)
    load_average: tuple[float, float] = Field(description="1-minute load average before and after the run")
    profile_key: str | None = Field(pattern=KEY_PATTERN, description="matching datasheet profile in hardware_profiles/")
    versions: dict[str, str]
    quick: bool


class MatmulRow(BaseModel):
    model_config = _STRICT

    size: int = Field(ge=1, le=1_000_000)
    flop: float = Field(gt=0)
    median_s: float = Field(gt=0)
    flop_per_s: float = Field(gt=0)


class BandwidthRow(BaseModel):
    model_config = _STRICT

    kernel: Literal["copy", "sum", "gemv"]
    buffer_bytes: float = Field(gt=0)
    bytes_moved: float = Field(gt=0)
    median_s: float = Field(gt=0)
    bytes_per_s: float = Field(gt=0)


class OverlapRow(BaseModel):
    """The linear kernel with ``rows`` token rows over the gemv weight (micro.measure_overlap)."""

    model_config = _STRICT

    rows: int = Field(ge=1, le=1_000_000)
    flop: float = Field(gt=0)
    bytes: float = Field(gt=0)
    median_s: float = Field(gt=0)
    overlap: float = Field(ge=-1, le=1, description="o from this row with the calibrated peak and bandwidth")


class AttentionRow(BaseModel):
    """The decoder's attention kernel at a decode or a prefill shape (micro.measure_attention)."""

    model_config = _STRICT

    kind: Literal["decode", "prefill"]
    seqs: int = Field(ge=1)
    queries: int = Field(ge=1)
    keys: int = Field(ge=1)
    flop: float = Field(gt=0)
    bytes: float = Field(gt=0)
    median_s: float = Field(gt=0)


class RoundRow(BaseModel):
    """What one calibration round measured; the calibrated profile takes the median of each."""

    model_config = _STRICT

    peak_flop_per_s: float = Field(gt=0)
    bandwidth_bytes_per_s: float = Field(gt=0)
    compute_memory_overlap: float = Field(ge=-1, le=1)
    attention_compute_frac: float = Field(ge=0, le=1)
    attention_bandwidth_frac: float = Field(ge=0, le=1)


class ProfileUsed(BaseModel):
    model_config = _STRICT

    label: ProfileLabel
    key: str = Field(pattern=KEY_PATTERN)
    peak_flop_per_s: float = Field(gt=0)
    bandwidth_bytes_per_s: float = Field(gt=0)
    mfu: float = Field(gt=0, le=1)
    mbu: float = Field(gt=0, le=1)
    compute_memory_overlap: float = Field(default=1.0, ge=-1, le=1)
    attention_compute_frac: float = Field(default=1.0, gt=0, le=1)
    attention_bandwidth_frac: float = Field(default=1.0, gt=0, le=1)
    source: str = Field(max_length=2000)


class Prediction(BaseModel):
    model_config = _STRICT

    time_s: float = Field(gt=0)
    compute_s: float = Field(ge=0)
    memory_s: float = Field(ge=0)
    flop: float = Field(ge=0)
    bytes: float = Field(ge=0)
    compute_bound: bool
    error_frac: float = Field(ge=-1, le=1e6)
    serial_s: float = Field(gt=0, description="compute_s + memory_s + comm: no overlap (diagnostic)")
    serial_error_frac: float = Field(ge=-1, le=1e6)


class CaseResult(BaseModel):
    model_config = _STRICT

    phase: Phase
    seqs: int = Field(ge=0, le=1_000_000)
    q: int = Field(ge=1, le=1024)
    ctx: int = Field(ge=0, le=100_000_000)
    n: int = Field(ge=0, le=100_000_000)
    past: int = Field(ge=0, le=100_000_000)
    tokens: int = Field(ge=1)
    measured_s: float = Field(gt=0)
    samples_s: list[float] = Field(min_length=1, max_length=1000)
    timing: str = Field(max_length=200, description="eager, or cuda-graph replay")
    predictions: dict[ProfileLabel, Prediction]

    @model_validator(mode="after")
    def _shape_matches_phase(self) -> CaseResult:
        if self.tokens != self.seqs * self.q + self.n:
            raise ValueError(f"tokens={self.tokens} must equal seqs·q + n = {self.seqs * self.q + self.n}")
        rules = {
            "prefill": self.seqs == 0 and self.n > 0,
            "decode": self.seqs > 0 and self.q == 1 and self.n == 0,
            "mixed": self.seqs > 0 and self.n > 0,
            "verify": self.seqs > 0 and self.q > 1 and self.n == 0,
        }
        if not rules[self.phase]:
            raise ValueError(f"shape (seqs={self.seqs}, q={self.q}, n={self.n}) is not a {self.phase} step")
        return self


class PhaseSummary(BaseModel):
    model_config = _STRICT

    profile: ProfileLabel
    phase: Phase
    cases: int = Field(ge=1)
    median_abs_error_frac: float = Field(ge=0)
    median_abs_serial_error_frac: float = Field(ge=0)


class RidgeRow(BaseModel):
    model_config = _STRICT

    ctx: int = Field(ge=0)
    measured_batch: float | None = Field(gt=0, description="predict.ridge_batch_fit on the measured times")
    predicted_batch: dict[ProfileLabel, float | None] = Field(description="the same fit on the predicted times")
    engine_batch: dict[ProfileLabel, float | None] = Field(description="roofline.ridge_batch at this context")


class KernelTableData(BaseModel):
    """One table of the run's kernel table (``planner.bench.kernels``): class keys, axes and milliseconds
    per call (``None`` = not measured), in ``planner.kernels.format``'s layout."""

    model_config = _STRICT

    name: Literal["gemm", "context_attention", "generation_attention", "allreduce"]
    keys: dict[str, list[int] | list[str]]
    axes: list[list[float]] = Field(min_length=1, max_length=2)
    latency_ms: list[list[float | None]] | list[list[list[float | None]]] = Field(
        max_length=10_000, description="[class][axis 0]([axis 1]) milliseconds; null = not measured"
    )

    @model_validator(mode="after")
    def _shape(self) -> KernelTableData:
        want = (len(self.latency_ms), *(len(a) for a in self.axes))
        try:
            ms = np.array(self.latency_ms, dtype=float)  # null → NaN
        except ValueError:
            raise ValueError("latency_ms: must be a rectangular array") from None
        if ms.shape != want or any(len(v) != want[0] for v in self.keys.values()):
            raise ValueError(f"latency_ms: shape {ms.shape}, its keys and axes say {want}")
        if (ms[~np.isnan(ms)] <= 0).any():
            raise ValueError("latency_ms: every measured cell must be > 0")
        return self

    def arrays(self) -> tuple[dict[str, np.ndarray], tuple[np.ndarray, ...], np.ndarray]:
        """(keys by column, axes, milliseconds with NaN) for ``planner.kernels.format.write_table``."""
        keys = {k: np.array(v, dtype=np.int64 if v and isinstance(v[0], int) else str) for k, v in self.keys.items()}
        return keys, tuple(np.array(a, dtype=float) for a in self.axes), np.array(self.latency_ms, dtype=float)


class KernelTableResult(BaseModel):
    """The run's own kernel table (written beside the results as ``<slug>.kernels.npz``)."""

    model_config = _STRICT

    gpu: str = Field(
        pattern=KEY_PATTERN, description="the table's GPU key: the matched datasheet profile, else the slug"
    )
    device_name: str = Field(max_length=200)
    engine_version: str = Field(max_length=40, description="kvplan's version (the table's engine is '*')")
    measured_by: str = Field(max_length=400)
    source: str = Field(max_length=2000)
    created_utc: str = Field(max_length=40)
    tables: list[KernelTableData] = Field(max_length=10)
    measured_cells: int = Field(ge=0)
    planned_cells: int = Field(ge=0)
    skipped: list[str] = Field(default_factory=list, max_length=1000)


class BenchResults(BaseModel):
    model_config = _STRICT

    schema_version: Literal[2]
    device: DeviceInfo
    model: ModelSpec
    weight_bytes: float = Field(gt=0)
    matmul: list[MatmulRow] = Field(min_length=1, max_length=100, description="median over the rounds, per size")
    bandwidth: list[BandwidthRow] = Field(
        min_length=1, max_length=100, description="median over the rounds, per kernel"
    )
    overlap: list[OverlapRow] = Field(min_length=1, max_length=100, description="median over the rounds, per row count")
    attention: list[AttentionRow] = Field(min_length=1, max_length=10, description="median over the rounds, per shape")
    rounds: list[RoundRow] = Field(min_length=1, max_length=1000)
    measured_peak_flop_per_s: float = Field(gt=0)
    measured_bandwidth_bytes_per_s: float = Field(gt=0, description="the calibration's: micro.CALIBRATION_KERNEL")
    measured_compute_memory_overlap: float = Field(ge=-1, le=1)
    measured_attention_compute_frac: float = Field(ge=0, le=1)
    measured_attention_bandwidth_frac: float = Field(ge=0, le=1)
    profiles: list[ProfileUsed] = Field(min_length=1, max_length=2)
    cases: list[CaseResult] = Field(min_length=1, max_length=10_000)
    summary: list[PhaseSummary] = Field(max_length=100)
    ridge: list[RidgeRow] = Field(max_length=100)
    skipped: list[str] = Field(max_length=10_000)
    calibrated_profile: GpuProfileFile
    wall_s: float = Field(gt=0)
    budget_s: float | None = Field(default=None, gt=0, description="the time budget the run was sized to")
    budget_notes: list[str] = Field(default_factory=list, max_length=100, description="what the budget changed")
    kernel_table: KernelTableResult | None = None

    @model_validator(mode="after")
    def _consistent(self) -> BenchResults:
        labels = {p.label for p in self.profiles}
        if "calibrated" not in labels:
            raise ValueError("profiles must include the calibrated profile")
        for i, c in enumerate(self.cases):
            if set(c.predictions) != labels:
                raise ValueError(
                    f"cases.{i}: predictions for {sorted(c.predictions)} but profiles are {sorted(labels)}"
                )
        if not self.calibrated_profile.calibrated:
            raise ValueError("calibrated_profile.calibrated must be true")
        return self

    def profile(self, label: str) -> ProfileUsed | None:
        return next((p for p in self.profiles if p.label == label), None)


def parse_results(data: str | bytes) -> BenchResults:
    """Validate a results file's text; ValueError with a readable message if it is not one."""
    if len(data) > MAX_RESULTS_BYTES:
        raise ValueError(f"file is {len(data):,} bytes; a results file is at most {MAX_RESULTS_BYTES:,}")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8 text; expected the JSON written by `python -m planner bench`") from None
    try:
        raw = jsonfile.loads(data)
    except jsonfile.JsonRefused as exc:
        raise ValueError(f"not a results file: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object at the top level")
    found = raw.get("schema_version")
    if isinstance(found, int) and not isinstance(found, bool) and 1 <= found < SCHEMA_VERSION:
        raise ValueError(
            f"schema_version: {found} is an older benchmark's format (this version reads {SCHEMA_VERSION}: "
            "calibration rounds, overlap and attention); run `python -m planner bench` again"
        )
    if found != SCHEMA_VERSION:
        raise ValueError(f"schema_version: expected {SCHEMA_VERSION}, found {found!r}")
    try:
        return BenchResults.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def results_json(r: BenchResults) -> str:
    return r.model_dump_json(indent=1) + "\n"


def cases_frame(r: BenchResults) -> pd.DataFrame:
    """One row per (case, profile): shape, measured and predicted seconds, error."""
    rows = []
    for c in r.cases:
        for label, p in c.predictions.items():
            rows.append(
                dict(
                    device=r.device.name,
                    backend=r.device.backend,
                    dtype=r.device.dtype,
                    phase=c.phase,
                    seqs=c.seqs,
                    q=c.q,
                    ctx=c.ctx,
                    n=c.n,
                    past=c.past,
                    tokens=c.tokens,
                    measured_s=c.measured_s,
                    profile=label,
                    predicted_s=p.time_s,
                    predicted_compute_s=p.compute_s,
                    predicted_memory_s=p.memory_s,
                    predicted_flop=p.flop,
                    predicted_bytes=p.bytes,
                    predicted_bound="compute" if p.compute_bound else "memory",
                    error_frac=p.error_frac,
                    serial_s=p.serial_s,
                    serial_error_frac=p.serial_error_frac,
                )
            )
    return pd.DataFrame(rows)


def results_csv(r: BenchResults) -> str:
    return frame_to_csv(present_frame(cases_frame(r)))


def summary_frame(r: BenchResults) -> pd.DataFrame:
    """Median |error| per (profile, phase), phases in plan order."""
    order = {p: i for i, p in enumerate(PHASES)}
    rows = sorted(r.summary, key=lambda s: (s.profile, order[s.phase]))
    return pd.DataFrame(
        [
            dict(
                profile=s.profile,
                phase=s.phase,
                cases=s.cases,
                median_abs_error_pct=100 * s.median_abs_error_frac,
                median_abs_serial_error_pct=100 * s.median_abs_serial_error_frac,
            )
            for s in rows
        ]
    )


def profile_toml(p: GpuProfileFile) -> str:
    """The profile in ``hardware_profiles/*.toml`` form (loads with ``catalog.parse_gpu_toml``)."""
    return tomlfile.dumps(
        p.model_dump(exclude_none=True),
        comment="Calibrated by `python -m planner bench`: peaks are measured, not datasheet figures.",
    )


def ridge_frame(r: BenchResults) -> pd.DataFrame:
    """Batch where decode turns compute-bound, per context: measured fit vs each profile."""
    labels = [p.label for p in r.profiles]

    def cell(v: float | None) -> str:
        return "no crossing" if v is None else f"{v:.1f}"

    return pd.DataFrame(
        [
            {"context (tokens)": row.ctx, "measured": cell(row.measured_batch)}
            | {f"predicted ({label})": cell(row.predicted_batch.get(label)) for label in labels}
            | {f"ridge_batch ({label})": cell(row.engine_batch.get(label)) for label in labels}
            for row in r.ridge
        ]
    )


def steps_frame(r: BenchResults, profile: ProfileLabel, phases: tuple[str, ...]) -> pd.DataFrame:
    """Cases of ``phases`` with measured and predicted ms and the error in %, for display."""
    rows = []
    for c in r.cases:
        if c.phase not in phases:
            continue
        p = c.predictions[profile]
        rows.append(
            {
                "phase": c.phase,
                "sequences": c.seqs,
                "tokens each": c.q,
                "context": c.ctx,
                "prompt tokens": c.n,
                "cached prompt": c.past,
                "measured (ms)": 1e3 * c.measured_s,
                "predicted (ms)": 1e3 * p.time_s,
                "error (%)": 100 * p.error_frac,
                "predicted bound": "compute" if p.compute_bound else "memory",
            }
        )
    return pd.DataFrame(rows)
