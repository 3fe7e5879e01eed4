"""The sizing search (planner/search/knob_search*.py, analytic.py, step_grid.py, pools.py, slo.py).

The example of issue 17: 50 requests/s of Llama-3.1-70B, 2k in / 300 out, p99 TTFT < 1 s, p99 ITL
< 50 ms.  The sizer searching GPU × tp only at the sidebar's batch 32 / chunk 2048 needs 360 H100 SXM
(288 when the issue was filed, before the fitted efficiency model); the search's answer is confirmed
here by its own simulations and again by an independent one.
"""

from __future__ import annotations

from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine import parallel
from planner.engine.evaluate import inputs_for, resolve
from planner.engine.inputs import from_specs
from planner.engine.memory import memory_plan
from planner.engine.roofline import step_cost
from planner.errors import ScenarioError
from planner.model.scenario import Scenario
from planner.search.analytic import colocated_screen, screen_where
from planner.search.frontiers import FRONTIERS, frontier_points, pareto_mask, with_frontiers
from planner.search.grid import BATCHES, CHUNKS, Space, _take, bases, parallel_layouts, score
from planner.search.knob_search import (
    MEETS,
    candidates,
    search_fleet,
    traffic_stats,
)
from planner.search.kv_plan import kv_plan
from planner.search.pools import DecodeOnlyStepTime, size_pool
from planner.search.sizing import size_fleet
from planner.search.step_grid import LayoutStepModel, ReplicaGrid, step_model
from planner.sim.fleet import simulate_fleet_scenario
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.slo import CONSTRAINTS, KV, Slo, verdict
from planner.sim.workload import scenario_workload

EXAMPLE = Scenario(model="llama-3.1-70b", prompt=2048, output=300, rate=50, slo_ttft_s=1.0, slo_itl_s=0.05)


@pytest.fixture(scope="module")
def h100(catalog):
    return search_fleet(EXAMPLE, catalog, gpus=["h100-sxm"])


def test_the_example_needs_far_fewer_h100s_than_the_knobless_sizer(h100, catalog):
    """Must show: the H100 SXM answer, its configuration and binding constraint (not 288 GPUs)."""
    old = size_fleet(EXAMPLE.with_changes(search="none"), catalog, gpus=["h100-sxm"])
    old_gpus = int(old.table.loc[old.best, "gpus"])
    assert old_gpus >= 288  # batch 32, chunk 2048: the sizer searching tp alone
    assert h100.best is not None
    best = h100.table.loc[h100.best]
    assert best["status"] == MEETS and best["gpu"] == "h100-sxm"
    # 15 × tp 4 at batch 512, chunk 512 (60 GPUs) on vLLM 0.33's measured kernels (14 × tp 8, 112 GPUs, on
    # the fitted roofline of vLLM 0.19: the "about twice too many")
    assert best["gpus"] <= 72 < old_gpus
    assert (int(best["tp"]), int(best["chunk"])) == (4, 512)
    assert best["binding"] == "TTFT"  # one replica fewer misses the p99 TTFT target in simulation
    assert "Cheapest way to meet p99 TTFT ≤ 1.00 s and p99 ITL ≤ 50.0 ms" in h100.reason
    assert "binding: TTFT" in h100.reason and "own knobs (batch 32, chunk 2,048)" in h100.reason


def test_the_answer_is_confirmed_by_an_independent_simulation(h100, catalog):
    """The answer's fleet, simulated whole (every replica behind the round-robin router) on a fresh
    seed, meets the SLO; the search's own run at one replica fewer missed it."""
    z = h100
    row = z.table.loc[z.best]
    assert row["basis"] == "simulated" and z.complete and z.requests_per_simulation == 3600  # 2 × 1,800 for p99
    s = EXAMPLE.with_changes(**z.changes(int(row["point"])))
    assert s.replicas == int(row["replicas"]) and (s.gpu, s.tp, s.batch, s.chunk) == ("h100-sxm", 4, 512, 512)
    slo = Slo.of(s)
    fleet = simulate_fleet_scenario(s.with_changes(seed=7, sim_requests=1000 * s.replicas), catalog)
    assert verdict(fleet.combined, slo).met
    again = size_pool(s, catalog, None, "colocated", s.replicas, z.requests_per_simulation, z.seeds, slo)
    assert again.replicas == s.replicas and again.below is not None and again.below.replicas == s.replicas - 1
    assert not again.below.met and "TTFT" in again.below.worst.failed


def test_the_answer_moves_by_at_most_one_replica_with_the_seed(h100, catalog):
    """One sample path of 3,600 requests resolves the count to about a replica (docs/simulator.md: the p99
    of one path varies with the seed); the configuration does not move."""
    other = search_fleet(EXAMPLE.with_changes(seed=1), catalog, gpus=["h100-sxm"])
    a, b = h100.table.loc[h100.best], other.table.loc[other.best]
    assert (a["tp"], a["batch"], a["chunk"]) == (b["tp"], b["batch"], b["chunk"])
    assert abs(int(a["replicas"]) - int(b["replicas"])) <= 1


def test_step_model_equals_the_roofline_step_cost(catalog):
    rng = np.random.default_rng(3)
    for model, tp in (("llama-3.1-70b", 4), ("qwen3-30b-a3b", 2), ("gemma-3-27b", 1), ("deepseek-v3", 8)):
        r = resolve(Scenario(model=model, tp=tp, gpu="h200" if model != "deepseek-v3" else "b200"), catalog)
        x = inputs_for(r)
        seqs = rng.integers(0, 400, 64).astype(float)
        n = rng.integers(0, 4000, 64).astype(float)
        n[seqs == 0] += 1
        ctx, past = rng.uniform(1, 20_000, 64), rng.uniform(0, 8000, 64)
        for q in (1.0, 5.0):
            ours = step_model(x).time_s(seqs, q, ctx, n, past)  # the engine's own step on measured kernels
            theirs = step_cost(x, seqs, q, ctx, n, past).time_s
            np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_a_shared_draft_step_is_the_one_each_step_would_compute(catalog):
    s = EXAMPLE.with_changes(spec=True, draft="llama-3.2-1b", gpu="h100-sxm", tp=4)
    g = ReplicaGrid.of(inputs_for(resolve(s, catalog)), np.full((), np.inf))
    seqs, n, past = (
        np.array([0.0, 3.0, 40.0, 200.0]),
        np.array([1.0, 0.0, 512.0, 2000.0]),
        np.array([0.0, 0.0, 900.0, 10.0]),
    )
    d = g.draft_s(seqs, 3000.0)
    assert d[0] == 0.0 and (d[1:] > 0).all()  # no decodes, no draft steps
    np.testing.assert_array_equal(g.step_s(seqs, 3000.0, n, past, d), g.step_s(seqs, 3000.0, n, past))
    plain = ReplicaGrid.of(inputs_for(resolve(s.with_changes(spec=False), catalog)), np.full((), np.inf))
    assert float(plain.draft_s(seqs, 3000.0)) == 0.0


def test_screening_only_the_points_that_run_changes_none_of_their_numbers(catalog):
    s = EXAMPLE.with_changes(search="batch,chunk,kvdtype,wdtype,spec")
    base_list, xb, _ = bases(s, catalog, ["h100-sxm", "l4", "a10g"], Space.of(s))
    assert xb is not None
    t, slo = traffic_stats(s, None), Slo.of(s)
    x0 = _take(xb, np.arange(len(base_list)), 3)
    b = np.asarray(BATCHES, dtype=float)[None, :, None]
    xa = x0.with_(chunk_tokens=np.asarray(CHUNKS, dtype=float)[None, None, :])
    x = xa.with_(batch=b)
    tokens, fits = kv_plan(x)
    g = ReplicaGrid.of(xa, np.full((), np.inf))
    shape_a = (len(base_list), 1, len(CHUNKS))
    whole = colocated_screen(g, t, slo, shape_a, b, tokens)
    part = screen_where(colocated_screen, g, t, slo, shape_a, b, tokens, fits)
    assert fits.any() and not fits.any(axis=1).all()  # some configurations run at no batch
    runs = np.broadcast_to(fits.any(axis=1, keepdims=True), whole.capacity_per_s.shape)
    np.testing.assert_array_equal(part.capacity_per_s[runs], whole.capacity_per_s[runs])
    np.testing.assert_array_equal(part.low_ok[runs], whole.low_ok[runs])
    np.testing.assert_array_equal(part.binding[fits], whole.binding[fits])
    assert (part.capacity_per_s[~runs] == 0).all() and not part.low_ok[~runs].any()
    assert (part.binding[~fits] == CONSTRAINTS.index(KV)).all()  # no room for one sequence


@pytest.mark.parametrize(
    "knobs", ["batch,chunk,kvdtype,wdtype,spec,disagg", "chunk", "kvdtype,spec", "wdtype,disagg", "none"]
)
def test_a_point_that_does_not_fit_is_bound_by_kv_memory(catalog, knobs):
    """Whatever knobs move (a grid whose batch axis is the scenario's one batch too), on a GPU set with
    configurations that do not fit."""
    s = EXAMPLE.with_changes(search=knobs)
    p = score(s, catalog, traffic_stats(s, None), ["h100-sxm", "l4"]).points
    no_fit = p[p["status"] == "does not fit in memory"]
    assert len(no_fit) and (no_fit["binding"] == KV).all()
    assert p["meets_slo"].any()
    one = score(s, catalog, traffic_stats(s, None), ["h200"])  # a grid of few bases
    assert len(one.points) and set(one.points["binding"].astype(str)) <= set(CONSTRAINTS)


def test_a_layouts_step_model_without_experts_equals_the_roofline_step_cost(catalog):
    rng = np.random.default_rng(5)
    s = Scenario(model="llama-3.1-70b", gpu="l4", tp=2, pp=4)
    x = inputs_for(resolve(s, catalog))
    seqs = rng.integers(0, 300, 48).astype(float)
    n = rng.integers(0, 3000, 48).astype(float)
    n[seqs == 0] += 1
    ctx, past = rng.uniform(1, 12_000, 48), rng.uniform(0, 6000, 48)
    m = LayoutStepModel.of(x)
    assert not m.base.moe and not m.base.windows  # the expert and window terms are skipped
    ours = m.time_s(seqs, 1.0, ctx, n, past)
    np.testing.assert_allclose(ours, step_cost(x, seqs, 1.0, ctx, n, past).time_s, rtol=1e-9)


def test_kv_plan_equals_the_memory_plan(catalog):
    s = EXAMPLE.with_changes(search="batch,chunk,kvdtype,wdtype")
    base_list, xb, _ = bases(s, catalog, ["h100-sxm", "a100-80gb-sxm", "mi300x", "l4"], Space.of(s))
    assert xb is not None
    x = _take(xb, np.arange(len(base_list)), 3).with_(
        batch=np.asarray(BATCHES, dtype=float)[None, :, None],
        chunk_tokens=np.asarray(CHUNKS, dtype=float)[None, None, :],
    )
    assert_kv_plan_is_the_memory_plan(x)


def assert_kv_plan_is_the_memory_plan(x) -> None:
    """The search's KV plan of the grid ``x`` is ``memory.memory_plan``'s, and the grid has points that fit and not."""
    tokens, fits = kv_plan(x)
    plan = memory_plan(x)
    np.testing.assert_array_equal(tokens, plan["kv_capacity_tokens"])
    np.testing.assert_array_equal(fits, plan["fits"])
    assert fits.any() and not fits.all()


def test_a_bases_inputs_equal_from_specs_at_its_own_layout_and_kv_dtype(catalog):
    s = EXAMPLE.with_changes(search="kvdtype,wdtype,spec", draft="llama-3.2-1b")
    base_list, xb, r = bases(s, catalog, ["h100-sxm", "mi300x"], Space.of(s))
    assert xb is not None and len(base_list) == 2 * 4 * 2 * 2 * 2  # GPUs × tps × kv × wd × spec
    for i in (0, 5, 17, 30, len(base_list) - 1):
        b = base_list[i]
        sb = s.with_changes(**b.changes)
        want = from_specs(catalog.gpus[b.gpu], r.model, sb, r.draft if b.spec else None, r.engine)
        for f in fields(want):
            assert float(getattr(xb, f.name)[i]) == pytest.approx(
                float(getattr(want, f.name)), rel=1e-12, nan_ok=True
            ), f.name


def test_layouts_are_the_tps_the_engine_accepts(catalog):
    qwen = parallel_layouts(Scenario(model="qwen2.5-7b"), catalog, "h100-sxm")
    assert [la.tp for la in qwen] == [1, 2, 4]  # 28 heads
    assert [la.tp for la in parallel_layouts(EXAMPLE, catalog, "h100-sxm")] == [1, 2, 4, 8]


def test_the_search_key_names_each_bad_knob():
    with pytest.raises(ScenarioError, match="unknown search knob.*bacth.*choose from batch, chunk"):
        EXAMPLE.with_changes(search="bacth,chunk")
    assert Scenario(search="spec,batch").search == "batch,spec"  # canonical order
    assert Space.of(Scenario(search="none")) == Space((32,), (2048,), ("",), ("",), (False,), False)  # the checkpoint


def test_every_point_names_a_binding_constraint_and_a_fleet(catalog):
    s = EXAMPLE.with_changes(search="batch,chunk,kvdtype,spec,disagg")
    z = score(s, catalog, traffic_stats(s, None), ["h100-sxm", "b200"])
    p = z.points
    assert set(p["binding"].astype(str)) <= set(CONSTRAINTS)
    ok = p[p["meets_slo"]]
    assert len(ok) and (ok["replicas"] >= 1).all() and np.isfinite(ok["gpus"]).all()
    colo = ok[ok["mode"] == "colocated"]
    np.testing.assert_array_equal(colo["gpus"], colo["replicas"] * colo["tp"])
    dis = ok[ok["mode"] == "disaggregated"]
    assert len(dis)
    np.testing.assert_array_equal(
        dis["gpus"], dis["decode_replicas"] * dis["tp"] + dis["prefill_replicas"] * dis["prefill_tp"]
    )
    assert (p["cost_per_hour_usd"].iloc[: len(ok)].diff().dropna() >= 0).all()  # cheapest first
    # a tighter TTFT target never needs fewer GPUs
    tight = score(s.with_changes(slo_ttft_s=0.5), catalog, traffic_stats(s, None), ["h100-sxm", "b200"]).points
    both = p.merge(tight, on=["mode", "gpu", "tp", "batch", "chunk", "kvdtype", "wdtype", "spec"], suffixes=("", "_t"))
    both = both[both["meets_slo"] & both["meets_slo_t"]]
    assert (both["gpus_t"] >= both["gpus"]).all()


def test_candidates_cover_every_gpu_that_meets_the_slo(catalog):
    z = score(EXAMPLE, catalog, traffic_stats(EXAMPLE, None), ["h100-sxm", "h200", "a100-80gb-sxm"])
    picked = candidates(EXAMPLE, z.bases, z.points)
    assert {c.gpu for c in picked} == {"h100-sxm", "h200", "a100-80gb-sxm"}
    assert all(c.guess >= 1 and c.mode == "colocated" for c in picked)


def test_a_disaggregated_answer_sizes_both_pools_by_simulation(catalog):
    s = EXAMPLE.with_changes(search="batch,chunk,disagg", sim_requests=600)
    z = search_fleet(s, catalog, gpus=["h100-sxm"], workers=1)
    rows = z.table[z.table["mode"] == "disaggregated"]
    assert len(rows)
    row = rows.iloc[0]
    assert row["status"] == MEETS
    assert row["gpus"] == row["prefill_replicas"] * row["prefill_tp"] + row["decode_replicas"] * row["tp"]
    assert row["binding"].startswith("decode pool: ") and "; prefill pool: " in row["binding"]
    # the prompt's KV crosses the network before the decode pool's first token: part of the TTFT
    assert row["kv_transfer_s"] > 0 and row["ttft_q_s"] >= row["kv_transfer_s"]


def test_the_screen_adds_the_kv_transfer_to_a_disaggregated_ttft(catalog):
    """A disaggregated point's TTFT = its prefill pool's + the prompt's KV transfer (parallel.kv_transfer_s);
    a scale-out network slow enough to spend the whole TTFT target on the transfer leaves no point."""
    from planner.search.grid import transfer_prompt_tokens

    s = EXAMPLE.with_changes(search="batch,chunk,disagg")
    t = traffic_stats(s, None)
    dis = score(s, catalog, t, ["h100-sxm"]).points
    dis = dis[(dis["mode"] == "disaggregated") & dis["meets_slo"]]
    assert len(dis) and (dis["kv_transfer_s"] > 0).all() and (dis["ttft_q_s"] <= s.slo_ttft_s).all()
    for _, row in dis.drop_duplicates(["tp", "prefill_tp"]).iterrows():
        _, xp = sim_inputs(s.with_changes(tp=int(row["prefill_tp"])), catalog)
        _, xd = sim_inputs(s.with_changes(tp=int(row["tp"])), catalog)
        want = float(np.asarray(parallel.kv_transfer_s(xp, xd, transfer_prompt_tokens(t))))
        assert row["kv_transfer_s"] == pytest.approx(want)
    slow = catalog.gpus["h100-sxm"].model_copy(update={"scale_out_bytes_per_s": 1e6})
    slow_catalog = replace(catalog, gpus=catalog.gpus | {"h100-sxm": slow})
    none = score(s, slow_catalog, t, ["h100-sxm"]).points
    assert not (none[none["mode"] == "disaggregated"]["meets_slo"]).any()


def test_the_decode_pool_pays_no_prefill_and_the_prefill_pool_emits_one_token(catalog):
    s = EXAMPLE.with_changes(tp=8, batch=256, chunk=256, rate=2.0, sim_requests=100)
    r, x = sim_inputs(s, catalog)
    from planner.engine.step_time import RooflineStepTime

    inner = RooflineStepTime.from_inputs(x)
    t = DecodeOnlyStepTime(inner)
    assert t.step_s(0, 0.0, [4000.0], [0.0]) == 0.0
    assert t.step_s(10, 3000.0, [4000.0], [0.0]) == inner.step_s(10, 3000.0, [], [])
    pre = size_pool(s, catalog, None, "prefill", 1, 100, (0,), Slo.of(s))
    assert pre.replicas == 1 and pre.at is not None and pre.at.verdicts[0].itl_q_s == 0.0


def test_the_verdict_is_the_simulators_at_p99_and_follows_the_percentile(catalog):
    s = Scenario(rate=20.0, sim_requests=400, slo_ttft_s=0.3, slo_itl_s=0.02)
    r, x = sim_inputs(s, catalog)
    from planner.engine.step_time import RooflineStepTime
    from planner.sim.config import SimConfig

    res = simulate(scenario_workload(s), SimConfig.from_inputs(x, s), RooflineStepTime.from_inputs(x))
    v = verdict(res, Slo.of(s))
    assert v.met == res.summary["slo_met"]
    assert v.ttft_q_s == pytest.approx(res.summary["ttft_p99_with_rejected_s"])
    assert v.itl_q_s == pytest.approx(res.summary["itl_p99_s"])
    lax = verdict(res, Slo(s.slo_ttft_s, s.slo_itl_s, pct=50.0))
    assert lax.ttft_q_s <= v.ttft_q_s and lax.itl_q_s <= v.itl_q_s
    strict = verdict(res, Slo(s.slo_ttft_s, s.slo_itl_s, goodput_frac=1.0))
    assert strict.met == (v.met and v.goodput_frac >= 1.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=1, max_size=40))
def test_pareto_mask_keeps_exactly_the_undominated_points(pairs):
    x = np.array([a for a, _ in pairs], dtype=float)
    y = np.array([b for _, b in pairs], dtype=float)
    mask = pareto_mask(x, y)
    for i in range(len(x)):
        dominated = any(
            (x[j] >= x[i] and y[j] >= y[i] and (x[j] > x[i] or y[j] > y[i])) for j in range(len(x)) if j != i
        )
        duplicate_before = any(x[j] == x[i] and y[j] == y[i] for j in range(len(x)) if mask[j] and j != i)
        assert mask[i] == (not dominated and not duplicate_before)


def test_frontiers_only_hold_points_that_meet_the_slo(catalog):
    z = score(EXAMPLE, catalog, traffic_stats(EXAMPLE, None), ["h100-sxm", "h200"])
    p = with_frontiers(z.points)
    for key in ("throughput_frontier", "cost_frontier"):
        assert p[key].any() and p.loc[p[key], "meets_slo"].all()


def test_sizing_hooks_the_search_in(catalog):
    s = Scenario(model="llama-3.2-1b", rate=20.0, sim_requests=200, search="batch")
    z = size_fleet(s, catalog, gpus=["l4", "h100-sxm"], search=True)
    assert z.search is not None and z.best is not None
    assert {"batch", "chunk", "binding", "ttft_q_s", "replicas", "gpus"} <= set(z.table.columns)
    assert z.table.loc[z.best, "status"] == "meets SLOs" and z.reason.startswith("Cheapest way to meet")
    assert len(z.disaggregated) == 2


def test_the_throughput_frontier_is_at_capacity_not_the_scenarios_demand(catalog):
    """Issue 30: "output tokens/s per GPU" topped out at rate × output ÷ GPUs (≈ 250 at 2 req/s).  At capacity
    (λ* × mean output ÷ GPUs per replica) the frontier's best tokens/s per GPU is the configuration's, so a
    fourfold arrival rate leaves it where it was; and it is far above the demand of the low rate."""
    f = FRONTIERS[0]
    best = {}
    for rate in (2.0, 8.0):
        s = Scenario(rate=rate, search="batch,chunk,disagg")
        on = frontier_points(score(s, catalog, traffic_stats(s, None), ["h100-sxm", "h200"]).points, f)
        best[rate] = float(on[f.y].max())
        assert (on["mode"] == "colocated").any()
    assert best[2.0] == pytest.approx(best[8.0], rel=1e-9)
    assert best[2.0] > 4 * 2.0 * Scenario().output  # well above the demand per GPU of 2 req/s on one GPU


def test_a_points_capacity_per_gpu_is_its_replicas_capacity_over_its_gpus(catalog):
    s = Scenario(rate=2.0)
    p = score(s, catalog, traffic_stats(s, None), ["h100-sxm"]).points
    ok = p[p["meets_slo"].astype(bool) & (p["mode"] == "colocated")]
    t = traffic_stats(s, None)
    want = ok["capacity_per_replica_per_s"] * t.output_mean_tokens / ok["gpus_per_replica"]
    assert np.allclose(ok["capacity_output_tokens_per_s_per_gpu"], want)
    assert (ok["capacity_output_tokens_per_s_per_user"] > 0).all()
    # at capacity a replica is busier than at this scenario's own load: never faster per user
    assert (ok["capacity_output_tokens_per_s_per_user"] <= ok["output_tokens_per_s_per_user"] * (1 + 1e-9)).all()
