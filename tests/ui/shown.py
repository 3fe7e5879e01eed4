"""What a person sees of the Markdown the app sends: escapes removed, the word joiner that breaks
bare links removed, a greyed ``:gray[…]`` shown as its text.  For comparing AppTest's element values
(Markdown source) with the engine's numbers."""

from __future__ import annotations

import re

from ui.format import WORD_JOINER

_GRAY = re.compile(r"^:gray\[(.*)\]$", re.S)


def plain(markdown: str) -> str:
    """The text a browser shows for escaped Markdown (``ui.format.md_escape``'s output and program text)."""
    text = re.sub(r"\\(.)", r"\1", markdown.replace(WORD_JOINER, ""))
    gray = _GRAY.match(text)
    return gray.group(1) if gray else text


def shown_metrics(at) -> dict[str, str]:
    """Each headline card's label and value as shown."""
    return {plain(m.label): plain(m.value) for m in at.metric}


def on_page(scenario, catalog):
    """``scenario`` as the page holds it: its engine as the canonical NAME@VERSION it resolves to (the page
    writes the version in force into its link, so a shared link keeps its numbers)."""
    return scenario.with_changes(engine=catalog.engine(scenario.engine).key)


def page_link(scenario, catalog) -> dict[str, str]:
    """The query the page writes for ``scenario`` (``on_page``)."""
    from planner.links import to_query

    return to_query(on_page(scenario, catalog))
