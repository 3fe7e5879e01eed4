"""End to end in a real browser: Debian's Chromium (headless) driven by Playwright
against ``streamlit run app.py`` on a free localhost port.

* Opens a shared link, checks the headline against the engine, types a new batch into its
  number box, sees the URL follow, downloads the scenario CSV and compares it byte for byte
  with the CLI's for the same link; the Share popover must show the page's own URL.
* At 1280 × 800 and 1500 × 1000 every headline card shows the engine's value whole (its
  rendered text is the value and no text inside a card overflows its box), and the page is
  saved to test-artifacts/screenshot-WxH.png (docs/screenshot-*.png are these, checked by eye).
* Over a catalog with hostile names (``tests/ui/hostile.py``) the names render as their own
  characters — no link, image, bold or colour — and every request that would leave the
  page (anything not to the test server) is blocked and logged: the log must stay empty.
* A link of more than 1,000 parameters (Streamlit drops it whole) is named on the page; a
  repeated key gets the CLI's notice and its last value.
* The Launch tab's deployment zip holds exactly the files ``kvplan deploy`` writes for the same link.

Skips (saying why) where Chromium or Playwright is missing; never downloads a browser.
"""

from __future__ import annotations

import os
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
from tests.ui.hostile import BAD_FILE, EVIL_GPU, INJECTED, write_hostile_catalog
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


def open_tab(page, title: str) -> None:
    """Open the tab ``title``: its section first (``ui.tabs.registry.section_of``), then the tab in it."""
    from ui.tabs.registry import TABS, section_of

    section = section_of(title, TABS)
    assert section is not None, title
    page.get_by_role("tab", name=section, exact=True).first.click()  # the section row comes first
    tab = page.get_by_role("tab", name=title, exact=True).last  # "Explain" names a section and its tab
    tab.click()
    sync_api.expect(tab).to_have_attribute("aria-selected", "true", timeout=TIMEOUT_MS)


def wait_until_idle(page) -> None:
    """Until the script run the last action started has finished: no running icon in Streamlit's status widget and
    no element drawn by an earlier run still shown as stale.  A button clicked before that can be one an
    unfinished rerun replaces (its download then never starts, or holds the earlier run's data)."""
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stStatusWidgetRunningIcon"],'
                 + '[data-testid="stStatusWidgetRunningManIcon"]')
              && !document.querySelector('[data-stale="true"]')""",
        timeout=TIMEOUT_MS,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int, script: Path | None = None) -> list[str]:
    """The production launcher's command (``kvplan serve``), with its server settings (on another script)."""
    cmd = dashboard_command(port)
    if script is not None:
        cmd[cmd.index("run") + 1] = str(script)
    return cmd


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


def serve(script: Path | None = None, env: dict[str, str] | None = None, log_name: str = "streamlit.log"):
    """``streamlit run`` on a free port; yields the base URL; always terminated."""
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with open(ARTIFACTS / log_name, "w") as log:
        proc = subprocess.Popen(
            streamlit_command(port, script), cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env
        )
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
def server():
    """``streamlit run app.py`` on a free port."""
    yield from serve()


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    """The dashboard over the hostile catalog (``tests/ui/injected_app.py``)."""
    hardware, models = write_hostile_catalog(tmp_path_factory.mktemp("hostile"))
    env = {**os.environ, "KVPLAN_TEST_HARDWARE": str(hardware), "KVPLAN_TEST_MODELS": str(models)}
    yield from serve(ROOT / "tests" / "ui" / "injected_app.py", env, "streamlit-hostile.log")


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
    smaller = headline.feasible_scenario(result)
    feasible = evaluate(smaller, catalog) if smaller is not None else None
    return {h.label: h.value for h in headline.headline_items(result, mha, feasible)}


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

        box = page.get_by_role("spinbutton", name="Batch (concurrent sequences)")
        box.fill("65")
        box.press("Enter")
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


#: The issue-18 scenario: the batch does not fit, chunked TTFT, the speculative card off.
SCREENSHOT_LINK = "?v=1&model=llama-3.1-70b&tp=4&batch=64&prompt=8192&chunk=512"
#: An MLA model on two nodes, speculating, with a prefix too short to cache: the longest card notes.
MLA_LINK = "?v=1&model=deepseek-v3&gpu=h100-sxm&wdtype=fp8&quant=fp8-block&tp=8&pp=2&spec=1&prefix=500"
#: Every element of a card's label, value, delta and delta note that the browser cuts ("3,090 to…").
OVERFLOWING = """() => Array.from(document.querySelectorAll(
    ['stMetricLabel', 'stMetricValue', 'stMetricDelta', 'stMetricDeltaDescription']
      .map(id => '[data-testid="stMetric"] [data-testid="' + id + '"] *').join(', ')
  )).filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)"""


def card_texts(page) -> dict[str, str]:
    """Each headline card's label and value as the browser renders them."""
    labels = page.locator('[data-testid="stMetric"] [data-testid="stMetricLabel"]').all_inner_texts()
    values = page.locator('[data-testid="stMetric"] [data-testid="stMetricValue"]').all_inner_texts()
    return {label.strip(): value.strip() for label, value in zip(labels, values, strict=True)}


@pytest.mark.parametrize("width, height", [(1280, 800), (1500, 1000)])
def test_headline_cards_are_whole_at_both_sizes(server, browser, catalog, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server + "/" + SCREENSHOT_LINK)
        want = expected_headline(SCREENSHOT_LINK, catalog)
        wait_for_headline(page, want)
        assert card_texts(page) == want  # the rendered text is the engine's value, every card
        assert page.evaluate(OVERFLOWING) == []  # and nothing in a card is cut ("3,090 to…")
        page.locator(".js-plotly-plot .main-svg").first.wait_for(state="visible")
        page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / f"screenshot-{width}x{height}.png"), full_page=False)
        assert page.get_by_text("Deploy", exact=True).count() == 0  # client.toolbarMode = "viewer"
        # an MLA model on two nodes: the cards' notes (no MHA baseline, the layout) are whole too
        page.goto(server + "/" + MLA_LINK)
        wait_for_headline(page, expected_headline(MLA_LINK, catalog))
        assert page.evaluate(OVERFLOWING) == []
    finally:
        context.close()


def blocking_context(browser, base: str, outbound: list[str], **kw):
    """A browser context in which every request not to ``base`` is blocked and logged in ``outbound``."""
    context = browser.new_context(**kw)

    def route(r):
        if r.request.url.startswith(base):
            r.continue_()
        else:
            outbound.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return context


def test_hostile_names_render_as_text_and_nothing_leaves_the_page(hostile_server, browser):
    outbound: list[str] = []
    context = blocking_context(browser, hostile_server, outbound, viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(hostile_server + f"/?v=1&gpu={EVIL_GPU}&model=llama-3.1-405b")
        main = page.locator('[data-testid="stMain"]')
        sync_api.expect(main).to_contain_text("Does not fit", timeout=TIMEOUT_MS)
        for tab in ("Memory", "Compare GPUs", "Simulate & size"):
            open_tab(page, tab)
            page.wait_for_timeout(1500)
            text = main.inner_text().replace("\u2060", "")  # the invisible joiner that breaks bare links
            assert INJECTED in text, tab  # the name, character for character
            assert BAD_FILE.removesuffix(".toml") in text  # the skipped file, named as text
            assert page.locator('a[href*="evil"]').count() == 0, tab
            assert page.locator('img[src*="evil"]').count() == 0, tab
            assert page.locator("strong", has_text="BOLD").count() == 0, tab
            assert page.locator(".js-plotly-plot a").count() == 0, tab
        page.screenshot(path=str(ARTIFACTS / "hostile-names.png"), full_page=False)
        assert outbound == []
    finally:
        context.close()


def test_a_link_streamlit_drops_is_named_and_a_repeated_key_noticed(server, browser):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server + "/?v=1&batch=48&" + "&".join(f"zz{i}=1" for i in range(1001)))
        sync_api.expect(page.locator('[data-testid="stAlert"]').first).to_contain_text(
            "1,003 parameters", timeout=TIMEOUT_MS
        )
        assert "none of it was read" in page.locator('[data-testid="stMain"]').inner_text()
        page.goto(server + "/?v=1&batch=4&batch=8&batch=16")
        sync_api.expect(page.locator('[data-testid="stAlert"]').first).to_contain_text(
            "given 3 times; the last value is used", timeout=TIMEOUT_MS
        )
        box = page.get_by_role("spinbutton", name="Batch (concurrent sequences)")
        sync_api.expect(box).to_have_value("16", timeout=TIMEOUT_MS)
    finally:
        context.close()


def test_launch_tab_downloads_the_deployment_bundle_the_cli_writes(server, browser, tmp_path):
    """The Launch tab's zip holds exactly the files ``kvplan deploy`` writes for the same link (the disaggregated
    plan of tests/deploy/plans.py, Kubernetes)."""
    import io
    import zipfile

    from tests.deploy.plans import PLANS

    link = "?v=1&" + PLANS["disaggregated"]
    context = browser.new_context(viewport={"width": 1600, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server + "/" + link)
        open_tab(page, "Launch")
        button = page.get_by_role("button", name="Deployment bundle (zip)")
        button.wait_for(state="visible")
        wait_until_idle(page)  # the button of the finished run (under load a rerun can still be drawing)
        with page.expect_download() as info:
            button.click()
        assert info.value.suggested_filename == "kvplan-llama-3-1-70b-kubernetes.zip"
        info.value.save_as(tmp_path / "bundle.zip")
        data = (tmp_path / "bundle.zip").read_bytes()
        link = "?" + urlsplit(page.url).query  # the page's own link (it names the engine version in force)
        assert from_query(link)[0].prefill_replicas == 1
        out = tmp_path / "cli"
        subprocess.run(
            [sys.executable, "-m", "planner", "deploy", link, "--target", "kubernetes", "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            got = {n.split("/", 1)[1]: z.read(n) for n in z.namelist()}
        want = {p.name: p.read_bytes() for p in out.iterdir()}
        differ = sorted(n for n in got.keys() | want.keys() if got.get(n) != want.get(n))
        assert not differ, (link, differ)
    finally:
        context.close()
