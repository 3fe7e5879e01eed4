"""Every tab and every top panel of the dashboard, in page order: the one list the
app renders (``ui.app``).  Adding a tab is one line here.

A ``Tab`` is a title and ``render(ctx: PageContext) -> None``; ``needs_result``
tabs are drawn only when the scenario can be evaluated (the app says why
otherwise).  A ``Panel`` is drawn above the tabs.
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


@dataclass(frozen=True)
class Tab:
    title: str
    render: Render
    needs_result: bool = False  # True: drawn only when the scenario evaluates


@dataclass(frozen=True)
class Panel:
    title: str  # names the panel in an error box when it fails
    render: Render


TABS: tuple[Tab, ...] = (
    Tab("Memory", charts.render("Memory"), needs_result=True),
    Tab("Latency & throughput", charts.render("Latency & throughput"), needs_result=True),
    Tab("Chunked prefill", charts.render("Chunked prefill"), needs_result=True),
    Tab("Speculative decoding", charts.render("Speculative decoding"), needs_result=True),
    Tab("Prompt caching", charts.render("Prompt caching"), needs_result=True),
    Tab("Compare GPUs", compare.render, needs_result=True),
    Tab("Explain", explain.render, needs_result=True),
    Tab("Launch", launch.render, needs_result=True),
    Tab("Check a log", log_check.render, needs_result=True),
    Tab("Cross-check", crosscheck.render),
    Tab("Prompt layout", prompt_layout.render),
    Tab("Simulate & size", simulate.render),
    Tab("Search & frontier", frontier.render),
    Tab("Compare scenarios", scenarios.render),
)
PANELS: tuple[Panel, ...] = (Panel("findings", findings.render),)
