"""Calibrate the scenario's engine × GPU to the user's own serving benchmark, in seconds.

Each ``ServingRun`` (``serving_results``) gives two measured points at its load — the median
TTFT and the median TPOT at mean concurrency N with its mean prompt and output lengths —
predicted as ``points.Kind`` ``serving_ttft`` and ``serving_tpot``.  The fit
(``fit.levenberg_marquardt``, log errors, priors at the profile's values) moves the handful
of parameters such runs pin down:

  matmul_frac (or matmul_frac_8bit for fp8/int8/fp4 weights)   TTFT of long prompts
  bandwidth_frac                                              TPOT at low concurrency
  step_overhead_s, layer_overhead_s, decode_layer_overhead_s  short prompts, small batches
  attention_bandwidth_frac                                    TPOT at high concurrency × context

and keeps the rest of the profile.  The result is the link form (``timing=…``, which the
scenario then carries) and a complete engine-profile TOML with the fitted values for the
GPU's family, to save as ``engine_profiles/<key>.toml``.
Queueing is not modelled: a run far past saturation (TTFT dominated by waiting) is fitted
badly and its point says so (measured ≫ predicted).
A run against a fleet of ``replicas`` replicas behind a router (the benchmark job ``kvplan deploy`` writes
calls the fleet's endpoint at the whole fleet's rate) is one replica's load × replicas: each point is fitted
at N / replicas and λ / replicas.  A fleet with a separate prefill pool is not one colocated replica's
model and is refused (benchmark a colocated deployment to calibrate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from planner import tomlfile
from planner.calibration.fit import Transform, from_u, levenberg_marquardt, to_u
from planner.calibration.points import PARAMS, Point, PointSet
from planner.calibration.serving_results import ServingRun
from planner.engine.inputs import compute_dtype, timing_for
from planner.errors import ProblemsError, ScenarioError
from planner.format import fmt_num, fmt_pct, fmt_seconds
from planner.model.catalog import Catalog
from planner.model.engine_profile import EngineProfile
from planner.model.engine_timing import (
    FRACTION_FIELDS,
    FamilyTiming,
    ResolvedTiming,
    format_overrides,
    override_problem,
)
from planner.model.scenario import Scenario
from planner.model.specs import GPU
from planner.model.weight_plan import resolve_weights
from planner.units import US_PER_S

#: parameter → (transform, prior sd in u units): how far the data may move it from the profile
FITTED: dict[str, tuple[Transform, float]] = {
    "matmul_frac": ("frac", 1.0),
    "bandwidth_frac": ("frac", 1.0),
    "attention_bandwidth_frac": ("frac", 1.0),
    "step_overhead_s": ("positive", 1.5),
    "layer_overhead_s": ("positive", 1.5),
    "decode_layer_overhead_s": ("positive", 1.5),
}
MEASUREMENT_SD = 0.05  # log error of a benchmark's median
MIN_OVERHEAD_S = 1e-7  # a zero overhead starts the log-space fit here
#: A calibration is handed out only when it describes the runs: median |error| after the fit at most this
#: (a good one is within a few percent; past it the runs were not measured on the link's deployment, or far
#: past saturation) and every fitted efficiency at least ``MIN_FITTED_FRAC`` of the datasheet figure.
MAX_FIT_ERROR_FRAC = 0.5
MIN_FITTED_FRAC = 0.01
_ADVICE = (
    "check that the link is the benchmarked deployment (gpu, model, tp, dtypes) and that the runs are not saturated"
)


class CalibrationError(ProblemsError):
    """A fit that is not handed out: it does not describe the runs, or a fitted value is not physical."""


@dataclass(frozen=True)
class Calibration:
    """The fitted parameters and every point before and after."""

    values: dict[str, float]  # the fitted parameters (SI), ResolvedTiming names
    overrides: str  # their link form: the scenario's ``timing`` value
    labels: list[str]
    kinds: list[str]
    measured: np.ndarray
    before: np.ndarray  # predicted by the profile in force
    after: np.ndarray  # predicted with the fitted values

    @property
    def median_abs_error_before(self) -> float:
        return float(np.median(np.abs(self.before / self.measured - 1.0)))

    @property
    def median_abs_error_after(self) -> float:
        return float(np.median(np.abs(self.after / self.measured - 1.0)))


def run_points(runs: Sequence[ServingRun], base: Scenario) -> list[Point]:
    """Two points per run (TTFT, TPOT) on the scenario's deployment at the run's load and lengths."""
    out = []
    share = base.replicas  # the run's load is spread over the fleet's replicas (module doc)
    for r in runs:
        try:
            s = base.with_changes(
                prompt=max(round(r.mean_prompt_tokens), 1),
                output=max(round(r.mean_output_tokens), 1),
                batch=max(round(r.concurrency / share), 1),
                prefix=0,
                spec=False,
                timing="",
            )
        except ScenarioError as exc:  # a mean length or load past what a scenario may hold
            raise ValueError(
                f"{r.label}: its mean prompt ({fmt_num(r.mean_prompt_tokens)} tokens), output "
                f"({fmt_num(r.mean_output_tokens)}) or concurrency ({fmt_num(r.concurrency)}) is outside what kvplan "
                f"plans: {'; '.join(exc.problems)}"
            ) from None
        load = f"{r.label}: N ≈ {r.concurrency / share:.3g}" + (f" per replica of {share}" if share > 1 else "")
        rate = r.request_throughput_per_s / share
        out.append(Point(s, "serving_ttft", r.median_ttft_s, f"{load}, median TTFT", rate))
        out.append(Point(s, "serving_tpot", r.median_tpot_s, f"{load}, median TPOT", rate))
    return out


def _names(eight_bit: bool) -> list[str]:
    return [("matmul_frac_8bit" if n == "matmul_frac" and eight_bit else n) for n in FITTED]


def calibrate(runs: Sequence[ServingRun], base: Scenario, catalog: Catalog) -> Calibration:
    """Fit ``FITTED`` for the scenario's engine × GPU to ``runs`` (module doc).  Raises
    ScenarioError when the scenario cannot be resolved, ValueError when there is no run."""
    if not runs:
        raise ValueError("no benchmark runs to calibrate on")
    if base.disaggregated:
        raise ScenarioError(
            [
                f"prefill_replicas={base.prefill_replicas}: calibration fits one colocated replica; a run against "
                "prefill and decode pools is not one (benchmark a colocated deployment, prefill_replicas=0)"
            ]
        )
    points = PointSet(run_points(runs, base), catalog)
    gpu = catalog.profile(base.gpu)
    engine = catalog.engine(base.engine)
    assert gpu is not None and engine is not None  # resolved by PointSet
    t = timing_for(gpu, base.with_changes(timing=""), engine.timing)
    start = asdict(t)
    model = catalog.models.get(base.model)
    eight = compute_dtype(resolve_weights(model, base).wdtype if model else base.wdtype or "bf16", gpu) != "bf16"
    names = _names(eight)
    kinds = [FITTED["matmul_frac" if n == "matmul_frac_8bit" else n] for n in names]
    u0 = np.array([float(to_u(k[0], max(start[n], MIN_OVERHEAD_S))) for n, k in zip(names, kinds, strict=True)])
    sd = np.array([k[1] for k in kinds])
    log_measured = np.log(points.measured)

    def params(u: np.ndarray) -> dict[str, Any]:
        p: dict[str, Any] = {n: start[n] for n in PARAMS}
        for j, (n, k) in enumerate(zip(names, kinds, strict=True)):
            p[n] = float(from_u(k[0], u[j]))
        return p

    def residuals(u: np.ndarray) -> np.ndarray:
        pred = points.predict(params(u))
        return np.concatenate([(np.log(np.maximum(pred, 1e-30)) - log_measured) / MEASUREMENT_SD, (u - u0) / sd])

    with np.errstate(all="ignore"):  # a diverging trial step is rejected by the fit, then judged below
        res = levenberg_marquardt(residuals, u0)
        fitted = params(res.u)
        before = points.predict({n: start[n] for n in PARAMS})
        after = points.predict(fitted)
    values = {n: float(fitted[n]) for n in names}
    check_plausible(values, after, points.measured)
    return Calibration(
        values=values,
        overrides=format_overrides(values),
        labels=[p.label for p in points.points],
        kinds=[p.kind for p in points.points],
        measured=points.measured,
        before=before,
        after=after,
    )


def _value_text(name: str, v: float) -> str:
    return fmt_seconds(v) if name.endswith("_s") else fmt_num(v)


def check_plausible(values: dict[str, float], after: np.ndarray, measured: np.ndarray) -> None:
    """CalibrationError unless every fitted value is finite and physical (``override_problem``; efficiencies at
    least ``MIN_FITTED_FRAC``) and the fit is within ``MAX_FIT_ERROR_FRAC`` of the runs (median |error|)."""
    problems = []
    for name, v in values.items():
        problem = "not a finite number" if not np.isfinite(v) else override_problem(name, v)
        if problem is None and name in FRACTION_FIELDS and v < MIN_FITTED_FRAC:
            problem = (
                f"an efficiency under {fmt_pct(MIN_FITTED_FRAC)} of the datasheet figure is not a serving engine's"
            )
        if problem:
            problems.append(f"not calibrated: {problem}; the fit put it at {_value_text(name, v)}")
    with np.errstate(all="ignore"):
        error = float(np.median(np.abs(after / measured - 1.0)))
    if not np.isfinite(error) or error > MAX_FIT_ERROR_FRAC:
        problems.append(
            f"not calibrated: the fitted profile is {fmt_pct(error) if np.isfinite(error) else 'infinitely far'} "
            f"off the runs (median |error|; a calibration is at most {fmt_pct(MAX_FIT_ERROR_FRAC)} off)"
        )
    if problems:
        raise CalibrationError([*problems[:-1], f"{problems[-1]}: {_ADVICE}"])


def calibrated_profile_toml(engine: EngineProfile, gpu: GPU, cal: Calibration, what: str) -> str:
    """A complete engine profile: ``engine`` with the fitted values for ``gpu``'s family (module doc)."""
    t: ResolvedTiming = timing_for(gpu, Scenario(gpu=gpu.key, engine=engine.key), engine.timing)
    timing = engine.timing.model_dump()
    v = cal.values
    fam = engine.timing.family(t.family)  # type: ignore[arg-type]
    family = FamilyTiming(
        matmul_frac=v.get("matmul_frac", fam.matmul_frac),
        matmul_frac_8bit=v.get("matmul_frac_8bit", fam.matmul_frac_8bit),
        bandwidth_frac=v.get("bandwidth_frac", fam.bandwidth_frac),
        moe_matmul_frac=fam.moe_matmul_frac,
        source=f"calibrated on {what}",
    )
    timing["families"] = {**timing["families"], t.family: family.model_dump()}
    for name, field in (
        ("step_overhead_s", "step_overhead_us"),
        ("layer_overhead_s", "layer_overhead_us"),
        ("decode_layer_overhead_s", "decode_layer_overhead_us"),
    ):
        if name in v:
            timing[field] = v[name] * US_PER_S
    if "attention_bandwidth_frac" in v:
        timing["attention_bandwidth_frac"] = v["attention_bandwidth_frac"]
    timing["source"] = f"{engine.timing.source} — then calibrated on {what} (kvplan calibrate)"
    head = dict(
        name=f"{engine.name} (calibrated)",
        version=engine.version,
        source=engine.source,
        notes=f"Calibrated by kvplan on {what} for {gpu.name} ({t.family} family).",
    )
    memory, launch = engine.memory.model_dump(), engine.launch.model_dump()
    return tomlfile.dumps({**head, "memory": memory, "timing": timing, "launch": launch})


def calibration_rows(cal: Calibration) -> list[dict[str, Any]]:
    """One record per point: label, kind, measured, predicted before and after (s), errors (fractions)."""
    return [
        dict(
            point=label,
            kind=kind,
            measured_s=float(m),
            profile_s=float(b),
            calibrated_s=float(a),
            profile_error_frac=float(b / m - 1.0),
            calibrated_error_frac=float(a / m - 1.0),
        )
        for label, kind, m, b, a in zip(cal.labels, cal.kinds, cal.measured, cal.before, cal.after, strict=True)
    ]


def read_runs(files: Sequence[tuple[str, bytes]]) -> list[ServingRun]:
    """Every run of every (name, content) file; ValueError naming each bad file."""
    from planner.calibration.serving_results import check_run_count, parse_serving_results

    runs: list[ServingRun] = []
    problems = []
    for name, data in files:
        try:
            runs += parse_serving_results(data, name)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    check_run_count(len(runs), f"{len(files):,} files: " if len(files) > 1 else "")
    return runs
