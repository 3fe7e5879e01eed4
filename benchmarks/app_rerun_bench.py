"""Server-side rerun time of the dashboard after a widget change (target: median ≤ 150 ms).

Drives app.py through streamlit's AppTest (the script runs in-process, as on the
server; no browser, no network): warm up, then move the batch slider to a value
not seen before (so every engine/chart cache misses) and time each rerun, with
each tab open in turn (every tab of ui/tabs/registry.py).
Prints the median and p90 per tab.  Not a test.

    .venv/bin/python benchmarks/app_rerun_bench.py [--runs 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the checkout's planner
from planner.units import MS_PER_S

ROOT = Path(__file__).resolve().parent.parent
TARGET_MEDIAN_S = 0.150


def time_reruns(tab: str, runs: int, first_batch: int) -> list[float]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.session_state["_tab"] = tab
    at.run()
    for warm in range(3):  # imports, first figures, caches of the unchanged parts
        at.slider(key="batch").set_value(first_batch + warm).run()
    times = []
    for i in range(runs):
        at.slider(key="batch").set_value(first_batch + 3 + i)
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        if at.exception:
            raise SystemExit(f"{tab}: the app raised: {at.exception[0].message}")
    return times


def tab_titles() -> list[str]:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    return [t.label for t in at.tabs]


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed reruns per tab")
    args = parser.parse_args()
    medians = []
    print(
        f"{'tab open':<24} {'median ms':>10} {'p90 ms':>8}   (AppTest rerun after a new batch value, {args.runs} runs)"
    )
    for i, tab in enumerate(tab_titles()):
        times = time_reruns(tab, args.runs, first_batch=10 + 100 * i)
        medians.append(statistics.median(times))
        print(f"{tab:<24} {MS_PER_S * medians[-1]:>10.1f} {MS_PER_S * p90(times):>8.1f}")
    worst = max(medians)
    verdict = "met" if worst <= TARGET_MEDIAN_S else "NOT met"
    print(f"worst median {MS_PER_S * worst:.1f} ms; target ≤ {MS_PER_S * TARGET_MEDIAN_S:.0f} ms: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
