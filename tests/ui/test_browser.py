"""End to end in a real browser: Debian's Chromium (headless) driven by Playwright
against ``streamlit run app.py`` on a free localhost port.

Opens a shared link, checks the headline against the engine, moves the batch
slider with the keyboard, sees the URL follow, downloads the scenario CSV and
compares it byte for byte with the CLI's for the same link, waits for a Plotly
chart to draw and saves a screenshot to test-artifacts/.  The Share popover
must show the page's own URL.  Skips (saying why)
where Chromium or Playwright is missing; never downloads a browser.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from planner.cli.serve import dashboard_command
from planner.engine.evaluate import evaluate
from planner.links import from_query
from tests.paths import ROOT
from ui import headline

ARTIFACTS = ROOT / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SHARED_LINK = "?v=1&gpu=h200&batch=64&kv_heads=4"
TIMEOUT_MS = 60_000

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} not found (install Debian's chromium package; .ci/run does)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int) -> list[str]:
    """The production launcher's command (``kvplan serve``), with its server settings."""
    return dashboard_command(port)


def wait_until_healthy(proc: subprocess.Popen, base: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"streamlit did not start; see {ARTIFACTS / 'streamlit.log'}")
        time.sleep(0.25)


@pytest.fixture(scope="module")
def server():
    """``streamlit run app.py`` on a free port; always terminated."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(ARTIFACTS / "streamlit.log", "w") as log:
        proc = subprocess.Popen(streamlit_command(port), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_healthy(proc, base)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def expected_headline(query: str, catalog) -> dict[str, str]:
    scenario, issues = from_query(query, set(catalog.gpus), set(catalog.models))
    assert not issues
    result = evaluate(scenario, catalog)
    baseline = headline.mha_baseline(scenario, result.resolved.model)
    mha = evaluate(baseline, catalog) if baseline else None
    return {h.label: h.value for h in headline.headline_items(result, mha)}


def wait_for_headline(page, want: dict[str, str]) -> None:
    """Until every metric shows the expected value (the page reruns asynchronously)."""
    metric = page.locator('[data-testid="stMetric"]')
    for label, value in want.items():
        card = metric.filter(has=page.locator('[data-testid="stMetricLabel"]', has_text=label))
        sync_api.expect(card.locator('[data-testid="stMetricValue"]')).to_have_text(value, timeout=TIMEOUT_MS)


def test_shared_link_slider_csv_and_chart(server, browser, catalog, tmp_path):
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server + "/" + SHARED_LINK)
        wait_for_headline(page, expected_headline(SHARED_LINK, catalog))

        thumb = page.locator('[data-testid="stSlider"]').filter(has_text="Batch").locator('input[type="range"]')
        thumb.focus()
        thumb.press("ArrowRight")
        page.wait_for_function("() => new URLSearchParams(location.search).get('batch') === '65'")
        link = "?" + urlsplit(page.url).query
        moved, _ = from_query(link)
        assert (moved.gpu, moved.batch, moved.kv_heads) == ("h200", 65, 4)
        wait_for_headline(page, expected_headline(link, catalog))

        page.get_by_role("button", name="Share link").click()
        sync_api.expect(page.locator('[data-testid="stPopoverBody"] code')).to_have_text(page.url)
        page.keyboard.press("Escape")

        with page.expect_download() as info:
            page.get_by_role("button", name="Scenario CSV", exact=True).click()
        downloaded = tmp_path / "scenario.csv"
        info.value.save_as(downloaded)
        cli = subprocess.run(
            [sys.executable, "-m", "planner", "evaluate", link, "--format", "csv"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        assert downloaded.read_bytes() == cli.stdout

        page.locator(".js-plotly-plot .main-svg").first.wait_for(state="visible")
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=False)
    finally:
        context.close()
