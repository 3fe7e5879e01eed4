"""Load test: N concurrent browser sessions against one `streamlit run` on loopback.

Run by hand (not part of `make test`):
    .venv/bin/python benchmarks/load_test.py [--sessions 20] [--seconds 60]

Each session opens the app in its own headless-Chromium context; once all have
loaded, each makes random widget changes (batch slider by keyboard, prompt and
output tokens, KV dtype, tabs).  Traffic goes to 127.0.0.1 only, and the loop
is bounded in time.  It prints the number of widget changes, errors seen (an
exception box in the page, a page error, a traceback on the server's stderr),
and the server's resident memory sampled every 5 s.
"""

from __future__ import annotations

import argparse
import asyncio
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
from planner.cli.serve import dashboard_command  # noqa: E402 — after the path set-up
from planner.units import KiB, MiB  # noqa: E402

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * KiB / MiB  # /proc reports kB (KiB)
    return float("nan")


def start_server(port: int, log: IO[str]) -> subprocess.Popen:
    proc = subprocess.Popen(
        dashboard_command(port),  # what `kvplan serve` runs, with its server settings
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
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


async def drive(page, until: float, rng: random.Random, stats: dict) -> None:
    """Random widget changes until ``until``; counts changes, failures and exception boxes."""
    while time.time() < until:
        action = rng.choice(["batch", "prompt", "output", "tab"])
        try:
            if action == "batch":
                thumb = page.get_by_role("slider").first
                await thumb.focus()
                await page.keyboard.press(rng.choice(["ArrowRight", "ArrowLeft", "PageUp", "PageDown"]))
            elif action in ("prompt", "output"):
                box = page.get_by_role("spinbutton", name="Prompt tokens" if action == "prompt" else "Output tokens")
                await box.fill(
                    str(rng.choice([128, 512, 2048, 8192, 32768] if action == "prompt" else [16, 128, 512, 2048]))
                )
                await box.press("Enter")
            else:
                tabs = page.get_by_role("tab")
                n = await tabs.count()
                if n:
                    await tabs.nth(rng.randrange(n)).click()
            stats["actions"] += 1
            await page.wait_for_timeout(rng.randint(200, 1200))
            if await page.locator('[data-testid="stException"]').count():
                stats["exceptions"] += 1
        except Exception as exc:  # a timed-out click under load is counted, not fatal
            stats["action_failures"].append(f"{action}: {str(exc)[:120]}")


async def run(sessions: int, seconds: float, url: str, pid: int) -> dict:
    from playwright.async_api import async_playwright

    stats = {"actions": 0, "exceptions": 0, "page_errors": [], "action_failures": [], "rss_mib": [], "load_s": []}
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        opened = await asyncio.gather(*(open_session(browser, url, stats) for _ in range(sessions)))
        until = time.time() + seconds

        async def sample():
            while time.time() < until + 5:
                stats["rss_mib"].append(round(rss_mib(pid), 1))
                await asyncio.sleep(5)

        rngs = [random.Random(i) for i in range(sessions)]
        await asyncio.gather(sample(), *(drive(page, until, rngs[i], stats) for i, (_, page) in enumerate(opened)))
        for context, _ in opened:
            await context.close()
        await browser.close()
    return stats


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    args = ap.parse_args()
    if not os.path.exists(CHROMIUM):
        print("no /usr/bin/chromium: apt-get install -y chromium")
        return 1
    port = free_port()
    log_path = ROOT / "test-artifacts" / "load_test_server.log"
    log_path.parent.mkdir(exist_ok=True)
    with open(log_path, "w") as log:
        proc = start_server(port, log)
        try:
            t0 = time.time()
            stats = asyncio.run(run(args.sessions, args.seconds, f"http://127.0.0.1:{port}/?v=1&batch=16", proc.pid))
            wall = time.time() - t0
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    server_log = log_path.read_text()
    tracebacks = server_log.count("Traceback")
    rss = stats["rss_mib"]
    print(f"sessions: {args.sessions}, duration: {args.seconds:.0f} s (wall {wall:.0f} s)")
    loads = stats["load_s"]
    print(f"all {args.sessions} pages loaded in {max(loads):.0f} s (median {statistics.median(loads):.1f} s)")
    print(f"widget changes: {stats['actions']}, failed/timed-out actions: {len(stats['action_failures'])}")
    print(
        f"exception boxes seen: {stats['exceptions']}, page errors: {len(stats['page_errors'])}, "
        f"server tracebacks: {tracebacks}"
    )
    if rss:
        print(f"server RSS MiB: first {rss[0]}, max {max(rss)}, last {rss[-1]}, median {statistics.median(rss)}")
    for line in (stats["page_errors"] + stats["action_failures"])[:5]:
        print("  e.g.", line)
    ok = stats["exceptions"] == 0 and not stats["page_errors"] and tracebacks == 0
    print("result:", "no errors" if ok else "ERRORS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
