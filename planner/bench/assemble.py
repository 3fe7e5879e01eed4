"""A benchmark run's measurements turned into its results file: the profiles it is compared with,
the engine's prediction for every case, the per-phase summary, the ridge rows and the device
facts (``planner.bench.results`` is the schema; ``planner.bench.run`` measures)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Literal

from planner.bench.plan import PHASES, Case, Plan
from planner.bench.predict import (
    engine_inputs,
    error_frac,
    median_abs_error,
    predict_cases,
    predicted_ridge_batch,
    ridge_batch_fit,
)
from planner.bench.results import (
    SCHEMA_VERSION,
    AttentionRow,
    BandwidthRow,
    BenchResults,
    CaseResult,
    DeviceInfo,
    MatmulRow,
    OverlapRow,
    PhaseSummary,
    Prediction,
    ProfileLabel,
    ProfileUsed,
    RidgeRow,
    RoundRow,
)
from planner.model.engine_timing import LEGACY_BANDWIDTH_FRAC, LEGACY_MATMUL_FRAC
from planner.model.scenario import Scenario
from planner.model.specs import GPU, GpuProfileFile, ModelSpec


@dataclass(frozen=True)
class Measurement:
    """Everything ``run_bench`` measured and chose, before it becomes a ``BenchResults``."""

    device: Literal["cpu", "cuda"]
    dev: Any  # run.Device
    be: Any  # the backend
    plan: Plan
    model: ModelSpec
    weight_bytes: float
    measured: dict[Case, Any]  # run.Timing per case
    skipped: list[str]
    cal: Any  # run.Calibration
    cal_file: GpuProfileFile
    profiles: list[ProfileUsed]
    gpus: dict[str, GPU]
    slug: str
    when: str
    quick: bool
    load_before: float
    malloc_note: str
    t_start: float
    budget_s: float | None = None
    budget_notes: list[str] | None = None
    kernel_table: Any = None  # results.KernelTableResult | None


def profiles_used(
    cal_file: GpuProfileFile, cal_gpu: GPU, slug: str, datasheet: GPU | None
) -> tuple[list[ProfileUsed], dict[str, GPU]]:
    """The calibrated profile (at its achieved rates: MFU = MBU = 1) and, where the device has one,
    the datasheet profile at the constants a scenario without an engine profile uses."""
    profiles = [
        ProfileUsed(
            label="calibrated",
            key=slug,
            peak_flop_per_s=cal_gpu.peak_for("bf16"),
            bandwidth_bytes_per_s=cal_gpu.memory_bandwidth_bytes_per_s,
            mfu=1.0,
            mbu=1.0,
            compute_memory_overlap=cal_gpu.compute_memory_overlap,
            attention_compute_frac=cal_gpu.attention_compute_frac,
            attention_bandwidth_frac=cal_gpu.attention_bandwidth_frac,
            source=cal_file.source,
        )
    ]
    gpus = {"calibrated": cal_gpu}
    if datasheet is not None:
        d = Scenario()
        profiles.append(
            ProfileUsed(
                label="datasheet",
                key=datasheet.key,
                peak_flop_per_s=datasheet.peak_for("bf16"),
                bandwidth_bytes_per_s=datasheet.memory_bandwidth_bytes_per_s,
                mfu=d.mfu if d.mfu is not None else LEGACY_MATMUL_FRAC,
                mbu=d.mbu if d.mbu is not None else LEGACY_BANDWIDTH_FRAC,
                source=datasheet.source[:2000],
            )
        )
        gpus["datasheet"] = datasheet
    return profiles, gpus


def _prediction_rows(x: Any, cases: list[Case], measured: list[float]) -> list[Prediction]:
    """The engine's prediction for each case, beside its measured time (and the serial c + m + comm)."""
    cost = predict_cases(x, cases)
    out = []
    for i, m in enumerate(measured):
        t = float(cost.time_s[i])
        serial = float(cost.compute_s[i] + cost.memory_s[i] + cost.comm_s[i])
        out.append(
            Prediction(
                time_s=t,
                compute_s=float(cost.compute_s[i]),
                memory_s=float(cost.memory_s[i]),
                flop=float(cost.flop[i]),
                bytes=float(cost.bytes[i]),
                compute_bound=bool(cost.compute_bound[i]),
                error_frac=error_frac(t, m),
                serial_s=serial,
                serial_error_frac=error_frac(serial, m),
            )
        )
    return out


def case_rows(m: Measurement) -> tuple[list[CaseResult], dict[ProfileLabel, Any]]:
    """One row per measured case with every profile's prediction; and each profile's engine inputs."""
    cases = [c for c in m.plan.cases if c in m.measured]
    times = [m.measured[c].median_s for c in cases]
    inputs = {
        p.label: engine_inputs(m.gpus[p.label], m.model, m.be.bytes_per_element, p.mfu, p.mbu) for p in m.profiles
    }
    preds = {label: _prediction_rows(x, cases, times) for label, x in inputs.items()}
    rows = [
        CaseResult(
            phase=c.phase,
            seqs=c.seqs,
            q=c.q,
            ctx=c.ctx,
            n=c.n,
            past=c.past,
            tokens=c.tokens,
            measured_s=m.measured[c].median_s,
            samples_s=m.measured[c].samples_s,
            timing=m.measured[c].how,
            predictions={label: preds[label][i] for label in preds},
        )
        for i, c in enumerate(cases)
    ]
    return rows, inputs


def phase_summary(rows: list[CaseResult], labels: list[ProfileLabel]) -> list[PhaseSummary]:
    """Median |error| per profile and phase."""
    summary = []
    for label in labels:
        for phase in PHASES:
            of_phase = [r.predictions[label] for r in rows if r.phase == phase]
            if of_phase:
                summary.append(
                    PhaseSummary(
                        profile=label,
                        phase=phase,
                        cases=len(of_phase),
                        median_abs_error_frac=median_abs_error([p.error_frac for p in of_phase]),
                        median_abs_serial_error_frac=median_abs_error([p.serial_error_frac for p in of_phase]),
                    )
                )
    return summary


def ridge_rows(rows: list[CaseResult], inputs: dict[ProfileLabel, Any]) -> list[RidgeRow]:
    """Per decode context: the batch where the measured, each profile's predicted and the engine's
    own ridge curve turn compute-bound."""
    ridge = []
    for ctx in sorted({r.ctx for r in rows if r.phase == "decode"}):
        dec = [r for r in rows if r.phase == "decode" and r.ctx == ctx]
        batches = [r.seqs for r in dec]
        ridge.append(
            RidgeRow(
                ctx=ctx,
                measured_batch=ridge_batch_fit(batches, [r.measured_s for r in dec]),
                predicted_batch={
                    label: ridge_batch_fit(batches, [r.predictions[label].time_s for r in dec]) for label in inputs
                },
                engine_batch={label: predicted_ridge_batch(x, ctx) for label, x in inputs.items()},
            )
        )
    return ridge


def device_info(m: Measurement) -> DeviceInfo:
    be, dev = m.be, m.dev
    return DeviceInfo(
        kind=m.device,
        name=dev.name[:200],
        slug=m.slug,
        backend=be.name,
        dtype=be.dtype_name,
        bytes_per_element=be.bytes_per_element,
        threads=be.threads,
        thread_note=be.thread_note[:300],
        malloc_note=m.malloc_note,
        linear_note=be.linear_note[:400],
        llc_bytes=dev.llc_bytes,
        memory_bytes=dev.memory_bytes,
        host=_host_name()[:200],
        date_utc=m.when,
        load_average=(m.load_before, os.getloadavg()[0]),
        profile_key=dev.profile_key,
        versions=be.versions(),
        quick=m.quick,
    )


def _host_name() -> str:
    from planner.bench import host

    return host.host_name()


def calibration_fields(cal: Any) -> dict[str, Any]:
    """The calibration's rows (matmul, bandwidth, overlap, attention, rounds) and its medians."""
    return dict(
        matmul=[MatmulRow(size=m.size, flop=m.flop, median_s=m.median_s, flop_per_s=m.flop_per_s) for m in cal.matmul],
        bandwidth=[
            BandwidthRow(
                kernel=b.kernel,
                buffer_bytes=b.buffer_bytes,
                bytes_moved=b.bytes_moved,
                median_s=b.median_s,
                bytes_per_s=b.bytes_per_s,
            )
            for b in cal.bandwidth
        ],
        overlap=[
            OverlapRow(
                rows=o.rows,
                flop=o.flop,
                bytes=o.bytes,
                median_s=o.median_s,
                overlap=o.overlap(cal.peak_flop_per_s, cal.bandwidth_bytes_per_s),
            )
            for o in cal.overlap
        ],
        attention=[
            AttentionRow(
                kind=a.kind,
                seqs=a.seqs,
                queries=a.queries,
                keys=a.keys,
                flop=a.flop,
                bytes=a.bytes,
                median_s=a.median_s,
            )
            for a in cal.attention
        ],
        rounds=[
            RoundRow(
                peak_flop_per_s=r.peak_flop_per_s,
                bandwidth_bytes_per_s=r.bandwidth_bytes_per_s,
                compute_memory_overlap=r.compute_memory_overlap,
                attention_compute_frac=r.attention_compute_frac,
                attention_bandwidth_frac=r.attention_bandwidth_frac,
            )
            for r in cal.rounds
        ],
        measured_peak_flop_per_s=cal.peak_flop_per_s,
        measured_bandwidth_bytes_per_s=cal.bandwidth_bytes_per_s,
        measured_compute_memory_overlap=cal.compute_memory_overlap,
        measured_attention_compute_frac=cal.attention_compute_frac,
        measured_attention_bandwidth_frac=cal.attention_bandwidth_frac,
    )


def assemble_results(m: Measurement) -> BenchResults:
    """The results file of a run (``planner.bench.results.BenchResults``)."""
    rows, inputs = case_rows(m)
    return BenchResults(
        schema_version=SCHEMA_VERSION,
        device=device_info(m),
        model=m.model,
        weight_bytes=m.weight_bytes,
        **calibration_fields(m.cal),
        profiles=m.profiles,
        cases=rows,
        summary=phase_summary(rows, list(inputs)),
        ridge=ridge_rows(rows, inputs),
        skipped=m.skipped,
        calibrated_profile=m.cal_file,
        wall_s=max(time.perf_counter() - m.t_start, 1e-9),
        budget_s=m.budget_s,
        budget_notes=m.budget_notes or [],
        kernel_table=m.kernel_table,
    )
