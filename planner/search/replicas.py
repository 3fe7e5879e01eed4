"""The replica-count rules the sizing and the search share: which tensor-parallel sizes the engine
accepts for a model, and the fewest replicas that pass a monotone check (exponential steps from a
guess, then bisection).  Below both ``sizing`` and ``knob_search``: neither is imported here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from planner.engine.evaluate import resolve
from planner.engine.validity import quant_group, valid_tps
from planner.errors import ScenarioError
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

#: The tensor-parallel sizes sizing tries within a node.
TP_OPTIONS = (1, 2, 4, 8)


def fewest_passing(
    check: Callable[[int], bool], guess: int, limit: int, tolerance: float = 0.0, first_step: int = 0
) -> int | None:
    """Smallest r in [1, limit] with check(r), assuming check is monotone; None if check(limit) fails.

    Tests the guess, then steps s, 2s, 4s … away from it, then bisects, s = max(1, ⌊tolerance · r⌋): the
    answer was tested to pass and r − s to fail (unless r = 1).  ``tolerance`` 0 resolves the count to one
    replica; 0.04 to 4 % of it (a fleet of 1,000 to 40 replicas: a p99 from a finite sample cannot tell
    960 from 1,000 apart, and the search's cost stays the same at any fleet size).  ``first_step``: the
    first step when the caller knows better than s (from how far the guess's run was from its target).
    """

    def step_of(r: int) -> int:
        return max(1, int(r * tolerance))

    guess = min(max(guess, 1), limit)
    if check(guess):
        lo, hi, step = 0, guess, max(step_of(guess), first_step)
        while hi > 1:
            c = max(hi - step, 1)
            if check(c):
                hi, step = c, step * 2
            else:
                lo = c
                break
        if hi == 1:
            return 1
    else:
        lo, step = guess, max(step_of(guess), first_step)
        while True:
            c = min(lo + step, limit)
            if check(c):
                hi = c
                break
            if c == limit:
                return None
            lo, step = c, step * 2
    while hi - lo > step_of(hi):
        mid = (lo + hi) // 2
        if check(mid):
            hi = mid
        else:
            lo = mid
    return hi


def accepted_tps(s: Scenario, catalog: Catalog, tps: Sequence[int]) -> tuple[int, ...]:
    """The tps of ``tps`` the engine accepts for the scenario's model (``engine.validity``): vLLM
    cannot split Qwen2.5-7B's 28 heads over 8 GPUs, so sizing never offers tp = 8 for it."""
    try:
        r = resolve(s.with_changes(tp=1), catalog)
    except ScenarioError:
        return tuple(tps)  # the model itself cannot be resolved: each row reports why
    group = quant_group(r.scenario, r.model)
    ok = set(valid_tps(r.model, group, r.draft if r.scenario.spec else None, max(tps, default=1)))
    return tuple(t for t in tps if t in ok)
