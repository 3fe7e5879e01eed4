"""Simulator and sizing speed.

Run: .venv/bin/python benchmarks/sim_bench.py
Prints wall and CPU seconds (CPU time is less disturbed by other processes on a
shared machine) for:
  1. 10,000 requests simulated on one replica (default scenario, and near
     saturation, and with speculative decoding) — target ≤ 2 s;
  2. the full sizing table, every GPU profile × tp 1, 2, 4, 8 at 20 requests/s
     — target ≤ 20 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.model.catalog import load_catalog  # noqa: E402
from planner.model.scenario import Scenario  # noqa: E402
from planner.serving.simulate import simulate_scenario  # noqa: E402
from planner.serving.sizing import size_fleet  # noqa: E402


def timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    catalog = load_catalog()
    simulate_scenario(Scenario(sim_requests=200), catalog)  # warm-up (imports, caches)
    for label, s in (
        ("default (2 req/s)", Scenario(sim_requests=10_000)),
        ("near saturation (7 req/s)", Scenario(sim_requests=10_000, rate=7.0)),
        ("speculative, 4 req/s", Scenario(sim_requests=10_000, rate=4.0, spec=True)),
    ):
        r, wall, cpu = timed(lambda: simulate_scenario(s, catalog))
        verdict = "met" if wall <= 2.0 else "NOT met"
        print(
            f"simulate 10,000 requests, {label:<26} {wall:5.2f} s wall, {cpu:5.2f} s CPU "
            f"({int(r.summary['steps']):,} steps); target ≤ 2 s: {verdict}"
        )
    s = Scenario(rate=20.0)
    z, wall, cpu = timed(lambda: size_fleet(s, catalog))
    runs = int(z.table["simulations"].fillna(0).sum())
    print(
        f"sizing table, {len(z.table)} GPU × tp rows at 20 req/s:          {wall:5.2f} s wall, {cpu:5.2f} s CPU "
        f"({runs} simulations of ≤ {z.requests_per_simulation:,} requests); target ≤ 20 s: {'met' if wall <= 20 else 'NOT met'}"
    )
    print(z.reason)


if __name__ == "__main__":
    main()
