"""A pinned baseline: one scenario kept in the link (key ``base``) to compare the current one against.

``base`` holds the pinned scenario's own query string (``v=1`` and its non-default keys, no ``base`` of
its own: the default scenario pins as ``v=1``), so the link stays flat:
``?v=1&batch=64&base=v%3D1%26gpu%3Dh200``.  ``compare_frame``
puts every headline metric of the two side by side with the current one's change:
  relative   current / pinned − 1                    (bytes, latencies, rates, costs, concurrency)
  absolute   current − pinned, in points              (shares: the prompt-cache saving)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import numpy as np
import pandas as pd

from planner.engine.evaluate import Result
from planner.engine.metrics import label
from planner.links import FIELDS, from_query, to_query
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario


def pin_query(s: Scenario) -> str:
    """The ``base`` value that pins ``s``: its query (the version first) without a base of its own."""
    return urlencode({k: v for k, v in to_query(s).items() if k != "base"})


def pinned_scenario(s: Scenario, catalog: Catalog | None = None) -> tuple[Scenario | None, list[str]]:
    """The scenario ``s`` pins (None without one), and the problems met decoding it (a value the
    pinned link no longer accepts falls back to its default, as any link's does)."""
    if not s.base:
        return None, []
    if catalog is None:
        pinned, issues = from_query(s.base)
    else:
        pinned, issues = from_query(s.base, set(catalog.profile_keys()), set(catalog.models), catalog.engine_aliases())
    return pinned, [i.message for i in issues if i.fatal]


@dataclass(frozen=True)
class Compared:
    """One headline metric of both scenarios."""

    key: str
    label: str
    unit: str
    relative: bool  # the change as a ratio (else in points of a share)
    higher_is_better: bool


COMPARED = (
    Compared("kv_bytes_per_token", "KV cache per token", "B", True, False),
    Compared("max_concurrent_sequences", "Max concurrency", "sequences", True, True),
    Compared("ttft_s", "TTFT", "s", True, False),
    Compared("tpot_s", "TPOT", "s", True, False),
    Compared("output_tokens_per_s_per_gpu", label("output_tokens_per_s_per_gpu", capital=True), "tokens/s", True, True),
    Compared("cost_per_million_output_tokens_usd", "Cost per M output tokens", "USD", True, False),
    Compared("spec_speedup", "Speculative speedup", "×", True, True),
    Compared("cache_saving_frac", "Prompt-cache saving", "share", False, True),
    Compared("weight_bytes_per_gpu", "Weights per GPU", "B", True, False),
    Compared("kv_budget_bytes_per_gpu", "KV cache per GPU", "B", True, True),
    Compared("price_per_replica_hour_usd", "Price per replica", "USD/h", True, False),
)


def change(current: float, pinned: float, relative: bool) -> float:
    """current / pinned − 1 (relative; NaN when pinned is 0), or current − pinned."""
    if not relative:
        return current - pinned
    return current / pinned - 1.0 if pinned else float("nan")


def differing_keys(current: Scenario, pinned: Scenario) -> list[tuple[str, Any, Any]]:
    """(key, pinned value, current value) of every scenario key that differs (``base`` aside)."""
    return [
        (k, getattr(pinned, k), getattr(current, k))
        for k in FIELDS
        if k != "base" and getattr(pinned, k) != getattr(current, k)
    ]


def compare_frame(current: Result, pinned: Result) -> pd.DataFrame:
    """Every ``COMPARED`` metric: label, unit, pinned, current, change, change_kind, better (module doc)."""
    rows = []
    for c in COMPARED:
        a, b = float(pinned.metrics[c.key]), float(current.metrics[c.key])
        d = change(b, a, c.relative)
        better = bool(np.isfinite(d) and d != 0 and ((d > 0) == c.higher_is_better))
        rows.append(
            dict(
                metric=c.key,
                label=c.label,
                unit=c.unit,
                pinned=a,
                current=b,
                change=d,
                change_kind="relative" if c.relative else "points",
                better=better,
            )
        )
    return pd.DataFrame(rows)
