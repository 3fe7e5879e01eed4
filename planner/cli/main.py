"""Command line over the same functions the dashboard calls.

  kvplan evaluate "<query string or link>" [--format text|json|csv]
  kvplan sweep "<base link>" --set batch=1:256:x2 --set gpu=h100-sxm,h200 [--out FILE [--force]]
                     [--executor local|ray …]
  kvplan findings "<query string or link>" [--format text|json|csv]
  kvplan simulate|size "<link>" [--trace FILE|NAME] [--scale N] [--window START:DURATION]
                      [--prefix-cache pool|unbounded|off] [--replicas N] [--router R] [--format text|json|csv]
                      (size: [--search batch,chunk,kvdtype,wdtype,spec,disagg | none] [--time-budget S]
                       [--executor local|ray] [--address ADDR] [--workers N])
  kvplan pareto "<link>" [--search KNOBS] [--trace …] [--out points.csv [--force]]   (every scored configuration)
  kvplan replay "<link>" [--requests N | --trace …] [--replicas N] [--router R] [--executor local|ray]
                [--address ADDR] [--workers N] [--task-requests M] [--format text|json]   (a long replay, in parts)
  kvplan launch "<link>" [--engine vllm|sglang]             (the command that deploys it)
  kvplan deploy "<link>" --out DIR [--target kubernetes|compose|shell] [--engine …] [--force]
                                                             (the whole fleet's deployment files)
  kvplan check-log "<link>" --log FILE|- [--format text|json] [--calibrate]  (the plan vs a vLLM start-up log)
  kvplan gpus | models
  kvplan serve [--port N]                                    (the dashboard)
  kvplan bench [--device cuda|cpu] [--quick] [--out DIR [--force]]    (planner/bench/cli.py)
  kvplan calibrate RESULT.json… --link "<link>" [--format text|json] [--out PROFILE.toml [--force]]
  kvplan predict "<link>" [--max-concurrency N] [--request-rate R] [--num-prompts N] [--random-input-len N] …
                 [--max-throughput] [--format text|json] [--out FILE [--force]]   (planner/cli/predict.py)

``--out`` writes only the file named, never over one without ``--force``, never through a link out of
its folder (planner/outfile.py).

``python -m planner …`` is the same command line.  Bad input: exit code 2 and one
``error:`` line per bad key on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from planner.bench.cli import add_bench_parser
from planner.cli import commands
from planner.cli.predict import add_predict_parser
from planner.cli.serve import DEFAULT_PORT
from planner.errors import EXIT_BAD_INPUT, ProblemsError
from planner.model.catalog import load_catalog
from planner.search.limits import SEARCH_TIME_BUDGET_S
from planner.sim.replay_sources import TASK_REQUESTS

#: Exit code when stdout is closed early (128 + SIGPIPE, as a shell reports it).
EXIT_BROKEN_PIPE = 141
FORMATS = ("text", "json", "csv")


def add_traffic_options(sp: argparse.ArgumentParser) -> None:
    """The simulator's trace replay, prefix cache and fleet options (each also a link key)."""
    sp.add_argument(
        "--scale", type=float, metavar="N", help="replay the trace at N × its recorded rate (link: trace_scale)"
    )
    sp.add_argument(
        "--window",
        metavar="START:DURATION",
        help="only the trace's requests arriving in this window, seconds (START: = to the end)",
    )
    sp.add_argument(
        "--prefix-cache",
        choices=("pool", "unbounded", "off"),
        help="prefix cache shared across requests: pool (vLLM, in the free KV blocks; default), unbounded, off",
    )
    sp.add_argument("--replicas", type=int, metavar="N", help="replicas behind the router (link: replicas)")
    sp.add_argument(
        "--router", choices=("round_robin", "least_tokens", "prefix_affinity"), help="how requests reach the replicas"
    )


def add_executor_options(sp: argparse.ArgumentParser) -> None:
    """Where the parallel work runs (``planner.executors``): the local process pool, or a Ray cluster."""
    sp.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help='local: a process pool on this machine (default); ray: a Ray cluster (pip install "kvplan[ray]")',
    )
    sp.add_argument(
        "--address",
        metavar="ADDR",
        help="the Ray cluster: auto (the cluster this machine is in), ray://HEAD:10001, or none for a local one",
    )
    sp.add_argument("--workers", type=int, metavar="N", help="processes (local) or tasks at once (ray); default: all")


def add_search_option(sp: argparse.ArgumentParser) -> None:
    """The knobs the sizing search tunes (link key ``search``)."""
    sp.add_argument(
        "--search",
        metavar="KNOBS",
        help="knobs searched besides GPU and tp, comma-separated: batch, chunk, kvdtype, wdtype (fp8), spec, "
        "disagg; 'none' = GPU × tp only (default: the link's search key, batch,chunk)",
    )


def add_force_option(sp: argparse.ArgumentParser) -> None:
    """``--force``: let ``--out`` replace an existing file (planner/outfile.py)."""
    sp.add_argument("--force", action="store_true", help="overwrite the --out file if it exists")


def add_replay_parser(sub: Any) -> None:
    """``kvplan replay``: a long trace or many synthetic requests on a fleet, in parts (``planner.sim.replay``)."""
    rp = sub.add_parser(
        "replay", help="a long trace or many synthetic requests on a fleet, split into parts (local pool or Ray)"
    )
    rp.add_argument("link", nargs="?", default="", help="query string or full link (the fleet: replicas, router)")
    rp.add_argument("--trace", metavar="FILE|NAME", help="replay a trace (as for simulate); default: Poisson")
    rp.add_argument(
        "--requests", type=int, metavar="N", help="Poisson requests of the link's traffic (default: sim_requests)"
    )
    rp.add_argument(
        "--task-requests",
        type=int,
        default=TASK_REQUESTS,
        metavar="M",
        help=f"the most requests one part simulates (default {TASK_REQUESTS:,})",
    )
    rp.add_argument("--format", choices=("text", "json"), default="text")
    add_traffic_options(rp)
    add_executor_options(rp)


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
    add_force_option(sw)
    add_executor_options(sw)
    fi = sub.add_parser("findings", help="ranked plain-language findings for one scenario")
    fi.add_argument("link", nargs="?", default="", help="query string or full link")
    fi.add_argument("--format", choices=FORMATS, default="text")
    for name, text in (
        ("simulate", "simulate one replica serving the scenario's traffic"),
        ("size", "the cheapest fleet meeting the SLOs: GPU, tp and the serving knobs searched, then simulated"),
    ):
        sp = sub.add_parser(name, help=text)
        sp.add_argument(
            "link", nargs="?", default="", help="query string or full link (rate, dist, slo_ttft_s, … are link keys)"
        )
        sp.add_argument(
            "--trace",
            metavar="FILE|NAME",
            help="replay a trace: kvplan CSV (arrival_s,prompt_tokens,output_tokens[,prefix_id]), Azure LLM inference "
            "CSV, BurstGPT CSV or Mooncake JSONL, gzip or not; or a bundled trace: azure-code-2023, azure-conv-2023, "
            "mooncake-conversation, mooncake-synthetic",
        )
        sp.add_argument("--format", choices=FORMATS, default="text")
        add_traffic_options(sp)
        if name == "size":
            add_search_option(sp)
            sp.add_argument(
                "--gpus",
                metavar="KEY,KEY",
                help="size only these GPU profiles (comma list of keys, see kvplan gpus); default: every priced one",
            )
            sp.add_argument(
                "--time-budget",
                type=float,
                default=SEARCH_TIME_BUDGET_S,
                metavar="S",
                help=f"seconds for the whole sizing (default {SEARCH_TIME_BUDGET_S:g}); what is not confirmed by "
                "simulation in time is shown with the screening model's estimate",
            )
            add_executor_options(sp)
    add_replay_parser(sub)
    pa = sub.add_parser("pareto", help="every configuration the search scores, and its Pareto frontiers")
    pa.add_argument("link", nargs="?", default="", help="query string or full link")
    pa.add_argument("--trace", metavar="FILE|NAME", help="replay a trace (as for simulate and size)")
    add_traffic_options(pa)
    add_search_option(pa)
    pa.add_argument("--out", help="write every point (CSV) here instead of stdout")
    add_force_option(pa)
    pa.add_argument("--format", choices=("text", "csv"), default="text", help="stdout: the frontiers, or the CSV")
    la = sub.add_parser("launch", help="the vllm serve / SGLang command line that deploys the scenario")
    la.add_argument("link", nargs="?", default="", help="query string or full link")
    la.add_argument("--engine", choices=("vllm", "sglang"), help="default: the scenario's engine (vllm)")
    la.add_argument("--format", choices=("text", "json"), default="text")
    de = sub.add_parser("deploy", help="the plan's whole fleet as Kubernetes manifests, a compose file or scripts")
    de.add_argument("link", nargs="?", default="", help="query string or full link")
    de.add_argument("--target", choices=("kubernetes", "compose", "shell"), default="kubernetes")
    de.add_argument("--out", required=True, metavar="DIR", help="the folder to write into (created if missing)")
    de.add_argument("--force", action="store_true", help="write into a folder that is not empty")
    de.add_argument("--engine", choices=("vllm", "sglang"), help="default: the scenario's engine (vllm)")
    cl = sub.add_parser("check-log", help="the plan's memory terms beside a vLLM start-up log's")
    cl.add_argument("link", nargs="?", default="", help="query string or full link (the plan)")
    cl.add_argument(
        "--log", required=True, metavar="FILE", help="the start-up log (stdout/stderr of vllm serve); - = stdin"
    )
    cl.add_argument("--format", choices=("text", "json"), default="text")
    cl.add_argument("--calibrate", action="store_true", help="also print the link with the log's figures")
    sub.add_parser("gpus", help="list GPU profiles")
    sub.add_parser("models", help="list model presets")
    sv = sub.add_parser("serve", help="start the dashboard (streamlit) on 127.0.0.1")
    sv.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT})")
    sv.add_argument("--address", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    add_bench_parser(sub)
    add_predict_parser(sub)
    ca = sub.add_parser(
        "calibrate", help="fit the engine profile to `vllm bench serve` / SGLang bench_serving result files"
    )
    ca.add_argument("files", nargs="+", help="result JSON (vLLM) or JSON-lines (SGLang) files, one run or more each")
    ca.add_argument("--link", default="", help="the deployment that was benchmarked: gpu, model, tp, dtypes, engine")
    ca.add_argument("--format", choices=("text", "json"), default="text")
    ca.add_argument("--out", help="also write the calibrated engine profile (TOML) here")
    add_force_option(ca)
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
    except KeyboardInterrupt:  # Ctrl-C before there is anything to print
        print("interrupted", file=err)
        return commands.EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`kvplan gpus | head`): stop quietly, as cat does
        if out is sys.stdout:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
