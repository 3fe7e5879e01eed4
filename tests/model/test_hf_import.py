"""Hugging Face config.json -> ModelSpec.

The configs below are copied (trimmed of keys the importer ignores) from the
published config.json files named in each fixture.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from planner.model.catalog import load_models
from planner.model.hf_import import MAX_CONFIG_BYTES, model_from_hf_config
from planner.model.hf_import.reader import parse_config
from planner.model.params import param_counts

PRESETS, _ = load_models()

#: Fields that describe the preset rather than the architecture.
#: not shape: names, provenance, the architecture (SGLang keys a rule on it; a link's custom code does not carry it)
#: and the published checkpoints
_NOT_SHAPE = {"name", "source", "published_params", "min_cacheable_prompt_tokens", "architecture", "checkpoints"}


def shape(m) -> dict:
    return m.model_dump(exclude=_NOT_SHAPE)


# https://huggingface.co/meta-llama/Llama-3.1-8B/blob/main/config.json
LLAMA_31_8B = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 131072,
    "mlp_bias": False,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}

# https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json (no num_key_value_heads in early copies)
LLAMA_2_7B = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "max_position_embeddings": 4096,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}

# https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json
MISTRAL_7B = {
    "architectures": ["MistralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mistral",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}

# https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json
MIXTRAL_8X7B = {
    "architectures": ["MixtralForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "max_position_embeddings": 32768,
    "model_type": "mixtral",
    "num_attention_heads": 32,
    "num_experts_per_tok": 2,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "output_router_logits": False,
    "rms_norm_eps": 1e-05,
    "rope_theta": 1e6,
    "router_aux_loss_coef": 0.02,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "vocab_size": 32000,
}

# https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json
DEEPSEEK_V3 = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "first_k_dense_replace": 3,
    "hidden_act": "silu",
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "model_type": "deepseek_v3",
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_group": 8,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "norm_topk_prob": True,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "num_nextn_predict_layers": 1,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "rope_theta": 10000,
    "routed_scaling_factor": 2.5,
    "scoring_func": "sigmoid",
    "tie_word_embeddings": False,
    "topk_group": 4,
    "topk_method": "noaux_tc",
    "v_head_dim": 128,
    "vocab_size": 129280,
}

# https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite/blob/main/config.json (q_lora_rank null)
DEEPSEEK_V2_LITE = {
    "model_type": "deepseek_v2",
    "first_k_dense_replace": 1,
    "hidden_size": 2048,
    "intermediate_size": 10944,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "moe_intermediate_size": 1408,
    "moe_layer_freq": 1,
    "n_routed_experts": 64,
    "n_shared_experts": 2,
    "num_attention_heads": 16,
    "num_experts_per_tok": 6,
    "num_hidden_layers": 27,
    "num_key_value_heads": 16,
    "q_lora_rank": None,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "tie_word_embeddings": False,
    "v_head_dim": 128,
    "vocab_size": 102400,
}

# https://huggingface.co/facebook/opt-13b/blob/main/config.json
OPT_13B = {
    "_name_or_path": "facebook/opt-13b",
    "_remove_final_layer_norm": False,
    "activation_function": "relu",
    "architectures": ["OPTForCausalLM"],
    "do_layer_norm_before": True,
    "enable_bias": True,
    "ffn_dim": 20480,
    "hidden_size": 5120,
    "layer_norm_elementwise_affine": True,
    "max_position_embeddings": 2048,
    "model_type": "opt",
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "vocab_size": 50272,
    "word_embed_proj_dim": 5120,
}

# https://huggingface.co/tiiuae/falcon-40b/blob/main/config.json (in-library FalconForCausalLM form)
FALCON_40B = {
    "alibi": False,
    "apply_residual_connection_post_layernorm": False,
    "architectures": ["FalconForCausalLM"],
    "bias": False,
    "hidden_size": 8192,
    "model_type": "falcon",
    "new_decoder_architecture": True,
    "num_attention_heads": 128,
    "num_hidden_layers": 60,
    "num_kv_heads": 8,
    "parallel_attn": True,
    "vocab_size": 65024,
}

# Earlier RefinedWeb (remote-code) form of the same checkpoint.
FALCON_40B_RW = {
    "architectures": ["RWForCausalLM"],
    "bias": False,
    "hidden_size": 8192,
    "model_type": "RefinedWeb",
    "n_head": 128,
    "n_head_kv": 8,
    "n_layer": 60,
    "parallel_attn": True,
    "vocab_size": 65024,
}

# https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json (multi-query: one KV head)
FALCON_7B = {
    "architectures": ["FalconForCausalLM"],
    "bias": False,
    "hidden_size": 4544,
    "model_type": "falcon",
    "multi_query": True,
    "new_decoder_architecture": False,
    "num_attention_heads": 71,
    "num_hidden_layers": 32,
    "parallel_attn": True,
    "vocab_size": 65024,
}

# https://huggingface.co/google/gemma-2-9b/blob/main/config.json (no tie_word_embeddings key: defaults to tied)
GEMMA_2_9B = {
    "architectures": ["Gemma2ForCausalLM"],
    "attn_logit_softcapping": 50.0,
    "cache_implementation": "hybrid",
    "final_logit_softcapping": 30.0,
    "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "gemma2",
    "num_attention_heads": 16,
    "num_hidden_layers": 42,
    "num_key_value_heads": 8,
    "query_pre_attn_scalar": 256,
    "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0,
    "sliding_window": 4096,
    "sliding_window_size": 4096,
    "vocab_size": 256000,
}

# https://huggingface.co/Qwen/Qwen2.5-7B/blob/main/config.json
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_act": "silu",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "max_window_layers": 28,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "sliding_window": 131072,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "vocab_size": 152064,
}

# https://huggingface.co/Qwen/Qwen1.5-MoE-A2.7B/blob/main/config.json
QWEN15_MOE = {
    "architectures": ["Qwen2MoeForCausalLM"],
    "decoder_sparse_step": 1,
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "max_position_embeddings": 8192,
    "max_window_layers": 21,
    "model_type": "qwen2_moe",
    "moe_intermediate_size": 1408,
    "num_attention_heads": 16,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "num_hidden_layers": 24,
    "num_key_value_heads": 16,
    "shared_expert_intermediate_size": 5632,
    "sliding_window": 32768,
    "tie_word_embeddings": False,
    "use_sliding_window": False,
    "vocab_size": 151936,
}


# --- round trips against the presets ----------------------------------------------


@pytest.mark.parametrize(
    ("config", "preset"),
    [
        (LLAMA_31_8B, "llama-3.1-8b"),
        (MISTRAL_7B, "mistral-7b"),
        (MIXTRAL_8X7B, "mixtral-8x7b"),
        (DEEPSEEK_V3, "deepseek-v3"),
        (OPT_13B, "opt-13b"),
        (FALCON_40B, "falcon-40b"),
        (FALCON_40B_RW, "falcon-40b"),
        (GEMMA_2_9B, "gemma-2-9b"),
        (QWEN25_7B, "qwen2.5-7b"),
    ],
    ids=[
        "llama-3.1-8b",
        "mistral-7b",
        "mixtral-8x7b",
        "deepseek-v3",
        "opt-13b",
        "falcon-40b",
        "falcon-40b-refinedweb",
        "gemma-2-9b",
        "qwen2.5-7b",
    ],
)
def test_config_reproduces_preset_shape(config: dict, preset: str) -> None:
    assert shape(model_from_hf_config(config)) == shape(PRESETS[preset])


def test_llama_31_8b_round_trip_from_text_and_bytes() -> None:
    text = json.dumps(LLAMA_31_8B, indent=2)
    from_text = model_from_hf_config(text, name="Llama-3.1-8B")
    from_bytes = model_from_hf_config(text.encode("utf-8"), name="Llama-3.1-8B")
    from_bom = model_from_hf_config(b"\xef\xbb\xbf" + text.encode("utf-8"), name="Llama-3.1-8B")
    assert from_text == from_bytes == from_bom
    assert from_text.name == "Llama-3.1-8B"
    assert shape(from_text) == shape(PRESETS["llama-3.1-8b"])
    assert from_text.attention_kind == "GQA"
    assert param_counts(from_text).total == pytest.approx(8.03e9, rel=0.005)


def test_missing_kv_heads_means_mha() -> None:
    m = model_from_hf_config(LLAMA_2_7B)
    assert m.kv_heads == m.heads == 32
    assert m.attention_kind == "MHA"
    assert shape(m) == shape(PRESETS["llama-2-7b"])


def test_null_kv_heads_means_mha() -> None:
    assert model_from_hf_config({**LLAMA_2_7B, "num_key_value_heads": None}).kv_heads == 32


# --- families -------------------------------------------------------------------------


def test_mixtral_intermediate_size_is_per_expert() -> None:
    m = model_from_hf_config(MIXTRAL_8X7B)
    assert (m.experts, m.experts_per_token, m.moe_ffn, m.shared_experts, m.dense_layers) == (8, 2, 14336, 0, 0)
    assert m.sliding_window_layers == 0  # sliding_window: null
    pc = param_counts(m)
    assert pc.total == pytest.approx(46.7e9, rel=0.005)
    assert pc.active == pytest.approx(12.9e9, rel=0.01)


def test_deepseek_v3_mla_and_moe() -> None:
    m = model_from_hf_config(DEEPSEEK_V3)
    assert m.attention_kind == "MLA"
    assert (m.kv_lora_rank, m.q_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim) == (
        512,
        1536,
        64,
        128,
        128,
    )
    assert (m.experts, m.experts_per_token, m.shared_experts, m.moe_ffn, m.dense_layers) == (256, 8, 1, 2048, 3)
    assert m.ffn == 18432 and m.vocab == 129280 and m.layers == 61
    pc = param_counts(m)
    assert pc.total == pytest.approx(671e9, rel=0.01)
    assert pc.active == pytest.approx(37e9, rel=0.05)


def test_deepseek_v2_lite_without_q_lora() -> None:
    m = model_from_hf_config(DEEPSEEK_V2_LITE)
    assert m.is_mla and m.q_lora_rank == 0
    assert (m.experts, m.shared_experts, m.experts_per_token, m.dense_layers) == (64, 2, 6, 1)
    pc = param_counts(m)
    assert pc.total == pytest.approx(15.7e9, rel=0.03)  # DeepSeek-V2-Lite card: 15.7B total
    # DeepSeek's "2.4B activated" leaves out the input-embedding lookup (2.66B with it).
    assert pc.matmul_active == pytest.approx(2.4e9, rel=0.05)


def test_moe_layer_freq_counts_dense_layers() -> None:
    m = model_from_hf_config({**DEEPSEEK_V2_LITE, "moe_layer_freq": 2})
    moe = sum(1 for i in range(27) if i >= 1 and i % 2 == 0)
    assert m.dense_layers == 27 - moe


def test_qwen_moe_shared_expert_of_its_own_width() -> None:
    m = model_from_hf_config(QWEN15_MOE)
    assert (m.experts, m.experts_per_token, m.moe_ffn, m.shared_experts, m.shared_expert_ffn) == (60, 4, 1408, 1, 5632)
    assert m.qkv_bias and m.sliding_window_layers == 0
    pc = param_counts(m)
    assert pc.total == pytest.approx(14.3e9, rel=0.03)  # Qwen1.5-MoE-A2.7B card: 14.3B total
    assert pc.active == pytest.approx(2.7e9, rel=0.05)  # 2.7B activated


def test_opt() -> None:
    m = model_from_hf_config(OPT_13B)
    assert not m.gated_mlp and m.tied_embeddings and m.qkv_bias
    assert (m.ffn, m.heads, m.kv_heads, m.head_dim) == (20480, 40, 40, 128)
    assert m.context_window_tokens == 2048
    assert m.name == "facebook/opt-13b"  # from _name_or_path
    assert model_from_hf_config({**OPT_13B, "enable_bias": False}).qkv_bias is False


def test_falcon_kv_heads() -> None:
    f40 = model_from_hf_config(FALCON_40B)
    assert (f40.kv_heads, f40.head_dim, f40.ffn, f40.context_window_tokens) == (8, 64, 32768, 2048)
    assert not f40.gated_mlp and f40.tied_embeddings
    # Some converted configs carry both flags: the new architecture's group count wins.
    assert model_from_hf_config({**FALCON_40B, "multi_query": True}).kv_heads == 8
    f7 = model_from_hf_config(FALCON_7B)
    assert f7.kv_heads == 1 and f7.attention_kind == "MQA" and f7.head_dim == 64
    assert model_from_hf_config({**FALCON_7B, "multi_query": False}).kv_heads == 71
    assert model_from_hf_config({**FALCON_40B, "max_position_embeddings": 8192}).context_window_tokens == 8192


def test_gemma2_head_dim_and_alternating_window() -> None:
    m = model_from_hf_config(GEMMA_2_9B)
    assert m.head_dim == 256 != m.hidden // m.heads
    assert (m.sliding_window_tokens, m.sliding_window_layers) == (4096, 21)
    assert m.tied_embeddings  # Gemma2Config default
    assert param_counts(m).total == pytest.approx(9.24e9, rel=0.002)
    odd = model_from_hf_config({**GEMMA_2_9B, "num_hidden_layers": 5})
    assert odd.sliding_window_layers == 3  # layers 0, 2, 4 are local


def test_mistral_window_on_every_layer_unless_switched_off() -> None:
    m = model_from_hf_config(MISTRAL_7B)
    assert (m.sliding_window_tokens, m.sliding_window_layers) == (4096, 32)
    off = model_from_hf_config({**MISTRAL_7B, "use_sliding_window": False})
    assert (off.sliding_window_tokens, off.sliding_window_layers) == (0, 0)
    none = model_from_hf_config({**MISTRAL_7B, "sliding_window": None})  # Mistral v0.2+
    assert none.sliding_window_layers == 0


def test_qwen2_window_only_when_enabled_and_above_max_window_layers() -> None:
    assert model_from_hf_config(QWEN25_7B).sliding_window_layers == 0  # use_sliding_window false
    on = model_from_hf_config(
        {**QWEN25_7B, "use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 20}
    )
    assert (on.sliding_window_tokens, on.sliding_window_layers) == (4096, 8)
    default = {k: v for k, v in QWEN25_7B.items() if k != "use_sliding_window"}
    assert model_from_hf_config(default).sliding_window_layers == 0  # defaults to false


def test_llama_ignores_a_stray_sliding_window() -> None:
    assert model_from_hf_config({**LLAMA_31_8B, "sliding_window": 8192}).sliding_window_layers == 0


def test_explicit_layer_types_win() -> None:
    types = ["sliding_attention", "full_attention"] * 16
    m = model_from_hf_config({**LLAMA_31_8B, "sliding_window": 1024, "layer_types": types})
    assert (m.sliding_window_tokens, m.sliding_window_layers) == (1024, 16)


def test_aliases_gpt_style_names() -> None:
    cfg = {
        "n_layer": 4,
        "n_embd": 256,
        "n_head": 8,
        "intermediate_size": 1024,
        "vocab_size": 1000,
        "max_position_embeddings": 512,
    }
    m = model_from_hf_config(cfg)
    assert (m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim) == (4, 256, 8, 8, 32)


def test_text_config_of_a_multimodal_model() -> None:
    m = model_from_hf_config(
        {"model_type": "llava", "vision_config": {"hidden_size": 1024}, "text_config": LLAMA_31_8B}
    )
    assert shape(m) == shape(PRESETS["llama-3.1-8b"])


def test_name_argument_and_defaults() -> None:
    assert model_from_hf_config(LLAMA_31_8B, name="  my model ").name == "my model"
    assert model_from_hf_config(LLAMA_31_8B).name == "LlamaForCausalLM"
    assert model_from_hf_config({k: v for k, v in LLAMA_31_8B.items() if k != "architectures"}).name == "llama"
    assert len(model_from_hf_config(LLAMA_31_8B, name="x" * 500).name) == 120


# --- errors ---------------------------------------------------------------------------


def test_missing_field_is_named_with_its_alias() -> None:
    cfg = {k: v for k, v in LLAMA_31_8B.items() if k != "num_hidden_layers"}
    with pytest.raises(ValueError, match=r"missing required field 'num_hidden_layers' \(or 'n_layer'"):
        model_from_hf_config(cfg)


def test_all_missing_fields_are_named_at_once() -> None:
    cfg = {k: v for k, v in LLAMA_31_8B.items() if k not in ("hidden_size", "vocab_size", "intermediate_size")}
    with pytest.raises(ValueError) as err:
        model_from_hf_config(cfg)
    for field in ("'hidden_size'", "'vocab_size'", "'intermediate_size'"):
        assert field in str(err.value)


def test_missing_mla_and_moe_fields_are_named() -> None:
    with pytest.raises(ValueError, match="'v_head_dim'"):
        model_from_hf_config({k: v for k, v in DEEPSEEK_V3.items() if k != "v_head_dim"})
    with pytest.raises(ValueError, match="'moe_intermediate_size'"):
        model_from_hf_config({k: v for k, v in DEEPSEEK_V3.items() if k != "moe_intermediate_size"})
    with pytest.raises(ValueError, match="'ffn_dim'"):
        model_from_hf_config({k: v for k, v in OPT_13B.items() if k != "ffn_dim"})


def test_empty_object_names_the_core_fields() -> None:
    with pytest.raises(ValueError) as err:
        model_from_hf_config({})
    for field in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "max_position_embeddings"):
        assert field in str(err.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_hidden_layers", "32"),
        ("hidden_size", -4096),
        ("num_attention_heads", 0),
        ("num_key_value_heads", True),
        ("intermediate_size", 14336.5),
        ("vocab_size", [128256]),
        ("max_position_embeddings", {"n": 1}),
    ],
)
def test_wrong_types_name_the_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"'{field}'"):
        model_from_hf_config({**LLAMA_31_8B, field: value})


def test_wrong_flag_type_names_the_field() -> None:
    with pytest.raises(ValueError, match="'tie_word_embeddings' must be true or false"):
        model_from_hf_config({**LLAMA_31_8B, "tie_word_embeddings": "false"})
    with pytest.raises(ValueError, match="'use_sliding_window'"):
        model_from_hf_config({**MISTRAL_7B, "use_sliding_window": "no"})


def test_integral_float_is_accepted() -> None:
    assert model_from_hf_config({**LLAMA_31_8B, "hidden_size": 4096.0}).hidden == 4096


def test_out_of_bounds_value_names_config_field() -> None:
    with pytest.raises(ValueError, match=r"'num_hidden_layers' \(layers\)"):
        model_from_hf_config({**LLAMA_31_8B, "num_hidden_layers": 5000})
    with pytest.raises(ValueError, match="divisible"):
        model_from_hf_config({**LLAMA_31_8B, "num_key_value_heads": 5})


def test_hidden_not_divisible_by_heads_asks_for_head_dim() -> None:
    with pytest.raises(ValueError, match="give 'head_dim'"):
        model_from_hf_config({**LLAMA_31_8B, "hidden_size": 4100})


@pytest.mark.parametrize(
    "text",
    [
        '{"num_hidden_layers": 32,',
        "",
        "not json",
        "{'single': 'quotes'}",
        "[" * 100_000,
    ],
)
def test_invalid_json(text: str) -> None:
    with pytest.raises(ValueError, match="^config.json is not valid JSON: "):
        model_from_hf_config(text)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_parse_but_never_become_a_shape(constant: str) -> None:
    """Python's json.dumps writes Infinity into real configs (Nemotron-H's time_step_limit):
    it parses, and a shape field holding one is named as not an integer."""
    assert math.isinf(parse_config('{"t": [0.0, Infinity]}')["t"][1])
    shown = constant.lower().replace("infinity", "inf")
    with pytest.raises(ValueError, match=f"'hidden_size' must be an integer, got {shown}"):
        model_from_hf_config(f'{{"hidden_size": {constant}}}')


def test_invalid_utf8_bytes() -> None:
    with pytest.raises(ValueError, match="^config.json is not valid JSON: "):
        model_from_hf_config(b'{"a": "\xff"}')


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', "42", "null"])
def test_top_level_must_be_an_object(text: str) -> None:
    with pytest.raises(ValueError, match="must be a JSON object"):
        model_from_hf_config(text)


def test_huge_input_is_rejected_before_parsing() -> None:
    padding = " " * MAX_CONFIG_BYTES
    text = json.dumps(LLAMA_31_8B) + padding
    with pytest.raises(ValueError, match="too large"):
        model_from_hf_config(text)
    with pytest.raises(ValueError, match="too large"):
        model_from_hf_config(text.encode())
    # Multi-byte characters count as bytes, not characters.
    with pytest.raises(ValueError, match="too large"):
        model_from_hf_config('{"x": "' + "é" * (MAX_CONFIG_BYTES // 2 + 10) + '"}')


def test_just_under_the_limit_is_fine() -> None:
    text = json.dumps(LLAMA_31_8B)
    text = text + " " * (MAX_CONFIG_BYTES - len(text))
    assert model_from_hf_config(text).layers == 32


def test_code_in_values_is_only_ever_data() -> None:
    cfg = {**LLAMA_31_8B, "_name_or_path": "__import__('os').system('false')"}
    assert model_from_hf_config(cfg).name == "__import__('os').system('false')"
    with pytest.raises(ValueError, match="'hidden_size' must be an integer"):
        model_from_hf_config({**LLAMA_31_8B, "hidden_size": "4096 * 2"})


def test_wrong_argument_type() -> None:
    with pytest.raises(TypeError):
        model_from_hf_config(42)  # type: ignore[arg-type]


def test_deeply_nested_values_are_reported_not_raised() -> None:
    deep_list = '{"num_hidden_layers": 32, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    deep_object = '{"x": ' + '{"y": ' * 100_000 + "1" + "}" * 100_001
    for text in (deep_list, deep_object):
        with pytest.raises(ValueError, match="^config.json is not valid JSON: nested too deeply"):
            model_from_hf_config(text)
        with pytest.raises(ValueError, match="nested too deeply"):
            model_from_hf_config(text.encode())


# --- shape bounds before any per-layer work (a reported denial of service) -----------------

#: 263 bytes that once made the importer count a trillion layers one by one.
TRILLION_LAYERS = (
    '{"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 1, "vocab_size": 10, '
    '"max_position_embeddings": 4096, "intermediate_size": 64, "num_hidden_layers": 1000000000000, '
    '"n_routed_experts": 2, "num_experts_per_tok": 1, "moe_intermediate_size": 8}'
)


@pytest.mark.parametrize(
    "text",
    [
        TRILLION_LAYERS,
        TRILLION_LAYERS.replace("deepseek_v3", "qwen2_moe"),
        TRILLION_LAYERS.replace("deepseek_v3", "qwen2_moe").replace("n_routed_experts", "num_experts"),
        TRILLION_LAYERS.replace('"n_routed_experts": 2', '"layer_types": ["full_attention"], "sliding_window": 8'),
    ],
    ids=["deepseek_v3", "qwen2_moe", "qwen2_moe-num_experts", "layer_types"],
)
def test_huge_layer_count_is_refused_at_once(text: str) -> None:
    assert len(TRILLION_LAYERS.encode()) == 263
    started = time.perf_counter()
    with pytest.raises(ValueError, match=r"'num_hidden_layers' \(layers\): Input should be less than or equal to 1000"):
        model_from_hf_config(text)
    assert time.perf_counter() - started < 0.5


def test_every_out_of_bounds_field_is_named_with_the_type_problems() -> None:
    cfg = {**DEEPSEEK_V3, "num_hidden_layers": 10**12, "n_routed_experts": 10**6, "vocab_size": "many"}
    with pytest.raises(ValueError) as err:
        model_from_hf_config(cfg)
    text = str(err.value)
    assert text.startswith("config.json field 'vocab_size' must be an integer, got string 'many'; ")
    assert "outside the planner's bounds: 'num_hidden_layers' (layers): " in text
    assert "'n_routed_experts' (experts): Input should be less than or equal to 4096" in text


def test_a_long_mlp_only_layers_list_is_cheap() -> None:
    cfg = {**QWEN15_MOE, "num_hidden_layers": 1000, "mlp_only_layers": list(range(0, 200_000, 2))}
    started = time.perf_counter()
    m = model_from_hf_config(cfg)
    assert time.perf_counter() - started < 0.5
    assert m.dense_layers == 500  # the even-indexed layers


def test_a_hostile_re_pattern_in_an_ignore_list_is_refused_by_name():
    """An uploaded config.json's 're:' patterns run only within the safe subset (tests/test_linear_regex.py
    DYNAMIC_PATTERNS): nested repetition, like '(a+)+$', is refused naming the field, before anything runs it."""
    from planner.model.hf_import.quantization import excluded_matrices

    assert excluded_matrices([r"re:.*self_attn\.(q|k|v|o)_proj$"], "ignore")  # compressed-tensors' own style
    for hostile in ("re:(a+)+$", "re:" + ".*" * 4 + "x", "re:" + "a" * 201):
        with pytest.raises(ValueError, match=r"quantization_config\.ignore: the pattern"):
            excluded_matrices([hostile], "ignore")
