"""Cold start of the CLI: wall time of `kvplan evaluate LINK --format json` in a fresh process.

Target (issue: one restructure): ≤ 0.3 s on this 2-core machine; llm-analysis's CLI takes ~0.1 s.
Also prints the bare interpreter and `import numpy, pydantic` for scale, and which heavy
libraries the command loaded (it must load neither pandas nor plotly nor streamlit).

    .venv/bin/python benchmarks/cli_startup_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = "gpu=h200&model=llama-3.1-70b&tp=2"
TARGET_S = 0.3


def wall_s(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    runs = ap.parse_args().runs
    py = sys.executable
    cases = {
        "python -c pass": [py, "-c", "pass"],
        "import numpy, pydantic": [py, "-c", "import numpy, pydantic"],
        "kvplan evaluate --format json": [py, "-m", "planner", "evaluate", LINK, "--format", "json"],
        "kvplan evaluate (text)": [py, "-m", "planner", "evaluate", LINK],
        "kvplan evaluate --format csv": [py, "-m", "planner", "evaluate", LINK, "--format", "csv"],
    }
    print(f"cold start, median (min … max) of {runs} runs, wall seconds")
    medians = {}
    for name, argv in cases.items():
        t = wall_s(argv, runs)
        medians[name] = statistics.median(t)
        print(f"  {name:<32} {medians[name]:.3f} s  ({min(t):.3f} … {max(t):.3f})")
    probe = (
        "import io, sys\nfrom planner.cli.main import main\n"
        f"main(['evaluate', {LINK!r}, '--format', 'json'], out=io.StringIO())\n"
        "print(', '.join(m for m in ('pandas', 'plotly', 'streamlit', 'torch') if m in sys.modules) or 'none')"
    )
    loaded = subprocess.run([py, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    print(f"heavy libraries loaded by evaluate (json): {loaded}")
    got = medians["kvplan evaluate --format json"]
    print(f"target ≤ {TARGET_S} s for evaluate --format json: {'met' if got <= TARGET_S else 'NOT met'} ({got:.3f} s)")


if __name__ == "__main__":
    main()
