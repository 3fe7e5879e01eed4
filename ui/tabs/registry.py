"""Extension points of the dashboard.  Each feature module adds itself here
with one line; app.py renders them.

EXTRA_TABS: (tab title, render(ctx: PageContext) -> None), shown after the core tabs.
TOP_PANELS: render(ctx) callables shown above the tabs (e.g. findings).
"""

from __future__ import annotations

from collections.abc import Callable

from ui.page import PageContext

Render = Callable[[PageContext], None]

EXTRA_TABS: list[tuple[str, Render]] = []
TOP_PANELS: list[Render] = []

from ui.tabs.findings import render as _findings  # noqa: E402

TOP_PANELS.append(_findings)
from ui.tabs.crosscheck import render as _crosscheck  # noqa: E402

EXTRA_TABS.append(("Cross-check", _crosscheck))
from ui.tabs.prompt_layout import render as _layout  # noqa: E402

EXTRA_TABS.append(("Prompt layout", _layout))
from ui.tabs.simulate import render as _simulate  # noqa: E402

EXTRA_TABS.append(("Simulate & size", _simulate))
