"""KV-cache formats and attention math per engine (planner/model/quant_support.py): vLLM's per-token-head INT8/FP8
KV (inline fp32 scales for K and V, 8 B per token and head) from vLLM 0.23, FP8 attention with an fp8 KV cache on
Hopper / Blackwell."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.model.scenario import Scenario


def test_per_token_head_int8_kv_holds_an_inline_scale_per_token_and_head(catalog):
    """vLLM 0.33.0 v1/attention/backends/triton_attn.py:306-318 customize_spec: content = (hk + hv) · 1 + 2 · 4 — int8
    K and V values with one inline fp32 scale each per token and head (issue 27's reading of the engine's page size;
    it replaces issue 32's 16-byte slot per K and per V, taken from a FlashInfer issue).  Llama-3.1-8B: 32 layers ·
    8 KV heads · (2 · 128 + 8) B = 67,584 B per token, the same as vLLM 0.33's plain ``int8``."""
    m = evaluate(Scenario(kvdtype="int8_per_token_head", engine="vllm@0.33"), catalog).metrics
    assert m["kv_bytes_per_token"] == 32 * 8 * (2 * 128 + 8)
    assert evaluate(Scenario(kvdtype="int8", engine="vllm@0.33"), catalog).metrics["kv_bytes_per_token"] == 67_584
    bf16 = evaluate(Scenario(engine="vllm@0.33"), catalog).metrics
    # bf16: 2 · 128 · 2 B = 512 B per token and head against 264 B: the pool holds 512 / 264 × the tokens
    assert bf16["kv_capacity_tokens"] / m["kv_capacity_tokens"] == pytest.approx(264 / 512, rel=0.01)


@pytest.mark.parametrize(
    "link, words",
    [
        (dict(kvdtype="int8_per_token_head", engine="vllm@0.19"), "vLLM has it from 0.23"),  # the default is 0.33
        (dict(kvdtype="fp8_per_token_head", engine="sglang"), "SGLang has no per-token-head"),
        (dict(kvdtype="int8_per_token_head", model="deepseek-v3", gpu="h200", tp=8), "does not serve MLA"),
        (dict(attn_dtype="fp8"), "FP8 attention reads an fp8 KV cache"),
        (dict(attn_dtype="fp8", kvdtype="fp8", gpu="a100-80gb-sxm"), "run on Hopper and Blackwell"),
    ],
)
def test_kv_and_attention_formats_the_engine_lacks_are_refused(catalog, link, words):
    with pytest.raises(ScenarioError, match=words):
        evaluate(Scenario(**link), catalog)


def test_fp8_attention_runs_prefill_attention_at_the_fp8_rate(catalog):
    """vLLM docs/features/quantization/quantized_kvcache.md: 'When using the Flash Attention 3 backend with FP8 KV
    cache, attention operations are also performed in the quantized (FP8) domain … queries are quantized to FP8'."""
    base = dict(kvdtype="fp8", prompt=32_768, output=256, chunk=32_768)
    bf16 = evaluate(Scenario(**base), catalog).metrics
    fp8 = evaluate(Scenario(**base, attn_dtype="fp8"), catalog).metrics
    assert fp8["ttft_s"] < bf16["ttft_s"]
    assert fp8["prefill_flop"] == bf16["prefill_flop"]  # the same work at a faster rate
