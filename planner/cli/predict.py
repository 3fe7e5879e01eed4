"""The ``predict`` subcommand: what ``vllm bench serve`` (or ``trtllm-bench throughput``) would print.

    kvplan predict LINK [--max-concurrency N] [--request-rate R|inf] [--burstiness B] [--num-prompts N]
                        [--random-input-len N] [--random-output-len N] [--random-range-ratio R]
                        [--random-prefix-len N] [--seed N] [--trace FILE|NAME]
                        [--percentile-metrics ttft,tpot,itl,e2el] [--metric-percentiles 99]
                        [--max-throughput] [--format text|json] [--out FILE [--force]]

The options are ``vllm bench serve``'s, spelled as it spells them (``planner.predict.options`` says
which defaults are kvplan's).  ``--out`` writes what would be printed (``--format json``: the result
JSON of ``--save-result``) to a file, by ``planner.outfile``'s rules.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import TYPE_CHECKING, TextIO

from planner.errors import BadInput, ProblemsError, TraceError

if TYPE_CHECKING:
    from planner.model.catalog import Catalog
    from planner.model.scenario import Scenario


def add_predict_parser(sub) -> argparse.ArgumentParser:
    pr = sub.add_parser(
        "predict", help="what vllm bench serve (or trtllm-bench throughput) would print for the deployment"
    )
    pr.add_argument("link", nargs="?", default="", help="the server: query string or full link (batch, chunk, …)")
    pr.add_argument("--max-concurrency", type=int, metavar="N", help="at most N requests in flight (a closed loop)")
    pr.add_argument(
        "--request-rate", metavar="R", help="requests/s, or inf: all at once (default; with --trace: its own clock)"
    )
    pr.add_argument("--burstiness", default="1", metavar="B", help="gamma shape of the gaps: 1 = Poisson (default)")
    pr.add_argument("--num-prompts", type=int, default=1000, metavar="N", help="requests (default 1000)")
    pr.add_argument(
        "--dataset-name", choices=("random",), default="random", help="random (the only one; or --trace FILE|NAME)"
    )
    pr.add_argument("--random-input-len", type=int, metavar="N", help="prompt tokens (default: the link's prompt)")
    pr.add_argument("--random-output-len", type=int, metavar="N", help="output tokens (default: the link's output)")
    pr.add_argument(
        "--random-range-ratio",
        default="0",
        metavar="R",
        help='lengths uniform in [L·(1 − R), L·(1 + R)], R in [0, 1); or {"input": R, "output": R}',
    )
    pr.add_argument("--random-prefix-len", type=int, default=0, metavar="N", help="shared prefix tokens (default 0)")
    pr.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    pr.add_argument(
        "--trace",
        metavar="FILE|NAME",
        help="request lengths from a trace (formats as for simulate); sent on its own clock unless --request-rate",
    )
    pr.add_argument(
        "--percentile-metrics",
        default="ttft,tpot,itl,e2el",
        metavar="LIST",
        help="latencies reported: ttft, tpot, itl, e2el (vLLM's own default omits e2el)",
    )
    pr.add_argument("--metric-percentiles", default="99", metavar="LIST", help="percentiles, e.g. 50,90,99")
    pr.add_argument(
        "--max-throughput",
        action="store_true",
        help="trtllm-bench throughput's figures: every request at once, fixed lengths",
    )
    pr.add_argument("--format", choices=("text", "json"), default="text")
    pr.add_argument("--out", help="write the printout (or the JSON) here as well as to stdout")
    pr.add_argument("--force", action="store_true", help="overwrite the --out file if it exists")
    return pr


def predict_options(args: argparse.Namespace, prompt: int, output: int, timed_trace: bool):
    """The command line as ``PredictOptions`` (every bad option named at once)."""
    from planner.predict.options import options, parse_list, parse_percentiles, parse_range_ratio, parse_rate

    problems: list[str] = []
    values: dict[str, object] = {}
    for key, parse in (
        ("request_rate_per_s", lambda: parse_rate(args.request_rate or "inf", "--request-rate")),
        ("burstiness", lambda: parse_rate(args.burstiness, "--burstiness")),
        ("metric_percentiles", lambda: parse_percentiles(args.metric_percentiles)),
    ):
        try:
            values[key] = parse()
        except ProblemsError as exc:
            problems += exc.problems
    try:
        values["input_range_ratio"], values["output_range_ratio"] = parse_range_ratio(args.random_range_ratio)
    except ProblemsError as exc:
        problems += exc.problems
    try:
        opts = options(
            **values,
            num_prompts=args.num_prompts,
            max_concurrency=args.max_concurrency,
            input_len=args.random_input_len if args.random_input_len is not None else prompt,
            output_len=args.random_output_len if args.random_output_len is not None else output,
            prefix_len=args.random_prefix_len,
            seed=args.seed,
            percentile_metrics=tuple(parse_list(args.percentile_metrics, "--percentile-metrics")),
            max_throughput=args.max_throughput,
            trace_timed=timed_trace,
        )
    except ProblemsError as exc:
        problems += exc.problems
    if problems:
        raise BadInput(problems)
    return opts


def cmd_predict(args: argparse.Namespace, scenario: Scenario, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    """The run ``args`` describes against the server ``scenario`` (the decoded link)."""
    from planner import outfile
    from planner.links import to_query_string
    from planner.predict.run import predict
    from planner.predict.trtllm import trtllm_json, trtllm_stats, trtllm_text
    from planner.predict.vllm_report import header_lines, vllm_json, vllm_text
    from planner.sim.traces import read_trace_file, replay

    if args.out:
        outfile.checked(args.out, args.force)  # a refused --out costs no simulation
    timed = args.trace is not None and args.request_rate is None
    opts = predict_options(args, scenario.prompt, scenario.output, timed)
    trace = None
    if args.trace:
        try:
            loaded = read_trace_file(args.trace, scenario.prefix)
            trace = replay(loaded)
        except TraceError as exc:
            raise BadInput(exc.problems) from None
        if loaded.skipped_rows:
            print(f"warning: {loaded.skipped_reason}", file=err)
    prediction = predict(scenario, catalog, opts, trace)
    link = to_query_string(scenario)
    if args.max_throughput:
        stats = trtllm_stats(prediction)
        text = (
            json.dumps(trtllm_json(prediction, stats), indent=2) + "\n"
            if args.format == "json"
            else trtllm_text(prediction, stats, header_lines(prediction, link))
        )
    elif args.format == "json":
        date = datetime.now().strftime("%Y%m%d-%H%M%S")  # vLLM's own "date" format
        text = json.dumps(vllm_json(prediction, link, date), indent=2) + "\n"
    else:
        text = vllm_text(prediction, link)
    out.write(text)
    if args.out:
        outfile.write_text(args.out, text, args.force)
        print(f"wrote {args.out}", file=err)
    return 0
