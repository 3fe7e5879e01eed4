"""The latency columns of the sizing tables in a terminal: one per SLO target, headed by its statistic
("p99 TTFT", "mean TPOT"), in ms (``search_text``, ``sizing_text``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.sim.slo import LatencyName, Slo
from planner.units import MS_PER_S

#: Characters of one latency column in the terminal tables.
LATENCY_WIDTH = 11


def latency_columns(slo: Slo) -> tuple[LatencyName, ...]:
    """The latencies a table shows: those with a target, else TTFT and ITL."""
    return tuple(slo.targets) or ("ttft", "itl")


def latency_header(slo: Slo, names: Sequence[LatencyName]) -> str:
    return "".join(f"{slo.label(n):>{LATENCY_WIDTH}}" for n in names)


def latency_cells(row: Any, names: Sequence[LatencyName]) -> str:
    """Each latency's statistic in ms: whole ms for TTFT and E2EL, one decimal for TPOT and ITL."""
    cells = []
    for n in names:
        v = float(row[f"{n}_q_s"]) * MS_PER_S
        cells.append(f"{v:.0f}ms" if n in ("ttft", "e2e") else f"{v:.1f}ms")
    return "".join(f"{c:>{LATENCY_WIDTH}}" for c in cells)
