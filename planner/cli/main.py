"""Command line over the same functions the dashboard calls.

  python -m planner evaluate "<query string or link>" [--format text|json|csv]
  python -m planner sweep "<base link>" --set batch=1:256:x2 --set gpu=h100-sxm,h200 [--out FILE]
  python -m planner findings "<query string or link>" [--format text|json|csv]
  python -m planner simulate|size "<link>" [--trace FILE.csv] [--format text|json|csv]
  python -m planner gpus | models
  python -m planner bench [--device cuda|cpu] [--quick] [--out DIR]   (see planner/bench/cli.py)

Bad input: exit code 2 and one line per bad key on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from planner.bench.cli import add_bench_parser, cmd_bench
from planner.errors import BadInput, ScenarioError, SweepError
from planner.export import frame_to_csv, present_frame
from planner.links import from_query
from planner.model.catalog import Catalog, load_catalog
from planner.model.scenario import Scenario
from planner.studies.sweep import parse_axis, scenario_frame, sweep

EXIT_BAD_INPUT = 2


def scenario_from_link(link: str, catalog: Catalog, err) -> Scenario:
    """Decode ``link``; notices go to ``err``; rejected values raise BadInput."""
    scenario, issues = from_query(link, set(catalog.profile_keys()), set(catalog.models))
    fatal = [str(i) for i in issues if i.fatal]
    for i in issues:
        if not i.fatal:
            print(f"warning: {i}", file=err)
    if fatal:
        raise BadInput(fatal)
    return scenario


def _cmd_evaluate(args, catalog: Catalog, out, err) -> int:
    scenario = scenario_from_link(args.link, catalog, err)
    frame = scenario_frame(scenario, catalog)
    if args.format == "csv":
        out.write(frame_to_csv(frame))
    elif args.format == "json":
        out.write(json.dumps(frame.iloc[0].to_dict(), indent=2, default=str) + "\n")
    else:
        row = frame.iloc[0].to_dict()
        width = max(len(k) for k in row)
        for k, v in row.items():
            out.write(f"{k:<{width}}  {v}\n")
    return 0


def _cmd_sweep(args, catalog: Catalog, out, err) -> int:
    scenario = scenario_from_link(args.link, catalog, err)
    axes, problems = {}, []
    for item in args.set or []:
        key, sep, spec = item.partition("=")
        if not sep:
            problems.append(f"--set {item!r}: expected KEY=VALUES")
            continue
        try:
            axes[key.strip()] = parse_axis(key.strip(), spec)
        except SweepError as exc:
            problems.extend(exc.problems)
    if problems:
        raise BadInput(problems)
    text = frame_to_csv(present_frame(sweep(scenario, axes, catalog)))
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"wrote {text.count(chr(10)) - 1} rows to {args.out}", file=err)
    else:
        out.write(text)
    return 0


def _cmd_findings(args, catalog: Catalog, out, err) -> int:
    from planner.studies.advisor import (
        finding_record,
        findings,
        findings_frame,
        findings_text,
    )

    items = findings(scenario_from_link(args.link, catalog, err), catalog)
    if args.format == "csv":
        out.write(frame_to_csv(findings_frame(items)))
    elif args.format == "json":
        out.write(json.dumps([finding_record(f) for f in items], indent=2) + "\n")
    else:
        out.write(findings_text(items))
    return 0


def _scenario_and_trace(args, catalog: Catalog, err):
    from planner.errors import TraceError
    from planner.serving.workload import read_trace_file

    scenario = scenario_from_link(args.link, catalog, err)
    try:
        return scenario, (read_trace_file(args.trace, scenario.prefix) if args.trace else None)
    except TraceError as exc:
        raise BadInput(exc.problems) from None


def _cmd_simulate(args, catalog: Catalog, out, err) -> int:
    from planner.export import present_metrics
    from planner.serving.simulate import requests_frame, simulate_scenario, summary_text

    scenario, trace = _scenario_and_trace(args, catalog, err)
    result = simulate_scenario(scenario, catalog, workload=trace)
    if args.format == "csv":
        out.write(frame_to_csv(present_frame(requests_frame(result))))
    elif args.format == "json":
        out.write(json.dumps(present_metrics(result.summary), indent=2) + "\n")
    else:
        out.write(summary_text(result))
    return 0


def _cmd_size(args, catalog: Catalog, out, err) -> int:
    from planner.serving.sizing import size_fleet, sizing_text

    scenario, trace = _scenario_and_trace(args, catalog, err)
    z = size_fleet(scenario, catalog, trace=trace)
    if args.format == "csv":
        out.write(frame_to_csv(present_frame(z.table)))
    elif args.format == "json":
        frames = {k: present_frame(getattr(z, k)).to_dict("records") for k in ("table", "disaggregated")}
        out.write(json.dumps({"reason": z.reason, "best_row": z.best, **frames}, indent=2, default=str) + "\n")
    else:
        out.write(sizing_text(z))
    return 0


def _cmd_list(args, catalog: Catalog, out, err) -> int:
    items = catalog.gpus if args.command == "gpus" else catalog.models
    for key, item in sorted(items.items()):
        out.write(f"{key:<16} {item.name}\n")
    if args.command == "gpus":
        for key, item in sorted(catalog.measured.items()):
            out.write(f"{key:<16} {item.name}  [measured: benchmarks/results/{key}.toml]\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m planner", description="kvplan: LLM inference capacity planning")
    sub = p.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="every metric of one scenario")
    ev.add_argument("link", nargs="?", default="", help="query string or full link (default: the default scenario)")
    ev.add_argument("--format", choices=("text", "json", "csv"), default="text")
    sw = sub.add_parser("sweep", help="CSV over ranges of inputs")
    sw.add_argument("link", nargs="?", default="", help="base scenario link")
    sw.add_argument("--set", action="append", metavar="KEY=VALUES", help="a,b,c | start:stop:step | start:stop:xFACTOR")
    sw.add_argument("--out", help="write the CSV here instead of stdout")
    fi = sub.add_parser("findings", help="ranked plain-language findings for one scenario")
    fi.add_argument("link", nargs="?", default="", help="query string or full link")
    fi.add_argument("--format", choices=("text", "json", "csv"), default="text")
    for name, text in (
        ("simulate", "simulate one replica serving the scenario's traffic"),
        ("size", "fewest GPUs per profile and tp meeting the SLOs"),
    ):
        sp = sub.add_parser(name, help=text)
        sp.add_argument(
            "link", nargs="?", default="", help="query string or full link (rate, dist, slo_ttft_s, … are link keys)"
        )
        sp.add_argument(
            "--trace", metavar="CSV", help="replay a trace: arrival_s,prompt_tokens,output_tokens[,prefix_id]"
        )
        sp.add_argument("--format", choices=("text", "json", "csv"), default="text")
    sub.add_parser("gpus", help="list GPU profiles")
    sub.add_parser("models", help="list model presets")
    add_bench_parser(sub)
    return p


COMMANDS = {
    "evaluate": _cmd_evaluate,
    "sweep": _cmd_sweep,
    "findings": _cmd_findings,
    "simulate": _cmd_simulate,
    "size": _cmd_size,
    "gpus": _cmd_list,
    "models": _cmd_list,
    "bench": cmd_bench,
}


def main(argv: Sequence[str] | None = None, out=None, err=None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    catalog = load_catalog()
    for problem in catalog.problems:
        print(f"warning: skipped {problem}", file=err)
    try:
        return COMMANDS[args.command](args, catalog, out, err)
    except (BadInput, ScenarioError, SweepError) as exc:
        for line in getattr(exc, "lines", None) or getattr(exc, "problems", None) or [str(exc)]:
            print(f"error: {line}", file=err)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
