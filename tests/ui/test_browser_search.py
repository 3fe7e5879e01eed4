"""In a real browser (as tests/ui/test_browser.py: Debian's Chromium driven by Playwright, against
``kvplan serve``): a click on a frontier point selects it, "Use this point" makes it the scenario and the
link, and a pinned baseline survives a shared link (reloaded, the headline is still against it)."""

from __future__ import annotations

import time
from urllib.parse import urlencode

import pytest

from planner.links import from_query, to_query
from planner.model.scenario import Scenario
from planner.search.frontiers import FRONTIERS, frontier_points
from planner.search.knob_search import screen_points
from planner.studies.baseline import pin_query
from tests.ui.test_browser import (  # noqa: F401
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    TIMEOUT_MS,
    browser,
    open_tab,
    server,
    sync_api,
)
from ui.tabs.frontier import current_point

FRONTIER_LINK = Scenario(model="llama-3.2-1b", rate=20.0, gpu="l4")


def test_a_clicked_frontier_point_becomes_the_scenario_only_when_used(server, browser, catalog):  # noqa: F811
    context = browser.new_context(viewport={"width": 1600, "height": 1200})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        page.goto(server + "/?" + urlencode(to_query(FRONTIER_LINK)))
        open_tab(page, "Search & frontier")
        chart = page.locator(".js-plotly-plot").first
        chart.wait_for(state="visible")
        points = chart.locator(".scatterlayer .trace").first.locator("path.point")  # the frontier (SVG; GPUs: WebGL)
        sync_api.expect(points.first).to_be_visible(timeout=TIMEOUT_MS)
        k = min(2, points.count() - 1)
        chart.scroll_into_view_if_needed()
        box = points.nth(k).bounding_box()
        assert box is not None
        before = page.evaluate("() => location.search")
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        # the click selects the point in the picker and leaves the scenario (and the link) alone
        sync_api.expect(page.get_by_text("clicked: ").or_(page.get_by_text("Use this point"))).not_to_have_count(0)
        page.wait_for_timeout(1500)
        assert page.evaluate("() => location.search") == before
        page.get_by_role("button", name="Use this point").click()
        page.wait_for_function(f"() => location.search !== {before!r}")
        # the scenario is now the configuration under the cursor: the frontier point clicked, or one drawn
        # within a marker of it (plotly picks the nearest; configurations can coincide there).  The link may
        # be rewritten more than once on the way (a rerun in flight when the click arrived): poll until the
        # rerun that applied the point has written it, then check it.
        f = FRONTIERS[0]
        want = frontier_points(screen_points(FRONTIER_LINK, catalog).points, f).iloc[k]
        deadline = time.monotonic() + TIMEOUT_MS / 1000
        while True:
            moved, issues = from_query(page.evaluate("() => location.search"))
            assert not issues
            now = screen_points(moved, catalog).points
            me = now[now["point"] == current_point(now, moved, catalog.models[moved.model])].iloc[0]
            if (me["meets_slo"] and moved.replicas == int(me["replicas"])) or time.monotonic() > deadline:
                break
            page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / "frontier-click.png"))
        assert me["meets_slo"] and moved.replicas == int(me["replicas"]), (to_query(moved), me.to_dict())
        assert (me[f.x], me[f.y]) == pytest.approx((want[f.x], want[f.y]), rel=0.02)
    finally:
        context.close()


def test_a_pinned_baseline_survives_a_shared_link(server, browser):  # noqa: F811
    pinned = Scenario(gpu="h200")
    current = pinned.with_changes(batch=64, base=pin_query(pinned))
    link = server + "/?" + urlencode(to_query(current))
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    try:
        for _ in range(2):  # as shared, then reloaded from the address bar
            page.goto(link)
            sync_api.expect(page.get_by_text("vs pinned").first).to_be_visible(timeout=TIMEOUT_MS)
            open_tab(page, "Compare scenarios")
            sync_api.expect(page.get_by_text("Changed since pinning").first).to_be_visible(timeout=TIMEOUT_MS)
            search = page.evaluate("() => location.search")
            back, _ = from_query(search)
            assert back.base == current.base and back.batch == 64
            link = server + "/" + search
    finally:
        context.close()


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
