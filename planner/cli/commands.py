"""One function per CLI command: ``(args, catalog, out, err) -> exit code``.

Each imports what it needs when it runs: ``evaluate`` in text or JSON touches only
the engine (no pandas), so the most common call starts fast."""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable
from contextlib import nullcontext
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
    from planner.cli.render import scenario_row, scenario_text
    from planner.engine.evaluate import evaluate as evaluate_scenario

    scenario = scenario_from_link(args.link, catalog, err)
    if args.format == "csv":
        from planner.export import frame_to_csv
        from planner.studies.sweep import scenario_frame

        out.write(frame_to_csv(scenario_frame(scenario, catalog)))
    elif args.format == "json":
        out.write(json.dumps(scenario_row(scenario, catalog), indent=2, default=str) + "\n")
    else:
        out.write(scenario_text(evaluate_scenario(scenario, catalog)))
    return 0


def sweep(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.export import frame_to_csv, present_frame
    from planner.studies.sweep import parse_axis, sweep_chunks

    scenario = scenario_from_link(args.link, catalog, err)
    axes: dict[str, list[Any]] = {}
    problems: list[str] = []
    for item in args.set or []:
        key, sep, spec = item.partition("=")
        key = key.strip()
        if not sep:
            problems.append(f"--set {item!r}: expected KEY=VALUES")
            continue
        if key in axes:
            print(f"warning: --set {key}: given more than once; the last values are used", file=err)
        try:
            axes[key] = parse_axis(key, spec)
        except ProblemsError as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    chunks = sweep_chunks(scenario, axes, catalog)  # checks the budget and every combination first
    first = next(chunks)
    with open(args.out, "w", encoding="utf-8") if args.out else nullcontext(out) as sink:
        rows = 0
        for k, chunk in enumerate(itertools.chain([first], chunks)):
            sink.write(frame_to_csv(present_frame(chunk), header=k == 0))
            rows += len(chunk)
    if args.out:
        print(f"wrote {rows} rows to {args.out}", file=err)
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
}
