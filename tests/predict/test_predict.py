"""kvplan predict: the benchmark's requests drawn as vLLM draws them, a hand-checked run on the engine's
own step times, vLLM's result-JSON keys and trtllm-bench's statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.engine.step_time import RooflineStepTime
from planner.errors import ProblemsError, ScenarioError
from planner.model.scenario import Scenario
from planner.predict.options import options, parse_range_ratio
from planner.predict.run import predict
from planner.predict.trtllm import percentile_stats, trtllm_json, trtllm_stats
from planner.predict.vllm_report import result_lines, vllm_json, vllm_text
from planner.predict.workload import bench_workload, random_lengths, send_times_s
from planner.sim.simulate import sim_inputs
from planner.sim.workload import Workload
from tests.sim.test_serve_metrics import VLLM_RESULT_KEYS

SERVER = Scenario(model="llama-3.1-8b", gpu="h100-sxm", batch=256, chunk=8192)


def _vllm_lengths(seed, n, input_len, output_len, r_in, r_out):
    """vllm/benchmarks/datasets/utils.py get_sampling_params (v0.33.0) with no special tokens, as written."""
    rng = np.random.default_rng(seed)
    input_low, input_high = math.floor(input_len * (1 - r_in)), math.ceil(input_len * (1 + r_in))
    output_low = max(math.floor(output_len * (1 - r_out)), 1)
    output_high = max(math.ceil(output_len * (1 + r_out)), 1)
    return rng.integers(input_low, input_high + 1, size=n), rng.integers(output_low, output_high + 1, size=n)


def test_random_lengths_are_vllms_draws():
    o = options(num_prompts=500, input_len=1000, output_len=200, input_range_ratio=0.3, output_range_ratio=0.5, seed=7)
    prompt, output = random_lengths(o)
    want_in, want_out = _vllm_lengths(7, 500, 1000, 200, 0.3, 0.5)
    assert np.array_equal(prompt, want_in) and np.array_equal(output, want_out)
    assert prompt.min() >= 700 and prompt.max() <= 1300


def test_a_shared_prefix_is_added_to_every_prompt():
    o = options(num_prompts=20, input_len=100, output_len=10, prefix_len=600)
    w = bench_workload(o)
    assert (w.prompt_tokens == 700).all() and w.has_prefixes


def _vllm_send_times(n, rate, burstiness, seed):
    """vllm/benchmarks/serve.py get_request (v0.33.0): np.random.seed(seed), one gamma per request, summed,
    rescaled so the last is at n / rate."""
    np.random.seed(seed)
    delays = [np.random.gamma(shape=burstiness, scale=1.0 / (rate * burstiness)) for _ in range(n)]
    for i in range(1, n):
        delays[i] += delays[i - 1]
    return np.array(delays) * ((n / rate) / delays[-1])


def test_send_times_are_vllms():
    assert (send_times_s(10, math.inf, 1.0, 0) == 0).all()
    assert send_times_s(200, 4.0, 0.5, 3) == pytest.approx(_vllm_send_times(200, 4.0, 0.5, 3))
    assert send_times_s(200, 4.0, 1.0, 3)[-1] == pytest.approx(50.0)
    assert send_times_s(4, 2.0, math.inf, 0) == pytest.approx([0.5, 1.0, 1.5, 2.0])


def test_concurrency_one_fixed_lengths_is_the_engines_prefill_then_its_decode_steps(catalog):
    # one client, 512-token prompts, 64 output tokens: TTFT is one prefill step, TPOT the mean of the
    # 63 batch-1 decode steps at contexts 512 … 574, each request after the previous one
    prompt, out, n = 512, 64, 5
    p = predict(SERVER, catalog, options(num_prompts=n, max_concurrency=1, input_len=prompt, output_len=out))
    _, x = sim_inputs(SERVER, catalog)
    step = RooflineStepTime.from_inputs(x)
    prefill = step.step_s(0, 0.0, [prompt], [0])
    decodes = step.decode_steps_s(1, prompt + np.arange(out - 1, dtype=float))
    lat = p.stats.latencies
    assert lat["ttft"].mean_s == pytest.approx(prefill, rel=1e-9)
    assert lat["ttft"].percentiles_s[0][1] == pytest.approx(prefill, rel=1e-9)
    assert lat["tpot"].mean_s == pytest.approx(decodes.mean(), rel=1e-9)
    assert lat["itl"].mean_s == pytest.approx(decodes.mean(), rel=1e-9)
    assert lat["itl"].percentiles_s[0][1] == pytest.approx(np.percentile(np.tile(decodes, n), 99), rel=1e-9)
    e2e = prefill + decodes.sum()
    assert lat["e2el"].mean_s == pytest.approx(e2e, rel=1e-9)
    assert p.stats.duration_s == pytest.approx(n * e2e, rel=1e-9)
    assert p.stats.request_throughput_per_s == pytest.approx(1 / e2e, rel=1e-9)
    assert p.stats.output_throughput_tokens_per_s == pytest.approx(out / e2e, rel=1e-9)
    assert p.stats.total_token_throughput_tokens_per_s == pytest.approx((prompt + out) / e2e, rel=1e-9)


def test_json_has_the_keys_of_vllm_bench_serve_save_result(catalog):
    p = predict(SERVER, catalog, options(num_prompts=30, max_concurrency=4, input_len=256, output_len=32))
    record = vllm_json(p, "model=llama-3.1-8b", "20261201-120000")
    # vllm/benchmarks/serve.py v0.33.0 lines 2306–2330: the run's settings, then the benchmark's result
    settings = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts"]
    settings += ["request_rate", "burstiness", "max_concurrency"]
    assert list(record) == settings + VLLM_RESULT_KEYS + ["kvplan"]
    assert record["request_rate"] == "inf" and record["max_concurrency"] == 4 and record["completed"] == 30
    assert record["kvplan"]["engine"] == "vllm@0.33"  # the default vLLM: its newest version


def test_printout_rows_are_vllms_in_its_order(catalog):
    p = predict(SERVER, catalog, options(num_prompts=20, request_rate_per_s=5.0, input_len=128, output_len=16))
    labels = [line[:40].rstrip() for line in result_lines(p)[1:] if not line.startswith(("-", "="))]
    # vllm/benchmarks/serve.py v0.33.0 lines 1221–1275 (no --max-concurrency: its row is not printed;
    # "Peak output token throughput" is not predicted) and process_one_metric's rows, lines 1424–1431
    assert labels == [
        "Successful requests:", "Failed requests:", "Request rate configured (RPS):", "Benchmark duration (s):",
        "Total input tokens:", "Total generated tokens:", "Request throughput (req/s):",
        "Output token throughput (tok/s):", "Peak concurrent requests:", "Total token throughput (tok/s):",
        "Mean TTFT (ms):", "Median TTFT (ms):", "P99 TTFT (ms):", "Mean TPOT (ms):", "Median TPOT (ms):",
        "P99 TPOT (ms):", "Mean ITL (ms):", "Median ITL (ms):", "P99 ITL (ms):", "Mean E2EL (ms):",
        "Median E2EL (ms):", "P99 E2EL (ms):",
    ]  # fmt: skip
    text = vllm_text(p, "model=llama-3.1-8b")
    assert "============ Serving Benchmark Result ============" in text
    assert "Traffic request rate: 5.0" in text and "engine=vllm@0.33" in text
    assert "Peak output token throughput (tok/s) is not predicted" in text


def test_a_request_over_the_context_window_fails_as_the_server_refuses_it(catalog):
    s = SERVER.with_changes(model="llama-2-7b")  # 4,096-token context
    p = predict(s, catalog, options(num_prompts=10, input_len=3000, output_len=2000, input_range_ratio=0.5))
    assert p.stats.failed > 0 and p.stats.completed == 10 - p.stats.failed
    assert any("longer than the context window" in n for n in p.notes)


def test_concurrency_above_batch_is_said(catalog):
    p = predict(SERVER.with_changes(batch=4), catalog, options(num_prompts=16, max_concurrency=8, input_len=64))
    assert any("max_num_seqs" in n for n in p.notes)


def test_a_fleet_is_refused(catalog):
    with pytest.raises(ScenarioError, match="one server"):
        predict(SERVER.with_changes(replicas=2), catalog, options(num_prompts=10))


def test_a_trace_gives_the_lengths_and_its_clock(catalog):
    arrivals = np.array([5.0, 5.5, 7.0, 9.0])
    trace = Workload(arrivals, np.array([100, 200, 300, 400]), np.array([5, 6, 7, 8]), "trace", name="t.csv")
    timed = bench_workload(options(num_prompts=3, trace_timed=True), trace)
    assert timed.arrival_s == pytest.approx([0.0, 0.5, 2.0]) and list(timed.prompt_tokens) == [100, 200, 300]
    all_at_once = bench_workload(options(num_prompts=3), trace)
    assert (all_at_once.arrival_s == 0).all()
    p = predict(SERVER, catalog, options(num_prompts=4, trace_timed=True), trace)
    assert p.traffic == "t.csv" and p.stats.total_input_tokens == 1000


def test_bad_options_are_named():
    with pytest.raises(ProblemsError) as exc:
        options(num_prompts=0, max_concurrency=0, input_range_ratio=1.5, percentile_metrics=("ttft", "x"))
    text = " ".join(exc.value.problems)
    for name in ("--num-prompts", "--max-concurrency", "--random-range-ratio", "--percentile-metrics"):
        assert name in text
    with pytest.raises(ProblemsError, match="max-throughput"):
        options(max_throughput=True, max_concurrency=3)
    with pytest.raises(ProblemsError, match="too small"):
        options(input_len=1, input_range_ratio=0.5)
    assert parse_range_ratio('{"input": 0.3, "output": 0.5}') == (0.3, 0.5)
    assert parse_range_ratio("0.2") == (0.2, 0.2)
    with pytest.raises(ProblemsError, match="random-range-ratio"):
        parse_range_ratio("wide")


def test_trtllm_percentiles_are_its_index_rule():
    # tensorrt_llm/bench/dataclasses/statistics.py PercentileStats: sorted(values)[int(n · p)]
    st = percentile_stats(np.arange(10.0))
    assert (st["p50"], st["p90"], st["p99"], st["minimum"], st["maximum"]) == (5.0, 9.0, 9.0, 0.0, 9.0)
    assert st["average"] == pytest.approx(4.5)


def test_max_throughput_is_trtllm_benchs_offline_figure(catalog):
    s = SERVER.with_changes(tp=2)
    p = predict(s, catalog, options(num_prompts=200, input_len=128, output_len=128, max_throughput=True))
    t = trtllm_stats(p)
    assert t.num_requests == 200
    assert t.output_throughput_tokens_per_s == pytest.approx(200 * 128 / t.total_latency_s)
    assert t.per_gpu_output_throughput_tokens_per_s == pytest.approx(t.output_throughput_tokens_per_s / 2)
    assert t.avg_concurrent_requests == pytest.approx(p.result.e2e_s.sum() / t.total_latency_s)
    record = trtllm_json(p, t)
    assert set(record["performance"]) >= {"system_output_throughput_tok_s", "output_throughput_per_gpu_tok_s"}
