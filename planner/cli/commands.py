"""One function per CLI command: ``(args, catalog, out, err) -> exit code``.

Each imports what it needs when it runs: ``evaluate`` in text or JSON touches only
the engine (no pandas), so the most common call starts fast."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from planner.errors import BadInput, ProblemsError, TraceError
from planner.links import from_query
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

if TYPE_CHECKING:
    from planner.serving.workload import Workload

Command = Callable[[argparse.Namespace, Catalog, TextIO, TextIO], int]


def scenario_from_link(link: str, catalog: Catalog, err: TextIO) -> Scenario:
    """Decode ``link``; notices go to ``err``; rejected values raise BadInput."""
    scenario, issues = from_query(link, set(catalog.profile_keys()), set(catalog.models), set(catalog.engines))
    fatal = [str(i) for i in issues if i.fatal]
    for i in issues:
        if not i.fatal:
            print(f"warning: {i}", file=err)
    if fatal:
        raise BadInput(fatal)
    return scenario


def evaluate(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.cli.render import scenario_row, text_rows

    scenario = scenario_from_link(args.link, catalog, err)
    if args.format == "csv":
        from planner.export import frame_to_csv
        from planner.studies.sweep import scenario_frame

        out.write(frame_to_csv(scenario_frame(scenario, catalog)))
        return 0
    row = scenario_row(scenario, catalog)
    out.write(json.dumps(row, indent=2, default=str) + "\n" if args.format == "json" else text_rows(row))
    return 0


def sweep(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.export import frame_to_csv, present_frame
    from planner.studies.sweep import parse_axis
    from planner.studies.sweep import sweep as run_sweep

    scenario = scenario_from_link(args.link, catalog, err)
    axes: dict[str, list[Any]] = {}
    problems: list[str] = []
    for item in args.set or []:
        key, sep, spec = item.partition("=")
        if not sep:
            problems.append(f"--set {item!r}: expected KEY=VALUES")
            continue
        try:
            axes[key.strip()] = parse_axis(key.strip(), spec)
        except ProblemsError as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    text = frame_to_csv(present_frame(run_sweep(scenario, axes, catalog)))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {text.count(chr(10)) - 1} rows to {args.out}", file=err)
    else:
        out.write(text)
    return 0


def findings(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.export import frame_to_csv
    from planner.studies.advisor import finding_record, findings_frame, findings_text
    from planner.studies.advisor import findings as find

    items = find(scenario_from_link(args.link, catalog, err), catalog)
    if args.format == "csv":
        out.write(frame_to_csv(findings_frame(items)))
    elif args.format == "json":
        out.write(json.dumps([finding_record(f) for f in items], indent=2) + "\n")
    else:
        out.write(findings_text(items))
    return 0


def _scenario_and_trace(args: argparse.Namespace, catalog: Catalog, err: TextIO) -> tuple[Scenario, Workload | None]:
    from planner.serving.workload import read_trace_file

    scenario = scenario_from_link(args.link, catalog, err)
    try:
        return scenario, (read_trace_file(args.trace, scenario.prefix) if args.trace else None)
    except TraceError as exc:
        raise BadInput(exc.problems) from None


def simulate(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.export import frame_to_csv, present_frame, present_metrics
    from planner.serving.results import requests_frame, summary_text
    from planner.serving.simulate import simulate_scenario

    scenario, trace = _scenario_and_trace(args, catalog, err)
    result = simulate_scenario(scenario, catalog, workload=trace)
    if args.format == "csv":
        out.write(frame_to_csv(present_frame(requests_frame(result))))
    elif args.format == "json":
        out.write(json.dumps(present_metrics(result.summary), indent=2) + "\n")
    else:
        out.write(summary_text(result))
    return 0


def size(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.export import frame_to_csv, present_frame
    from planner.serving.sizing import size_fleet, sizing_text

    scenario, trace = _scenario_and_trace(args, catalog, err)
    sizing = size_fleet(scenario, catalog, trace=trace)
    if args.format == "csv":
        out.write(frame_to_csv(present_frame(sizing.table)))
    elif args.format == "json":
        frames = {k: present_frame(getattr(sizing, k)).to_dict("records") for k in ("table", "disaggregated")}
        out.write(
            json.dumps({"reason": sizing.reason, "best_row": sizing.best, **frames}, indent=2, default=str) + "\n"
        )
    else:
        out.write(sizing_text(sizing))
    return 0


def list_catalog(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    names = (
        {k: g.name for k, g in catalog.gpus.items()}
        if args.command == "gpus"
        else {k: m.name for k, m in catalog.models.items()}
    )
    for key, name in sorted(names.items()):
        out.write(f"{key:<16} {name}\n")
    if args.command == "gpus":
        for key, gpu in sorted(catalog.measured.items()):
            out.write(f"{key:<16} {gpu.name}  [measured: benchmarks/results/{key}.toml]\n")
    return 0


def bench(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.bench.cli import cmd_bench

    return cmd_bench(args, catalog, out, err)


def calibrate(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    """Fit the scenario's engine × GPU to `vllm bench serve` / SGLang bench_serving result files."""
    from pathlib import Path

    from planner.calibration.calibrate import calibrate as fit
    from planner.calibration.calibrate import calibrated_profile_toml, calibration_rows, read_runs
    from planner.calibration.serving_results import MAX_RESULT_BYTES
    from planner.links import to_query_string

    scenario = scenario_from_link(args.link, catalog, err)
    files = []
    for name in args.files:
        path = Path(name)
        if not path.is_file():
            raise BadInput([f"{name}: no such file"])
        if path.stat().st_size > MAX_RESULT_BYTES:
            raise BadInput([f"{name}: larger than {MAX_RESULT_BYTES} bytes"])
        files.append((path.name, path.read_bytes()))
    try:
        cal = fit(read_runs(files), scenario, catalog)
    except ValueError as exc:
        raise BadInput([str(exc)]) from None
    calibrated = scenario.with_changes(timing=cal.overrides)
    if args.out:
        gpu = catalog.profile(scenario.gpu)
        assert gpu is not None
        text = calibrated_profile_toml(catalog.engines[scenario.engine], gpu, cal, ", ".join(args.files))
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote the calibrated engine profile to {args.out}", file=err)
    rows = calibration_rows(cal)
    if args.format == "json":
        record = dict(fitted=cal.values, timing=cal.overrides, link=to_query_string(calibrated), points=rows)
        out.write(json.dumps(record, indent=2) + "\n")
        return 0
    from planner.format import fmt_seconds

    out.write(f"{'point':<44}{'measured':>11}{'profile':>11}{'calibrated':>12}\n")
    for r in rows:
        out.write(
            f"{r['point'][:43]:<44}{fmt_seconds(r['measured_s']):>11}{fmt_seconds(r['profile_s']):>11}"
            f"{fmt_seconds(r['calibrated_s']):>12}\n"
        )
    out.write(
        f"median |error|: profile {cal.median_abs_error_before:.1%}, calibrated {cal.median_abs_error_after:.1%}\n"
        f"fitted: timing={cal.overrides}\nlink: {to_query_string(calibrated)}\n"
    )
    return 0


def serve(args: argparse.Namespace, err: TextIO) -> int:
    from planner.cli.serve import run_dashboard

    return run_dashboard(args.port, args.address, err)


COMMANDS: dict[str, Command] = {
    "evaluate": evaluate,
    "sweep": sweep,
    "findings": findings,
    "simulate": simulate,
    "size": size,
    "gpus": list_catalog,
    "models": list_catalog,
    "bench": bench,
    "calibrate": calibrate,
}
