"""Sizing a benchmark run to a time budget, from the machine's own speed.

After the first calibration round the run knows this machine's matmul peak, weight-streaming bandwidth,
overlap and attention shares, so the engine predicts every planned step (``predict.predict_cases``
with the round's profile; the median |error| of that prediction is what the run reports, ~5–15 %).
What timing a step costs follows from ``backend.timed``'s rules, for a call of t seconds at the
plan's ``target_s`` T, ``warmup`` w and ``repeats`` r:

    warm-up   max(w, ⌈T / 2t⌉) calls                 timed   min(max(r, ⌈T / t⌉), 5r) calls
    a case    (warm-up + timed) · t · ``ATTEMPT_FACTOR``  (a noisy case is timed again, ≤ 3 attempts)

and a calibration round costs what the first one took.  ``size_to_budget`` keeps the plan when the
whole run — what has run already, the remaining rounds, every case, the kernel table's share
(``TABLE_SHARE``) — fits the budget; otherwise, in this order, it shortens the timing target (T down
to ``MIN_TARGET_FRAC`` × the plan's, the rounds' in proportion), runs 3 calibration rounds instead of
5, and drops the most expensive cases while each phase keeps ``MIN_CASES`` of them (decode: 3 batch
sizes at every context, for the ridge fit).  The dropped cases are listed, with their estimate, in the
results' ``skipped``.  ``measure_cases`` then also stops at the deadline (``Deadline``): an estimate can
be wrong, the budget cannot.

Defaults (``DEFAULT_BUDGET_S``): 150 s on a CPU, so a run ends within 3 minutes with the decoder's
set-up and the writing; 240 s on a GPU.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace

from planner.bench.plan import Case, Plan

DEFAULT_BUDGET_S = {"cpu": 150.0, "cuda": 240.0}
#: The quick plan (tests) has its own small budget.
QUICK_BUDGET_S = 60.0
#: Share of the budget the kernel-table sweep may take (it stops at its own deadline).
TABLE_SHARE = 0.12
#: A case's cost × this, for the retries of noisy cases (``run.MAX_ATTEMPTS``).
ATTEMPT_FACTOR = 1.25
#: The shortest timing target a sized plan may use, as a share of the plan's own.
MIN_TARGET_FRAC = 0.3
#: Calibration rounds of a full plan, and of a sized-down one.
ROUNDS, FEW_ROUNDS = 5, 3
#: Cases each phase keeps at least (decode: per context).
MIN_CASES = {"prefill": 3, "decode": 3, "mixed": 1, "verify": 2}


def call_count(t_s: float, warmup: int, repeats: int, target_s: float) -> int:
    """Calls ``backend.timed`` makes of a call lasting ``t_s`` (module doc)."""
    t = max(t_s, 1e-9)
    warm = max(warmup, math.ceil(target_s / (2 * t))) if target_s > 0 else warmup
    timed = min(max(repeats, math.ceil(target_s / t)), 5 * repeats) if target_s > 0 else repeats
    return warm + timed


def case_cost_s(t_s: float, plan: Plan) -> float:
    """Seconds timing one case of ``t_s`` per call costs (module doc)."""
    return call_count(t_s, plan.warmup, plan.repeats, plan.target_s) * t_s * ATTEMPT_FACTOR


@dataclass(frozen=True)
class Sizing:
    """The plan the budget allows, and why."""

    plan: Plan
    rounds: int
    estimate_s: float  # the whole run, as estimated
    dropped: tuple[str, ...]  # "phase seqs=… : est. … s" per case dropped
    notes: tuple[str, ...]


def _cost(plan: Plan, step_s: Mapping[Case, float]) -> float:
    return sum(case_cost_s(step_s[c], plan) for c in plan.cases)


def _label(c: Case) -> str:
    return f"{c.phase} seqs={c.seqs} q={c.q} ctx={c.ctx} n={c.n} past={c.past}"


def _droppable(kept: list[Case], c: Case) -> bool:
    same = [k for k in kept if k.phase == c.phase and (c.phase != "decode" or k.ctx == c.ctx)]
    return len(same) > MIN_CASES[c.phase]


def size_to_budget(plan: Plan, step_s: Mapping[Case, float], spent_s: float, round_s: float, budget_s: float) -> Sizing:
    """The plan (module doc) so that ``spent_s`` + the remaining rounds + the cases + the table's share
    ≤ ``budget_s``; ``step_s``: each case's predicted seconds per call, ``round_s``: one round's cost."""
    room = budget_s * (1 - TABLE_SHARE) - spent_s
    notes: list[str] = []

    def total(p: Plan, rounds: int) -> float:
        scale = p.target_s / plan.target_s if plan.target_s else 1.0
        return (rounds - 1) * round_s * max(scale, MIN_TARGET_FRAC) + _cost(p, step_s)

    rounds = ROUNDS
    if total(plan, rounds) <= room:
        return Sizing(plan, rounds, spent_s + total(plan, rounds) + budget_s * TABLE_SHARE, (), ())
    sized = plan
    for frac in (0.7, 0.5, MIN_TARGET_FRAC):
        sized = replace(plan, target_s=plan.target_s * frac, micro_target_s=plan.micro_target_s * frac)
        if total(sized, rounds) <= room:
            break
    if sized.target_s != plan.target_s:
        notes.append(f"timing target {sized.target_s:.2g} s a step (planned {plan.target_s:.2g} s)")
    if total(sized, rounds) > room:
        rounds = FEW_ROUNDS
        notes.append(f"{rounds} calibration rounds (planned {ROUNDS})")
    kept = list(sized.cases)
    dropped = []
    for c in sorted(kept, key=lambda c: -case_cost_s(step_s[c], sized)):
        if total(replace(sized, cases=tuple(kept)), rounds) <= room:
            break
        if _droppable(kept, c):
            kept.remove(c)
            dropped.append(f"{_label(c)}: time budget (est. {case_cost_s(step_s[c], sized):.1f} s to time)")
    sized = replace(sized, cases=tuple(k for k in sized.cases if k in kept))
    if dropped:
        notes.append(f"{len(dropped)} of {len(plan.cases)} steps left out for the {budget_s:.0f} s budget")
    return Sizing(sized, rounds, spent_s + total(sized, rounds) + budget_s * TABLE_SHARE, tuple(dropped), tuple(notes))


@dataclass
class Deadline:
    """A wall-clock deadline (``time.perf_counter`` seconds); ``None`` = none."""

    at: float | None = None

    def left_s(self) -> float:
        return math.inf if self.at is None else self.at - time.perf_counter()

    def allows(self, cost_s: float) -> bool:
        """Whether work of ``cost_s`` seconds still ends before the deadline."""
        return cost_s <= self.left_s()
