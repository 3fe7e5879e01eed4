"""Simulator speed, beside the previous commit's in the same run.

Run: .venv/bin/python benchmarks/sim_bench.py [--repeat N] [--only poisson|traces|fleet|sizing]
                                              [--baseline REV | --no-baseline] [--rounds K]
Prints CPU seconds (one core's time: less disturbed by other jobs on a shared machine; the targets are
checked against it) and requests simulated per CPU second, for:
  1. 10,000 Poisson requests on one replica: the default scenario, near saturation, speculative decoding
     (target ≥ 10,000 requests per CPU second; speculative ≤ 2 × the plain default's CPU time);
  2. the Mooncake conversation trace (12,031 requests, 59 min, prefix cache in the KV pool) on one replica
     at vLLM's H200 scheduler defaults (batch 256, 8,192-token steps), and at the scenario defaults (batch
     32, 2,048-token steps) where the replica falls behind — target ≥ 10,000 requests per CPU second;
  3. the Azure LLM 2023 conversation trace (19,366 requests, 1 h) on a 4-replica fleet, for each router;
  4. one sizing confirmation's workload: Llama-3.1-70B, 4,000 in / 500 out on one H100 tp 8 replica at
     1.5 requests/s (batch 512, 512-token steps: prefill-heavy mixed steps).
This VM's speed drifts, so by default the previous commit's simulator (``benchmarks/previous.py``:
``planner/`` and the data folders extracted with ``git archive``) runs the same cases in alternating
child processes (this tree, previous, this tree, …; ``--rounds`` each, the fastest kept), and the two are
printed side by side with their ratio.  With ``--repeat N`` each case runs N times per round.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUESTS = 10_000
TARGET_PER_CPU_S = 10_000
SPEC_RATIO_MAX = 2.0


def _cases() -> list[tuple[str, str, dict, str | None, int]]:
    """(group, label, scenario fields, bundled trace or None, replicas)."""
    return [
        ("poisson", "10,000 Poisson, default (2 req/s)", dict(sim_requests=REQUESTS), None, 1),
        ("poisson", "10,000 Poisson, near saturation (7 req/s)", dict(sim_requests=REQUESTS, rate=7.0), None, 1),
        ("poisson", "10,000 Poisson, speculative (4 req/s)", dict(sim_requests=REQUESTS, rate=4.0, spec=True), None, 1),
        (
            "traces",
            "Mooncake conv., H200 tp4, vLLM defaults (batch 256, 8,192)",
            dict(gpu="h200", tp=4, batch=256, chunk=8192),
            "mooncake-conversation",
            1,
        ),
        (
            "traces",
            "Mooncake conv., H200 tp2, batch 32, 2,048 (queues)",
            dict(gpu="h200", tp=2),
            "mooncake-conversation",
            1,
        ),
        *(
            ("fleet", f"Azure conv., 4 × H100, {router}", dict(replicas=4, router=router), "azure-conv-2023", 4)
            for router in ("round_robin", "least_tokens", "prefix_affinity")
        ),
        (
            "sizing",
            "70B 4,000/500, H100 tp8 at 1.5 req/s (batch 512, 512)",
            dict(model="llama-3.1-70b", prompt=4000, output=500, rate=1.5, tp=8, batch=512, chunk=512),
            None,
            1,
        ),
    ]


def measure(only: str | None, repeat: int) -> list[dict]:
    """Each case's fastest run (least CPU) in this process: label, requests, CPU and wall seconds, steps."""
    from planner.model.catalog import load_catalog
    from planner.model.scenario import Scenario
    from planner.sim.fleet import simulate_fleet_scenario
    from planner.sim.traces import bundled_trace

    catalog = load_catalog()
    simulate_fleet_scenario(Scenario(sim_requests=200), catalog)  # warm-up (imports, caches)
    rows = []
    for group, label, fields, trace, _ in _cases():
        if only is not None and group != only:
            continue
        s = Scenario(**fields)
        w = bundled_trace(trace).workload if trace else None  # loading is not timed (once per process)
        best = None
        for _ in range(max(repeat, 1)):
            wall, cpu = time.perf_counter(), time.process_time()
            f = simulate_fleet_scenario(s, catalog, workload=w)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            if best is None or cpu < best["cpu_s"]:
                sm = f.combined.summary
                best = dict(
                    group=group,
                    label=label,
                    requests=int(sm["requests"]),
                    cpu_s=cpu,
                    wall_s=wall,
                    steps=int(sm["steps"]),
                    ttft_p99_s=float(sm["ttft_p99_s"]),
                )
        rows.append(best)
    return rows


def child(root: Path, only: str | None, repeat: int) -> list[dict]:
    """``measure`` in a fresh single-threaded process importing the planner under ``root``."""
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); sys.path.insert(1, sys.argv[2]); "
        "from sim_bench import measure; "
        "print(json.dumps(measure(None if sys.argv[3] == '-' else sys.argv[3], int(sys.argv[4]))))"
    )
    env = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(Path(__file__).parent), only or "-", str(repeat)],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _fastest(rounds: list[list[dict]]) -> dict[str, dict]:
    best: dict[str, dict] = {}
    for rows in rounds:
        for r in rows:
            if r["label"] not in best or r["cpu_s"] < best[r["label"]]["cpu_s"]:
                best[r["label"]] = r
    return best


def report(now: dict[str, dict], before: dict[str, dict] | None, label: str) -> None:
    head = f"{'case':<58}{'requests':>9}{'CPU s':>8}{'req/CPU s':>11}"
    if before is not None:
        head += f"{'previous CPU s':>16}{'previous req/s':>16}{'speed-up':>10}"
    print(head)
    for key, r in now.items():
        rate = r["requests"] / r["cpu_s"]
        line = f"{key:<58}{r['requests']:>9,}{r['cpu_s']:>8.2f}{rate:>11,.0f}"
        if before is not None and key in before:
            b = before[key]
            line += f"{b['cpu_s']:>16.2f}{b['requests'] / b['cpu_s']:>16,.0f}{b['cpu_s'] / r['cpu_s']:>9.2f}×"
            if b["steps"] != r["steps"] or b["ttft_p99_s"] != r["ttft_p99_s"]:
                line += "  (results differ!)"
        print(line)
    plain = now.get("10,000 Poisson, default (2 req/s)")
    spec = now.get("10,000 Poisson, speculative (4 req/s)")
    if plain and spec:
        ratio = spec["cpu_s"] / plain["cpu_s"]
        met = "met" if ratio <= SPEC_RATIO_MAX else "NOT met"
        print(f"speculative / plain CPU: {ratio:.2f} (target ≤ {SPEC_RATIO_MAX:g}: {met})")
    rates = [r["requests"] / r["cpu_s"] for r in now.values() if r["group"] in ("poisson", "traces", "sizing")]
    if rates:
        print(
            f"slowest single-replica case: {min(rates):,.0f} requests per CPU second "
            f"(target ≥ {TARGET_PER_CPU_S:,}: {'met' if min(rates) >= TARGET_PER_CPU_S else 'NOT met'})"
        )
    if before is not None:
        print(f"(previous = {label}, measured in the same run, alternating child processes; fastest round kept)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=1, help="runs per case per round; the fastest (least CPU) is kept")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds per tree")
    p.add_argument("--only", choices=("poisson", "traces", "fleet", "sizing"), help="one group of cases")
    p.add_argument("--baseline", help="git revision to compare with (default: the previous commit)")
    p.add_argument("--no-baseline", action="store_true", help="this tree only")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))  # the parent only: a child imports the tree it measures
    from benchmarks.previous import baseline_rev, extract, git

    if args.no_baseline:
        report(_fastest([child(ROOT, args.only, args.repeat) for _ in range(args.rounds)]), None, "")
        return
    rev = baseline_rev(args.baseline)
    label = git("rev-parse", "--short", rev)
    with tempfile.TemporaryDirectory() as tmp:
        extract(rev, Path(tmp))
        now, before = [], []
        for _ in range(args.rounds):
            now.append(child(ROOT, args.only, args.repeat))
            before.append(child(Path(tmp), args.only, args.repeat))
    report(_fastest(now), _fastest(before), label)


if __name__ == "__main__":
    main()
