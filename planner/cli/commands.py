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
    scenario, issues = from_query(link, set(catalog.profile_keys()), set(catalog.models))
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


def _traffic_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The link keys the traffic options set (``--scale``, ``--window``, ``--prefix-cache``, fleet)."""
    from planner.serving.traces import BUNDLED, parse_window

    changes: dict[str, Any] = {}
    if args.scale is not None:
        changes["trace_scale"] = args.scale
    if args.window:
        start_s, duration_s = parse_window(args.window)
        changes.update(trace_start_s=start_s, trace_duration_s=duration_s or 0.0)
    if args.prefix_cache:
        changes["prefix_cache"] = args.prefix_cache
    if args.replicas is not None:
        changes["replicas"] = args.replicas
    if args.router:
        changes["router"] = args.router
    if args.trace in BUNDLED:
        changes["trace"] = args.trace
    return changes


def _scenario_and_trace(args: argparse.Namespace, catalog: Catalog, err: TextIO) -> tuple[Scenario, Workload | None]:
    """The scenario with the traffic options applied, and the trace it replays (None: Poisson arrivals)."""
    from planner.serving.traces import BUNDLED, read_trace_file, scenario_traffic

    scenario = scenario_from_link(args.link, catalog, err)
    try:
        scenario = scenario.with_changes(**_traffic_changes(args))
        trace = read_trace_file(args.trace, scenario.prefix) if args.trace and args.trace not in BUNDLED else None
        if trace is not None and trace.skipped_rows:
            print(f"warning: {trace.skipped_reason}", file=err)
        if (args.scale is not None or args.window) and trace is None and not scenario.trace:
            raise BadInput(["--scale and --window replay a trace: give --trace FILE|NAME (or trace= in the link)"])
        return scenario, scenario_traffic(scenario, trace)
    except TraceError as exc:
        raise BadInput(exc.problems) from None


def simulate(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.export import frame_to_csv, present_frame, present_metrics
    from planner.serving.fleet import fleet_text, replica_frame, simulate_fleet_scenario
    from planner.serving.results import requests_frame, summary_text

    scenario, trace = _scenario_and_trace(args, catalog, err)
    fleet = simulate_fleet_scenario(scenario, catalog, workload=trace)
    result = fleet.combined
    if args.format == "csv":
        out.write(frame_to_csv(present_frame(requests_frame(result))))
    elif args.format == "json":
        record = present_metrics(result.summary) | {
            "traffic": trace.name or trace.source if trace is not None else "poisson",
            "prefix_cache": scenario.prefix_cache,
            "router": scenario.router,
        }
        if scenario.replicas > 1:
            record["per_replica"] = present_frame(replica_frame(fleet)).to_dict("records")
        out.write(json.dumps(record, indent=2, default=str) + "\n")
    else:
        out.write(summary_text(result) + (fleet_text(fleet) if scenario.replicas > 1 else ""))
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
