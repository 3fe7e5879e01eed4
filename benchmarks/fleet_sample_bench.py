"""How far a bounded sample of a load-aware fleet is from the whole fleet (planner/search/fleet_sample.py).

Run: .venv/bin/python benchmarks/fleet_sample_bench.py [--fleets 1,2,4,8,16,32] [--per-replica N] [--seeds 1,2]
     [--routers least_tokens,prefix_affinity] [--loads 1.47,1.62]

A sub-fleet of k replicas fed rate · k / r is a fleet of k replicas at the same load per replica, so the question
"is the sample conservative" is: at equal load per replica, does a fleet's p99 TTFT and ITL fall (or stay) as
the fleet grows?  Prints, per router, load per replica and fleet size r, the whole fleet's p99 TTFT, p99 ITL and
CPU seconds (each seed's Poisson arrivals at r × load on r replicas, ``per_replica`` requests per replica), the
mean and the spread over the seeds.  The configuration: issue 28's Llama-3.1-70B, 4,000 in / 500 out, on the
MI355X tp 2 replica the search answers with at 200 requests/s (batch 512, chunk 512); 1.47 requests/s per
replica is that answer's load (200 / 136), 1.62 is 10 % more.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("KVPLAN_BENCH_TREE") or str(Path(__file__).resolve().parent.parent))

from planner.model.catalog import load_catalog  # noqa: E402  (after the sys.path line: runs from a checkout)
from planner.model.scenario import Scenario  # noqa: E402
from planner.search.pools import _setup  # noqa: E402
from planner.sim.fleet import simulate_fleet  # noqa: E402
from planner.sim.simulate import simulate  # noqa: E402
from planner.sim.workload import scenario_workload  # noqa: E402

BASE = Scenario(model="llama-3.1-70b", gpu="mi355x", tp=2, batch=512, chunk=512, prompt=4000, output=500)


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def one(router: str, load: float, r: int, n: int, seed: int) -> tuple[float, float, float]:
    """p99 TTFT, p99 ITL (s) and CPU seconds of r replicas behind ``router`` at ``load`` requests/s each."""
    catalog = load_catalog()
    s = BASE.with_changes(rate=load * r, router=router, seed=seed)
    cfg, timer = _setup(s, catalog, "colocated")
    w = scenario_workload(s, n=n * r)
    start = time.process_time()
    if r == 1:
        res = simulate(w, cfg, timer, detail=False)
    else:
        res = simulate_fleet(w, cfg, timer, r, s.router, detail=False).combined
    return float(res.summary["ttft_p99_s"]), float(res.summary["itl_p99_s"]), time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fleets", default="1,2,4,8,16,32")
    ap.add_argument("--per-replica", type=int, default=1000)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--routers", default="least_tokens,prefix_affinity")
    ap.add_argument("--loads", default="1.47,1.62")
    args = ap.parse_args()
    seeds = _ints(args.seeds)
    print(
        f"{BASE.model} {BASE.prompt} in / {BASE.output} out on {BASE.gpu} tp{BASE.tp} (batch {BASE.batch}, chunk "
        f"{BASE.chunk}); {args.per_replica} requests per replica, seeds {seeds}"
    )
    print(f"{'router':<16}{'req/s/replica':>14}{'replicas':>9}{'p99 TTFT s':>22}{'p99 ITL ms':>20}{'CPU s':>8}")
    for router in args.routers.split(","):
        for load in _floats(args.loads):
            for r in _ints(args.fleets):
                got = [one(router, load, r, args.per_replica, seed) for seed in seeds]
                ttft = [g[0] for g in got]
                itl = [g[1] * 1e3 for g in got]
                cpu = sum(g[2] for g in got)
                print(
                    f"{router:<16}{load:>14.2f}{r:>9}{sum(ttft) / len(ttft):>10.3f} ({min(ttft):.3f}–{max(ttft):.3f})"
                    f"{sum(itl) / len(itl):>9.1f} ({min(itl):.1f}–{max(itl):.1f}){cpu:>8.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
