"""The ``bench`` subcommand.

    kvplan bench [--device cuda|cpu] [--backend auto|numpy|torch] [--quick] [--out DIR]

Writes ``<device>-<backend>[-quick].{json,csv,toml}`` to ``--out`` and prints the measured peaks and the
median |error| per phase.  Without ``--out``: the checkout's own ``benchmarks/results`` (with ``--quick``
its ``quick/`` sub-folder, git-ignored) when kvplan runs from its checkout — an absolute path, wherever the
command runs — and an error asking for ``--out`` when kvplan is installed (it writes nothing where the user
did not ask).  The folder is created when its parent exists; files already there need ``--force``, and a
link out of the folder is never written through (``planner.outfile``).  Everything is checked before the
run.  Bad input (unknown device, torch or CUDA missing, unwritable folder): exit code 2 and one ``error:``
line each, never a traceback.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from planner.errors import EXIT_BAD_INPUT, BadInput
from planner.units import GB

if TYPE_CHECKING:
    from planner.model.catalog import Catalog

TORCH_INSTALL = ".venv/bin/pip install torch==2.13.0"
#: --budget's bounds (seconds)
MIN_BUDGET_S, MAX_BUDGET_S = 10.0, 86_400.0


#: default output folders, in the checkout only: full runs are the committed results (the Cross-check tab
#: and the measured profiles read this folder's top level); quick runs go below it, out of their way
RESULTS_OUT = "benchmarks/results"
QUICK_OUT = "benchmarks/results/quick"


def checkout_results_dir() -> Path | None:
    """The checkout's ``benchmarks/results`` (absolute) when kvplan runs from its checkout, else None."""
    from planner.model.catalog import CHECKOUT, MEASURED_DIR

    return MEASURED_DIR if (CHECKOUT / "pyproject.toml").is_file() and MEASURED_DIR.is_dir() else None


def default_out_dir(quick: bool) -> Path | None:
    """Where a run without ``--out`` writes (module doc); None when kvplan is installed."""
    results = checkout_results_dir()
    return None if results is None else results / "quick" if quick else results


def add_bench_parser(sub) -> argparse.ArgumentParser:
    b = sub.add_parser("bench", help="measure this machine and compare with the engine's prediction")
    b.add_argument(
        "--device", choices=("cuda", "cpu"), default=None, help="default: cuda when torch sees one, else cpu"
    )
    b.add_argument(
        "--backend",
        choices=("auto", "numpy", "torch"),
        default="auto",
        help="CPU array library (auto: torch when installed, else numpy); CUDA always uses torch",
    )
    b.add_argument("--quick", action="store_true", help="tiny shapes, a few seconds (for tests)")
    b.add_argument(
        "--budget",
        type=float,
        metavar="SECONDS",
        help="time budget the run sizes itself to (default 150 on a CPU, 240 on a GPU, 60 with --quick)",
    )
    b.add_argument(
        "--out",
        default=None,
        help=f"folder for the JSON, CSV and calibrated TOML (default, in kvplan's checkout only: its {RESULTS_OUT}; "
        f"with --quick its {QUICK_OUT}, which the dashboard and the catalog do not read: quick numbers mean nothing)",
    )
    b.add_argument("--force", action="store_true", help="overwrite this machine's files in the --out folder")
    return b


Device = Literal["cpu", "cuda"]


def resolve_target(device: Device | None, backend: str) -> tuple[Device, str, list[str]]:
    """(device, backend, problems) after checking what is installed."""
    from planner.bench.backend import cuda_available, torch_available

    has_torch = torch_available()
    if device is None:
        device = "cuda" if has_torch and cuda_available() else "cpu"
    problems = []
    if device == "cuda":
        if backend == "numpy":
            problems.append("--backend numpy: numpy runs on the CPU only; use --device cpu")
        elif not has_torch:
            problems.append(f"--device cuda: needs torch (optional extra): {TORCH_INSTALL}")
        elif not cuda_available():
            problems.append("--device cuda: torch reports no CUDA device on this machine")
        return device, "torch", problems
    if backend == "torch" and not has_torch:
        problems.append(f"--backend torch: torch is not installed: {TORCH_INSTALL}")
    if backend == "auto":
        backend = "torch" if has_torch else "numpy"
    return device, backend, problems


def _existing(out_dir: Path, slug: str, force: bool) -> list[str]:
    """The refusals ``planner.outfile`` gives the run's files in ``out_dir`` (an existing one without ``force``)."""
    from planner import outfile
    from planner.bench.run import RESULT_SUFFIXES

    problems = []
    for ext in RESULT_SUFFIXES:
        try:
            outfile.checked(str(out_dir / f"{slug}.{ext}"), force)
        except BadInput as exc:
            problems += exc.problems
    return problems


def _out_dir(args, device: Device, backend: str, catalog: Catalog, problems: list[str]) -> Path | None:
    """The folder the run writes into, created once every check passed (``--out``, else ``default_out_dir``);
    each refusal appended to ``problems`` (a command that will not run creates nothing)."""
    from planner.bench.run import planned_slug

    out_dir = Path(args.out) if args.out else default_out_dir(args.quick)
    if out_dir is None:
        problems.append(
            "--out DIR is required: kvplan is installed (not run from its checkout), and a run writes nothing where "
            "you did not ask (e.g. --out ./bench-results)"
        )
    elif out_dir.exists() and not out_dir.is_dir():
        problems.append(f"--out {out_dir}: not a folder")
    elif not out_dir.exists() and not out_dir.parent.is_dir():
        problems.append(f"--out {out_dir}: the folder {out_dir.parent} does not exist; create it first")
    if not problems and out_dir is not None and out_dir.is_dir():
        problems += _existing(out_dir, planned_slug(device, backend, args.quick, catalog), args.force)
    if not problems and out_dir is not None:
        try:
            out_dir.mkdir(exist_ok=True)
        except OSError as exc:
            problems.append(f"--out {out_dir}: cannot create the folder ({exc.strerror})")
    return out_dir


def cmd_bench(args, catalog: Catalog, out, err) -> int:
    from planner.bench.run import ridge_text, run_bench, write_results

    device, backend, problems = resolve_target(args.device, args.backend)
    if args.budget is not None and not MIN_BUDGET_S <= args.budget <= MAX_BUDGET_S:
        problems.append(f"--budget {args.budget:g}: seconds from {MIN_BUDGET_S:g} to {MAX_BUDGET_S:,.0f}")
    out_dir = _out_dir(args, device, backend, catalog, problems)
    if problems or out_dir is None:
        for line in problems:
            print(f"error: {line}", file=err)
        return EXIT_BAD_INPUT

    start = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - start:6.1f} s] {message}", file=err, flush=True)

    results = run_bench(device, backend, args.quick, catalog, log=log, budget_s=args.budget)
    paths = write_results(results, out_dir, args.force)
    r = results
    out.write(f"device     {r.device.name} ({r.device.backend}, {r.device.dtype}, threads {r.device.threads})\n")
    rounds = f"median of {len(r.rounds)} rounds"
    out.write(f"matmul     {r.measured_peak_flop_per_s / GB:.1f} GFLOP/s (best of {len(r.matmul)} sizes; {rounds})\n")
    others = ", ".join(f"{b.kernel} {b.bytes_per_s / GB:.1f}" for b in r.bandwidth)
    out.write(
        f"bandwidth  {r.measured_bandwidth_bytes_per_s / GB:.1f} GB/s "
        f"(the decoder's weight-streaming kernel; {others} GB/s; {rounds})\n"
    )
    spread = [x.bandwidth_bytes_per_s / GB for x in r.rounds]
    out.write(f"rounds     bandwidth {min(spread):.1f} … {max(spread):.1f} GB/s over the run\n")
    rows = ", ".join(str(o.rows) for o in r.overlap)
    out.write(
        f"overlap    {r.measured_compute_memory_overlap:+.2f} "
        f"(linear kernel at {rows} rows; 1 = roofline, 0 = back to back)\n"
    )
    out.write(
        f"attention  {r.measured_attention_compute_frac:.2f} of the peak (prefill), "
        f"{r.measured_attention_bandwidth_frac:.2f} of the bandwidth (decode)\n"
    )
    batch1 = sorted((c for c in r.cases if c.phase == "decode" and c.seqs == 1), key=lambda c: c.ctx)
    if batch1:
        rates = " / ".join(f"{c.predictions['calibrated'].bytes / c.measured_s / GB:.1f}" for c in batch1)
        ctxs = " / ".join(str(c.ctx) for c in batch1)
        out.write(f"batch 1    decode streams {rates} GB/s at ctx {ctxs} (bytes the engine counts / measured time)\n")
    for s in r.summary:
        out.write(
            f"{s.profile:<10} {s.phase:<8} median |error| {100 * s.median_abs_error_frac:5.1f} %  ({s.cases} cases)\n"
        )
    for line in ridge_text(r):
        out.write(f"ridge      {line}\n")
    for line in r.skipped:
        out.write(f"skipped    {line}\n")
    for note in r.budget_notes:
        out.write(f"budget     {note}\n")
    over = (
        f" — over the {r.budget_s:.0f} s budget (load average {r.device.load_average[1]:.1f})"
        if (r.budget_s and r.wall_s > r.budget_s)
        else ""
    )
    out.write(f"wall       {r.wall_s:.1f} s{over}\n")
    if r.kernel_table is not None:
        k = r.kernel_table
        names = ", ".join(t.name for t in k.tables)
        out.write(f"kernels    {names}: {k.measured_cells} of {k.planned_cells} cells measured (gpu={k.gpu})\n")
    for p in paths:
        out.write(f"wrote      {p}\n")
    if r.kernel_table is not None:
        from planner.bench.kernels import kernel_table_meta
        from planner.kernels.format import table_file_name

        name = table_file_name(kernel_table_meta(r.kernel_table))
        out.write(
            f"plan with these kernels: copy {r.device.slug}.kernels.npz to $KVPLAN_DATA_DIR/kernel_tables/{name} "
            "(an engine-independent table is read before the shipped ones of its GPU)\n"
        )
    return 0
