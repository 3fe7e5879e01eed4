"""Screenshots of each dashboard section at 1280×800 and 1920×1080 into docs/screenshots/ (PNG).

    python tools/screenshots.py [--out docs/screenshots] [--link "?v=1&gpu=h200"]

Starts the dashboard as ``kvplan serve`` does (``planner.cli.serve.dashboard_command``) on a free port,
drives Debian's Chromium (``/usr/bin/chromium``; never ``playwright install``) and opens each section of
``ui.tabs.registry.SECTIONS`` at a tab (``SHOTS``: every section once, Compare GPUs and the frontier's
chart too), scrolled so the section row is at the top (or the chart named), and saves what the window
shows.  Read them (docs/dashboard.md links them) for anything cut, hidden behind a "›", or an axis
without units.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cli.serve import dashboard_command  # noqa: E402 — after the checkout is importable
from ui.tabs.registry import SECTIONS, TABS, section_of, sections  # noqa: E402

SIZES = ((1280, 800), (1920, 1080))
#: (file name, tab, what to scroll to the top: None = the section row, else a Playwright selector) per shot.
SHOTS = (
    ("plan", "Memory", None),
    ("plan-compare-gpus", "Compare GPUs", None),
    ("serve-size-frontier", "Search & frontier", "text=Output tok/s per GPU at capacity"),
    ("caching", "Prompt caching", None),
    ("deploy-verify", "Check a log", None),
    ("explain", "Explain", None),
)
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
SETTLE_MS = 4000
#: Scroll an element to the top of the page, below streamlit's header bar (about 60 px over the content).
SCROLL_TO_TOP = """e => {
  e.scrollIntoView({block: 'start'});
  let box = e.parentElement;
  while (box && !(box.scrollHeight > box.clientHeight && getComputedStyle(box).overflowY !== 'visible')) {
    box = box.parentElement;
  }
  (box || document.scrollingElement).scrollBy(0, -70);
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(base: str, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the dashboard did not start")


def shoot(out: Path, link: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(dashboard_command(port), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    written: list[Path] = []
    try:
        _wait_healthy(base, proc)
        grouped = sections(TABS)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for width, height in SIZES:
                page = browser.new_page(viewport={"width": width, "height": height})
                page.set_default_timeout(90_000)
                page.goto(base + "/" + link)
                page.get_by_role("tab", name=SECTIONS[0], exact=True).wait_for()
                for slug, tab, target in SHOTS:
                    section = section_of(tab, TABS)
                    row = page.get_by_role("tab", name=section, exact=True).first  # "Explain" is both
                    row.click()
                    if len(grouped[str(section)]) > 1:
                        page.get_by_role("tab", name=tab, exact=True).last.click()
                    page.wait_for_timeout(SETTLE_MS)
                    where = row if target is None else page.locator(target).first
                    where.evaluate(SCROLL_TO_TOP)
                    page.wait_for_timeout(500)
                    path = out / f"{slug}-{width}x{height}.png"
                    page.screenshot(path=str(path))
                    written.append(path)
                page.close()
            browser.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--link", default="?v=1", help="the scenario's link (query string)")
    args = parser.parse_args()
    for path in shoot(args.out, args.link):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)


if __name__ == "__main__":
    main()
