"""Load test: N concurrent browser sessions (H of them heavy) against one `kvplan serve` server on loopback.

Run by hand (not part of the test suite):
    .venv/bin/python benchmarks/load_test.py [--sessions 20] [--heavy 5] [--seconds 60] [--stagger 2]
    nice .venv/bin/python benchmarks/load_test.py --sweep 2,10,20    # three runs, a fresh server each
                                                                     # (heavy = a quarter of the sessions, ≥ 1)

Each session opens the app in its own headless-Chromium context; session starts are staggered
(``--stagger`` seconds apart: on a 2-core machine 20 simultaneous page loads would dominate the
run).  Once all have loaded, for ``--seconds``:

* a light session types a new batch into the sidebar's batch box and presses Enter, then waits for
  the TPOT card to show the engine's value for that batch (each light session has its own output
  length, so its scenarios are its own); the rerun time is the browser's clock (``performance.now()``)
  from just before the key press to the first poll (every ``POLL_MS``) that sees the new value, as in
  benchmarks/app_rerun_bench.py;
* a heavy session, on the Simulate & size tab, sets a new seed and presses **Size the fleet** or
  **Simulate** (alternately; ``HEAVY_QUERY``'s scenario) and waits for the run to end (at most
  ``HEAVY_WAIT_S``: its progress bar gone) before the next one — heavy but allowed work, over and
  over; the server runs it in its worker processes (ui/jobs.py).

Printed: page-load times; light rerun p50/p99 twice — on the browser's clock (key press → new value:
server, network, the browser's own rendering, and every other browser on this machine competing for its
cores) and on the **server's own clock** (``KVPLAN_TIMING_LOG``, ``ui/timing.py``: each script run's wall
and CPU time inside the server, the runs that waited on a worker job counted apart) — so the figure says
what the server does, whatever the browsers cost; failed actions (an exception box, a page error, an
action that timed out, a server traceback), "Not started" busy notices counted apart; the resident
memory of the server process and of its worker children, sampled every second during the run and
for ``AFTER_S`` seconds after every session closed.  Traffic goes to 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: the checkout's planner
from benchmarks.app_rerun_bench import CARD_TEXT, expected_tpot  # noqa: E402 — after the path set-up
from planner.cli.serve import dashboard_command  # noqa: E402
from planner.units import KiB, MiB  # noqa: E402
from ui.timing import TIMING_LOG_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
#: Light sessions' batches (the TPOT card moves with each) and their first output length.
BATCHES = tuple(range(4, 44))
FIRST_OUTPUT = 300
#: A heavy session's scenario: the Simulate & size tab's defaults at 100,000 simulated requests (the most).
HEAVY_QUERY = "v=1&sim_requests=100000"
HEAVY_WAIT_S = 150.0
HEAVY_APPEAR_MS = 10_000
LIGHT_WAIT_MS = 30_000
TAB_WAIT_MS = 120_000
POLL_MS = 50
AFTER_S = 15
SIMULATE_TAB = "Simulate & size"
#: A run still going: its progress bar (the script waits on the job meanwhile).
RUNNING = '[data-testid="stProgress"]'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * KiB / MiB  # /proc reports kB (KiB)
    except OSError:  # the process ended between the listing and the read
        pass
    return 0.0


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (the server's worker processes, ui/jobs.py)."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            kids = [int(k) for k in (task / "children").read_text().split()]
        except OSError:
            continue
        for k in kids:
            out += [k, *children(k)]
    return out


def sample(pid: int) -> tuple[float, float, int]:
    """(server RSS MiB, workers' RSS MiB summed, number of workers)."""
    kids = children(pid)
    return rss_mib(pid), sum(rss_mib(k) for k in kids), len(kids)


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used (/proc/PID/stat fields 14 and 15, in clock ticks)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, every core (/proc/stat's cpu line)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK"), sum(ticks) / os.sysconf("SC_CLK_TCK")


def start_server(port: int, log: IO[str], timing_log: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        dashboard_command(port),  # what `kvplan serve` runs, with its server settings
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, TIMING_LOG_ENV: str(timing_log)},
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
            return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("streamlit did not start")


def new_stats() -> dict:
    return {
        "light_actions": 0,
        "heavy_actions": 0,
        "heavy_done": 0,
        "rerun_ms": [],
        "exceptions": 0,
        "busy": 0,
        "page_errors": [],
        "action_failures": [],
        "load_s": [],
        "samples": [],  # (t since start, server MiB, workers MiB, workers)
        "after": [],
    }


async def open_session(browser, url: str, stats: dict):
    """Open the app in a fresh browser context and wait for the headline to render."""
    context = await browser.new_context(viewport={"width": 1400, "height": 900})
    page = await context.new_page()
    page.on("pageerror", lambda exc: stats["page_errors"].append(str(exc)[:200]))
    t0 = time.time()
    await page.goto(url, timeout=300_000)
    await page.wait_for_selector('[data-testid="stMetric"]', timeout=300_000)
    stats["load_s"].append(time.time() - t0)
    return context, page


async def count_exceptions(page, stats: dict) -> None:
    if await page.locator('[data-testid="stException"]').count():
        stats["exceptions"] += 1


async def drive_light(page, until: float, rng: random.Random, expected: dict[int, str], stats: dict) -> None:
    """New batches until ``until``: each timed from the key press to the TPOT card's new value."""
    box = page.get_by_role("spinbutton", name="Batch (concurrent sequences)")
    shown = ""
    while time.time() < until:
        batch = rng.choice(BATCHES)
        want = expected[batch]
        if want == shown:
            continue
        try:
            await box.fill(str(batch))
            t0 = await page.evaluate("performance.now()")
            await box.press("Enter")
            handle = await page.wait_for_function(CARD_TEXT, arg=want, polling=POLL_MS, timeout=LIGHT_WAIT_MS)
            stats["rerun_ms"].append(await handle.json_value() - t0)
            shown = want
            stats["light_actions"] += 1
            await count_exceptions(page, stats)
        except Exception as exc:  # a timed-out rerun under load is counted, not fatal
            stats["action_failures"].append(f"light batch={batch}: {str(exc)[:160]}")
            shown = ""
        await page.wait_for_timeout(rng.randint(300, 1500))


async def drive_heavy(page, until: float, rng: random.Random, stats: dict) -> None:
    """Sizings and simulations with a new seed each, one after another, until ``until``."""
    seed_box = page.get_by_role("spinbutton", name="Seed")
    try:  # a loaded machine may take long to switch tabs: a failed action, not the end of the run
        await page.get_by_role("tab", name=SIMULATE_TAB).click(timeout=TAB_WAIT_MS)
        await seed_box.wait_for(timeout=TAB_WAIT_MS)
    except Exception as exc:
        stats["action_failures"].append(f"heavy: open {SIMULATE_TAB}: {str(exc)[:160]}")
        return
    k = 0
    while time.time() < until:
        button = "Size the fleet" if k % 2 == 0 else "Simulate"
        k += 1
        try:
            await seed_box.fill(str(rng.randrange(1, 2**31 - 1)))
            await page.get_by_role("button", name=button, exact=True).click()
            stats["heavy_actions"] += 1
            # the progress bar shows once a run has taken a second (ui/tabs/simulate.py); none: it was quicker
            with contextlib.suppress(Exception):
                await page.locator(RUNNING).first.wait_for(timeout=HEAVY_APPEAR_MS)
            deadline = time.time() + HEAVY_WAIT_S
            while time.time() < deadline and await page.locator(RUNNING).count():
                await page.wait_for_timeout(500)
            if await page.get_by_text("Not started:").count():
                stats["busy"] += 1
            else:
                stats["heavy_done"] += 1
            await count_exceptions(page, stats)
        except Exception as exc:
            stats["action_failures"].append(f"heavy {button}: {str(exc)[:160]}")
        await page.wait_for_timeout(rng.randint(300, 1500))


async def sampler(pid: int, t_start: float, until: float, out: list) -> None:
    while time.time() < until:
        server, workers, n = sample(pid)
        out.append((round(time.time() - t_start, 1), round(server, 1), round(workers, 1), n))
        await asyncio.sleep(1.0)


async def run(args: argparse.Namespace, base: str, pid: int, expected: list[dict[int, str]]) -> dict:
    from playwright.async_api import async_playwright

    stats = new_stats()
    light = args.sessions - args.heavy
    t_start = time.time()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        loading = asyncio.create_task(sampler(pid, t_start, float("inf"), stats["samples"]))
        opened = []
        for i in range(args.sessions):  # staggered: a page load every --stagger seconds at most
            query = f"v=1&output={FIRST_OUTPUT + i}" if i < light else HEAVY_QUERY
            started = time.time()
            opened.append(await open_session(browser, f"{base}/?{query}", stats))
            await asyncio.sleep(max(0.0, args.stagger - (time.time() - started)))
        stats["loaded_at_s"] = time.time() - t_start
        stats["driven_from"] = time.time()
        stats["cpu_before"] = (cpu_s(pid), machine_busy_s(), time.time())
        until = time.time() + args.seconds
        rngs = [random.Random(i) for i in range(args.sessions)]
        drivers = [
            drive_light(page, until, rngs[i], expected[i], stats)
            if i < light
            else drive_heavy(page, until, rngs[i], stats)
            for i, (_, page) in enumerate(opened)
        ]
        await asyncio.gather(*drivers)
        stats["driven_to"] = time.time()
        stats["run_end_s"] = time.time() - t_start
        stats["cpu_after"] = (cpu_s(pid), machine_busy_s(), time.time())
        for context, _ in opened:
            await context.close()
        await browser.close()
        loading.cancel()
    for _ in range(AFTER_S):
        server, workers, n = sample(pid)
        stats["after"].append((round(time.time() - t_start, 1), round(server, 1), round(workers, 1), n))
        await asyncio.sleep(1.0)
    return stats


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def server_reruns(timing_log: Path, stats: dict) -> dict:
    """The server's own timing of the script runs that started while the sessions were driven (module doc)."""
    rows = [json.loads(line) for line in timing_log.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if stats["driven_from"] <= r["start"] <= stats["driven_to"]]
    own = [r for r in rows if not r["waited"] and r["status"] == "done"]
    per_session: dict[str, list[float]] = {}
    for r in own:
        per_session.setdefault(r["session"], []).append(r["wall_s"])
    return {
        "runs": len(rows),
        "waited": sum(r["waited"] for r in rows),
        "interrupted": sum(r["status"] != "done" for r in rows),
        "wall_s": [r["wall_s"] for r in own],
        "cpu_s": [r["cpu_s"] for r in own],
        "visitor_p99_s": [pct(v, 0.99) for v in per_session.values()],
    }


def report(args: argparse.Namespace, stats: dict, tracebacks: int, wall: float) -> bool:
    light = args.sessions - args.heavy
    loads = stats["load_s"]
    print(
        f"sessions: {args.sessions} ({light} light, {args.heavy} heavy), "
        f"driven {args.seconds:.0f} s (wall {wall:.0f} s)"
    )
    print(
        f"page loads (staggered {args.stagger:g} s apart): median {statistics.median(loads):.1f} s, "
        f"max {max(loads):.1f} s; all loaded after {stats['loaded_at_s']:.0f} s"
    )
    r = stats["rerun_ms"]
    if r:
        print(
            f"light reruns, browser's clock: {len(r)}; p50 {pct(r, 0.5):.0f} ms, p90 {pct(r, 0.9):.0f} ms, "
            f"p99 {pct(r, 0.99):.0f} ms, max {max(r):.0f} ms"
        )
    sv = stats.get("server")
    if sv and sv["wall_s"]:
        w, c = [1000 * x for x in sv["wall_s"]], [1000 * x for x in sv["cpu_s"]]
        print(
            f"reruns, server's clock: {len(w)} of {sv['runs']} script runs ({sv['waited']} waited on a worker job, "
            f"{sv['interrupted']} interrupted by a newer one): wall p50 {pct(w, 0.5):.0f} ms, "
            f"p90 {pct(w, 0.9):.0f} ms, p99 {pct(w, 0.99):.0f} ms, max {max(w):.0f} ms; "
            f"script-thread CPU p50 {pct(c, 0.5):.0f} ms, "
            f"p99 {pct(c, 0.99):.0f} ms; worst visitor's p99 {1000 * max(sv['visitor_p99_s']):.0f} ms"
        )
    print(
        f"heavy actions: {stats['heavy_actions']} ({stats['heavy_done']} ran to the end or to their limit, "
        f"{stats['busy']} 'Not started' busy notices)"
    )
    failed = len(stats["action_failures"]) + stats["exceptions"] + len(stats["page_errors"]) + tracebacks
    print(
        f"failed actions: {failed} (timed out: {len(stats['action_failures'])}, exception boxes: "
        f"{stats['exceptions']}, page errors: {len(stats['page_errors'])}, server tracebacks: {tracebacks})"
    )
    for line in (stats["page_errors"] + stats["action_failures"])[:5]:
        print("  e.g.", line)
    (server0, (busy0, total0), t0), (server1, (busy1, total1), t1) = stats["cpu_before"], stats["cpu_after"]
    print(
        f"CPU while driven: the server process {100 * (server1 - server0) / (t1 - t0):.0f}% of one core; the machine "
        f"{100 * (busy1 - busy0) / (total1 - total0):.0f}% busy over its {os.cpu_count()} cores (browsers, workers, "
        "server and anything else running)"
    )
    during = [s for s in stats["samples"] if stats["loaded_at_s"] <= s[0] <= stats["run_end_s"]]
    for name, rows in (("during the run", during), ("after the run", stats["after"])):
        if rows:
            server = [s[1] for s in rows]
            workers = [s[2] for s in rows]
            total = max(s[1] + s[2] for s in rows)
            print(
                f"RSS MiB {name} ({len(rows)} samples, 1 s apart): server first {server[0]:.0f}, "
                f"max {max(server):.0f}, "
                f"last {server[-1]:.0f}; workers (up to {max(s[3] for s in rows)}) max {max(workers):.0f}, "
                f"last {workers[-1]:.0f}; server + workers max {total:.0f}"
            )
    print(
        "RSS over time (s: server + workers MiB):",
        " ".join(f"{s[0]:.0f}:{s[1]:.0f}+{s[2]:.0f}" for s in stats["samples"][::5]),
    )
    return failed == 0


def one_run(args: argparse.Namespace) -> tuple[bool, dict]:
    """One server, ``args.sessions`` sessions; (no failed actions, the figures)."""
    light = args.sessions - args.heavy
    expected = [{b: expected_tpot(b, FIRST_OUTPUT + i) for b in BATCHES} for i in range(light)]
    port = free_port()
    log_path = ROOT / "test-artifacts" / "load_test_server.log"
    timing_log = ROOT / "test-artifacts" / "load_test_timing.jsonl"
    log_path.parent.mkdir(exist_ok=True)
    timing_log.write_text("")
    with open(log_path, "w") as log:
        proc = start_server(port, log, timing_log)
        try:
            t0 = time.time()
            stats = asyncio.run(run(args, f"http://127.0.0.1:{port}", proc.pid, expected))
            wall = time.time() - t0
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    stats["server"] = server_reruns(timing_log, stats)
    ok = report(args, stats, log_path.read_text().count("Traceback"), wall)
    print("result:", "no failed actions" if ok else "FAILED ACTIONS", flush=True)
    return ok, stats


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--heavy", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--stagger", type=float, default=2.0, help="seconds between two session starts")
    ap.add_argument("--sweep", help="comma list of session counts, one run each (heavy: a quarter, at least 1)")
    args = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        print("no /usr/bin/chromium: apt-get install -y chromium")
        return 1
    counts = [int(n) for n in args.sweep.split(",")] if args.sweep else [args.sessions]
    results = []
    for n in counts:
        if args.sweep:
            args.sessions, args.heavy = n, max(1, round(n / 4))
        print(f"\n=== {args.sessions} sessions ({args.heavy} heavy)", flush=True)
        results.append((args.sessions, *one_run(args)))
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
