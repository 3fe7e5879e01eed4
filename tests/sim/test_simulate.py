"""The serving simulator against the engine it is built on, and its own invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.efficiency import plain_roofline
from planner.engine.roofline import decode, decode_context_tokens, prefill, step_cost
from planner.engine.speculative import expected_tokens_per_step, spec_step_s
from planner.engine.step_time import Roofline, RooflineStepTime, step_of
from planner.errors import ScenarioError
from planner.model.scenario import Scenario
from planner.sim.acceptance import draw_accepted_tokens
from planner.sim.config import SimConfig
from planner.sim.results import (
    MAX_TIMELINE_POINTS,
    REJECTED_CONTEXT,
    REJECTED_KV,
    SERVED,
    requests_frame,
    summary_text,
)
from planner.sim.simulate import sim_inputs, simulate, simulate_scenario
from planner.sim.slo import Slo
from planner.sim.workload import Workload, poisson_workload, shared_prefix

# a dense GQA model, an MoE, sliding windows, MLA; tp 1 and tp > 1
SHAPES = [
    dict(model="llama-3.1-8b"),
    dict(model="llama-3.1-70b", tp=4),
    dict(model="mixtral-8x7b", tp=2),
    dict(model="gemma-2-9b"),
    dict(model="deepseek-v3", tp=8, gpu="h200", wdtype="fp8"),
]


class ConstantStep:
    """An injected step time: every step lasts ``seconds`` whatever it holds."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def step_s(self, seqs, ctx, new, past) -> float:
        return self.seconds

    def decode_steps_s(self, seqs, ctx) -> np.ndarray:
        return np.full(np.shape(ctx), self.seconds)


def _workload(arrival, prompt, output, shared=None) -> Workload:
    """Requests; ``shared[i]`` > 0: request i's prompt begins with that many tokens of one shared prefix."""
    w = Workload(
        np.asarray(arrival, dtype=float), np.asarray(prompt, dtype=np.int64), np.asarray(output, dtype=np.int64), "test"
    )
    if shared is None:
        return w
    shared = np.minimum(np.asarray(shared, dtype=np.int64), w.prompt_tokens)
    return shared_prefix(w, shared > 0, shared, ["p"] * len(w))


def _config(**kw) -> SimConfig:
    base = dict(
        batch=8,
        chunk_tokens=512,
        block_tokens=16,
        kv_capacity_blocks=10_000,
        context_window_tokens=100_000,
        gamma=0,
        alpha=0.7,
        seed=0,
        slo=Slo(ttft_s=1.0, itl_s=0.1),
    )
    return SimConfig(**(base | kw))


# ------------------------------------------------------------------ step time


#: a measured (calibrated) profile's refinements of the roofline, and one slower than back to back
REFINED = [
    {},
    dict(compute_memory_overlap=0.4, attention_compute_frac=0.3, attention_bandwidth_frac=0.6),
    dict(compute_memory_overlap=-0.5, attention_bandwidth_frac=0.5),
    # every efficiency term of an engine profile away from its neutral value
    dict(
        gqa_reread_frac=0.3,
        matmul_half_tokens=200.0,
        layer_overhead_s=1e-4,
        decode_layer_overhead_s=4e-5,
        step_overhead_s=3e-4,
        moe_matmul_frac=0.4,
        link_frac=0.5,
    ),
]


@pytest.mark.parametrize("refined", REFINED, ids=["roofline", "measured", "negative-overlap", "efficiency"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda d: d["model"])
def test_fast_step_time_equals_roofline_step_cost(catalog, shape, refined):
    _, x = sim_inputs(Scenario(**shape), catalog)
    x = x.with_(**refined)
    fast = step_of(x)  # measured kernels where the scenario has tables, else the roofline
    rng = np.random.default_rng(1)
    for _ in range(40):
        seqs = float(rng.integers(0, 300))
        ctx = float(rng.integers(0, 50_000))
        n = float(rng.integers(0, 8192))
        past = float(rng.integers(0, 50_000)) if n else 0.0
        if seqs == 0 and n == 0:
            continue
        q = float(rng.integers(1, 6))
        want = float(step_cost(x, seqs=seqs, q=q, ctx=ctx, n=n, past=past).time_s)
        got = fast.scalar_time_s(seqs, q, ctx, [n] if n else [], [past] if n else [])
        assert got == pytest.approx(want, rel=1e-9)
        if n == 0:
            assert float(fast.decode_time_s(seqs, q, np.array([ctx]))[0]) == pytest.approx(want, rel=1e-9)


def test_two_chunks_share_the_weights_and_add_their_work(catalog):
    _, x = sim_inputs(Scenario(), catalog)
    plain = Roofline.from_inputs(plain_roofline(x))
    fast = step_of(x)  # measured kernels where the scenario has tables, else the roofline

    def alone(n, past, timer=fast):
        return timer.scalar_time_s(0, 1, 0, [n], [past])

    # compute-bound chunks on the plain roofline: FLOP add up, so the shared step costs the sum
    assert plain.scalar_time_s(0, 1, 0, [1000, 1000], [0, 4000]) == pytest.approx(
        alone(1000, 0, plain) + alone(1000, 4000, plain), rel=1e-9
    )
    # with the engine profile the step's fixed costs and the small-GEMM penalty are paid once
    shared = fast.scalar_time_s(0, 1, 0, [1000, 1000], [0, 4000])
    assert shared < alone(1000, 0) + alone(1000, 4000) - 0.9 * fast.overhead_s
    # memory-bound chunks: the weights are read once for both
    both = fast.scalar_time_s(0, 1, 0, [16, 16], [0, 4000])
    assert max(alone(16, 0), alone(16, 4000)) < both < 0.6 * (alone(16, 0) + alone(16, 4000))


def test_speculative_step_matches_engine(catalog):
    for extra in (dict(), dict(draft="llama-3.2-1b")):
        s = Scenario(spec=True, gamma=4, batch=16, **extra)
        _, x = sim_inputs(s, catalog)
        timer = RooflineStepTime.from_inputs(x)
        want = float(spec_step_s(x, batch=16))
        got = float(timer.decode_steps_s(16, np.array([float(decode_context_tokens(x))]))[0])
        assert got == pytest.approx(want, rel=1e-9)


def test_acceptance_draws_have_the_speculative_mean():
    rng = np.random.default_rng(0)
    for alpha, gamma in ((0.0, 4), (0.6, 3), (0.8, 5), (1.0, 2)):
        draws = draw_accepted_tokens(rng, alpha, gamma + 1, (200_000, 1))
        assert draws.min() >= 1 and draws.max() <= gamma + 1
        assert draws.mean() == pytest.approx(float(expected_tokens_per_step(alpha, gamma)), rel=0.01)


# ------------------------------------------------------------------ against the engine


def test_low_load_ttft_is_prefill_and_itl_is_batch1_decode(catalog):
    s = Scenario(rate=1e-4, dist="fixed", hit=0.0, prefix=0, sim_requests=12, chunk=4096, prompt=2048, output=128)
    r = simulate_scenario(s, catalog)
    _, x = sim_inputs(s, catalog)
    assert np.diff(r.arrival_s).min() > np.nanmax(r.e2e_s)  # requests never overlap
    assert r.ttft_s == pytest.approx(np.full(12, float(prefill(x).time_s)), rel=1e-9)
    lo = float(decode(x, batch=1, ctx=s.prompt).time_s)
    hi = float(decode(x, batch=1, ctx=s.prompt + s.output).time_s)
    assert lo <= r.itl_s.min() and r.itl_s.max() <= hi
    mid = float(decode(x, batch=1, ctx=s.prompt + s.output / 2).time_s)
    assert r.summary["itl_p50_s"] == pytest.approx(mid, rel=1e-3)


def test_saturated_throughput_approaches_engine_decode_throughput(catalog):
    """All requests at once, short prompts, long answers: the replica decodes at max concurrency.

    Tolerance 5 %: prefills (128 tokens per 1,024 decoded) and the draining tail take
    the rest (measured 1.2 % short).
    """
    s = Scenario(rate=1000.0, dist="fixed", hit=0.0, prefix=0, prompt=128, output=1024, batch=32, sim_requests=320)
    r = simulate_scenario(s, catalog)
    _, x = sim_inputs(s, catalog)
    engine = 32 / float(decode(x, batch=32, ctx=s.prompt + s.output / 2).time_s)
    assert r.summary["output_tokens_per_s"] == pytest.approx(engine, rel=0.05)
    # at most a hair above: measured decode attention is concave in the context, so the mean of the steps over
    # the contexts the run passes is a little below the step at the mean context
    assert r.summary["output_tokens_per_s"] <= engine * 1.01


def test_smaller_chunks_lower_p99_itl_and_raise_ttft(catalog):
    base = dict(rate=3.0, prompt=4096, prefix=0, hit=0.0, sim_requests=300)
    small = simulate_scenario(Scenario(chunk=128, **base), catalog).summary
    large = simulate_scenario(Scenario(chunk=4096, **base), catalog).summary
    assert small["itl_p99_s"] < large["itl_p99_s"]
    assert small["ttft_p50_s"] > large["ttft_p50_s"]


def test_prefix_hits_shorten_ttft(catalog):
    base = dict(rate=1.0, prompt=4096, prefix=3072, sim_requests=200)
    cold = simulate_scenario(Scenario(hit=0.0, **base), catalog)
    warm = simulate_scenario(Scenario(hit=1.0, **base), catalog)
    assert warm.summary["ttft_p50_s"] < 0.5 * cold.summary["ttft_p50_s"]
    assert (warm.cached_tokens % 16 == 0).all() and (warm.cached_tokens < warm.prompt_tokens).all()


def test_speculative_decoding_speeds_up_low_load_decode(catalog):
    base = dict(rate=0.5, sim_requests=100, alpha=0.8, gamma=4)
    plain = simulate_scenario(Scenario(**base), catalog).summary
    spec = simulate_scenario(Scenario(spec=True, **base), catalog).summary
    assert spec["tpot_mean_s"] < plain["tpot_mean_s"]


# ------------------------------------------------------------------ scheduling, exact


def test_constant_steps_give_exact_latencies():
    w = _workload([0.0], [100], [5])
    r = simulate(w, _config(), ConstantStep(0.01))
    assert r.ttft_s[0] == pytest.approx(0.01)
    assert r.e2e_s[0] == pytest.approx(0.05)
    assert r.itl_s == pytest.approx(np.full(4, 0.01))
    assert r.itl_weight.sum() == 4


def test_chunked_prompt_takes_ceil_prompt_over_chunk_steps():
    w = _workload([0.0], [1000], [2])
    r = simulate(w, _config(chunk_tokens=300), ConstantStep(0.01))
    assert r.ttft_s[0] == pytest.approx(0.04)  # 300 + 300 + 300 + 100


def test_batch_limit_queues_requests():
    w = _workload([0.0, 0.0, 0.0], [10, 10, 10], [3, 3, 3])
    r = simulate(w, _config(batch=2, chunk_tokens=1000), ConstantStep(0.01))
    # two prefill together, decode twice; the third is admitted when they finish
    assert r.ttft_s[:2] == pytest.approx([0.01, 0.01])
    assert r.ttft_s[2] == pytest.approx(0.04)


def test_preemption_frees_the_newest_and_recomputes():
    # each request ends at 16 + 30 tokens: 3 blocks of 16; 4 blocks cannot hold two
    w = _workload([0.0, 0.0], [16, 16], [30, 30])
    r = simulate(w, _config(kv_capacity_blocks=4, chunk_tokens=64), ConstantStep(0.01))
    assert (r.status == SERVED).all()
    assert r.preemptions[1] >= 1 and r.preemptions[0] == 0
    assert r.summary["kv_used_max_frac"] <= 1.0
    assert r.itl_weight.sum() == 2 * 29  # every token after the first has one ITL


def test_rejections():
    w = _workload([0.0, 1.0, 2.0], [100, 5000, 10], [10, 10, 10])
    r = simulate(w, _config(context_window_tokens=1000), ConstantStep(0.01))
    assert list(r.status) == [SERVED, REJECTED_CONTEXT, SERVED]
    r = simulate(w, _config(kv_capacity_blocks=20), ConstantStep(0.01))
    assert r.status[1] == REJECTED_KV
    assert not r.summary["slo_met"]


def test_same_seed_same_result_other_seed_differs(catalog):
    s = Scenario(rate=5.0, sim_requests=300, spec=True)
    a, b = simulate_scenario(s, catalog), simulate_scenario(s, catalog)
    assert np.array_equal(a.ttft_s, b.ttft_s) and np.array_equal(a.itl_s, b.itl_s)
    assert a.summary == b.summary
    c = simulate_scenario(s.model_copy(update={"seed": 1}), catalog)
    assert not np.array_equal(a.ttft_s, c.ttft_s)


def test_stop_on_slo_miss_agrees_with_the_full_run(catalog):
    s = Scenario(rate=12.0, sim_requests=600)
    _, x = sim_inputs(s, catalog)
    args = (
        poisson_workload(12.0, 600, "lognormal", 0.5, 2048, 256, 0.5, 1024, 0),
        SimConfig.from_inputs(x, s),
        RooflineStepTime.from_inputs(x),
    )
    full = simulate(*args)
    early = simulate(*args, stop_on_slo_miss=True)
    assert not full.summary["slo_met"] and not early.summary["slo_met"]
    assert early.stopped_early and early.steps < full.steps


def test_outputs_are_bounded_and_exportable(catalog):
    r = simulate_scenario(Scenario(rate=6.0, sim_requests=3000), catalog)
    assert r.timeline_s.size <= MAX_TIMELINE_POINTS
    assert np.all(np.diff(r.timeline_s) >= 0)
    frame = requests_frame(r)
    assert len(frame) == 3000 and frame["meets_slo"].dtype == bool
    assert (frame["itl_max_s"] >= frame["itl_p50_s"]).all()


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(1, 30),
    batch=st.integers(1, 6),
    chunk=st.integers(16, 300),
    blocks=st.integers(8, 60),
    gamma=st.integers(0, 3),
    seed=st.integers(0, 1000),
)
def test_invariants(n, batch, chunk, blocks, gamma, seed):
    rng = np.random.default_rng(seed)
    w = _workload(
        np.sort(rng.uniform(0, 1, n)), rng.integers(1, 120, n), rng.integers(1, 60, n), rng.integers(0, 50, n)
    )
    r = simulate(
        w,
        _config(batch=batch, chunk_tokens=chunk, kv_capacity_blocks=blocks, gamma=gamma, seed=seed),
        ConstantStep(0.01),
    )
    served = r.status == SERVED
    assert np.all((r.status == SERVED) | (r.status == REJECTED_KV))
    assert np.all(r.ttft_s[served] >= 0.01 - 1e-12)
    assert np.all(r.e2e_s[served] >= r.ttft_s[served])
    assert r.itl_weight.sum() == pytest.approx(float((w.output_tokens[served] - 1).sum()))
    assert 0.0 <= r.summary["kv_used_max_frac"] <= 1.0
    assert r.summary["goodput_frac"] <= 1.0


def test_a_recomputed_token_is_one_itl_from_the_last_token_before_the_preemption():
    # blocks of 16, room for 4: both requests reach 32 tokens at t = 0.17 and need a third block each;
    # the newest is preempted then (its 17th token was just emitted), recomputed once the other ends
    # at 0.30, and emits its next token at 0.31: one ITL of 0.14 s, not 0.30 s from its first token
    w = _workload([0.0, 0.0], [16, 16], [30, 30])
    r = simulate(w, _config(kv_capacity_blocks=4, chunk_tokens=64), ConstantStep(0.01))
    assert r.preemptions.tolist() == [0, 1]
    assert r.itl_max_s[1] == pytest.approx(0.14)
    assert r.e2e_s[1] == pytest.approx(0.31 + 12 * 0.01)


def test_rejected_requests_count_against_the_ttft_target():
    def run(rejected: int):
        prompts = [100] * (200 - rejected) + [5000] * rejected
        w = _workload(np.arange(200) * 1.0, prompts, [5] * 200)
        return simulate(w, _config(context_window_tokens=1000), ConstantStep(0.01))

    over = run(3)  # 1.5 % never get a first token: the p99 TTFT over all requests is infinite
    assert over.summary["rejected_context"] == 3 and over.summary["ttft_p99_s"] < 1.0
    assert over.summary["ttft_p99_with_rejected_s"] == np.inf and not over.summary["slo_met"]
    assert "3 of 200 requests rejected" in summary_text(over)
    within = run(2)  # exactly 1 %: the p99 still lands on a served request
    assert within.summary["rejected_context"] == 2 and within.summary["slo_met"]


def test_a_layout_that_does_not_fit_is_named_not_simulated(catalog):
    with pytest.raises(ScenarioError) as exc:
        simulate_scenario(Scenario(model="llama-3.1-70b", sim_requests=10), catalog)
    assert "does not fit" in exc.value.problems[0] and "tp ≥ 2" in exc.value.problems[0]


def test_sliding_window_layers_hold_only_their_window(catalog):
    """Mistral 7B (every layer windowed at 4,096) with 30k-token prompts: vLLM 0.33 charges each request
    ⌈min(W − 1 + 2 · chunk, max_model_len) / 16⌉ + 1 blocks (two batches in flight with async scheduling:
    v1/kv_cache_interface.py:918-935, config/vllm.py:588-609), 0.19 ⌈min(W − 1 + chunk, L) / 16⌉ + 1
    (kv_cache_interface.py:251-270), so the pool holds ⌊capacity / 513⌋ of them decoding together, where
    charging every layer the whole context allowed only ⌊capacity / 2,001⌋."""
    kw = dict(model="mistral-7b", prompt=30000, output=2000, dist="fixed", rate=1000.0, sim_requests=150, batch=256)
    old = SimConfig.from_inputs(sim_inputs(Scenario(**kw, engine="vllm@0.19"), catalog)[1], Scenario(**kw))
    assert old.window_cap_blocks == -(-(4095 + 2048) // 16) + 1 == 385
    s = Scenario(**kw)
    _, x = sim_inputs(s, catalog)
    cfg = SimConfig.from_inputs(x, s)
    assert cfg.window_cap_blocks == -(-(4095 + 2 * 2048) // 16) + 1 == 513 and cfg.unit_weights == (0, 1, 32)
    r = simulate_scenario(s, catalog)
    start, end = r.arrival_s + r.ttft_s, r.arrival_s + r.e2e_s
    events = sorted([(t, 1) for t in start] + [(t, -1) for t in end])
    peak = max(np.cumsum([d for _, d in events]))
    # ⌊29,666 / 513⌋ = 57 decoding at once against ⌊29,666 / 2,001⌋ = 14: the window still buys ≈ 4×
    assert peak == cfg.capacity_units // 513 > 3.5 * (cfg.kv_capacity_blocks // -(-(32000 + 1) // 16))
