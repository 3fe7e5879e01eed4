"""A load-aware router's fleet confirmed on a bounded sample of it (planner/search/fleet_sample.py, issue 28):
min(r, 8) replicas on the traffic they receive, the answer still r, its basis named; seeded and repeatable."""

from __future__ import annotations

import numpy as np
import pytest

from planner.model.scenario import Scenario
from planner.search.fleet_sample import (
    FLEET_SAMPLE_REPLICAS,
    basis_words,
    kept_requests,
    sample_workload,
    sampled_replicas,
    simulate_sample,
)
from planner.search.knob_search import search_fleet, search_text
from planner.search.pools import _setup, size_pool
from planner.sim.fleet import simulate_fleet
from planner.sim.slo import Slo
from planner.sim.workload import Workload, chain_keys, scenario_workload, split_round_robin, with_prefix_blocks

SMALL = Scenario(model="llama-3.2-1b", gpu="l4", rate=40.0, prompt=512, output=64, sim_requests=300)
#: A fleet of more than 8 replicas in a second: 8B, 2,048 in / 128 out at 100 requests/s on L4s.
FLEET = Scenario(model="llama-3.1-8b", gpu="l4", rate=100.0, prompt=2048, output=128, sim_requests=300, search="batch")


def test_only_a_load_aware_router_simulates_more_than_one_replica_and_never_more_than_the_bound():
    assert [sampled_replicas("round_robin", r) for r in (1, 5, 300)] == [1, 1, 1]
    for router in ("least_tokens", "prefix_affinity"):
        assert [sampled_replicas(router, r) for r in (1, 5, 8, 9, 300)] == [1, 5, 8, 8, FLEET_SAMPLE_REPLICAS]
    assert basis_words("least_tokens", 270) == "8 of 270 replicas (least_tokens)"
    assert basis_words("prefix_affinity", 3) == "3 of 3 replicas (prefix_affinity)"
    assert basis_words("round_robin", 136) == "1 of 136 replicas (its share, round_robin)"


def test_the_sample_is_the_k_replicas_share_of_the_poisson_traffic():
    s = SMALL.with_changes(rate=2000.0, router="least_tokens")
    w = sample_workload(s, None, 270, 3600, "least_tokens")
    assert len(w) == 3600
    # Poisson at rate · 8 / 270: the sample's arrival rate is the 8 replicas' share (within its sampling error)
    assert w.rate_per_s == pytest.approx(2000.0 * 8 / 270, rel=0.05)
    # a load-independent router: one replica's share, the same draw as before the sample existed
    one = sample_workload(s, None, 270, 300, "round_robin")
    ref = scenario_workload(s, rate_per_s=2000.0 / 270, n=300)
    assert np.array_equal(one.arrival_s, ref.arrival_s) and np.array_equal(one.prompt_tokens, ref.prompt_tokens)


def _trace(groups: list[int | None], gap_s: float = 0.1) -> Workload:
    n = len(groups)
    w = Workload(
        arrival_s=np.arange(n) * gap_s,
        prompt_tokens=np.full(n, 1024, dtype=np.int64),
        output_tokens=np.full(n, 16, dtype=np.int64),
    )
    blocks = [[("g", g), ("g2", g)] if g is not None else [] for g in groups]
    ends = [[512, 1024 - 1] if g is not None else [] for g in groups]
    counts, keys = chain_keys(blocks, ends)
    flat_ends = np.array([e for row in ends for e in row], dtype=np.int64)
    return with_prefix_blocks(w, counts, keys, flat_ends)


def test_least_tokens_keeps_k_of_every_r_trace_requests_in_order():
    w = _trace([None] * 1000)
    kept = kept_requests(w, "least_tokens", 20)
    assert np.array_equal(kept, np.flatnonzero(np.arange(1000) % 20 < 8))
    sample = sample_workload(SMALL, w, 20, 100, "least_tokens")
    assert np.array_equal(sample.arrival_s, w.arrival_s[kept[:100]])
    # round-robin: replica 0's share, as ``split_round_robin``
    rr = sample_workload(SMALL, w, 20, 30, "round_robin")
    assert np.array_equal(rr.arrival_s, split_round_robin(w, 20).arrival_s[:30])


def test_prefix_affinity_keeps_cold_groups_whole_and_thins_a_hot_group_per_request():
    rng = np.random.default_rng(7)
    cold = rng.integers(0, 400, size=2000).tolist()  # 400 groups of ≈ 5 requests: each below one replica's share
    groups: list[int | None] = [g if i % 2 else 10_000 for i, g in enumerate(cold)]  # every other: one hot group
    groups[::7] = [None] * len(groups[::7])  # some requests share nothing
    w = _trace(groups)
    r = 40
    kept = set(kept_requests(w, "prefix_affinity", r).tolist())
    by_group: dict[int, set[bool]] = {}
    for i, g in enumerate(groups):
        if g is not None and g != 10_000:
            by_group.setdefault(g, set()).add(i in kept)
    assert all(len(v) == 1 for v in by_group.values())  # a cold group is kept whole or dropped whole
    share = sum(v == {True} for v in by_group.values()) / len(by_group)
    assert share == pytest.approx(8 / r, abs=0.07)  # ≈ the groups of 8 replicas out of 40
    hot = [i for i, g in enumerate(groups) if g == 10_000]
    assert {i in kept for i in hot} == {True, False}  # the hot group is spread: thinned per request
    assert sum(i in kept for i in hot) == sum(i % r < 8 for i in hot)
    assert np.array_equal(kept_requests(w, "prefix_affinity", r), kept_requests(w, "prefix_affinity", r))


def test_the_sample_is_the_fleet_of_k_replicas_and_repeats_to_the_byte(catalog):
    s = SMALL.with_changes(router="least_tokens")
    cfg, timer = _setup(s, catalog, "colocated")
    w = sample_workload(s, None, 20, 400, "least_tokens")
    a = simulate_sample(w, cfg, timer, "least_tokens", 20)
    b = simulate_sample(w, cfg, timer, "least_tokens", 20)
    whole = simulate_fleet(w, cfg, timer, 8, "least_tokens", detail=False).combined
    assert a.summary == b.summary == whole.summary
    assert np.array_equal(a.ttft_s, whole.ttft_s, equal_nan=True)


def test_size_pool_names_the_sampled_fleet_of_each_run(catalog):
    s = SMALL.with_changes(router="least_tokens", rate=300.0)
    p = size_pool(s, catalog, None, "colocated", 12, 300, (1,), Slo.of(s), tolerance=0.04)
    assert p.replicas is not None and p.at is not None
    assert p.at.simulated == min(p.replicas, FLEET_SAMPLE_REPLICAS)
    assert p.at.basis == basis_words("least_tokens", p.replicas)
    rr = size_pool(s.with_changes(router="round_robin"), catalog, None, "colocated", 12, 300, (1,), Slo.of(s))
    assert rr.at is not None and rr.at.simulated == 1 and "its share" in rr.at.basis


@pytest.mark.parametrize("router", ["least_tokens", "prefix_affinity"])
def test_a_searched_answer_says_it_was_confirmed_on_a_bounded_sample(catalog, router):
    s = FLEET.with_changes(router=router)
    z = search_fleet(s, catalog, gpus=["l4"], executor=None, workers=1, time_budget_s=None)
    assert z.complete and z.best is not None and z.router == router
    best = z.table.loc[z.best]
    replicas = int(best["replicas"])
    assert replicas > FLEET_SAMPLE_REPLICAS  # the bound is what was simulated
    assert best["confirmed_on"] == f"{FLEET_SAMPLE_REPLICAS} of {replicas} replicas ({router})"
    assert (z.table["confirmed_on"].str.startswith(f"{FLEET_SAMPLE_REPLICAS} of ")).all()  # every row: r > 8
    text = search_text(z)
    assert f"simulated: {FLEET_SAMPLE_REPLICAS} of {replicas} replicas ({router})" in text
    assert f"min(r, {FLEET_SAMPLE_REPLICAS}) of a fleet's r replicas behind the {router} router" in text
    again = search_fleet(s, catalog, gpus=["l4"], executor=None, workers=1, time_budget_s=None)
    assert again.table.to_csv().encode() == z.table.to_csv().encode()  # seeded: the same bytes run to run
