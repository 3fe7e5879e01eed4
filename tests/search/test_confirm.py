"""The search's confirmation (planner/search/confirm.py, answer.py, confidence.py, pools.py): how many
requests, to what resolution, in what order, and what is shown before, while and after it runs."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.errors import Cancelled
from planner.model.scenario import Scenario
from planner.search import confidence
from planner.search.answer import MEETS, PENDING, PRICED, SCREENED, SIMULATED, UNCONFIRMED
from planner.search.confirm import Plan
from planner.search.knob_search import search_fleet, search_text
from planner.search.pools import size_pool
from planner.search.replicas import fewest_passing
from planner.sim.slo import Slo

SMALL = Scenario(model="llama-3.2-1b", rate=20.0, sim_requests=200, search="batch")
GPUS = ["l4", "h100-sxm"]


def test_requests_for_a_percentile_from_binomial_order_statistics():
    assert confidence.band(99.0) == (98.5, 99.5)
    assert [confidence.requests_for(p) for p in (90.0, 99.0, 99.9)] == [200, 1800, 15700]
    for p in (90.0, 95.0, 99.0):
        n = confidence.requests_for(p)
        assert confidence.coverage(n, p) >= 0.95 > confidence.coverage(n - 400, p)
    # the log-space binomial CDF against the exact sum in rationals
    n, p, k = 300, Fraction(99, 100), 295
    exact = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(k + 1))
    assert confidence._binom_cdf(k, n, 0.99) == pytest.approx(float(exact), rel=1e-12)
    assert "p98.5 and p99.5" in confidence.band_text(1800, 99.0)


def test_a_search_run_simulates_what_its_percentile_needs():
    slo = Slo.of(Scenario())
    assert Plan.of(Scenario(), slo).requests == 3600  # 2 × 1,800: one queue's correlated path (confirm.py)
    assert Plan.of(Scenario(sim_requests=300), slo).requests == 300  # lowered: faster, less certain
    assert Plan.of(Scenario(sim_requests=9000), slo).requests == 9000
    assert Plan.of(Scenario(slo_pct=90.0), Slo.of(Scenario(slo_pct=90.0))).requests == 2000  # the default floor
    # a candidate that cannot win: the percentile's independent count, never below the default sample (a mean
    # placed on 600 requests had a loaded 70B replica "meet" its target at 1.6 × the rate 4,000 requests sustain)
    assert Plan.of(Scenario(), slo).far_requests == 2000  # p99: 1,800 independent, raised to the default 2,000
    mean = Scenario(slo_pct="mean", slo_tpot_s=0.05, slo_itl_s=None)
    assert Plan.of(mean, Slo.of(mean)).far_requests == 2000


@given(
    threshold=st.integers(1, 20_000),
    guess=st.integers(1, 30_000),
    tolerance=st.sampled_from([0.0, 0.01, 0.02, 0.05]),
    first=st.integers(0, 500),
)
def test_fewest_passing_resolves_the_count_to_its_tolerance(threshold, guess, tolerance, first):
    calls: list[int] = []

    def check(r: int) -> bool:
        calls.append(r)
        return r >= threshold

    got = fewest_passing(check, guess, 40_000, tolerance, first)
    assert got is not None and got >= threshold and got in calls
    step = max(1, int(got * tolerance))
    assert got - threshold <= step  # within the resolution of the answer
    assert got == 1 or any(not (c >= threshold) and got - c <= step for c in calls)  # the count below failed
    if tolerance == 0.02:
        assert len(calls) <= 2 * math.log2(40_000) + 4


@pytest.fixture(scope="module")
def updates(catalog):
    seen = []
    z = search_fleet(SMALL, catalog, gpus=GPUS, workers=1, on_update=seen.append)
    return seen, z


def test_the_screened_answer_comes_first_then_each_row_is_confirmed(updates):
    seen, z = updates
    first = seen[0]
    assert len(first.table) == len(z.table) == first.candidates and first.confirmed == 0
    assert (first.table["basis"] == SCREENED).all() and (first.table["status"] == PENDING).all()
    assert first.best is not None and first.best_basis == SCREENED and first.stopped == "running"
    assert first.reason.startswith("Screening model (not confirmed by simulation yet): the cheapest way")
    assert [u.confirmed for u in seen] == list(range(len(seen)))  # one update per confirmation
    assert z.complete and z.best_basis == SIMULATED and z.reason.startswith("Cheapest way to meet")
    assert set(z.table["basis"]) == {SIMULATED} and (z.table.loc[z.table["best"], "status"] == MEETS).all()
    assert "simulated" in search_text(z) and f"{z.confirmed} of {z.candidates} candidates" in search_text(z)


def test_what_the_time_budget_leaves_is_shown_screened_never_dropped(updates, catalog):
    _, full = updates
    z = search_fleet(SMALL, catalog, gpus=GPUS, workers=1, time_budget_s=1e-9)
    assert z.stopped == "time budget" and z.confirmed == 0 and len(z.table) == len(full.table)
    assert (z.table["basis"] == SCREENED).all() and (z.table["status"] == UNCONFIRMED).all()
    assert z.best is not None and z.best_basis == SCREENED and z.reason.startswith("Screening model")
    assert "time budget ran out" in search_text(z)


def test_a_cancel_keeps_what_is_confirmed(catalog):
    calls = []

    def progress(frac: float, note: str = "") -> None:
        calls.append(frac)
        if frac > 0:  # after the first confirmation
            raise Cancelled

    z = search_fleet(SMALL, catalog, gpus=GPUS, workers=1, progress=progress)
    assert z.stopped == "cancelled" and z.confirmed == 1
    assert (z.table["basis"] == SIMULATED).sum() == 1 and (z.table["status"] == UNCONFIRMED).sum() == len(z.table) - 1


BOUNDED = Scenario(model="llama-3.1-8b", rate=40.0, sim_requests=400)
BOUNDED_GPUS = ["l4", "h100-sxm", "a100-80gb-sxm", "h200"]


def test_a_candidate_that_misses_at_the_answers_cost_is_shown_unable_to_win_after_one_run(catalog):
    """The second round's ceiling (confirm.py, "A bound"): the answer is the one sizing every candidate gives,
    in fewer runs; a bounded row says at how many replicas it missed, and is not priced."""
    z = search_fleet(BOUNDED, catalog, gpus=BOUNDED_GPUS, workers=1)
    full = search_fleet(BOUNDED, catalog, gpus=BOUNDED_GPUS, workers=1, bound=False)
    assert z.complete and full.complete and z.cannot_win >= 2 and full.cannot_win == 0
    a, b = z.table.loc[z.best], full.table.loc[full.best]
    assert (a["point"], a["replicas"], a["gpus"]) == (b["point"], b["replicas"], b["gpus"])
    assert z.simulations < full.simulations
    won = z.table[z.table["status"].str.startswith("cannot win")]
    assert len(won) == z.cannot_win and won["gpus"].isna().all()
    # simulated where it ran at its ceiling; 'price' where one replica already costs more than the answer (no run)
    priced = won["status"].str.contains("one replica costs")
    assert (won.loc[~priced, "basis"] == SIMULATED).all() and (won.loc[priced, "basis"] == PRICED).all()
    assert (won.loc[priced, "simulations"] == 0).all() and (won.loc[~priced, "simulations"] > 0).all()
    answer_cost = a["cost_per_hour_usd"]
    by_point = full.table.set_index("point")
    for _, row in won.iterrows():  # sized in full, each costs more than the answer (or misses outright)
        other = by_point.loc[row["point"]]
        assert other["status"] != MEETS or other["cost_per_hour_usd"] > answer_cost
    assert any("misses the SLO in simulation at" in t for t in won["status"])
    assert f"{z.cannot_win} shown unable to win" in search_text(z)


def test_a_ceiling_stops_the_sizing_after_one_failing_run_or_sizes_below_it(catalog):
    s = BOUNDED.with_changes(gpu="h100-sxm", batch=1024, chunk=1024)
    slo = Slo.of(s)
    free = size_pool(s, catalog, None, "colocated", 2, 400, (0,), slo)
    assert free.replicas is not None and free.replicas >= 2
    low = size_pool(s, catalog, None, "colocated", free.replicas, 400, (0,), slo, ceiling=free.replicas - 1)
    # one count tried: one run, or two where its 400 requests passed too short to be steady (``sim.steady``)
    assert low.cannot_win and low.replicas is None and low.simulations in (1, 2)
    assert low.below is not None and low.below.replicas == free.replicas - 1 and not low.below.met
    none = size_pool(s, catalog, None, "colocated", 2, 400, (0,), slo, ceiling=0)
    assert none.cannot_win and none.simulations == 0 and none.below is None
    high = size_pool(s, catalog, None, "colocated", 2, 400, (0,), slo, ceiling=free.replicas + 3)
    assert high.replicas == free.replicas and not high.cannot_win
