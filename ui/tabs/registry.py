"""Every tab and every top panel of the dashboard, in page order: the one list the
app renders (``ui.app``).  Adding a tab is one line here.

A ``Tab`` is a title, ``render(ctx: PageContext) -> None`` and its section; ``needs_result``
tabs are drawn only when the scenario can be evaluated (the app says why
otherwise).  A ``Panel`` is drawn above the tabs.

The page shows the sections (``SECTIONS``, in a planner's path: plan on one GPU, serve and size a
fleet, cache prompts, deploy and verify, explain), each with its own row of tabs, so no row holds
more than fits at 1280 px.  A tab is still named by its own title (``_tab`` in session state, as
before the sections): ``section_of`` finds its section.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ui.state import PageContext
from ui.tabs import (
    charts,
    compare,
    crosscheck,
    explain,
    findings,
    frontier,
    launch,
    log_check,
    prompt_layout,
    scenarios,
    simulate,
)

Render = Callable[[PageContext], None]


PLAN, SERVE, CACHING, VERIFY, EXPLAIN = "Plan", "Serve & size", "Caching", "Deploy & verify", "Explain"
#: The sections, in page order.
SECTIONS: tuple[str, ...] = (PLAN, SERVE, CACHING, VERIFY, EXPLAIN)


@dataclass(frozen=True)
class Tab:
    title: str
    render: Render
    needs_result: bool = False  # True: drawn only when the scenario evaluates
    section: str = EXPLAIN  # one of SECTIONS


@dataclass(frozen=True)
class Panel:
    title: str  # names the panel in an error box when it fails
    render: Render


TABS: tuple[Tab, ...] = (
    Tab("Memory", charts.render("Memory"), needs_result=True, section=PLAN),
    Tab("Latency & throughput", charts.render("Latency & throughput"), needs_result=True, section=PLAN),
    Tab("Chunked prefill", charts.render("Chunked prefill"), needs_result=True, section=PLAN),
    Tab("Speculative decoding", charts.render("Speculative decoding"), needs_result=True, section=PLAN),
    Tab("Prompt caching", charts.render("Prompt caching"), needs_result=True, section=CACHING),
    Tab("Compare GPUs", compare.render, needs_result=True, section=PLAN),
    Tab("Explain", explain.render, needs_result=True, section=EXPLAIN),
    Tab("Launch", launch.render, needs_result=True, section=VERIFY),
    Tab("Check a log", log_check.render, needs_result=True, section=VERIFY),
    Tab("Cross-check", crosscheck.render, section=VERIFY),
    Tab("Prompt layout", prompt_layout.render, section=CACHING),
    Tab("Simulate & size", simulate.render, section=SERVE),
    Tab("Search & frontier", frontier.render, section=SERVE),
    Tab("Compare scenarios", scenarios.render, section=SERVE),
)
PANELS: tuple[Panel, ...] = (Panel("findings", findings.render),)


def sections(tabs: tuple[Tab, ...]) -> dict[str, list[Tab]]:
    """``tabs`` grouped by section, sections in ``SECTIONS`` order (one not listed there last), tabs in
    their order; a section with no tab is left out."""
    order = list(SECTIONS) + [t.section for t in tabs if t.section not in SECTIONS]
    grouped: dict[str, list[Tab]] = {name: [] for name in dict.fromkeys(order)}
    for t in tabs:
        grouped[t.section].append(t)
    return {name: group for name, group in grouped.items() if group}


def section_of(title: str, tabs: tuple[Tab, ...]) -> str | None:
    """The section holding the tab ``title`` (None: no such tab)."""
    return next((t.section for t in tabs if t.title == title), None)
