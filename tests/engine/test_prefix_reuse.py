"""The GPUs' own prefix cache in the headline (issue 26): a hit skips the cached tokens' prefill, in whole
KV blocks and never the last prompt token (vLLM ``get_computed_blocks``), and the TTFT, tokens/s and GPU
cost move by exactly the prefill time of the tokens it skips."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine.evaluate import evaluate
from planner.engine.prefix_reuse import gpu_cached_tokens
from planner.engine.roofline import step_cost
from planner.links import from_query
from planner.model.scenario import Scenario

ISSUE_LINK = "model=llama-3.1-70b&tp=4&prompt=4000&output=500&prefix=3000"


def _result(catalog, query: str):
    s, issues = from_query(query, set(catalog.gpus), set(catalog.models), catalog.engine_aliases())
    assert not [i for i in issues if i.fatal]
    return evaluate(s, catalog)


def test_the_issues_two_links_differ_by_the_cached_tokens_prefill(catalog):
    cold, warm = _result(catalog, ISSUE_LINK + "&hit=0"), _result(catalog, ISSUE_LINK + "&hit=0.9")
    x, m0, m9 = warm.inputs, cold.metrics, warm.metrics
    # by hand: 3,000 prefix tokens are 187 whole 16-token blocks = 2,992 tokens; 1,008 are prefilled
    assert m9["gpu_cached_tokens"] == 2992.0 == float(gpu_cached_tokens(x))
    whole = float(step_cost(x, n=4000.0, past=0.0).time_s)
    rest = float(step_cost(x, n=1008.0, past=2992.0).time_s)
    saved = 0.9 * (whole - rest)  # the prefill time of the cached tokens, at a 90 % hit rate
    assert m0["ttft_s"] == pytest.approx(whole, rel=1e-12) and m9["ttft_hit_s"] == pytest.approx(rest, rel=1e-12)
    assert m0["ttft_s"] - m9["ttft_s"] == pytest.approx(saved, rel=1e-9)
    assert m9["prefill_saved_per_request_s"] == pytest.approx(saved, rel=1e-9)
    # the headline's TTFT (a newcomer beside 32 decodes, c = 2,048 − 32 = 2,016 prompt tokens a step):
    # whole prompt 2,016 + 1,984 tokens in two steps, a hit 1,008 tokens after 2,992 in one
    ctx = 4000.0 + 500.0 / 2.0
    miss_chunks = float(step_cost(x, seqs=32.0, ctx=ctx, n=2016.0, past=0.0).time_s) + float(
        step_cost(x, seqs=32.0, ctx=ctx, n=1984.0, past=2016.0).time_s
    )
    hit_chunks = float(step_cost(x, seqs=32.0, ctx=ctx, n=1008.0, past=2992.0).time_s)
    assert m0["chunked_ttft_s"] == pytest.approx(miss_chunks, rel=1e-9)
    assert m0["chunked_ttft_s"] - m9["chunked_ttft_s"] == pytest.approx(0.9 * (miss_chunks - hit_chunks), rel=1e-9)
    # replica time per request = prefill + O · TPOT / B: the decode share is the same, the prefill 'saved' less
    per_request0 = 500.0 / m0["output_tokens_per_s"]
    per_request9 = 500.0 / m9["output_tokens_per_s"]
    assert m0["tpot_s"] == m9["tpot_s"]
    assert per_request0 - per_request9 == pytest.approx(saved, rel=1e-9)
    price_per_s = 4 * float(x.price_per_gpu_hour_usd) / 3600.0
    assert m0["cost_per_request_usd"] - m9["cost_per_request_usd"] == pytest.approx(price_per_s * saved, rel=1e-9)
    assert m0["cost_per_million_output_tokens_usd"] - m9["cost_per_million_output_tokens_usd"] == pytest.approx(
        price_per_s * saved / 500.0 * 1e6, rel=1e-9
    )
    assert m9["output_tokens_per_s_per_gpu"] > m0["output_tokens_per_s_per_gpu"]
    # the API's bill moves too, by its own rule (reads at 0.1×), which is another model
    assert m9["cache_cost_per_request_usd"] < m0["cache_cost_per_request_usd"]


def test_a_whole_prompt_hit_recomputes_its_last_block(catalog):
    """prefix = prompt: at most P − 1 tokens are found, in whole blocks, so the last block is prefilled again."""
    m = evaluate(Scenario(prompt=2048, prefix=2048, hit=1.0), catalog).metrics
    assert m["gpu_cached_tokens"] == 2032.0  # 16 · ⌊2,047 / 16⌋
    short = evaluate(Scenario(prompt=2048, prefix=15, hit=1.0), catalog).metrics
    assert short["gpu_cached_tokens"] == 0.0 and short["ttft_s"] == short["ttft_nocache_s"]


def test_gpu_hit_overrides_hit_and_the_cache_can_be_off(catalog):
    base = evaluate(Scenario(hit=0.9, gpu_hit=0.0), catalog).metrics
    assert base["gpu_cache_hit_rate"] == 0.0 and base["ttft_s"] == base["ttft_nocache_s"]
    assert base["cache_hit_rate"] == 0.9  # the API's bill still reads hit
    off = evaluate(Scenario(hit=0.9, prefix_cache="off"), catalog).metrics
    assert off["gpu_cache_hit_rate"] == 0.0 and off["ttft_s"] == off["ttft_nocache_s"]
    on = evaluate(Scenario(hit=0.0, gpu_hit=1.0), catalog).metrics
    assert on["ttft_s"] == on["ttft_hit_s"] < on["ttft_nocache_s"]


def test_the_costs_add_up(catalog):
    """P · input share + O · decode share = the cost of a request; total tokens and output tokens read it."""
    m = evaluate(Scenario(prompt=4096, output=500), catalog).metrics
    parts = 4096 * m["cost_per_million_input_tokens_usd"] + 500 * m["decode_cost_per_million_output_tokens_usd"]
    assert parts / 1e6 == pytest.approx(m["cost_per_request_usd"], rel=1e-12)
    assert m["cost_per_million_tokens_usd"] * (4096 + 500) / 1e6 == pytest.approx(m["cost_per_request_usd"])
    assert m["cost_per_million_output_tokens_usd"] * 500 / 1e6 == pytest.approx(m["cost_per_request_usd"])
    # each cost is the price over the throughput it sits beside
    per_gpu_s = 2.99 / 3600.0
    assert m["cost_per_million_output_tokens_usd"] == pytest.approx(
        per_gpu_s / m["output_tokens_per_s_per_gpu"] * 1e6, rel=1e-9
    )
    assert m["decode_cost_per_million_output_tokens_usd"] == pytest.approx(
        per_gpu_s / m["decode_tokens_per_s_per_gpu"] * 1e6, rel=1e-9
    )


def test_hit_rate_broadcasts(catalog):
    from planner.engine.evaluate import compute

    x = evaluate(Scenario(), catalog).inputs
    h = np.linspace(0.0, 1.0, 5)
    out = compute(x.with_(gpu_hit_rate=h))
    assert np.shape(out["ttft_s"]) == (5,) and np.all(np.diff(out["ttft_s"]) < 0)
    assert np.all(np.diff(out["output_tokens_per_s_per_gpu"]) > 0)
