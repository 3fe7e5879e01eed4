"""KV-cache formats and attention math per engine (planner/model/quant_support.py): vLLM's per-token-head INT8/FP8
KV (inline fp32 scale, 16-byte slot) from vLLM 0.23, FP8 attention with an fp8 KV cache on Hopper / Blackwell."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.model.catalog import ENGINE_PROFILES, data_dirs, load_catalog
from planner.model.scenario import Scenario


@pytest.fixture(scope="module")
def newer_vllm(tmp_path_factory):
    """The shipped profiles plus a vLLM 0.33 one (0.19's constants under a newer version: the KV rules under test
    are version gates, not constants)."""
    root = tmp_path_factory.mktemp("engines")
    (root / "vllm").mkdir()
    text = (Path(str(data_dirs(ENGINE_PROFILES)[0])) / "vllm" / "0.19.toml").read_text()
    (root / "vllm" / "0.33.toml").write_text(text.replace('version = "0.19.0"', 'version = "0.33.0"'))
    return load_catalog(engine_dir=[data_dirs(ENGINE_PROFILES)[0], root])


def test_per_token_head_int8_kv_holds_an_inline_scale_per_token_and_head(newer_vllm):
    """flashinfer-ai/flashinfer#3617 on vLLM's layout: 'The fp8-per-token-head KV cache quantization generates an
    FP32 scale for each head … the scales are stored inline within the KV cache and aligned to 16 bytes'
    (#5272: 'an inline slot (last dim head_dim + 16)').  Llama-3.1-8B: 32 layers · 2 · 8 heads · (128 + 16) B."""
    m = evaluate(Scenario(kvdtype="int8_per_token_head", engine="vllm@0.33"), newer_vllm).metrics
    assert m["kv_bytes_per_token"] == 32 * 2 * 8 * (128 + 16)
    bf16 = evaluate(Scenario(engine="vllm@0.33"), newer_vllm).metrics
    assert bf16["kv_capacity_tokens"] / m["kv_capacity_tokens"] == pytest.approx(144 / 256, rel=0.01)


@pytest.mark.parametrize(
    "link, words",
    [
        (dict(kvdtype="int8_per_token_head"), "vLLM has it from 0.23"),
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
