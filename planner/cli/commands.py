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

from planner import outfile
from planner.errors import BadInput, ProblemsError, TraceError
from planner.links import from_query
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

if TYPE_CHECKING:
    from planner.model.specs import GPU, ModelSpec
    from planner.sim.workload import Workload

Command = Callable[[argparse.Namespace, Catalog, TextIO, TextIO], int]
#: Exit code after Ctrl-C (128 + SIGINT, as a shell reports it); ``size`` still prints what it confirmed.
EXIT_INTERRUPTED = 130


def scenario_from_link(link: str, catalog: Catalog, err: TextIO) -> Scenario:
    """Decode ``link``; notices go to ``err``; rejected values raise BadInput."""
    scenario, issues = from_query(link, set(catalog.profile_keys()), set(catalog.models), catalog.engine_aliases())
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
    if args.out:
        outfile.checked(args.out, args.force)
    executor = executor_of(args) if args.executor != "local" or args.workers else None
    chunks = sweep_chunks(scenario, axes, catalog, executor=executor)  # checks the budget and every combination
    first = next(chunks)
    with outfile.writing(args.out, args.force) if args.out else nullcontext(out) as sink:
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


def _traffic_changes(args: argparse.Namespace) -> dict[str, Any]:
    """The link keys the traffic options set (``--scale``, ``--window``, ``--prefix-cache``, fleet)."""
    from planner.sim.traces import BUNDLED, parse_window

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
    from planner.sim.traces import BUNDLED, read_trace_file, scenario_traffic

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
    from planner.sim.fleet import fleet_text, replica_frame, simulate_fleet_scenario
    from planner.sim.results import requests_frame, summary_text

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
        hit = _simulated_hit(scenario, catalog, result)
        if hit is not None:
            out.write(
                f"{'on your GPUs':<26}gpu_hit={hit:.4g} — this run's prefix-cache hits as the headline reads them "
                "(add it to the link: TTFT, tokens/s and GPU cost of `kvplan evaluate`)\n"
            )
    return 0


def _simulated_hit(scenario: Scenario, catalog: Catalog, result: Any) -> float | None:
    """The GPUs' hit rate the run measured (``results.simulated_gpu_hit``) for the scenario's prompt and prefix."""
    from planner.engine.evaluate import evaluate
    from planner.sim.results import simulated_gpu_hit

    cached = float(evaluate(scenario, catalog).metrics["gpu_cached_tokens"])
    return simulated_gpu_hit(result, scenario.prompt, cached)


#: The most requests ``kvplan replay --requests`` generates (10⁹: a week of 1,600 requests/s).
MAX_REPLAY_REQUESTS = 1_000_000_000


def replay(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    """A long trace (``--trace``) or ``--requests`` synthetic Poisson requests on the scenario's fleet, split
    into parts through an executor and merged (``planner.sim.replay``)."""
    from planner.cli.progress import TerminalProgress
    from planner.export import present_metrics
    from planner.sim.replay import TASK_REQUESTS, plan_replay, replay_text
    from planner.sim.replay import replay as run_replay
    from planner.sim.replay_sources import SyntheticSource, WorkloadSource

    scenario, trace = _scenario_and_trace(args, catalog, err)
    problems = []
    if args.requests is not None and trace is not None:
        problems.append("--requests generates Poisson traffic: give it or a trace (--trace, trace=), not both")
    if args.requests is not None and not 1 <= args.requests <= MAX_REPLAY_REQUESTS:
        problems.append(f"--requests {args.requests:,}: between 1 and {MAX_REPLAY_REQUESTS:,}")
    if not 1000 <= args.task_requests <= TASK_REQUESTS:
        problems.append(f"--task-requests {args.task_requests:,}: between 1,000 and {TASK_REQUESTS:,}")
    if problems:
        raise BadInput(problems)
    if trace is not None:
        source: Any = WorkloadSource(trace, trace.name or trace.source)
    else:
        source = SyntheticSource(scenario, args.requests or scenario.sim_requests)
    executor = executor_of(args)
    bar = TerminalProgress(err)
    try:
        plan = plan_replay(scenario, catalog, source, args.task_requests)
        z = run_replay(scenario, catalog, source, executor, plan, progress=bar)
    finally:
        bar.clear()
    if args.format == "json":
        b = z.boundary
        record = present_metrics(z.summary) | {
            "traffic": z.source,
            "router": scenario.router,
            "replicas": scenario.replicas,
            "parts": z.parts,
            "windows": len(plan.edges) - 1,
            "lead_s": plan.lead_s,
            "executor": z.executor,
            "boundaries": b.boundaries,
            "boundaries_exact": b.exact,
            "boundary_requests": b.requests,
            "boundary_max_diff_s": b.max_diff_s,
            "per_part": z.windows,
        }
        out.write(json.dumps(record, indent=2, default=str) + "\n")
    else:
        out.write(replay_text(z))
    return 0


def _with_search(scenario: Scenario, args: argparse.Namespace) -> Scenario:
    """The scenario with ``--search`` applied (the link key ``search``)."""
    return scenario.with_changes(search=args.search) if args.search else scenario


def _gpu_keys(text: str | None, catalog: Catalog) -> list[str] | None:
    """``--gpus``: datasheet profile keys, each one the catalog has; None (every priced one) when not given."""
    if text is None:
        return None
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in catalog.gpus]
    if unknown or not keys:
        shown = ", ".join(repr(k) for k in unknown) or "(none given)"
        raise BadInput([f"--gpus: unknown GPU profile {shown}; choose from {', '.join(sorted(catalog.gpus))}"])
    return list(dict.fromkeys(keys))


def executor_of(args: argparse.Namespace) -> Any:
    """The executor ``--executor``, ``--address`` and ``--workers`` name (``planner.executors``)."""
    from planner.executors import make_executor

    if args.workers is not None and args.workers < 1:
        raise BadInput([f"--workers {args.workers}: at least 1"])
    return make_executor(args.executor, args.address, args.workers)


def size(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.cli.progress import TerminalProgress
    from planner.export import frame_to_csv, present_frame
    from planner.search.sizing import size_fleet, sizing_text

    gpus = _gpu_keys(args.gpus, catalog)
    scenario, trace = _scenario_and_trace(args, catalog, err)
    scenario = _with_search(scenario, args)
    if not args.time_budget > 0:
        raise BadInput([f"--time-budget {args.time_budget:g}: a number of seconds above 0"])
    bar = TerminalProgress(err)
    options: dict[str, Any] = dict(time_budget_s=args.time_budget)
    if scenario.search != "none":
        options |= dict(executor=executor_of(args), on_update=bar.screened)
    try:
        sizing = size_fleet(scenario, catalog, trace=trace, gpus=gpus, search=True, progress=bar, **options)
    finally:
        bar.clear()
    if args.format == "csv":
        out.write(frame_to_csv(present_frame(sizing.table)))
    elif args.format == "json":
        frames = {k: present_frame(getattr(sizing, k)).to_dict("records") for k in ("table", "disaggregated")}
        record: dict[str, Any] = {"reason": sizing.reason, "best_row": sizing.best, **frames}
        if sizing.search is not None:
            z = sizing.search
            record["search"] = {
                "knobs": scenario.search,
                "slo": z.slo.text(),
                "configurations_scored": z.scored,
                "configurations_valid": z.valid,
                "screen_s": z.screen_s,
                "confirm_s": z.confirm_s,
                "simulations": z.simulations,
                "seeds": list(z.seeds),
                "requests_per_simulation": z.requests_per_simulation,
                "simulated_requests": z.simulated_requests,
                "candidates": z.candidates,
                "confirmed": z.confirmed,
                "stopped": z.stopped or None,
                "time_budget_s": z.time_budget_s,
                "executor": z.executor,
                "best_basis": z.best_basis or None,
                "best_link": _link_of(scenario, z) if z.best is not None else None,
            }
        out.write(json.dumps(record, indent=2, default=str) + "\n")
    else:
        out.write(sizing_text(sizing))
    return EXIT_INTERRUPTED if sizing.search is not None and sizing.search.stopped == "cancelled" else 0


def _link_of(scenario: Scenario, z: Any) -> str:
    """The answer as a link: the scenario moved to the best row's configuration and replica count."""
    from planner.links import to_query_string

    return to_query_string(scenario.with_changes(**z.changes(int(z.table.loc[z.best, "point"]))))


def pareto(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    """Every configuration the search scores (analytic), flagged on its two Pareto frontiers."""
    from planner.export import frame_to_csv, present_frame
    from planner.search.knob_search import pareto_text, screen_points

    if args.out:
        outfile.checked(args.out, args.force)
    scenario, trace = _scenario_and_trace(args, catalog, err)
    scenario = _with_search(scenario, args)
    screened = screen_points(scenario, catalog, trace)
    points = screened.export_frame()
    csv = frame_to_csv(present_frame(points))
    if args.out:
        outfile.write_text(args.out, csv, args.force)
        print(f"wrote {len(points):,} points to {args.out}", file=err)
    if args.format == "csv" and not args.out:
        out.write(csv)
    else:
        out.write(pareto_text(points, screened.slo))
    return 0


def launch(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.engine.evaluate import resolve
    from planner.launch.commands import launch_command
    from planner.launch.flags import flag_problems
    from planner.model.engine_flags import load_flag_table

    r = resolve(scenario_from_link(args.link, catalog, err), catalog)
    cmd = launch_command(r, args.engine, catalog)
    table = load_flag_table(cmd.profile_key)
    refused = flag_problems(cmd.argv, table) if table is not None else []
    notes = [*r.notes, *cmd.notes] + [f"the {cmd.version} parser would not take: {p}" for p in refused]
    if args.format == "json":
        doc = {"engine": cmd.engine, "version": cmd.version, "argv": list(cmd.argv), "notes": notes}
        out.write(json.dumps(doc, indent=2) + "\n")
        return 0
    out.write(cmd.text() + "\n")
    out.write(f"# flags of {cmd.version}" + (" (checked against its parser's flag table)" if table else "") + "\n")
    for note in notes:
        out.write(f"# {note}\n")
    return 0


def deploy(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    """``kvplan deploy LINK --target … --out DIR``: the fleet's deployment files (planner/deploy), written into DIR."""
    from pathlib import Path

    from planner.deploy.bundle import deploy_bundle
    from planner.format import fmt_count

    bundle = deploy_bundle(scenario_from_link(args.link, catalog, err), catalog, args.target, args.engine)
    written = outfile.write_folder(Path(args.out), bundle.files, force=args.force)
    fleet = bundle.fleet
    pools = "; ".join(f"{p.role} {p.replicas} × {p.layout}" for p in fleet.pools)
    out.write(
        f"{args.target}: {fleet.engine} {fleet.release}, {pools}, {fmt_count(fleet.gpus, 'GPU')}; wrote "
        f"{fmt_count(len(written), 'file')}\n"
    )
    for path in written:
        out.write(f"  {path}\n")
    for note in fleet.notes:
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
    from planner.logs.check import calibrated_scenario, calibration_problems
    from planner.logs.check import check_log as run_check
    from planner.logs.startup import parse_startup_log

    scenario = scenario_from_link(args.link, catalog, err)
    log = parse_startup_log(_read_log(args.log))
    check = run_check(scenario, log, catalog)
    refused = calibration_problems(check, log) if args.calibrate else []
    link = to_query_string(calibrated_scenario(scenario, log, catalog)) if args.calibrate and not refused else None
    if args.format == "json":
        rows = [
            {"term": r.term, "unit": r.unit, "predicted": r.predicted, "logged": r.logged, "error": r.error_frac}
            for r in check.rows
        ]
        payload: dict[str, Any] = {"rows": rows, "notes": list(check.notes), "plan": to_query_string(check.scenario)}
        if link is not None:
            payload["calibrated_link"] = link
        out.write(json.dumps(payload, indent=2) + "\n")
    else:
        out.write(log_check_text(check))
        if link is not None:
            out.write(f"calibrated link: ?{link}\n")
    if refused:
        raise BadInput(refused)
    return 0


def _gpu_row(key: str, gpu: GPU) -> str:
    """One profile's key facts: memory, bandwidth, dense bf16 peak, price."""
    from planner.format import fmt_num, fmt_usd
    from planner.units import GB, TERA

    price = "not priced" if gpu.price_per_gpu_hour_usd <= 0 else f"{fmt_usd(gpu.price_per_gpu_hour_usd)}/GPU-h"
    facts = (
        f"{fmt_num(gpu.memory_bytes / GB):>5} GB  {fmt_num(gpu.memory_bandwidth_bytes_per_s / TERA):>5} TB/s  "
        f"{fmt_num(gpu.peak_flop_per_s['bf16'] / TERA):>6} TFLOP/s bf16  {price}"
    )
    where = f"  [measured: benchmarks/results/{key}.toml]" if gpu.calibrated else ""
    return f"  {key:<24} {gpu.name:<46} {facts}{where}"


def _model_row(key: str, m: ModelSpec) -> str:
    """One preset's key facts: parameters, layers and their kinds, attention, KV per token, context."""
    from planner.format import fmt_bytes, fmt_count, fmt_num
    from planner.model.params import kv_elements_per_token, param_counts, state_bytes_per_sequence
    from planner.units import DTYPE_BYTES, GIGA

    pc = param_counts(m)
    params = f"{fmt_num(pc.total / GIGA)}B" + (f" ({fmt_num(pc.active / GIGA)}B active)" if m.is_moe else "")
    kv = fmt_bytes(kv_elements_per_token(m) * DTYPE_BYTES["bf16"])
    state = f" + {fmt_bytes(state_bytes_per_sequence(m))}/seq state" if m.is_hybrid else ""
    return (
        f"  {key:<30} {m.name:<36} {params:<22} {m.layers:>3} layers ({m.layer_summary}), {m.attention_kind}, "
        f"KV {kv}/token bf16{state}, {fmt_count(m.context_window_tokens)}-token context"
    )


def list_catalog(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    """``kvplan gpus`` / ``kvplan models``: every profile or preset with its key facts, grouped by
    vendor and generation (GPUs) or family (models)."""
    if args.command == "gpus":
        profiles = {**catalog.gpus, **catalog.measured}
        keys = sorted(profiles, key=lambda k: profiles[k].group_order)
        groups = [(profiles[k].group, _gpu_row(k, profiles[k])) for k in keys]
    else:
        models = catalog.models
        keys = sorted(models, key=lambda k: (models[k].family_order, models[k].family, k))
        groups = [(models[k].family, _model_row(k, models[k])) for k in keys]
    current = None
    for group, row in groups:
        if group != current:
            out.write(f"{group}\n")
            current = group
        out.write(f"{row}\n")
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
    if args.out:
        outfile.checked(args.out, args.force)
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
        gpu, engine = catalog.profile(scenario.gpu), catalog.engine(scenario.engine)
        assert gpu is not None and engine is not None  # resolved by the fit
        text = calibrated_profile_toml(engine, gpu, cal, ", ".join(args.files))
        outfile.write_text(args.out, text, args.force)
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


def predict(args: argparse.Namespace, catalog: Catalog, out: TextIO, err: TextIO) -> int:
    from planner.cli.predict import cmd_predict

    return cmd_predict(args, scenario_from_link(args.link, catalog, err), catalog, out, err)


def serve(args: argparse.Namespace, err: TextIO) -> int:
    from planner.cli.serve import run_dashboard

    return run_dashboard(args.port, args.address, err)


COMMANDS: dict[str, Command] = {
    "evaluate": evaluate,
    "sweep": sweep,
    "findings": findings,
    "simulate": simulate,
    "size": size,
    "replay": replay,
    "pareto": pareto,
    "launch": launch,
    "deploy": deploy,
    "check-log": check_log,
    "gpus": list_catalog,
    "models": list_catalog,
    "bench": bench,
    "calibrate": calibrate,
    "predict": predict,
}
