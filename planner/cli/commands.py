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


def launch(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.engine.evaluate import resolve
    from planner.launch.commands import launch_command

    r = resolve(scenario_from_link(args.link, catalog, err), catalog)
    cmd = launch_command(r, args.engine)
    if args.format == "json":
        out.write(json.dumps({"engine": cmd.engine, "argv": list(cmd.argv), "notes": list(cmd.notes)}, indent=2) + "\n")
        return 0
    out.write(cmd.text() + "\n")
    for note in (*r.notes, *cmd.notes):
        out.write(f"# {note}\n")
    return 0


MAX_LOG_FILE_BYTES = 16 * 1024 * 1024


def _read_log(path: str) -> str:
    """The log's text from ``path`` (``-``: stdin); BadInput when it cannot be read."""
    import sys

    if path == "-":
        return sys.stdin.read(MAX_LOG_FILE_BYTES)
    try:
        with open(path, "rb") as fh:
            return fh.read(MAX_LOG_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise BadInput([f"--log {path!r}: cannot read it ({exc.strerror or exc})"]) from None


def check_log(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.cli.render import log_check_text
    from planner.links import to_query_string
    from planner.logs.check import calibrated_scenario
    from planner.logs.check import check_log as run_check
    from planner.logs.vllm_log import parse_vllm_log

    scenario = scenario_from_link(args.link, catalog, err)
    log = parse_vllm_log(_read_log(args.log))
    check = run_check(scenario, log, catalog)
    link = to_query_string(calibrated_scenario(scenario, log)) if args.calibrate else None
    if args.format == "json":
        rows = [
            {"term": r.term, "unit": r.unit, "predicted": r.predicted, "logged": r.logged, "error": r.error_frac}
            for r in check.rows
        ]
        payload: dict[str, Any] = {"rows": rows, "notes": list(check.notes), "plan": to_query_string(check.scenario)}
        if link is not None:
            payload["calibrated_link"] = link
        out.write(json.dumps(payload, indent=2) + "\n")
        return 0
    out.write(log_check_text(check))
    if link is not None:
        out.write(f"calibrated link: ?{link}\n")
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


def serve(args: argparse.Namespace, err: TextIO) -> int:
    from planner.cli.serve import run_dashboard

    return run_dashboard(args.port, args.address, err)


COMMANDS: dict[str, Command] = {
    "evaluate": evaluate,
    "sweep": sweep,
    "findings": findings,
    "simulate": simulate,
    "size": size,
    "launch": launch,
    "check-log": check_log,
    "gpus": list_catalog,
    "models": list_catalog,
    "bench": bench,
}
