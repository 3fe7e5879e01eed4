"""Errors of predictions against measurements, and their per-category summary."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Prediction:
    row_id: str
    category: str
    measured: float
    predicted: float
    note: str = ""

    @property
    def error_frac(self) -> float:
        """Signed relative error: predicted / measured − 1."""
        return self.predicted / self.measured - 1.0


def summary(preds: Sequence[Prediction]) -> tuple[float, float, float]:
    """(median |error|, median signed error, worst |error|) as fractions."""
    errs = [p.error_frac for p in preds]
    return (
        statistics.median(abs(e) for e in errs),
        statistics.median(errs),
        max(abs(e) for e in errs),
    )


def table(title: str, preds: Sequence[Prediction]) -> str:
    lines = [f"## {title}", f"{'row':<36}{'measured':>14}{'predicted':>14}{'error':>9}  note"]
    for p in preds:
        lines.append(f"{p.row_id:<36}{p.measured:>14.6g}{p.predicted:>14.6g}{p.error_frac:>+9.1%}  {p.note}")
    med, signed, worst = summary(preds)
    lines.append(
        f"median |error| {med:.1%}, median signed {signed:+.1%}, worst |error| {worst:.1%} ({len(preds)} rows)"
    )
    return "\n".join(lines)
