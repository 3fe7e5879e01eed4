"""Prompt layout suggestion: the cheapest reordering and breakpoints of a layout's blocks.

``reorder`` puts the most-shared blocks first (tools stay tools; a system block
that lands after a messages block moves into the messages); ``suggest`` then
tries breakpoints at the ends of the runs of equally shared prefix, every
subset of them, automatic caching on and off, at both TTLs, and keeps the
cheapest (``layout_report.expected_cost``).  No valid layout of the same blocks
at the same TTL costs less (proof in docs/prompt_caching.md).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from planner.engine.inputs import EngineInputs
from planner.format import fmt_count
from planner.prompts.layout import MAX_BREAKPOINTS, Block, Layout, rendered
from planner.prompts.layout_report import (
    LayoutReport,
    Traffic,
    analyse,
    block_hit_rates,
    expected_cost,
    other_ttl,
    prefix_hit_rates,
    traffic_for,
    ttl_is_better,
)

TTLS = ("5m", "1h")


@dataclass(frozen=True)
class Suggestion:
    """The suggested layout and TTL, its report, and the changes in words."""

    layout: Layout
    ttl: str
    report: LayoutReport
    changes: tuple[str, ...] = field(default=())


def reorder(blocks: Sequence[Block], block_h: np.ndarray) -> list[tuple[int, Block]]:
    """(original index, block) in the suggested order; the rule:

    * tools stay in tools (a tool definition cannot move), sorted most-shared first;
    * system and messages blocks are sorted together, most-shared first (ties keep
      their order); a system block that lands after a messages block moves into
      the messages (the article's fix: the timestamp goes into the user turn).
    Most-shared = highest hit rate of its own sharing class (``block_hit_rates``).
    """
    order = sorted(range(len(blocks)), key=lambda i: (blocks[i].kind != "tools", -block_h[i], i))
    out: list[tuple[int, Block]] = []
    seen_messages = False
    for i in order:
        b = blocks[i]
        seen_messages |= b.kind == "messages"
        if b.kind == "system" and seen_messages:
            b = b.model_copy(update={"kind": "messages"})
        out.append((i, b))
    return out


@dataclass(frozen=True)
class _Candidate:
    """The cheapest breakpoints found at one TTL; ``key`` orders candidates (cost, slots used, auto changed)."""

    key: tuple[float, int, bool]
    subset: tuple[int, ...]
    auto: bool
    ttl: str


def _best_at(
    blocks: Sequence[Block], ends: np.ndarray, traffic: Traffic, ttl: str, x: EngineInputs, was_auto: bool
) -> _Candidate:
    """The cheapest candidate at ``ttl``: breakpoints on any subset of the ends of the runs of equally
    shared prefix, with automatic caching as the user had it or switched (first minimum wins)."""
    prefix_h = prefix_hit_rates(blocks, traffic, ttl)
    last = len(blocks) - 1
    runs = [i for i in range(last) if prefix_h[i + 1] < prefix_h[i]] + [last]
    best: _Candidate | None = None
    for auto in (was_auto, not was_auto):
        room = MAX_BREAKPOINTS - int(auto)
        for k in range(0, min(room, len(runs)) + 1):
            for subset in itertools.combinations(runs, k):
                bps = list(subset) + ([last] if auto else [])
                key = (expected_cost(ends, prefix_h, bps, x, ttl).cost_usd, k + int(auto), auto != was_auto)
                if best is None or key < best.key:
                    best = _Candidate(key, subset, auto, ttl)
    assert best is not None  # the empty subset is always a candidate
    return best


def suggest(layout: Layout, x: EngineInputs, ttl: str, traffic: Traffic | None = None) -> Suggestion:
    """The cheapest layout reachable by ``reorder`` plus breakpoints at the ends of the
    runs of equally shared prefix (at most 4 candidates), over every subset of those and
    automatic caching on/off; ties use fewer breakpoints and keep the user's auto setting.
    The TTL changes only as ``ttl_is_better`` says.  No valid layout of the same blocks
    at the same TTL costs less (proof in docs/prompt_caching.md)."""
    traffic = traffic if traffic is not None else traffic_for(layout, x)
    blocks = rendered(layout.blocks)
    block_h = block_hit_rates([b.variability for b in blocks], traffic, ttl)
    moved = reorder(blocks, block_h)
    new_blocks = [b.model_copy(update={"breakpoint": False}) for _, b in moved]
    ends = np.cumsum([b.tokens for b in new_blocks]).astype(float)
    best = {t: _best_at(new_blocks, ends, traffic, t, x, layout.settings.auto) for t in TTLS}
    alternative = other_ttl(ttl)
    better = ttl_is_better(alternative, best[alternative].key[0], best[ttl].key[0])
    chosen = best[alternative] if better else best[ttl]
    final = tuple(b.model_copy(update={"breakpoint": i in chosen.subset}) for i, b in enumerate(new_blocks))
    new_layout = Layout(blocks=final, settings=layout.settings.model_copy(update={"auto": chosen.auto}))
    changes = _describe_changes(blocks, moved, chosen, layout.settings.auto, ttl)
    return Suggestion(new_layout, chosen.ttl, analyse(new_layout, x, chosen.ttl, traffic), tuple(changes))


def _describe_changes(
    blocks: Sequence[Block], moved: list[tuple[int, Block]], chosen: _Candidate, was_auto: bool, was_ttl: str
) -> list[str]:
    """The suggestion in words: new order, blocks moved into the messages, breakpoints, auto, TTL."""
    out = []
    order = [old for old, _ in moved]
    if order != sorted(order):
        out.append("New order of the blocks: " + ", ".join(str(old + 1) for old in order) + ".")
    for old, b in moved:
        if b.kind != blocks[old].kind:
            out.append(
                f"Block {old + 1} ({fmt_count(blocks[old].tokens, 'token')}, {b.variability}) moves from system "
                "into the messages (e.g. the start of the user turn)."
            )
    if chosen.subset:
        out.append("Breakpoints on block(s) " + ", ".join(str(i + 1) for i in chosen.subset) + ".")
    else:
        out.append("No explicit breakpoint.")
    if chosen.auto != was_auto:
        out.append(
            "Automatic caching " + ("on." if chosen.auto else "off: its breakpoint on the last block only writes.")
        )
    if chosen.ttl != was_ttl:
        out.append(f"TTL {chosen.ttl}.")
    return out
