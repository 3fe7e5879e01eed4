"""Explain items: the text helpers every item uses (its numbers written so a reader can retype them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.format import fmt_bytes
from planner.units import MS_PER_S, KiB


@dataclass(frozen=True)
class ExplainItem:
    title: str
    formula: str
    substituted: str
    value: str


def num(v: float, sig: int = 6) -> str:
    """A number a reader can retype: exact integers with thousands commas (or a short
    e-notation when that is exact), otherwise ``sig`` significant digits (more where a
    difference of near-equal numbers follows, so the rounding does not cancel out)."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e7:
        return f"{int(v):,}"
    short = f"{v:.{sig}g}".replace("e+", "e").replace("e0", "e").replace("e-0", "e-")
    if v.is_integer() and float(short) != v:
        return f"{int(v):,}"
    return short


def exact(v: float) -> str:
    """Shortest text that reads back as exactly ``v`` (for inputs to a floor)."""
    v = float(v)
    return num(v) if v.is_integer() else repr(v)


def _human(v: float) -> str:
    """Display rounding for the parenthesised human-unit figure."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _scalar(v) -> float:
    """One scenario's engine input (a 0-d array or a number) as a float."""
    return float(np.asarray(v))


def _value(v: float, unit: str, human: str = "") -> str:
    return f"{num(v)} {unit}" + (f" ({human})" if human else "")


def _bytes_value(v: float) -> str:
    """The exact bytes, and the human figure by the one rule (``planner.format.fmt_bytes``)."""
    return _value(v, "B", fmt_bytes(v) if v >= KiB else "")


def _seconds_value(v: float, bound: bool | None = None) -> str:
    extra = "" if bound is None else (", compute-bound" if bound else ", memory-bound")
    return _value(v, "s", f"{_human(v * MS_PER_S)} ms{extra}")
