"""The one source of the prompt-caching verdict: the scenario's layout, or the sidebar's workload.

* With a layout in the link (``Scenario.layout``), that layout is the truth: the headline's
  saving and the Prompt layout tab's verdict are the same ``analyse`` report.
* Without one, the Prompt layout tab starts from the sidebar's workload (``sidebar_layout``):
  the cacheable prefix as one stable system block with a breakpoint, the rest of the prompt
  as one per-request block, and the sidebar's requests/min.  When requests/min is 0 the
  sidebar gives the hit rate itself; the layout then gets the requests/min that reproduces it
  under the layout's own hit-rate rule, h = 1 − exp(−λ · max(TTL − D, 0)) with D the engine's
  request duration, inverted:  λ = −ln(1 − h) / (TTL − D).

Pure (no streamlit): the app, the headline and the tab call the same functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.engine.evaluate import Result
from planner.errors import LayoutError
from planner.model.api_pricing import TTL_SECONDS
from planner.prompts.layout import Block, Layout, LayoutSettings, decode
from planner.prompts.layout_report import LayoutReport, analyse, request_duration_s
from planner.units import S_PER_MINUTE

#: The layout editor's requests/min bound (``LayoutSettings.rpm``).
MAX_LAYOUT_RPM = 1e6


@dataclass(frozen=True)
class LayoutSource:
    """The layout the tab shows and where it came from: ``"link"`` (the scenario's own) or
    ``"sidebar"`` (built from the sidebar's workload); ``problems`` when the link's could not be read."""

    layout: Layout
    origin: str
    problems: tuple[str, ...] = ()


def rpm_for_hit_rate(hit_rate: float, ttl: str, duration_s: float) -> float | None:
    """Requests/min that give ``hit_rate`` under the layout's rule (module doc); None when no traffic can
    (the request outlasts the TTL)."""
    window_s = TTL_SECONDS[ttl] - duration_s
    if hit_rate <= 0:
        return 0.0
    if window_s <= 0:
        return None
    if hit_rate >= 1:
        return MAX_LAYOUT_RPM
    return min(-math.log1p(-hit_rate) / window_s * S_PER_MINUTE, MAX_LAYOUT_RPM)


def sidebar_layout(result: Result) -> Layout:
    """The sidebar's workload as a layout (module doc)."""
    s, x, m = result.resolved.scenario, result.inputs, result.metrics
    blocks = []
    if s.prefix > 0:
        blocks.append(Block(kind="system", tokens=s.prefix, variability="stable", breakpoint=True))
    if s.prompt > s.prefix:
        blocks.append(Block(kind="messages", tokens=s.prompt - s.prefix, variability="per_request"))
    rpm: float | None = None
    if s.rpm <= 0 and s.prefix > 0:
        rpm = rpm_for_hit_rate(float(m["cache_hit_rate"]), s.ttl, request_duration_s(x, s.prompt))
    return Layout(blocks=tuple(blocks), settings=LayoutSettings(rpm=rpm))


def layout_source(result: Result) -> LayoutSource:
    """The scenario's layout when it has a readable one, else the sidebar's."""
    text = result.resolved.scenario.layout
    if text:
        try:
            return LayoutSource(decode(text), "link")
        except LayoutError as exc:
            return LayoutSource(sidebar_layout(result), "sidebar", tuple(exc.problems))
    return LayoutSource(sidebar_layout(result), "sidebar")


def link_layout_report(result: Result) -> LayoutReport | None:
    """The report of the scenario's own layout (what the headline shows), or None without a readable one."""
    source = layout_source(result)
    if source.origin != "link":
        return None
    return analyse(source.layout, result.inputs, result.resolved.scenario.ttl)
