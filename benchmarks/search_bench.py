"""Sizing-search speed (planner/search/knob_search.py).

Run: .venv/bin/python benchmarks/search_bench.py [--repeat N] [--no-search] [--example] [--baseline]
     .venv/bin/python benchmarks/search_bench.py --previous [REV] [--rounds K]
Prints, on every priced GPU profile:
  1. the screening model's speed: configurations scored per CPU second on one core (the whole
     space: batch × chunk × KV dtype × weight dtype × speculation × colocated/disaggregated), the
     fastest of N rounds — target ≥ 500,000/s; and the default knobs (batch × chunk) alone, a grid ten
     times smaller whose per-GPU set-up (``grid.bases``) is a fixed share of its time; the layouts
     are sizing's per GPU (tp 1–8, and the pipeline / expert / data-parallel ones: ``grid.grid_layouts``);
  2. issue 28's three rates — Llama-3.1-70B, 4,000 in / 500 out at 10, 200 and 2,000 requests/s, every
     priced GPU confirmed by simulation (the default knobs, every core): the time to the screened answer
     (target ≤ 1 s), the whole search's wall and CPU time (this process and its workers; target ≤ 10 s
     wall each on the 2-core development machine), the runs and requests simulated and the answer;
  3. with ``--example``: issue 17's example (50 requests/s, 2k in / 300 out; target ≤ 30 s);
  4. with ``--baseline``: the sizing table of GPU × tp alone (``search=none``) for issue 17's example;
  5. with ``--previous [REV]``: only the three rates, this tree beside REV (default: the previous commit, or
     HEAD when ``planner/`` has uncommitted changes; ``benchmarks/previous.py``) in alternating processes.
CPU time is reported beside wall time: the machine is shared, CPU seconds are what one core spent.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# the checkout this file is in, or the tree ``--previous`` measures (``_child``)
sys.path.insert(0, os.environ.get("KVPLAN_BENCH_TREE") or str(Path(__file__).resolve().parent.parent))

from planner.model.catalog import load_catalog  # noqa: E402  (after the sys.path line: runs from a checkout)
from planner.model.scenario import Scenario  # noqa: E402
from planner.search.grid import Space, bases, score  # noqa: E402
from planner.search.knob_search import search_fleet, traffic_stats  # noqa: E402
from planner.search.sizing import size_fleet  # noqa: E402

EXAMPLE = Scenario(model="llama-3.1-70b", prompt=2048, output=300, rate=50, slo_ttft_s=1.0, slo_itl_s=0.05)
RATES = (10.0, 200.0, 2000.0)
ISSUE_28 = Scenario(model="llama-3.1-70b", prompt=4000, output=500)
RATE_TARGET_S = 10.0
SCREENED_TARGET_S = 1.0
ALL_KNOBS = "batch,chunk,kvdtype,wdtype,spec,disagg"
POINTS_TARGET_PER_S = 500_000
SEARCH_TARGET_S = 30.0


def cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the search's workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


#: The example held as other SLO statistics (issue 26): the screen computes each chosen statistic.
SLO_VARIANTS = {
    "mean TTFT and per-request TPOT": dict(slo_pct="mean", slo_tpot_s=0.05, slo_itl_s=None),
    "p99 TTFT, TPOT, ITL and E2EL": dict(slo_tpot_s=0.05, slo_e2e_s=20.0),
}


def screening(catalog, gpus: list[str], repeat: int) -> None:
    """The whole space against the target; the default knobs' smaller grid for its wall-clock cost (its
    per-GPU set-up — the layouts that fit, the engine inputs — is a fixed cost a small grid does not amortise,
    shown as the set-up's share, so points/s there is not the throughput the target is about); then the whole
    space held as other statistics (``SLO_VARIANTS``)."""
    runs = [(ALL_KNOBS, {}, ""), (EXAMPLE.search, {}, "")]
    runs += [(ALL_KNOBS, kw, name) for name, kw in SLO_VARIANTS.items()]
    for knobs, kw, name in runs:
        s = EXAMPLE.with_changes(search=knobs, **kw)
        stats = traffic_stats(s, None)
        space = Space.of(s)
        score(s, catalog, stats, gpus)  # warm: imports, caches
        best, setup = None, None
        for _ in range(max(repeat, 1)):
            start = time.process_time()
            z = score(s, catalog, stats, gpus)
            spent = time.process_time() - start
            best = spent if best is None else min(best, spent)
            start = time.process_time()
            bases(s, catalog, gpus, space)
            spent = time.process_time() - start
            setup = spent if setup is None else min(setup, spent)
        assert best is not None and setup is not None
        head = (
            f"screen [{knobs}]: {z.scored:,} configurations ({z.valid:,} the engine accepts) in {best:.3f} CPU s "
            f"(set-up {setup:.3f} s): {z.scored / best:,.0f}/s ({z.valid / best:,.0f} accepted/s) on one core"
        )
        if name:
            print(f"{head}; held as {name}")
        elif knobs == ALL_KNOBS:
            verdict = "meets" if z.scored / best >= POINTS_TARGET_PER_S else "misses"
            print(f"{head} — {verdict} the {POINTS_TARGET_PER_S:,}/s target")
        else:
            print(f"{head}; the default knobs' grid, its per-GPU set-up {setup / best:.0%} of the time")


def full_search(catalog) -> None:
    wall, cpu = time.perf_counter(), cpu_s()
    z = search_fleet(EXAMPLE, catalog)
    wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
    verdict = "meets" if wall <= SEARCH_TARGET_S else "misses"
    print(
        f"full search [{EXAMPLE.search}] on {os.cpu_count()} cores: {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"(screen {z.screen_s:.2f} s, confirmation {z.confirm_s:.1f} s: {len(z.table)} candidates, "
        f"{z.simulations:,} simulations of {z.requests_per_simulation:,} requests) — "
        f"{verdict} the {SEARCH_TARGET_S:.0f} s target"
    )
    print("  " + z.reason)
    h100 = z.table[(z.table["gpu"] == "h100-sxm") & (z.table["status"] == "meets SLOs")]
    if len(h100):
        row = h100.iloc[0]
        print(
            f"  H100 SXM: {int(row['replicas'])} × {row['layout']} ({int(row['nodes'])} node(s)), batch "
            f"{int(row['batch'])}, chunk {int(row['chunk'])} = {int(row['gpus'])} GPUs, binding {row['binding']}, "
            f"comm {row['decode_comm_frac']:.0%} of a decode step"
        )


def rate_rows(catalog=None) -> list[dict]:
    """Issue 28's three rates measured in this process (module doc, 2): one dict per rate, read only through
    attributes every revision's ``SearchResult`` has (``--previous`` runs this on an older tree)."""
    catalog = catalog or load_catalog()
    rows = []
    for rate in RATES:
        s = ISSUE_28.with_changes(rate=rate)
        first: list[float] = []
        wall, cpu = time.perf_counter(), cpu_s()
        z = search_fleet(s, catalog, on_update=lambda _z, seen=first: seen.append(time.perf_counter()))
        end = time.perf_counter()
        wall, cpu = end - wall, cpu_s() - cpu
        best = z.table.loc[z.best] if z.best is not None else None
        answer = (
            f"{int(best['replicas'])} × {best['name']} {best['layout']} = {int(best['gpus'])} GPUs ({best['basis']})"
            if best is not None
            else "none"
        )
        rows.append(
            dict(
                rate=rate,
                screened_s=first[0] - (end - wall) if first else float("nan"),
                wall_s=wall,
                cpu_s=cpu,
                confirmed=z.confirmed,
                candidates=z.candidates,
                complete=z.complete,
                runs=z.simulations,
                requests=z.requests_per_simulation,
                simulated=z.simulated_requests,
                stopped=z.stopped,
                cannot_win=getattr(z, "cannot_win", 0),  # shown unable to win at their ceiling (not sized)
                answer=answer,
            )
        )
    return rows


def three_rates(catalog) -> None:
    """Issue 28's targets (module doc, 2)."""
    for r in rate_rows(catalog):
        met = "meets" if r["wall_s"] <= RATE_TARGET_S and r["complete"] else "misses"
        print(
            f"{r['rate']:>6g} req/s: screened answer in {r['screened_s']:.2f} s (target ≤ {SCREENED_TARGET_S:g} s); "
            f"{r['confirmed']} of {r['candidates']} candidates confirmed ({r['confirmed'] - r['cannot_win']} sized, "
            f"{r['cannot_win']} shown unable to win) in {r['wall_s']:.1f} s wall, "
            f"{r['cpu_s']:.1f} s CPU on {os.cpu_count()} cores ({r['runs']} runs of {r['requests']:,} requests, "
            f"{r['simulated']:,} simulated{', stopped: ' + r['stopped'] if r['stopped'] else ''}) — {met} the "
            f"{RATE_TARGET_S:g} s target; answer {r['answer']}"
        )


def _child(root: Path) -> list[dict]:
    """``rate_rows`` in a fresh process importing the planner under ``root`` (its workers are its children)."""
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import search_bench, planner; "
        "assert planner.__file__.startswith(sys.argv[2]), planner.__file__; "
        "print(json.dumps(search_bench.rate_rows()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(Path(__file__).parent), str(root)],
        cwd=root,
        env=os.environ | {"KVPLAN_BENCH_TREE": str(root)},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def side_by_side(requested: str, rounds: int) -> None:
    """The three rates on this tree and on ``requested`` (default: the previous commit, ``benchmarks/previous``)
    in alternating child processes, ``rounds`` each; the round with the least CPU per rate is kept."""
    root = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(root))
    from benchmarks.previous import baseline_rev, extract, git

    rev = baseline_rev(requested or None)
    label = git("rev-parse", "--short", rev)
    now: dict[float, dict] = {}
    before: dict[float, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        extract(rev, Path(tmp))
        for _ in range(rounds):
            for tree, best in ((root, now), (Path(tmp), before)):
                for r in _child(tree):
                    if r["rate"] not in best or r["cpu_s"] < best[r["rate"]]["cpu_s"]:
                        best[r["rate"]] = r
    print(f"issue 28's three rates, this tree beside {label} (alternating processes, least-CPU round of {rounds}):")
    for rate, r in now.items():
        b = before[rate]
        same = "same answer" if r["answer"] == b["answer"] else f"answer was {b['answer']}"
        print(
            f"{rate:>6g} req/s: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} CPU s, {r['runs']} runs "
            f"({r['simulated']:,} requests) — {label}: {b['wall_s']:.1f} s wall, {b['cpu_s']:.1f} CPU s, {b['runs']} "
            f"runs ({b['simulated']:,}); CPU ×{b['cpu_s'] / r['cpu_s']:.2f} less; {r['confirmed']} of "
            f"{r['candidates']} confirmed ({r['cannot_win']} of them shown unable to win, not sized); answer "
            f"{r['answer']} ({same})"
        )


def baseline(catalog) -> None:
    wall, cpu = time.perf_counter(), cpu_s()
    z = size_fleet(EXAMPLE.with_changes(search="none"), catalog)
    wall, cpu = time.perf_counter() - wall, cpu_s() - cpu
    h100 = z.table[(z.table["gpu"] == "h100-sxm") & (z.table["status"] == "meets SLOs")]
    gpus = int(h100["gpus"].min()) if len(h100) else None
    print(f"GPU × tp sizing alone (batch 32, chunk 2,048): {wall:.1f} s wall, {cpu:.1f} s CPU; H100 SXM: {gpus} GPUs")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5, help="screening rounds; the fastest is reported")
    p.add_argument("--no-search", action="store_true", help="skip the searches with simulation")
    p.add_argument("--example", action="store_true", help="also issue 17's example (50 req/s, 2k in / 300 out)")
    p.add_argument("--baseline", action="store_true", help="also time the GPU × tp sizing alone")
    p.add_argument(
        "--previous",
        nargs="?",
        const="",
        metavar="REV",
        help="only issue 28's three rates, beside REV (default: the previous commit) in alternating processes",
    )
    p.add_argument("--rounds", type=int, default=1, help="with --previous: alternating rounds per tree")
    args = p.parse_args()
    if args.previous is not None:
        side_by_side(args.previous, args.rounds)
        return
    catalog = load_catalog()
    gpus = [k for k, g in catalog.gpus.items() if g.price_per_gpu_hour_usd > 0]
    screening(catalog, gpus, args.repeat)
    if not args.no_search:
        three_rates(catalog)
        if args.example:
            full_search(catalog)
    if args.baseline:
        baseline(catalog)


if __name__ == "__main__":
    main()
