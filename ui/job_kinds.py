"""What each kind of worker job runs (``ui.jobs`` moves the payload and the result; this is the work).

Imported only inside a worker process, on its first job; planner only (no streamlit).  Heavy runs
(``WORKERS``): ``simulate``, ``size``, ``search``, ``simulate_point`` take ``(scenario JSON, workload)``.
Uploads (``UPLOADS``: every parse, fit and audit of a visitor's file, issue 31 — a hostile file costs a
worker's time and memory, never the server's):

  check_log      (scenario JSON, log text)           → LogReport      the Check-a-log tab
  calibrate      (scenario JSON, [(name, bytes)…])    → (runs, Calibration)   Cross-check, serving benchmark
  bench_results  bytes                                → BenchResults   Cross-check, microbenchmark upload
  audit_usage    (bytes, name, prices, multipliers)  → AuditReport    Prompt layout, usage-log audit
  parse_trace    (bytes, prefix tokens)               → Trace          Simulate & size, uploaded trace
  predict_beside (scenario JSON, name, bytes)         → PredictBeside  Cross-check, your run beside kvplan predict

A bad input is a ``ProblemsError`` (its sentences reach the page); a ValueError from a reader is turned
into one here, so the page says what the reader said.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from planner.errors import ProblemsError

_CATALOG: dict[str, Any] = {}


def default_processes() -> int:
    """Half the cores, at least one, at most four: the other half serves the page."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def catalog() -> Any:
    """The catalog, loaded once per worker."""
    from planner.model.catalog import load_catalog

    return _CATALOG.get("catalog") or _CATALOG.setdefault("catalog", load_catalog())


def _scenario(scenario_json: str) -> Any:
    from planner.model.scenario import Scenario

    return Scenario.model_validate_json(scenario_json)


def _heavy(kind: str, payload: Any, progress: Callable[..., None]) -> Any:
    """``search`` and ``simulate_point`` (the Search & frontier tab) take the scenario's own traffic
    (``scenario_traffic``: its Poisson arrivals or its bundled trace; ``workload`` is None); the search
    confirms in a pool of ``default_processes()`` (children of this worker, in its process group)."""
    scenario_json, workload = payload
    s = _scenario(scenario_json)
    if kind == "simulate":
        from planner.sim.fleet import simulate_fleet_scenario

        return simulate_fleet_scenario(s, catalog(), workload=workload, progress=progress)
    if kind == "size":
        from planner.search.sizing import size_fleet

        return size_fleet(
            s, catalog(), trace=workload, progress=progress, search=True, on_update=getattr(progress, "partial", None)
        )
    from planner.sim.traces import scenario_traffic

    traffic = scenario_traffic(s)
    if kind == "simulate_point":
        from planner.sim.fleet import simulate_fleet_scenario

        return simulate_fleet_scenario(s, catalog(), workload=traffic, progress=progress)
    from planner.search.knob_search import search_fleet

    return search_fleet(
        s,
        catalog(),
        traffic,
        workers=default_processes(),
        progress=progress,
        on_update=getattr(progress, "partial", None),
    )


@dataclass(frozen=True)
class LogReport:
    """A start-up log read and set beside the plan: what the Check-a-log tab shows."""

    log: Any  # VllmStartup | SglangStartup
    rows: tuple[Any, ...]  # planner.logs.check.TermRow
    notes: tuple[str, ...]
    refused: tuple[str, ...]  # why the log's figures cannot calibrate the plan ([] when they can)


def check_log(payload: Any, progress: Callable[..., None]) -> LogReport:
    from planner.errors import ScenarioError
    from planner.logs.check import calibration_problems
    from planner.logs.check import check_log as compare
    from planner.logs.startup import parse_startup_log

    scenario_json, text = payload
    log = parse_startup_log(text)
    try:
        check = compare(_scenario(scenario_json), log, catalog())
    except ScenarioError as exc:
        raise ProblemsError([f"The log's settings do not fit the plan's model: {'; '.join(exc.problems)}"]) from None
    return LogReport(log, check.rows, check.notes, tuple(calibration_problems(check, log)))


def calibrate(payload: Any, progress: Callable[..., None]) -> tuple[int, Any]:
    from planner.calibration.calibrate import calibrate as fit
    from planner.calibration.calibrate import read_runs

    scenario_json, files = payload
    try:
        runs = read_runs(files)
        return len(runs), fit(runs, _scenario(scenario_json).with_changes(timing=""), catalog())
    except ValueError as exc:
        raise ProblemsError([f"These files cannot be used: {exc}"]) from None


def bench_results(payload: Any, progress: Callable[..., None]) -> Any:
    from planner.bench.results import parse_results

    try:
        return parse_results(payload)
    except ValueError as exc:
        raise ProblemsError([f"not a benchmark results file: {exc}"]) from None


def audit_usage(payload: Any, progress: Callable[..., None]) -> Any:
    from planner.prompts.usage_audit import audit, parse_usage_log

    data, name, price_in, price_out, write_multiplier, read_multiplier = payload
    return audit(parse_usage_log(data, name), price_in, price_out, write_multiplier, read_multiplier)


def parse_trace(payload: Any, progress: Callable[..., None]) -> Any:
    from planner.sim.traces import parse_trace as read

    data, prefix_tokens = payload
    return read(data, prefix_tokens)


@dataclass(frozen=True)
class PredictBeside:
    """One uploaded ``vllm bench serve`` result predicted for its own settings (``planner.predict.crosscheck``);
    ``sglang`` when the file is SGLang's (its keys are not vLLM's: named and skipped)."""

    sglang: bool
    settings: Any = None  # RunSettings
    prediction: Any = None  # Prediction
    rows: tuple[Any, ...] = ()


#: keys only SGLang's bench_serving writes (``planner.calibration.serving_results._tool``)
SGLANG_KEYS = ("mean_e2e_latency_ms", "total_output_tokens_retokenized")


def predict_beside(payload: Any, progress: Callable[..., None]) -> PredictBeside:
    from planner.predict.crosscheck import crosscheck, read_result, run_settings

    scenario_json, name, data = payload
    try:
        raw = read_result(data, name)
        if any(k in raw for k in SGLANG_KEYS):
            return PredictBeside(True)
        settings = run_settings(raw, name)
        prediction, rows = crosscheck(_scenario(scenario_json), catalog(), settings)
    except ValueError as exc:
        raise ProblemsError([f"{name}: cannot be predicted: {exc}"]) from None
    except ProblemsError as exc:
        raise ProblemsError([f"{name}: cannot be predicted: {'; '.join(exc.problems)}"]) from None
    return PredictBeside(False, settings, prediction, tuple(rows))


UPLOAD_KINDS: dict[str, Callable[[Any, Callable[..., None]], Any]] = {
    "check_log": check_log,
    "calibrate": calibrate,
    "bench_results": bench_results,
    "audit_usage": audit_usage,
    "parse_trace": parse_trace,
    "predict_beside": predict_beside,
}
HEAVY_KINDS = ("simulate", "size", "search", "simulate_point")


def run_job(kind: str, payload: Any, progress: Callable[..., None]) -> Any:
    """The work of one job (module doc)."""
    if kind in HEAVY_KINDS:
        return _heavy(kind, payload, progress)
    if kind in UPLOAD_KINDS:
        return UPLOAD_KINDS[kind](payload, progress)
    raise ValueError(f"unknown job kind {kind!r}")
