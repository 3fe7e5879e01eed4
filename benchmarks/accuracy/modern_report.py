"""The 2025–26 part of benchmarks/published_accuracy.py: errors per basis, engine version, dense / MoE model and
category, held-out rows apart from fitted ones, the pending rows' reasons, and AIConfigurator side by side."""

from __future__ import annotations

import collections
import statistics
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.accuracy import aic, modern
from benchmarks.accuracy.report import Prediction
from planner.engine.evaluate import compute
from planner.model.catalog import Catalog

#: The issue's targets for 2025–26 engines, rows not fitted (throughput and TPOT).
TARGET_MEDIAN = 0.10
TARGET_BIAS = 0.05


@dataclass(frozen=True)
class Scored:
    case: modern.Case
    pred: Prediction
    batch: float

    @property
    def basis(self) -> str:
        return "kernel tables" if self.case.basis.startswith("measured") else "fitted roofline"

    @property
    def role(self) -> str:
        return "fitted" if self.case.row.fit_role == "fit" else "held out"


def score(catalog: Catalog) -> tuple[list[Scored], list[str]]:
    cases, pending = modern.cases(modern.load_rows(), catalog)
    x = modern.stacked_inputs(cases, catalog)
    preds = modern.predict(cases, x)
    batch = np.asarray(compute(x)["max_throughput_batch"])
    return [Scored(c, p, float(b)) for c, p, b in zip(cases, preds, batch, strict=True)], pending


def _stats(errs: Sequence[float]) -> str:
    med = statistics.median(abs(e) for e in errs)
    return f"median |error| {med:6.1%}  median signed {statistics.median(errs):+6.1%}  ({len(errs)} rows)"


def print_report(scored: list[Scored], pending: list[str], show_rows: bool) -> bool:
    """The 2025–26 tables; True when the targets (held-out throughput and TPOT) are met."""
    print("## 2025–26 engines (benchmarks/data/published-serving-2025.json; benchmarks/accuracy/modern.py)")
    groups: dict[tuple[str, str, str], list[float]] = collections.defaultdict(list)
    for s in scored:
        cat = "tpot" if s.case.row.category in ("tpot", "itl") else s.case.row.category
        groups[(s.basis, cat, s.role)].append(s.pred.error_frac)
        groups[(s.basis, f"{cat} · {s.case.row.engine_profile}", s.role)].append(s.pred.error_frac)
        kind = "MoE" if s.case.scenario.model in MOE_MODELS else "dense"
        groups[(s.basis, f"{cat} · {kind}", s.role)].append(s.pred.error_frac)
    for (basis, cat, role), errs in sorted(groups.items()):
        print(f"  {basis:<16} {cat:<34} {role:<9} {_stats(errs)}")
    fitted = sorted({s.case.row.id for s in scored if s.role == "fitted"})
    print(f"  fitted rows ({len(fitted)}: benchmarks/fit_kernels.py's [kernels] fit): " + ", ".join(fitted))
    reasons = collections.Counter(p.split(": ", 1)[1] for p in pending)
    print(f"  pending ({len(pending)} rows kvplan does not predict):")
    for why, n in reasons.most_common():
        print(f"    {n:>4} × {why}")
    if show_rows:
        for s in scored:
            p = s.pred
            print(f"    {p.row_id:<62}{p.measured:>12.5g}{p.predicted:>12.5g}{p.error_frac:>+8.1%}  {p.note}")
    met = True
    for cat in ("throughput", "tpot"):
        errs = [s.pred.error_frac for s in scored if s.role == "held out" and _cat(s) == cat]
        if errs:
            ok = statistics.median(abs(e) for e in errs) <= TARGET_MEDIAN
            ok &= abs(statistics.median(errs)) <= TARGET_BIAS
            met &= ok
            print(
                f"  target, held-out {cat} (median |error| ≤ 10 %, bias within ±5 %): {_stats(errs)} → "
                f"{'met' if ok else 'NOT met'}"
            )
    return met


def _cat(s: Scored) -> str:
    return "tpot" if s.case.row.category in ("tpot", "itl") else s.case.row.category


def aic_side_by_side(scored: list[Scored], python: str, max_rows: int) -> None:
    """AIConfigurator's estimate of the held-out kernel-table rows it can describe (a deterministic sample)."""
    print("## AIConfigurator 0.12 side by side (benchmarks/accuracy/aic.py; mode agg at kvplan's settings)")
    if not aic.available(python):
        print(f"  not run: {python} cannot import aiconfigurator (pip install 'kvplan[aic]' or --aic-python PATH)")
        return
    pool = [
        s for s in scored if s.basis == "kernel tables" and s.role == "held out" and _cat(s) in ("throughput", "tpot")
    ]
    pool.sort(key=lambda s: zlib.crc32(s.case.row.id.encode()))
    chosen, requests = [], []
    for s in pool:
        req = aic.request(s.case, int(max(s.batch, 1)), s.case.scenario.model in MOE_MODELS)
        if req is not None:
            chosen.append(s)
            requests.append(req)
        if len(chosen) >= max_rows:
            break
    answers = aic.estimate(python, requests)
    ours, theirs = collections.defaultdict(list), collections.defaultdict(list)
    refused = 0
    for s, a in zip(chosen, answers, strict=True):
        if "error" in a:
            refused += 1
            continue
        cat = _cat(s)
        value = a["tokens_per_s_per_gpu"] if cat == "throughput" else a["tpot_s"]
        theirs[cat].append(value / s.pred.measured - 1.0)
        ours[cat].append(s.pred.error_frac)
    for cat in sorted(ours):
        print(f"  {cat:<11} kvplan {_stats(ours[cat])}")
        print(f"  {'':<11} AIC    {_stats(theirs[cat])}")
    print(f"  ({len(chosen)} held-out rows sampled by a hash of the row id; {refused} AIConfigurator refused)")


MOE_MODELS = {
    "llama-4-scout-17b-16e",
    "llama-4-maverick-17b-128e",
    "qwen3-235b-a22b",
    "qwen3-30b-a3b",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "deepseek-r1",
    "mixtral-8x7b",
}
