"""Host-bound steps (``efficiency.host_bound_s``; docs/model.md "Host-bound steps"): on measured kernels a step
lasts at least the host's work on its sequences, the same in every path that times a step — the engine's
vectorised step, its fast decode and mixed-step paths and the simulator's step — and not at all on the fitted
roofline."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine import evaluate
from planner.engine.efficiency import host_bound_s
from planner.engine.roofline import measured_decode_steps, step_cost
from planner.engine.step_time import RooflineStepTime
from planner.engine.step_times import step_times_s
from planner.model.scenario import Scenario

# Qwen3-30B-A3B NVFP4 on one B200 at TensorRT-LLM 1.0: three billion active parameters, the host binds at large batches
SMALL_MOE = dict(model="qwen3-30b-a3b", gpu="b200", engine="trtllm@1.0", wdtype="fp4", kvdtype="fp8", batch=4096)


def _inputs(catalog, **changes):
    return evaluate.inputs_for(evaluate.resolve(Scenario(**(SMALL_MOE | changes)), catalog))


def test_the_fitted_host_cost_is_tensorrt_llms_measured_one_within_a_quarter(catalog):
    """The fit against 29.4 µs (45.11 ms per iteration at 1,536 sequences, NVIDIA/TensorRT-LLM PR #10273)."""
    for version in ("1.0", "1.1", "1.2"):
        h_us = catalog.engine(f"trtllm@{version}").kernels.host_us_per_seq
        assert 29.4 / 1.25 <= h_us <= 29.4 * 1.25, (version, h_us)
    assert catalog.engine("vllm@0.19").kernels.host_us_per_seq == 0.0  # the fitted roofline has none


def test_a_large_batch_of_a_small_moe_is_host_bound_and_a_small_one_is_not(catalog):
    x = _inputs(catalog)
    h = float(np.asarray(x.host_s_per_seq))
    assert h > 0
    big, small = (step_cost(x, seqs=b, q=1.0, ctx=1200.0) for b in (4096.0, 16.0))
    assert float(big.time_s) == pytest.approx(h * 4096)  # the host's, not the kernels'
    assert float(big.overhead_s + big.gpu_s) < h * 4096
    assert float(small.time_s) == pytest.approx(float(small.overhead_s + small.gpu_s))  # the kernels'
    # prompts count as sequences of the step
    mixed = step_cost(x, seqs=4000.0, ctx=1200.0, n=96.0 * 128, past=0.0, prompts=96.0)
    assert float(mixed.time_s) >= h * 4096 - 1e-12


def test_every_path_applies_the_same_floor(catalog):
    x = _inputs(catalog)
    seqs = np.array([16.0, 512.0, 4096.0])
    ctx = np.array([1200.0, 300.0, 2000.0])
    exact = step_cost(x, seqs=seqs, q=1.0, ctx=ctx).time_s
    fast = measured_decode_steps(x, seqs, ctx)
    assert fast is not None
    np.testing.assert_array_equal(fast(1.0), exact)
    (alone,) = step_times_s(x, seqs, ctx, [(np.full(3, 512.0), np.zeros(3), None)])
    np.testing.assert_allclose(alone, step_cost(x, seqs=seqs, ctx=ctx, n=512.0, past=0.0).time_s, rtol=1e-12)
    sim = RooflineStepTime.from_inputs(x)
    for b, c in zip(seqs, ctx, strict=True):
        assert sim.step_s(int(b), float(c)) == pytest.approx(float(step_cost(x, seqs=b, ctx=c).time_s), rel=1e-9)
        run = sim.decode_steps_s(int(b), np.array([c, c + 1.0]))
        assert run[0] == pytest.approx(float(step_cost(x, seqs=b, ctx=c).time_s), rel=1e-9)
        assert sim.step_s(int(b), float(c), (256.0,), (0.0,)) == pytest.approx(
            float(step_cost(x, seqs=b, ctx=c, n=256.0, past=0.0).time_s), rel=1e-9
        )


def test_the_floor_is_max_of_the_step_and_the_hosts_work():
    class X:
        host_s_per_seq = np.array([0.0, 30e-6])

    np.testing.assert_allclose(host_bound_s(X(), np.array([0.01, 0.01]), 1000.0), [0.01, 0.03], rtol=1e-12)
    np.testing.assert_array_equal(host_bound_s(X(), np.array([0.01, 0.01]), 100.0, 10.0), [0.01, 0.01])


def test_the_fitted_roofline_has_no_host_term(catalog):
    x = evaluate.inputs_for(evaluate.resolve(Scenario(engine="vllm@0.19", batch=1024), catalog))
    assert float(np.asarray(x.host_s_per_seq)) == 0.0


def test_small_moe_throughput_on_b200_is_near_the_measured_one(catalog):
    """Qwen3-30B-A3B FP4 on one B200, 128/128 (TensorRT-LLM 1.0 perf-overview: 39,827 output tok/s per GPU,
    benchmarks/data/published-serving-2025.json TRT10_qwen3_30b_a3b_b200_tp1_fp4_128_128): the kernels alone
    predicted 60,876 (+53 %); with the host's work per sequence the step is the host's at 4,096 sequences."""
    x = _inputs(catalog, prompt=128, output=128, chunk=8192, mem_util=0.95)
    rate = float(evaluate.compute(x)["max_throughput_output_tokens_per_s_per_gpu"])
    assert 0.6 * 39_827 < rate < 1.1 * 39_827


def test_a_host_bound_engine_still_pays_for_its_prompts(catalog):
    """Qwen3-30B-A3B FP4 on one B200, 2,048 in / 128 out (TensorRT-LLM 1.0 perf-overview: 6,251 output tok/s per GPU
    against 39,827 at 128 / 128, TRT10_qwen3_30b_a3b_b200_tp1_fp4_2048_128 and _128_128 in
    benchmarks/data/published-serving-2025.json).  Until 2026-12-02 the host bound sat inside the marginal prompt's
    Δ: the host-bound decode step hid the prompt's kernels, every prompt looked free and 2,048-token prompts
    predicted 29,311 tok/s, the 128-token figure.  Bounded on the mean step (``saturation`` module doc), the
    prompts' kernels count again."""
    kw = dict(output=128, mem_util=0.95)
    long_rate = float(
        evaluate.compute(_inputs(catalog, prompt=2048, chunk=26624, batch=1536, **kw))[
            "max_throughput_output_tokens_per_s_per_gpu"
        ]
    )
    short_rate = float(
        evaluate.compute(_inputs(catalog, prompt=128, chunk=8192, **kw))["max_throughput_output_tokens_per_s_per_gpu"]
    )
    assert long_rate < 0.4 * short_rate  # measured 0.16
    # still too fast (≈ 10,500, +69 %; the benchmark's link, 9,536, +53 %): this model's prefill is the miss left
    assert 6_251 / 1.5 < long_rate < 6_251 * 1.8


def test_the_mean_step_is_at_least_the_hosts_work_on_its_sequences_and_prompts(catalog):
    from planner.engine.saturation import max_throughput

    x = _inputs(catalog, prompt=1024, output=1024, chunk=8192, mem_util=0.95)
    kv = evaluate.compute(x)["max_concurrent_sequences"]
    with_host = max_throughput(x, kv)
    gpu_only = max_throughput(x.with_(host_s_per_seq=np.zeros_like(x.host_s_per_seq)), kv)
    b = float(np.asarray(with_host["max_throughput_batch"]))
    h = float(np.asarray(x.host_s_per_seq))
    tpot, gpu_tpot = float(np.asarray(with_host["max_throughput_tpot_s"])), float(gpu_only["max_throughput_tpot_s"])
    assert tpot == pytest.approx(max(gpu_tpot, h * (b + b / 1024)), rel=1e-12)
