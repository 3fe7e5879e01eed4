"""The timing and cost definitions issue 14 fixed, each pinned by the issue's own query.

The issue states its numbers on the previous model (MFU 0.5, MBU 0.7, attention at the same
rates, no fixed costs): ``legacy`` evaluates a query on an engine profile without a
``[timing]`` section, which is exactly that model; the definitions hold on the fitted
profiles too (checked beside)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.engine.evaluate import compute, evaluate, resolve
from planner.engine.inputs import from_specs
from planner.engine.prompt_cache import ttl_hit_rate
from planner.engine.roofline import batched_prefill, decode, prefill
from planner.links import from_query
from planner.model.scenario import Scenario
from planner.studies.advisor import findings


def legacy(catalog, query: str = "", **kw):
    """Every metric of the query on the previous constants (module doc)."""
    s, issues = from_query(query, set(catalog.gpus), set(catalog.models), catalog.engine_aliases())
    assert not issues
    s = s.with_changes(**kw)
    r = resolve(s, catalog)
    x = from_specs(r.gpu, r.model, s, r.draft)
    return x, {k: np.asarray(v) for k, v in compute(x).items()}


def test_chunk_budget_covers_the_decodes_first(catalog):
    # batch=256&chunk=512&prompt=8192&prefix=0: the 256 decodes take 256 of each 512-token step,
    # so the newcomer gets 256 a step: 32 steps, ≈ 4.3 s (2.26 s when they were not counted).
    _, m = legacy(catalog, "batch=256&chunk=512&prompt=8192&prefix=0")
    assert float(m["chunked_steps"]) == 32
    assert float(m["chunked_ttft_s"]) == pytest.approx(4.30, abs=0.01)
    # B ≥ C: no prefill token fits beside the decodes
    _, full = legacy(catalog, "batch=512&chunk=512&prompt=8192&prefix=0")
    assert math.isinf(float(full["chunked_ttft_s"])) and math.isinf(float(full["chunked_steps"]))
    assert float(full["chunked_max_itl_s"]) == pytest.approx(float(full["plain_tpot_s"]))
    fitted = evaluate(Scenario(batch=256, chunk=512, prompt=8192, prefix=0), catalog).metrics
    assert fitted["chunked_steps"] == 32


def test_cost_and_tokens_per_s_include_the_prefill(catalog):
    # default scenario: $0.27 per million output tokens counting decode only, ≈ $0.46 with the
    # GPU time each request's 2,048-token prefill takes (every prefill whole: no prefix-cache hit, as
    # the issue counted it; issue 26 put the GPUs' prefix cache in the cost, gpu_hit=0 is that world)
    x, m = legacy(catalog, "gpu_hit=0")
    decode_only = float(x.price_per_gpu_hour_usd) / 3600 / float(m["decode_tokens_per_s"]) * 1e6
    assert decode_only == pytest.approx(0.27, abs=0.005)
    assert float(m["cost_per_million_output_tokens_usd"]) == pytest.approx(0.46, abs=0.01)
    b, o = float(x.batch), float(x.output_tokens)
    expected = b * o / (b * float(m["ttft_s"]) + o * float(m["tpot_s"]))
    assert float(m["output_tokens_per_s"]) == pytest.approx(expected, rel=1e-12)
    # long prompts: the prefill is most of the GPU time (tokens/s down by ≈ 70 %)
    _, long = legacy(catalog, "prompt=32768&output=128&prefix=0&batch=8")
    assert float(long["output_tokens_per_s"]) / float(long["decode_tokens_per_s"]) < 0.35


def test_cheaper_gpu_ranks_on_the_corrected_cost(catalog):
    s = Scenario(gpu="h100-pcie")
    f = {x.id: x for x in findings(s, catalog)}["cheaper-gpu"]
    after = evaluate(s.with_changes(**f.changed_keys), catalog).metrics
    assert f.metric == "cost_per_million_output_tokens_usd" and f.after == after[f.metric]
    tokens_per_s = after["output_tokens_per_s"]  # prefill included
    price = after["price_per_replica_hour_usd"]
    assert f.after == pytest.approx(price / 3600 / tokens_per_s * 1e6, rel=1e-12)


def test_request_latency_counts_output_minus_one_steps(catalog):
    m = evaluate(Scenario(output=100), catalog).metrics
    assert m["request_latency_s"] == pytest.approx(m["ttft_s"] + 99 * m["tpot_s"], rel=1e-12)
    one = evaluate(Scenario(output=1), catalog).metrics
    assert one["request_latency_s"] == pytest.approx(one["ttft_s"], rel=1e-12)


def test_compute_bound_labels_the_whole_step(catalog):
    # batch=226: the matmuls alone just turned compute-bound, but KV reads are ~80 % of the step
    x, m = legacy(catalog, "batch=226")
    d = decode(x)
    assert float(d.matmul_compute_s) > float(d.matmul_memory_s)
    assert float(d.attention_memory_s) / float(d.time_s) > 0.75
    assert not bool(m["decode_compute_bound"])


def test_best_gamma_searches_every_allowed_gamma(catalog):
    # near-certain acceptance with a free draft: the gain grows up to the largest γ a scenario allows
    m = evaluate(Scenario(batch=1, alpha=0.99, draft_ratio=0.001, prompt=64, prefix=0), catalog).metrics
    assert m["spec_best_gamma"] == 16 == Scenario.model_fields["gamma"].metadata[1].le


def test_api_cache_hit_rate_ignores_this_gpu(catalog):
    # arrivals at λ per prefix, each refreshing the TTL: h = 1 − exp(−λ·TTL), whatever the
    # request's duration on the user's own GPU
    short = evaluate(Scenario(rpm=2.0, output=16), catalog).metrics["cache_hit_rate"]
    long = evaluate(Scenario(rpm=2.0, output=4000), catalog).metrics["cache_hit_rate"]
    assert short == long == pytest.approx(1 - math.exp(-2 / 60 * 300))
    # the explicit follow-up mode: sent after the API's response of D seconds
    f = evaluate(Scenario(rpm=2.0, cache_traffic="followups", response_s=120.0), catalog).metrics
    assert f["cache_hit_rate"] == pytest.approx(1 - math.exp(-2 / 60 * (300 - 120)))
    assert float(ttl_hit_rate(2.0, 300.0, 400.0)) == 0.0


def test_static_batch_throughput_is_one_batched_prefill_then_decode_steps(catalog):
    x, m = legacy(catalog, "batch=64&prompt=128&output=2048&prefix=0")
    t = float(batched_prefill(x).time_s) + 2047 * float(m["tpot_s"])
    assert float(m["static_batch_latency_s"]) == pytest.approx(t, rel=1e-12)
    assert float(m["static_batch_output_tokens_per_s_per_gpu"]) == pytest.approx(64 * 2048 / t, rel=1e-12)
    # the batched prefill is B prompts' attention, not one B·P-token prompt's
    one = prefill(x)
    both = batched_prefill(x, prompts=2.0)
    assert float(both.attention_flop) == pytest.approx(2 * float(one.attention_flop), rel=1e-12)
