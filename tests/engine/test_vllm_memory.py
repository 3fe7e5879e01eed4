"""The memory plan as vLLM 0.19 does it (planner.engine.memory, planner.engine.validity; engine=vllm@0.19 where a
number is 0.19's: the newest vLLM is the default), each rule of issue 13 on the scenario that used to be wrong,
pinned to vLLM 0.19.0's own start-up logs on H100
(llm-d-incubation/llm-d-planner@d3121e05…:accuracy/results/v0.19.0/logs; rows of
benchmarks/data/published-serving.json)."""

from __future__ import annotations

import io

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from benchmarks.accuracy import kv_capacity
from benchmarks.accuracy.rows import load_rows
from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.links import from_query, to_query_string
from planner.model.scenario import Scenario
from planner.units import GB, GiB
from tests.valid_configs import valid_kw

ROWS = {r.id[:3]: r for r in load_rows() if r.category == "kv_capacity"}


def m_of(catalog, query):
    scenario, issues = from_query(query)
    assert not [i for i in issues if i.fatal], issues
    return evaluate(scenario, catalog).metrics


def test_device_memory_is_what_the_driver_reports(catalog):
    """H100 SXM: vLLM's log says total_memory=79.19GiB, the datasheet 80 GB = 74.5 GiB (7 % less)."""
    gpu = catalog.gpus["h100-sxm"]
    assert gpu.memory_bytes == 80 * GB and gpu.memory_reported_bytes == pytest.approx(79.19 * GiB)
    m = m_of(catalog, "mem_util=0.95&engine=vllm@0.19")
    assert m["memory_total_bytes_per_gpu"] == pytest.approx(79.19 * GiB)
    assert m["usable_bytes_per_gpu"] / GiB == pytest.approx(75.23, abs=0.005)  # "worker requested memory: 75.23GiB"
    for key, gpu in catalog.gpus.items():
        assert gpu.memory_reported_bytes is not None, key


@pytest.mark.parametrize(
    "row, tolerance",
    [("A01", 0.001), ("A02", 0.001), ("A05", 0.001), ("A10", 0.05), ("A13", 0.005), ("A14", 0.001)],
)
def test_kv_tokens_and_concurrency_match_the_log(catalog, row, tolerance):
    """Llama-3.1-8B at 0.95: 476,016 tokens (the old model: 444,368, −6.6 %); Qwen2.5-72B tp 2: 19,920
    (old: 9,712, −51 %); Mixtral tp 2; Gemma-2-9B's two KV groups: 168,880 tokens; 32k concurrency 14.53."""
    p = kv_capacity.predict(ROWS[row], catalog)
    assert abs(p.error_frac) <= tolerance, (row, p.predicted, p.measured)


def test_the_reserve_is_the_logs_terms_with_nccl_at_tp2(catalog):
    """A02: 14.99/2 GiB weights, 1.89 peak activation (the sampler's 1,024 dummy requests, tp-independent),
    2.07 non-torch at tp 2 (NCCL); the CUDA graphs (0.76) are captured after sizing, outside the budget."""
    m = evaluate(kv_capacity.row_scenario(ROWS["A02"], catalog), catalog).metrics
    assert m["weight_bytes_per_gpu"] / GiB == pytest.approx(7.51, abs=0.01)
    assert m["activation_bytes_per_gpu"] / GiB == pytest.approx(1.89, abs=0.01)
    assert m["non_torch_bytes_per_gpu"] / GiB == pytest.approx(2.07, abs=0.02)
    assert m["reserve_bytes_per_gpu"] == m["activation_bytes_per_gpu"] + m["non_torch_bytes_per_gpu"]
    assert m["cuda_graph_bytes_per_gpu"] > 0 and m["memory_headroom_bytes_per_gpu"] > 0


def test_sliding_window_reserves_w_minus_1_plus_chunk(catalog):
    """Mistral-7B (32 sliding layers, W = 4,096) at 8,192 tokens, chunk 2,048, vLLM 0.19: ⌈(4,095 + 2,048)/16⌉ + 1
    = 385 blocks per request, not the 256 of min(L, W): 76 sequences where the old model said 105."""
    m = m_of(catalog, "model=mistral-7b&prompt=8000&output=192&chunk=2048&engine=vllm@0.19")
    assert m["kv_blocks_per_request"] == 385
    assert m["max_concurrent_sequences"] == pytest.approx(m["kv_blocks"] / 385)
    assert m["max_concurrent_sequences"] < 0.75 * 105
    off = m_of(catalog, "model=mistral-7b&prompt=8000&output=192&chunk=2048&hybrid_kv=0&engine=vllm@0.19")
    assert off["kv_blocks_per_request"] == 512  # window layers allocated like full ones


def test_gemma2_two_groups_share_one_pool(catalog):
    """vLLM logs 'num_gpu_blocks is: 21110', 'GPU KV cache size: 168,880 tokens', concurrency 20.60x:
    21,110 // 2 · 16 and 21,110 / (512 + 513)."""
    m = evaluate(kv_capacity.row_scenario(ROWS["A14"], catalog).with_changes(cal_weights_gib=17.22), catalog).metrics
    blocks = m["kv_blocks"]
    assert m["kv_capacity_tokens"] == blocks // 2 * 16 and m["kv_blocks_per_request"] == 512 + 513
    assert abs(blocks - 21_110) <= 10


def test_the_draft_models_weights_are_charged(catalog):
    """llama-3.1-70b at tp 2 with a Llama-3.1-8B draft: 7.5 GiB of draft weights per GPU exceed the 3.1 GiB
    KV budget, so it does not fit (the old model said it fits)."""
    m = m_of(catalog, "model=llama-3.1-70b&tp=2&spec=1&draft=llama-3.1-8b")
    assert m["draft_weight_bytes_per_gpu"] / GiB == pytest.approx(7.51, abs=0.01)
    assert not m["fits"] and m["kv_budget_bytes_per_gpu"] == 0
    assert m_of(catalog, "model=llama-3.1-70b&tp=2&draft=llama-3.1-8b")["fits"]  # speculation off: no draft loaded


def test_the_draft_kv_is_split_over_tp(catalog):
    """At tp = 8 the 8B draft's K/V heads are split like the target's: speculation wins (the old model kept the
    whole draft cache on every GPU and showed it losing, 0.87×).  With the fitted vLLM timing (per-step and
    per-layer overheads on the draft's steps too) the gain is ≈ 1.2×; on the plain roofline it is ≈ 1.5×."""
    m = m_of(catalog, "model=llama-3.1-70b&tp=8&spec=1&draft=llama-3.1-8b")
    assert m["spec_speedup"] > 1.15


def test_fits_capacity_and_concurrency_agree(catalog):
    """A100 80GB, Llama-3.1-70B, tp 2, batch 1,024: the old model said it fits with 624 tokens of capacity,
    less than one 2,304-token sequence."""
    m = m_of(catalog, "gpu=a100-80gb-sxm&model=llama-3.1-70b&tp=2&batch=1024")
    assert m["fits"] == (m["max_concurrent_sequences"] >= 1) == (m["kv_capacity_tokens"] >= 2304)
    assert m["max_concurrent_sequences"] == pytest.approx(m["kv_capacity_tokens"] / 2304, rel=1e-9)
    assert not m["batch_fits_memory"] and 1 <= m["feasible_batch"] < 1024


def test_short_context_concurrency_is_not_charged_per_sequence_logits(catalog):
    """vLLM sizes the sampler's fp32 logits by max_num_seqs once; concurrency is blocks ÷ blocks per request."""
    m = m_of(catalog, "prompt=128&output=128")
    assert m["max_concurrent_sequences"] == m["kv_blocks"] / 16


def test_tp_must_split_the_model(catalog):
    with pytest.raises(ScenarioError) as info:
        evaluate(Scenario(model="qwen2.5-7b", tp=3), catalog)
    assert info.value.problems == [
        "tp=3: vLLM cannot split Qwen2.5-7B over 3 GPUs: its 28 attention heads are not divisible by 3; its 4 KV "
        "heads are not divisible by 3; its FFN width (18,944) is not divisible by 3; valid tp: 1, 2, 4"
    ]
    with pytest.raises(ScenarioError, match=r"its 4 KV heads are not divisible by 7 \(nor 7 by 4\)"):
        evaluate(Scenario(model="qwen2.5-7b", tp=7), catalog)


def test_replicated_kv_heads_are_said(catalog):
    r = evaluate(Scenario(model="qwen2.5-7b", tp=4), catalog).resolved
    assert r.notes == ()
    r = evaluate(Scenario(model="llama-3.1-8b", tp=16), catalog).resolved
    assert any("replicates them, each GPU holds 1 KV head (2 copies of each)" in n for n in r.notes)


def test_batch_within_chunk_and_context_within_window(catalog):
    with pytest.raises(ScenarioError, match=r"batch=512 > chunk=256: vLLM needs max_num_batched_tokens"):
        evaluate(Scenario(batch=512, chunk=256), catalog)
    with pytest.raises(ScenarioError, match="exceed Llama-3.1-8B's 131,072-token context window"):
        evaluate(Scenario(prompt=131_000, output=300), catalog)
    # the output left at its default shrinks to fit the typed prompt instead
    assert evaluate(Scenario(prompt=131_000), catalog).resolved.scenario.output == 72


def test_defaults_follow_what_the_user_typed(catalog):
    """prompt=512 used to exit 2 (the default prefix was 1,024); a default length never overruns the window;
    a default chunk rises to a typed batch and a default batch falls to a typed chunk."""
    out, err = io.StringIO(), io.StringIO()
    assert main(["evaluate", "prompt=512"], out=out, err=err) == 0, err.getvalue()
    s, issues = from_query("prompt=512")
    assert s.prefix == 512 and not issues and to_query_string(s) == "v=1&prompt=512"
    assert s.with_changes(prompt=4096).prefix == 1024  # a prefix at its default follows the prompt
    r = evaluate(Scenario(model="opt-13b"), catalog).resolved
    assert (r.scenario.prompt, r.scenario.output) == (1792, 256) and "2,048-token context window" in r.notes[0]
    assert evaluate(Scenario(batch=4096), catalog).resolved.scenario.chunk == 4096
    assert evaluate(Scenario(chunk=16), catalog).resolved.scenario.batch == 16


def test_sizing_offers_only_valid_tps(catalog):
    """`kvplan size "model=qwen2.5-7b…"` used to recommend tp 8 for the 28-head model."""
    from planner.search.sizing import size_fleet

    z = size_fleet(Scenario(model="qwen2.5-7b", rate=1.0, sim_requests=50), catalog, gpus=["h100-sxm"], max_requests=50)
    assert set(z.table["tp"]) == {1, 2, 4}


def test_min_tp_is_one_the_engine_accepts(catalog):
    m = m_of(catalog, "model=qwen2.5-72b&gpu=l40s")
    assert m["min_tp_that_fits"] in (2, 4, 8, 16, 32, 64) and not m["fits"]


@settings(max_examples=40, deadline=None)
@given(
    gpu=st.sampled_from(["l4", "a100-40gb-sxm", "h100-sxm"]),
    model=st.sampled_from(["llama-3.1-8b", "qwen2.5-7b", "gemma-2-9b", "mixtral-8x7b", "mistral-7b"]),
    tp=st.sampled_from([1, 2, 4]),
    batch=st.integers(64, 4096),
    prompt=st.integers(256, 16_000),
    engine=st.sampled_from(["vllm", "sglang", "trtllm"]),
)
def test_the_feasible_batch_fits_and_one_more_does_not(catalog, gpu, model, tp, batch, prompt, engine):
    kw = valid_kw(dict(gpu=gpu, model=model, tp=tp, batch=batch, chunk=batch, prompt=prompt), catalog)
    m = evaluate(Scenario(**kw, engine=engine), catalog).metrics
    assume(m["fits"] and not m["batch_fits_memory"])
    f = int(m["feasible_batch"])
    assert evaluate(Scenario(**{**kw, "batch": f}, engine=engine), catalog).metrics["batch_fits_memory"]
    assert not evaluate(Scenario(**{**kw, "batch": f + 1}, engine=engine), catalog).metrics["batch_fits_memory"]
