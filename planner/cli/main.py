"""Command line over the same functions the dashboard calls.

  kvplan evaluate "<query string or link>" [--format text|json|csv]
  kvplan sweep "<base link>" --set batch=1:256:x2 --set gpu=h100-sxm,h200 [--out FILE]
  kvplan findings "<query string or link>" [--format text|json|csv]
  kvplan simulate|size "<link>" [--trace FILE.csv] [--format text|json|csv]
  kvplan gpus | models
  kvplan serve [--port N]                                    (the dashboard)
  kvplan bench [--device cuda|cpu] [--quick] [--out DIR]    (planner/bench/cli.py)
  kvplan calibrate RESULT.json… --link "<link>" [--format text|json] [--out PROFILE.toml]

``python -m planner …`` is the same command line.  Bad input: exit code 2 and one
``error:`` line per bad key on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from planner.bench.cli import add_bench_parser
from planner.cli import commands
from planner.cli.serve import DEFAULT_PORT
from planner.errors import EXIT_BAD_INPUT, ProblemsError
from planner.model.catalog import load_catalog

FORMATS = ("text", "json", "csv")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kvplan", description="kvplan: LLM inference capacity planning")
    sub = p.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("evaluate", help="every metric of one scenario")
    ev.add_argument("link", nargs="?", default="", help="query string or full link (default: the default scenario)")
    ev.add_argument("--format", choices=FORMATS, default="text")
    sw = sub.add_parser("sweep", help="CSV over ranges of inputs")
    sw.add_argument("link", nargs="?", default="", help="base scenario link")
    sw.add_argument("--set", action="append", metavar="KEY=VALUES", help="a,b,c | start:stop:step | start:stop:xFACTOR")
    sw.add_argument("--out", help="write the CSV here instead of stdout")
    fi = sub.add_parser("findings", help="ranked plain-language findings for one scenario")
    fi.add_argument("link", nargs="?", default="", help="query string or full link")
    fi.add_argument("--format", choices=FORMATS, default="text")
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
        sp.add_argument("--format", choices=FORMATS, default="text")
    sub.add_parser("gpus", help="list GPU profiles")
    sub.add_parser("models", help="list model presets")
    sv = sub.add_parser("serve", help="start the dashboard (streamlit) on 127.0.0.1")
    sv.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    sv.add_argument("--address", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    add_bench_parser(sub)
    ca = sub.add_parser(
        "calibrate", help="fit the engine profile to `vllm bench serve` / SGLang bench_serving result files"
    )
    ca.add_argument("files", nargs="+", help="result JSON (vLLM) or JSON-lines (SGLang) files, one run or more each")
    ca.add_argument("--link", default="", help="the deployment that was benchmarked: gpu, model, tp, dtypes, engine")
    ca.add_argument("--format", choices=("text", "json"), default="text")
    ca.add_argument("--out", help="also write the calibrated engine profile (TOML) here")
    return p


def main(argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run one command; returns the exit code (0, or 2 for bad input)."""
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "serve":
        return commands.serve(args, err)
    catalog = load_catalog()
    for problem in catalog.problems:
        print(f"warning: skipped {problem}", file=err)
    try:
        return commands.COMMANDS[args.command](args, catalog, out, err)
    except ProblemsError as exc:
        for line in exc.problems:
            print(f"error: {line}", file=err)
        return EXIT_BAD_INPUT
