"""The one definition of the SLO (planner/sim/slo.py, issue 26): TTFT, per-request TPOT, per-gap ITL and
E2EL as ``vllm bench serve`` defines them, the mean or a percentile of each, the verdict in words, the
goodput, and old links' ``slo_tpot_s`` read as the ITL target."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from planner.links import from_query, to_query
from planner.model.scenario import Scenario
from planner.sim.slo import (
    ITL,
    TPOT,
    TTFT,
    Slo,
    good_requests,
    meets_single_request,
    statistic,
    statistics,
    verdict,
)
from planner.sim.status import NOT_RUN, REJECTED_CONTEXT, SERVED


@dataclass(frozen=True)
class Run:
    """A hand-made run: three served requests, one rejected, one not reached."""

    status: np.ndarray = field(default_factory=lambda: np.array([SERVED, SERVED, SERVED, REJECTED_CONTEXT, NOT_RUN]))
    ttft_s: np.ndarray = field(default_factory=lambda: np.array([0.1, 0.2, 0.6, np.nan, np.nan]))
    e2e_s: np.ndarray = field(default_factory=lambda: np.array([1.1, 0.2, 2.6, np.nan, np.nan]))
    output_tokens: np.ndarray = field(default_factory=lambda: np.array([11, 1, 21, 5, 5]))
    # request 0: ten gaps of 0.1 s; request 2: twenty gaps, nineteen of 0.05 s and one of 1.05 s
    itl_s: np.ndarray = field(default_factory=lambda: np.array([0.1, 0.05, 1.05]))
    itl_weight: np.ndarray = field(default_factory=lambda: np.array([10.0, 19.0, 1.0]))
    stopped_early: bool = False
    summary: dict = field(default_factory=dict)

    @property
    def tpot_s(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.output_tokens > 1, (self.e2e_s - self.ttft_s) / (self.output_tokens - 1), np.nan)


def test_each_latency_is_defined_as_vllm_bench_serve_reports_it():
    r = Run()
    # TPOT per request: (1.1 − 0.1) / 10 = 0.1 and (2.6 − 0.6) / 20 = 0.1; the one-token request has none
    assert statistic(r, "tpot", "mean") == pytest.approx(0.1)
    # ITL per gap: (10 · 0.1 + 19 · 0.05 + 1.05) / 30
    assert statistic(r, "itl", "mean") == pytest.approx((1.0 + 0.95 + 1.05) / 30)
    assert statistic(r, "itl", 99) == 1.05 and statistic(r, "itl", 50) == 0.05
    # TTFT and E2EL: the rejected request never gets a token (∞), the one not reached is left out
    assert statistic(r, "ttft", 50) == 0.2 and statistic(r, "ttft", 99) == np.inf
    assert statistic(r, "ttft", "mean") == np.inf
    assert statistic(r, "ttft", "mean", rejected_as_inf=False) == pytest.approx(0.3)
    assert statistic(r, "e2e", 50, rejected_as_inf=False) == 1.1


@dataclass(frozen=True)
class Sampled(Run):
    """A large run with ties and integer token weights, as a simulation's ITL sample has."""

    itl_s: np.ndarray = field(default_factory=lambda: np.random.default_rng(3).integers(1, 400, 20_000) / 7e3)
    itl_weight: np.ndarray = field(
        default_factory=lambda: np.random.default_rng(4).integers(1, 64, 20_000).astype(float)
    )


@pytest.mark.parametrize("name", ["ttft", "tpot", "itl", "e2e"])
@pytest.mark.parametrize("rejected_as_inf", [True, False])
def test_statistics_from_one_sort_equal_one_call_each_to_the_bit(name, rejected_as_inf):
    stats = [50, 90, 99, "mean", 99.9, 99]
    for r in (Run(), Sampled()):
        one_each = [statistic(r, name, s, rejected_as_inf) for s in stats]
        assert np.array(statistics(r, name, stats, rejected_as_inf)).tobytes() == np.array(one_each).tobytes()
    empty = Run(status=np.full(5, NOT_RUN), itl_s=np.zeros(0), itl_weight=np.zeros(0))
    assert np.isnan(statistics(empty, name, stats)).all()


def test_the_verdict_takes_the_statistics_it_is_given():
    r, slo = Run(), Slo(ttft_s=0.5, itl_s=2.0)
    given = {n: statistic(r, n, slo.pct) for n in ("ttft", "tpot", "itl", "e2e")}
    assert verdict(r, slo, given) == verdict(r, slo)
    assert verdict(r, slo, {**given, "ttft": 0.1}).met != verdict(r, slo).met


def test_the_verdict_holds_each_set_target_and_says_so():
    r = Run()
    mean = Slo(ttft_s=None, itl_s=None, pct="mean", tpot_s=0.1)
    v = verdict(r, mean)
    assert v.met and v.tpot_q_s == pytest.approx(0.1) and mean.text() == "mean per-request TPOT ≤ 100 ms"
    both = Slo(ttft_s=1.0, itl_s=0.05, pct=99.0, tpot_s=0.05)
    v = verdict(r, both)
    assert not v.met and v.failed == (TTFT, TPOT, ITL)  # the rejected request is an ∞ TTFT at p99
    assert both.text() == "p99 TTFT ≤ 1.00 s and p99 per-request TPOT ≤ 50.0 ms and p99 ITL ≤ 50.0 ms"
    assert Slo(ttft_s=None, itl_s=None).text() == "no latency target"
    assert Slo(ttft_s=1.0, itl_s=None, pct="mean", tpot_s=0.05).text() == (
        "mean TTFT ≤ 1.00 s and mean per-request TPOT ≤ 50.0 ms"
    )


def test_goodput_uses_the_tpot_target_else_the_itl_target():
    r = Run()
    assert list(good_requests(r, Slo(ttft_s=0.5, itl_s=0.09))) == [False, True, False, False, False]
    assert list(good_requests(r, Slo(ttft_s=0.5, itl_s=0.01, tpot_s=0.1))) == [True, True, False, False, False]
    assert list(good_requests(r, Slo(ttft_s=None, itl_s=None, e2e_s=2.0))) == [True, True, False, False, False]


def test_early_stop_only_where_a_percentile_of_99_holds():
    assert Slo(pct=99.0).stop_ttft_s == 2.0 and Slo(pct=99.9).stop_itl_s == 0.05
    assert Slo(pct=90.0).stop_ttft_s == np.inf and Slo(pct="mean").stop_itl_s == np.inf
    assert Slo(ttft_s=None).stop_ttft_s == np.inf


def test_old_links_keep_their_meaning():
    old, issues = from_query("slo_tpot_s=0.03&slo_pct=95")
    assert (old.slo_itl_s, old.slo_tpot_s, old.slo_pct) == (0.03, None, 95.0)
    assert [i.key for i in issues] == ["slo_tpot_s"] and not issues[0].fatal
    assert Slo.of(old).text() == "p95 TTFT ≤ 2.00 s and p95 ITL ≤ 30.0 ms"
    # a new link always carries slo_itl_s beside slo_tpot_s, so it reads back as written
    new = Scenario(slo_tpot_s=0.05, slo_itl_s=None, slo_pct="mean", slo_ttft_s=1.0)
    q = to_query(new)
    assert q["slo_itl_s"] == "none" and q["slo_pct"] == "mean"
    back, issues = from_query(q)
    assert back == new and issues == []
    both = Scenario(slo_tpot_s=0.05)  # TPOT and the default ITL target
    assert from_query(to_query(both)) == (both, [])
    assert Scenario() == from_query("")[0] and Slo.of(Scenario()) == Slo()  # the defaults: p99 TTFT ≤ 2 s, ITL ≤ 50 ms


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("slo_pct=40", "allowed: mean, or a percentile in [50.0, 99.9]"),
        ("slo_pct=average", "allowed: mean, or a percentile in [50.0, 99.9]"),
        ("slo_ttft_s=-1", "or none (unset)"),
        ("slo_e2e_s=-1", "a number in (0.0, 36000.0]"),
    ],
)
def test_bad_slo_values_are_named(query, message):
    s, issues = from_query(query)
    assert s == Scenario() and len(issues) == 1 and issues[0].fatal and message in str(issues[0])


def test_the_single_request_check():
    slo = Slo(ttft_s=1.0, itl_s=0.05, tpot_s=0.03)
    ok = meets_single_request(slo, np.array([0.5, 0.5, 2.0]), np.array([0.02, 0.04, 0.02]))
    assert list(ok) == [True, False, False]  # the step is held to the tighter of TPOT and ITL
    assert meets_single_request(Slo(ttft_s=None, itl_s=None), np.array([9.0]), np.array([9.0])).all()


def test_the_simulated_hit_rate_reads_as_the_headlines(catalog):
    """Every fixed-length request shares the 1,024-token prefix: all but the first find it (64 whole blocks)."""
    from planner.engine.evaluate import evaluate
    from planner.sim.results import simulated_gpu_hit
    from planner.sim.simulate import simulate_scenario

    s = Scenario(hit=1.0, prefix=1024, dist="fixed", rate=1.0, sim_requests=50)
    r = simulate_scenario(s, catalog)
    hit_tokens = evaluate(s, catalog).metrics["gpu_cached_tokens"]
    assert hit_tokens == 1024.0
    assert simulated_gpu_hit(r, s.prompt, hit_tokens) == pytest.approx(49 / 50)
    assert simulated_gpu_hit(r, s.prompt, 0.0) is None
