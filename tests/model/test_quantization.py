"""Quantised weights as vLLM stores them (planner.model.quantization) against the weights vLLM 0.19
logged loading the published checkpoints on H100 ("Model loading took X GiB", llm-d-planner v0.19.0
logs; rows of benchmarks/data/published-serving.json), and the config.json quantization_config reader."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import evaluate
from planner.model.hf_import import model_and_quantization_from_hf_config, quantization_from_config
from planner.model.quantization import SCHEMES, compatible_quants, scheme_for, weight_bytes_of_layout, weight_layout
from planner.model.scenario import Scenario
from planner.units import GiB


@pytest.mark.parametrize(
    "model, wdtype, quant, tp, logged_gib, checkpoint",
    [
        ("llama-3.1-8b", "bf16", "", 1, 14.99, "meta-llama/Llama-3.1-8B-Instruct (A01)"),
        ("llama-3.1-8b", "fp8", "fp8", 1, 8.49, "--quantization fp8 at load time (K19)"),
        ("llama-3.1-8b", "int4", "gptq", 1, 5.38, "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 (A16)"),
        ("llama-3.1-8b", "int8", "w8a8", 1, 8.49, "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a8 (H09)"),
        ("qwen2.5-7b", "int8", "w8a8", 1, 8.14, "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8 (A17)"),
        ("qwen2.5-7b", "fp8", "fp8-channel", 1, 8.14, "RedHatAI/Qwen2.5-7B-Instruct-fp8-dynamic (H08)"),
        ("llama-3.1-70b", "fp8", "fp8-channel", 2, 33.88, "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic (A11)"),
        ("llama-3.1-70b", "fp8", "fp8-channel", 4, 16.96, "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic (A12)"),
        ("llama-3.1-70b", "int8", "w8a8", 2, 33.88, "RedHatAI/Llama-3.3-70B-Instruct-quantized.w8a8 (H11)"),
        ("mixtral-8x7b", "bf16", "", 2, 43.51, "mistralai/Mixtral-8x7B-Instruct-v0.1 (A13)"),
        ("gemma-2-27b", "bf16", "", 1, 50.72, "google/gemma-2-27b-it (A15)"),
    ],
)
def test_weights_per_gpu_match_what_vllm_logged(catalog, model, wdtype, quant, tp, logged_gib, checkpoint):
    m = evaluate(Scenario(model=model, wdtype=wdtype, quant=quant, tp=tp, gpu="h200"), catalog).metrics
    assert m["weight_bytes_per_gpu"] / GiB == pytest.approx(logged_gib, abs=0.02), checkpoint


def test_old_flat_bytes_per_weight_made_int4_and_fp4_too_small(catalog):
    """Before: N · 0.53125 B for int4 and N · 0.5 B for fp4 (3.97 and 3.74 GiB for Llama-3.1-8B); vLLM loads
    the GPTQ checkpoint as 5.38 GiB: the 16-bit embedding and LM head (2 · 128,256 · 4,096 · 2 B = 1.96 GiB)."""
    m = catalog.models["llama-3.1-8b"]
    n = 8_030_261_248
    int4 = weight_bytes_of_layout(weight_layout(m, scheme_for("int4"))) / GiB
    assert n * 0.53125 / GiB / int4 - 1 == pytest.approx(-0.26, abs=0.01)
    nvfp4 = weight_layout(m, scheme_for("fp4"))
    # NVFP4: 0.5 B per weight + one E4M3 scale per 16 + two fp32 per matrix (ModelOpt, modelopt.py:1100-1150)
    matrices = 32 * 4  # qkv, o, gate_up, down per layer
    assert nvfp4.quantized_bytes == nvfp4.quantized_params * (0.5 + 1 / 16) + 8 * matrices
    assert n * 0.5 / GiB / (weight_bytes_of_layout(nvfp4) / GiB) - 1 == pytest.approx(-0.34, abs=0.01)


def test_mxfp4_quantises_only_the_routed_experts(catalog):
    m = catalog.models["mixtral-8x7b"]
    mx = weight_layout(m, scheme_for("fp4", "mxfp4"))
    experts = 32 * 8 * 3 * 4096 * 14336
    assert mx.quantized_params == experts
    assert mx.quantized_bytes == pytest.approx(experts * (0.5 + 1 / 32))
    assert mx.other_params == 32 * 4096 * (4096 + 2 * 1024 + 4096)  # attention (q, k, v, o) stays 16 bit


def test_group_size_and_scale_layouts():
    gptq = SCHEMES["gptq"]
    assert gptq.scale_bytes(4096, 4096, 128) == 2.5 * 4096 * 32  # fp16 scale + packed int32 zero per group
    assert SCHEMES["w4a16"].scale_bytes(4096, 4096, 128) == 2 * 4096 * 32
    assert gptq.scale_bytes(4096, 4096, 0) == 2.5 * 4096  # one group per output channel
    assert SCHEMES["fp8-block"].scale_bytes(4096, 14336, 0) == 4 * 112 * 32
    assert compatible_quants("int4") == ["gptq", "awq", "w4a16", "w4a8"] and compatible_quants("bf16") == ["none"]


def test_a_quant_that_does_not_store_the_weight_dtype_is_named(catalog):
    from planner.errors import ScenarioError

    with pytest.raises(ScenarioError, match="quant=gptq: does not store wdtype=fp8 weights; for fp8 use one of fp8"):
        evaluate(Scenario(wdtype="fp8", quant="gptq"), catalog)


LLAMA = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}


@pytest.mark.parametrize(
    "qc, expected",
    [
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}, ("int4", "gptq", 128)),
        (
            {"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": True, "version": "gemm"},
            ("int4", "awq", 64),
        ),
        ({"quant_method": "gptq", "bits": 4, "group_size": -1}, ("int4", "gptq", 0)),
        (  # DeepSeek-V3's config.json
            {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]},
            ("fp8", "fp8-block", 128),
        ),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, ("fp8", "fp8", 128)),
        (  # llm-compressor FP8-dynamic (RedHatAI *-FP8-dynamic)
            {
                "quant_method": "compressed-tensors",
                "format": "float-quantized",
                "config_groups": {
                    "group_0": {
                        "targets": ["Linear"],
                        "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True},
                        "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "dynamic": True},
                    }
                },
                "ignore": ["lm_head"],
            },
            ("fp8", "fp8-channel", 128),
        ),
        (  # W8A8 INT8
            {
                "quant_method": "compressed-tensors",
                "format": "int-quantized",
                "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "int", "strategy": "channel"}}},
            },
            ("int8", "w8a8", 128),
        ),
        (  # W4A16 pack-quantized, symmetric
            {
                "quant_method": "compressed-tensors",
                "format": "pack-quantized",
                "config_groups": {
                    "group_0": {
                        "weights": {
                            "num_bits": 4,
                            "type": "int",
                            "strategy": "group",
                            "group_size": 128,
                            "symmetric": True,
                        }
                    }
                },
            },
            ("int4", "w4a16", 128),
        ),  # fmt: skip
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16}, ("fp4", "nvfp4", 16)),
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}, ("fp4", "mxfp4", 32)),
    ],
)
def test_quantization_config_sets_the_weight_layout(qc, expected):
    spec, quant = model_and_quantization_from_hf_config({**LLAMA, "quantization_config": qc})
    assert spec.layers == 32 and (quant.wdtype, quant.quant, quant.qgroup) == expected
    assert quantization_from_config(LLAMA) is None


@pytest.mark.parametrize(
    "qc, message",
    [
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, "quant_method: 'bitsandbytes'; kvplan models gptq"),
        ({"quant_method": "gptq", "bits": 3}, "gptq with 3 bits is not modelled"),
        ({"quant_method": "gptq", "bits": 4, "group_size": "big"}, "group_size 'big' is not -1 or an integer"),
        ({"quant_method": "compressed-tensors"}, "config_groups: missing"),
        ({"quant_method": "fp8", "weight_block_size": [64, 64]}, "only [128, 128] blocks"),
        ("not an object", "quantization_config: expected an object"),
    ],
)
def test_unsupported_quantization_is_named(qc, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        model_and_quantization_from_hf_config({**LLAMA, "quantization_config": qc})
