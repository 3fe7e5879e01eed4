"""Extension points of the dashboard.  Each feature module adds itself here
with one line; app.py renders them.

EXTRA_TABS: (tab title, render(ctx: PageContext) -> None), shown after the core tabs.
TOP_PANELS: render(ctx) callables shown above the tabs (e.g. findings).
"""

from __future__ import annotations

from collections.abc import Callable

from ui.context import PageContext

Render = Callable[[PageContext], None]

EXTRA_TABS: list[tuple[str, Render]] = []
TOP_PANELS: list[Render] = []

from ui.findings_panel import render as _findings  # noqa: E402
TOP_PANELS.append(_findings)
from ui.crosscheck_tab import render as _crosscheck  # noqa: E402
EXTRA_TABS.append(("Cross-check", _crosscheck))
from ui.prompt_layout_tab import render as _layout  # noqa: E402
EXTRA_TABS.append(("Prompt layout", _layout))
from ui.simulate_tab import render as _simulate  # noqa: E402
EXTRA_TABS.append(("Simulate & size", _simulate))
