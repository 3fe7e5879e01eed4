"""Explain tab (planner.studies.explain): every item's substituted arithmetic, typed into a
calculator, gives the engine's metric, and its value states that metric."""

from __future__ import annotations

import ast
import contextlib
import math
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from planner.engine.evaluate import evaluate
from planner.engine.validity import valid_tps
from planner.model.catalog import load_catalog
from planner.model.quant_support import weight_support
from planner.model.quantization import scheme_for
from planner.model.scenario import Scenario
from planner.studies.explain import ExplainItem, exact, explain, num

CATALOG = load_catalog()

#: item title → the engine metric it explains
METRIC = {
    "KV cache per token": "kv_bytes_per_token",
    "KV cache per token with MHA (baseline)": "kv_bytes_per_token_mha",
    "KV cache per sequence": "kv_bytes_per_sequence",
    "Weights per GPU": "weight_bytes_per_gpu",
    "Activation and workspace reserve per GPU": "reserve_bytes_per_gpu",
    "KV budget per GPU": "kv_budget_bytes_per_gpu",
    "Total memory per GPU (as the driver reports it)": "memory_total_bytes_per_gpu",
    "Peak activation per GPU": "activation_bytes_per_gpu",
    "Non-torch memory per GPU": "non_torch_bytes_per_gpu",
    "CUDA graphs per GPU": "cuda_graph_bytes_per_gpu",
    "Engine budget per GPU": "usable_bytes_per_gpu",
    "KV blocks": "kv_blocks",
    "KV cache capacity (tokens)": "kv_capacity_tokens",
    "Start-up headroom per GPU": "memory_headroom_bytes_per_gpu",
    "Max concurrent sequences (paged)": "max_concurrent_sequences",
    "Max concurrent sequences (contiguous)": "max_concurrent_sequences_contiguous",
    "Prefill FLOP per GPU": "prefill_flop",
    "Prefill bytes per GPU": "prefill_bytes",
    "Prefill of the whole prompt (TTFT without a prefix-cache hit)": "ttft_nocache_s",
    "Tokens a prefix-cache hit reads": "gpu_cached_tokens",
    "TTFT on a prefix-cache hit": "ttft_hit_s",
    "Time to first token (TTFT)": "ttft_s",
    "Decode FLOP per GPU": "decode_flop",
    "Decode bytes per GPU": "decode_bytes",
    "Decode step time (plain)": "plain_tpot_s",
    "Prefill on measured kernels (the whole prompt: TTFT without a prefix-cache hit)": "ttft_nocache_s",
    "Decode step on measured kernels": "plain_tpot_s",
    "Compute-bound turn (ridge batch)": "ridge_batch",
    "Time per output token (TPOT)": "tpot_s",
    "Decode tokens/s per GPU": "decode_tokens_per_s_per_gpu",
    "Output tokens/s per replica (prefill included)": "output_tokens_per_s",
    "Cost per million output tokens": "cost_per_million_output_tokens_usd",
    "Request latency": "request_latency_s",
    "Static-batch output tokens/s per GPU": "static_batch_output_tokens_per_s_per_gpu",
    "Matmul efficiency in force (MFU)": "matmul_frac",
    "Bandwidth efficiency in force (MBU)": "bandwidth_frac",
    "Fixed cost of a prefill step": "prefill_overhead_s",
    "Fixed cost of a decode step": "decode_overhead_s",
    "Chunked prefill: newcomer TTFT": "chunked_ttft_s",
    "Chunked prefill: running streams' max inter-token latency": "chunked_max_itl_s",
    "No chunking: running streams' max inter-token latency": "nochunk_max_itl_s",
    "Speculative: expected tokens per step E": "spec_expected_tokens_per_step",
    "Speculative step time": "spec_step_s",
    "Speculative speedup": "spec_speedup",
    "Cache hit rate": "cache_hit_rate",
    "Cache hit rate (from traffic and TTL)": "cache_hit_rate",
    "Prompt cache: cost per request": "cache_cost_per_request_usd",
    "No cache: cost per request": "nocache_cost_per_request_usd",
    "Prompt cache saving": "cache_saving_frac",
    "Prompt cache break-even hit rate": "cache_break_even_hit_rate",
    # the parallel layout (planner/studies/explain_parallel.py)
    "GPUs per instance": "gpus_per_instance",
    "Pipeline stage of the memory plan": "memory_stage_layers",
    "Stage sends per decode step": "decode_send_s",
    "Pipeline time beyond the bottleneck stage's work (decode)": "decode_pipeline_s",
    "MoE exchange per decode step": "decode_exchange_s",
    "Communication share of a decode step": "decode_comm_frac",
    "KV transfer to a decode instance": "kv_transfer_s",
}
#: integer results of a floor: the substituted arithmetic must give them exactly (vLLM's concurrency
#: is a fractional ratio now, checked to 1e-4 like every other figure)
FLOORS = {"kv_blocks", "kv_capacity_tokens", "max_concurrent_sequences_contiguous"}
_FUNCS = {"min": min, "max": max, "exp": math.exp, "floor": math.floor, "ceil": math.ceil}
_ALLOWED = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.operator,
    ast.unaryop,
)


def calculate(text: str) -> float:
    """Evaluate the substituted arithmetic as a reader would: numbers, + - · / ^,
    ⌊⌋ ⌈⌉, min/max/exp.  Anything else (a name, an attribute) fails the test."""
    t = re.sub(r"(?<=\d),(?=\d)", "", text)
    for a, b in (("·", "*"), ("^", "**"), ("⌊", "floor("), ("⌋", ")"), ("⌈", "ceil("), ("⌉", ")"), ("−", "-")):
        t = t.replace(a, b)
    tree = ast.parse(t, mode="eval")
    for node in ast.walk(tree):
        assert isinstance(node, _ALLOWED), f"{type(node).__name__} in {text!r}"
        if isinstance(node, ast.Name):
            assert node.id in _FUNCS, text
    return float(eval(compile(tree, "<substituted>", "eval"), {"__builtins__": {}}, dict(_FUNCS)))


def stated(value: str) -> float:
    """The number a value string leads with ('never …' = inf)."""
    if value.startswith("never"):
        return math.inf
    return float(value.split()[0].replace(",", ""))


def check(result) -> list[ExplainItem]:
    items = explain(result)
    titles = [i.title for i in items]
    assert len(titles) == len(set(titles))
    for item in items:
        assert item.title and item.formula and item.substituted and item.value
        assert not re.search(r"\(.*\de[+-]\d", item.value), item.value  # human figures never in e-notation
        key = METRIC[item.title]
        metric = float(result.metrics[key])
        assert stated(item.value) == pytest.approx(metric, rel=1e-5), (item.title, item.value, metric)
        if math.isinf(metric):
            # B* = (W/bw′) / (denominator ≤ 0): the arithmetic comes out negative or divides by zero
            with contextlib.suppress(ZeroDivisionError):
                assert calculate(item.substituted) < 0, item.substituted
            continue
        got = calculate(item.substituted)
        if key in FLOORS:
            assert got == metric, (item.title, item.substituted)
        else:
            assert got == pytest.approx(metric, rel=1e-4, abs=1e-12), (item.title, item.substituted, metric)
    return items


SCENARIOS = [
    dict(),
    dict(model="deepseek-v3", gpu="h200", tp=8, spec=True, draft="llama-3.2-1b"),
    dict(model="gemma-2-9b", tp=2, chunk=512, rpm=3.0, prefix=500, min_prefix=256, ttl="1h"),
    dict(model="mixtral-8x7b", gpu="h100-sxm", tp=2, wdtype="int4", kvdtype="fp8", spec=True, alpha=1.0, gamma=3),
    dict(model="llama-3.1-405b", gpu="h100-sxm"),  # does not fit: zero budget and concurrency
    dict(model="llama-3.1-70b", gpu="h100-sxm", tp=8, prompt=128, output=16, prefix=0),  # finite ridge batch
    dict(model="llama-3.1-8b", prompt=3000, chunk=1000, prefix=2000, price_in=0.0, price_out=0.0),
    dict(model="qwen2.5-0.5b", gpu="l4", tp=2, batch=4096, prompt=1, output=1, prefix=0, chunk=4096),
    dict(model="mistral-7b", prompt=8000, output=192, batch=64, chunk=2048),  # one sliding-window group
    dict(model="llama-3.1-70b", tp=2, spec=True, draft="llama-3.1-8b", gpu="h200"),  # draft pages share blocks
    dict(model="llama-3.1-8b", engine="sglang", mem_util=0.85),
    dict(model="llama-3.1-8b", engine="trtllm", wdtype="fp8", kvdtype="fp8"),
    dict(
        model="qwen2.5-7b",
        tp=4,
        cal_total_gib=79.19,
        cal_weights_gib=3.55,
        cal_act_gib=2.21,
        cal_nontorch_gib=2.13,
        cal_graph_gib=0.64,
        batch=1024,
        chunk=8192,
        prompt=8191,
        output=1,
        mem_util=0.95,
    ),
    dict(batch=256, chunk=512, prompt=8192, prefix=0),  # newcomer gets C − B = 256 tokens a step
    dict(batch=512, chunk=512, prompt=8192, prefix=0),  # B = C (vLLM refuses B > C): never admitted
    dict(rpm=2.0, cache_traffic="followups", response_s=40.0),
    dict(model="llama-2-70b", gpu="h200", tp=4, engine="trtllm", wdtype="fp8", kvdtype="fp8", mfu=0.6, mbu=0.8),
    # parallel layouts (issue 15): pipeline stages over two nodes, TP + EP across nodes, DP attention + EP
    dict(model="llama-3.1-405b", gpu="h100-sxm", tp=8, pp=2),
    dict(model="deepseek-v3", gpu="h100-sxm", wdtype="fp8", quant="fp8-block", tp=16, ep=16),
    dict(model="deepseek-v3", gpu="h100-sxm", wdtype="fp8", quant="fp8-block", tp=1, dp=16, ep=16, batch=512),
    dict(model="deepseek-v3", gpu="h200", wdtype="fp8", quant="fp8-block", tp=2, dp=4, pp=2, batch=256),
    dict(
        model="deepseek-v3", gpu="h100-sxm", wdtype="fp8", quant="fp8-block", tp=1, dp=32, ep=32, tbo=True, batch=4096
    ),
    dict(model="mixtral-8x7b", tp=2, ep=2, eplb=False, spec=True, gamma=3),
    dict(model="llama-3.1-8b", pp=3, engine="sglang", batch=64, prompt=4096),
    dict(model="qwen2.5-7b", gpu="l40s", tp=4, pp=2, engine="trtllm"),
]


@pytest.mark.parametrize("kw", SCENARIOS, ids=lambda kw: kw.get("model", "default"))
def test_substituted_arithmetic_reproduces_every_metric(kw):
    check(evaluate(Scenario(**kw), CATALOG))


@settings(max_examples=40, deadline=None)
@given(
    gpu=st.sampled_from(sorted(CATALOG.gpus)),
    model=st.sampled_from(sorted(CATALOG.models)),
    tp=st.sampled_from([1, 2, 4, 8, 16]),
    batch=st.integers(1, 2048),
    prompt=st.integers(1, 65_536),
    output=st.integers(1, 8192),
    chunk=st.integers(16, 16_384),
    block=st.sampled_from([1, 16, 32, 256]),
    alpha=st.floats(0.0, 1.0),
    gamma=st.integers(0, 12),
    spec=st.booleans(),
    hit=st.floats(0.0, 1.0),
    rpm=st.sampled_from([0.0, 0.5, 20.0]),
    wdtype=st.sampled_from(["bf16", "fp8", "int4"]),
    kvdtype=st.sampled_from(["bf16", "fp8"]),
)
def test_substitution_holds_across_scenarios(**kw):
    """Drawn configurations are made ones vLLM accepts (tp from the model's valid list, chunk ≥ batch,
    prompt + output within the window)."""
    model = CATALOG.models[kw["model"]]
    tps = valid_tps(model, 128 if kw["wdtype"] == "int4" else 0)
    assume(tps)  # no tp divides the model's widths into groups of 128 (gpt-oss: 2,880): vLLM refuses it at any tp
    kw["tp"] = max(t for t in tps if t <= kw["tp"]) if any(t <= kw["tp"] for t in tps) else tps[0]
    kw["chunk"] = max(kw["chunk"], kw["batch"])
    kw["output"] = min(kw["output"], model.context_window_tokens // 2)
    kw["prompt"] = min(kw["prompt"], model.context_window_tokens - kw["output"])
    kw["prefix"] = min(1024, kw["prompt"])
    if not weight_support("vllm", scheme_for(kw["wdtype"]).key, CATALOG.gpus[kw["gpu"]]).runs:
        kw["wdtype"] = "bf16"  # a format vLLM refuses on this GPU (planner/model/quant_support.py)
    check(evaluate(Scenario(**kw), CATALOG))


def test_headline_figures_are_all_explained():
    titles = {i.title for i in explain(evaluate(Scenario(spec=True), CATALOG))}
    for must in (
        "KV cache per token",
        "Max concurrent sequences (paged)",
        "Time to first token (TTFT)",
        "Time per output token (TPOT)",
        "Decode tokens/s per GPU",
        "Output tokens/s per replica (prefill included)",
        "Cost per million output tokens",
        "Request latency",
        "Speculative speedup",
        "Prompt cache saving",
        "Compute-bound turn (ridge batch)",
    ):
        assert must in titles


def test_worked_example_default_scenario():
    """Llama-3.1-8B, bf16, one H100: 2·32·8·128·2 = 131,072 B per token; vLLM's blocks ÷ blocks per request:
    28,541 blocks of 16 tokens (2 MiB each) over the 79.19 GiB the driver reports hold 198.2 requests of
    2,304 tokens (the old model charged every sequence fp32 logits and the datasheet's 74.5 GiB: 182)."""
    items = {i.title: i for i in explain(evaluate(Scenario(engine="vllm@0.19"), CATALOG))}
    kv = items["KV cache per token"]
    assert kv.substituted == "2 · 32 · 8 · 128 · 2" and kv.value == "131,072 B (128 KiB)"
    paged = items["Max concurrent sequences (paged)"]
    assert paged.substituted == "28,541 / (1 · ⌈(2,048 + 256) / 16⌉)" and paged.value == "198.201 sequences"
    # vLLM 0.33 (the default): 0.92 of 79.19 GiB requested (+1.584 GiB) less the CUDA-graph estimate (0.878 GiB)
    # now inside the budget: ⌊0.706 GiB / 2 MiB⌋ = 361 blocks more
    new = {i.title: i for i in explain(evaluate(Scenario(), CATALOG))}["Max concurrent sequences (paged)"]
    assert new.substituted == f"{28_541 + 361:,} / (1 · ⌈(2,048 + 256) / 16⌉)"
    assert "compute-bound" in items["Prefill of the whole prompt (TTFT without a prefix-cache hit)"].value
    # the whole decode step (KV reads included) never turns compute-bound at a 2k context
    assert items["Compute-bound turn (ridge batch)"].value.startswith("never")
    assert items["Fixed cost of a decode step"].substituted.count("·") == 1  # t_step + L · t_layer


def test_number_formatting_reads_back():
    for v in (0, 7, 131072, 16_060_522_496, 9.894e14, 3.35e12, 5e-6, 0.0643627, 1.13537e11, 2.5e-5):
        assert calculate(num(v)) == pytest.approx(v, rel=1e-6)
    assert num(16_060_522_496) == "16,060,522,496" and num(9.894e14) == "9.894e14" and num(5e-6) == "5e-6"
    assert calculate(exact(55100977152.123)) == 55100977152.123


def _refined_catalog(**refinements):
    """The shipped catalog plus an H100 whose profile carries measured refinements of the roofline."""
    from dataclasses import replace

    gpus = dict(CATALOG.gpus)
    gpus["h100-measured"] = CATALOG.gpus["h100-sxm"].model_copy(
        update=dict(key="h100-measured", calibrated=True, **refinements)
    )
    return replace(CATALOG, gpus=gpus)


@pytest.mark.parametrize(
    "refinements",
    [
        dict(compute_memory_overlap=0.45, attention_compute_frac=0.25, attention_bandwidth_frac=0.55),
        dict(compute_memory_overlap=-1.0),
    ],
)
@pytest.mark.parametrize("kw", [dict(), dict(model="llama-3.1-8b", batch=256, prompt=8192, chunk=1024, spec=True)])
def test_substitution_holds_with_a_calibrated_profile(refinements, kw):
    catalog = _refined_catalog(**refinements)
    result = evaluate(Scenario(gpu="h100-measured", **kw), catalog)
    items = check(result)
    step = next(i for i in items if i.title == "Decode step time (plain)")
    assert "min(" in step.substituted and "(1 − o) · min(c, m)" in step.formula
    plain = next(
        i for i in check(evaluate(Scenario(gpu="h100-sxm", **kw), CATALOG)) if i.title == "Decode step time (plain)"
    )
    assert "min(" not in plain.substituted and "R(c, m)" not in plain.formula
