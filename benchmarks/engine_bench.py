"""Engine throughput: one vectorised call over 1,000,000 scenarios, beside the previous commit's.

Run: make bench-engine   (or .venv/bin/python benchmarks/engine_bench.py [N] [--baseline REV] [--rounds K])

This VM's speed drifts, so the previous commit's engine is measured in the same run: its
``planner/`` is extracted with ``git archive`` into a temporary folder, and the two are timed
in alternating child processes (current, previous, current, …; K rounds each, best of 3 calls
per round), one core each (numpy's elementwise kernels are single-threaded).  The baseline
is the parent commit when the worktree is clean (HEAD is what is measured), else HEAD.
Each rate is given per wall-clock second and per CPU-second of the child (``time.process_time``): on an idle
core the two agree; on a VM shared with other work the CPU figure leaves out the time the core ran others.
Also prints a per-scenario loop for scale.  Target: ≥ 1,000,000 scenarios/s vectorised.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SCENARIOS_PER_S = 1_000_000


def grid_inputs(n: int):
    """The default scenario with batch, lengths, chunk, hit rate, prefix and α drawn per scenario."""
    import numpy as np

    from planner.engine.evaluate import inputs_for, resolve
    from planner.model.catalog import load_catalog
    from planner.model.scenario import Scenario

    catalog = load_catalog()
    x = inputs_for(resolve(Scenario(), catalog))
    rng = np.random.default_rng(0)
    prompt = rng.integers(16, 32_768, n).astype(float)
    grid = x.with_(
        batch=rng.integers(1, 512, n).astype(float),
        prompt_tokens=prompt,
        output_tokens=rng.integers(1, 4_096, n).astype(float),
        chunk_tokens=rng.integers(64, 8_192, n).astype(float),
        cache_hit_rate=rng.random(n),
        prefix_tokens=np.floor(prompt * rng.random(n)),
        alpha=rng.random(n),
    )
    return x, grid


def vectorised_rate(n: int) -> tuple[float, float]:
    """Scenarios per second of ``compute`` over the grid, best of 3 calls: per wall-clock second, and per
    CPU-second of this process (``time.process_time``: the same on an idle core; on a shared VM it leaves
    out the time other processes held the core, which the wall clock counts)."""
    from planner.engine.evaluate import compute

    x, grid = grid_inputs(n)
    compute(x)  # warm-up
    wall = cpu = float("inf")
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        out = compute(grid)
        wall, cpu = min(wall, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    assert out["tpot_s"].shape == (n,)
    return n / wall, n / cpu


def loop_rate(loop_n: int) -> float:
    from planner.engine.evaluate import compute

    x, grid = grid_inputs(loop_n)
    t0 = time.perf_counter()
    for i in range(loop_n):
        compute(
            x.with_(
                batch=float(grid.batch[i]),
                prompt_tokens=float(grid.prompt_tokens[i]),
                output_tokens=float(grid.output_tokens[i]),
                chunk_tokens=float(grid.chunk_tokens[i]),
                cache_hit_rate=float(grid.cache_hit_rate[i]),
                prefix_tokens=float(grid.prefix_tokens[i]),
                alpha=float(grid.alpha[i]),
            )
        )
    return loop_n / (time.perf_counter() - t0)


def child_rate(root: Path, n: int) -> tuple[float, float]:
    """The vectorised rates (wall, CPU) of the engine under ``root``, in a fresh single-threaded process."""
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]); "
        "from engine_bench import vectorised_rate; print(json.dumps(vectorised_rate(int(sys.argv[3]))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(Path(__file__).parent), str(n)],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    wall, cpu = json.loads(out.strip().splitlines()[-1])
    return float(wall), float(cpu)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=1_000_000)
    ap.add_argument("--baseline", help="git revision to compare with (default: the previous commit)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per engine (best is kept)")
    ap.add_argument("--loop", type=int, default=2_000, help="scenarios in the one-by-one loop")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))  # the parent only: a child imports the tree it measures
    from benchmarks.previous import baseline_rev, extract, git

    rev = baseline_rev(args.baseline)
    label = git("rev-parse", "--short", rev)
    with tempfile.TemporaryDirectory() as tmp:
        previous_root = Path(tmp)
        extract(rev, previous_root)
        now, before = [], []
        for _ in range(args.rounds):
            now.append(child_rate(ROOT, args.n))
            before.append(child_rate(previous_root, args.n))
    loop = loop_rate(args.loop)
    for j, clock in enumerate(("wall-clock", "CPU")):
        best_now, best_before = max(r[j] for r in now), max(r[j] for r in before)
        print(f"per {clock} second (best of {args.rounds} rounds):")
        print(f"  vectorised, this tree:          {args.n:,} scenarios: {best_now:,.0f} scenarios/s")
        print(f"  vectorised, previous ({label}): {args.n:,} scenarios: {best_before:,.0f} scenarios/s (same run)")
        print(
            f"  change:     {best_now / best_before - 1.0:+.1%}; rounds now {[round(r[j]) for r in now]}, "
            f"previous {[round(r[j]) for r in before]}"
        )
        met = "met" if best_now >= TARGET_SCENARIOS_PER_S else "NOT met"
        print(f"  target >= {TARGET_SCENARIOS_PER_S:,} scenarios/s vectorised on one core: {met}")
    best = max(r[0] for r in now)
    print(f"loop:       {args.loop:,} scenarios one by one = {loop:,.0f} scenarios/s ({best / loop:,.0f}x slower)")


if __name__ == "__main__":
    main()
