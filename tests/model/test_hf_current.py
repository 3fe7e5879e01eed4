"""The importer on the configs people deploy now: the verbatim files in ``hf_configs/``
(sources in hf_configs/SOURCES.md) and a few transcriptions named where they are used.

Every expected number is worked out by hand from the config's own keys in the comment
next to it, so a failure says which rule changed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.model.catalog import load_models
from planner.model.hf_import import model_from_hf_config
from planner.model.params import kv_elements_per_token, param_counts, state_bytes_per_sequence

CONFIGS = Path(__file__).parent / "hf_configs"
PRESETS, _ = load_models()
#: not shape: names, provenance, the architecture (SGLang keys a rule on it; a link's custom code does not carry it)
#: and the published checkpoints
_NOT_SHAPE = {"name", "source", "published_params", "min_cacheable_prompt_tokens", "architecture", "checkpoints"}


def load(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


def imported(name: str):
    return model_from_hf_config((CONFIGS / name).read_text(encoding="utf-8"))


# google/gemma-3-27b-it config.json: the key set NVIDIA/TensorRT-LLM copies in
# tests/unittest/_torch/modeling/test_modeling_gemma3.py (GEMMA3_27B_MINI_CONFIG), with the
# layer count and window that file reduces put back (62, 1024).  vocab, context and the
# 6-layer pattern are not in the file: transformers' Gemma3TextConfig defaults supply them.
GEMMA3_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "model_type": "gemma3_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
    },
    "torch_dtype": "bfloat16",
    "vision_config": {"hidden_size": 1152, "model_type": "siglip_vision_model", "num_hidden_layers": 27},
}
GEMMA3_DEFAULTS = {"vocab_size": 262_208, "max_position_embeddings": 131_072}

# mistralai/Mistral-Small-3.1-24B-Instruct-2503 text_config, as transcribed in NVIDIA/TensorRT-LLM
# tests/unittest/_torch/modeling/test_modeling_mistral.py (layers back at "the original 40").
MISTRAL_SMALL_31 = {
    "architectures": ["Mistral3ForConditionalGeneration"],
    "model_type": "mistral3",
    "text_config": {
        "head_dim": 128,
        "hidden_size": 5120,
        "intermediate_size": 32768,
        "max_position_embeddings": 131072,
        "model_type": "mistral",
        "num_attention_heads": 32,
        "num_hidden_layers": 40,
        "num_key_value_heads": 8,
        "rope_theta": 1000000000.0,
        "sliding_window": None,
        "vocab_size": 131072,
    },
    "vision_config": {"model_type": "pixtral", "num_hidden_layers": 24, "hidden_size": 1024},
}

# microsoft/phi-4 config.json as transcribed in sdpython/experimental-experiment
# (experimental_experiment/torch_models/llm_model_helper.py, get_phi4).
PHI4 = {
    "architectures": ["Phi3ForCausalLM"],
    "model_type": "phi3",
    "hidden_size": 5120,
    "intermediate_size": 17920,
    "max_position_embeddings": 16384,
    "num_attention_heads": 40,
    "num_hidden_layers": 40,
    "num_key_value_heads": 10,
    "original_max_position_embeddings": 16384,
    "rope_theta": 250000,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "vocab_size": 100352,
}

# ai21labs/AI21-Jamba-1.5-Mini config.json as transcribed (citing that URL) in
# sdpython/experimental-experiment llm_model_helper.py get_ai21_jamba_15_mini.
JAMBA_15_MINI = {
    "architectures": ["JambaForCausalLM"],
    "model_type": "jamba",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "attn_layer_period": 8,
    "attn_layer_offset": 4,
    "expert_layer_period": 2,
    "expert_layer_offset": 1,
    "num_experts": 16,
    "num_experts_per_tok": 2,
    "intermediate_size": 14336,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_dt_rank": 256,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "vocab_size": 65536,
    "max_position_embeddings": 262144,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


# --- the new presets are what their config.json says ------------------------------------------


@pytest.mark.parametrize(
    ("config", "preset"),
    [
        ("qwen3-8b.json", "qwen3-8b"),
        ("qwen3-32b.json", "qwen3-32b"),
        ("qwen3-30b-a3b.json", "qwen3-30b-a3b"),
        ("qwen3-235b-a22b.json", "qwen3-235b-a22b"),
        ("gpt-oss-20b.json", "gpt-oss-20b"),
        ("gpt-oss-120b.json", "gpt-oss-120b"),
        ("llama-4-scout-17b-16e-instruct.json", "llama-4-scout-17b-16e"),
        ("llama-4-maverick-17b-128e-instruct.text_config.json", "llama-4-maverick-17b-128e"),
        ("deepseek-r1.json", "deepseek-r1"),
        ("kimi-k2-instruct.json", "kimi-k2-instruct"),
        ("llama-3.3-70b-instruct.json", "deepseek-r1-distill-llama-70b"),
    ],
)
def test_config_reproduces_the_preset(config: str, preset: str) -> None:
    assert imported(config).model_dump(exclude=_NOT_SHAPE) == PRESETS[preset].model_dump(exclude=_NOT_SHAPE)


@pytest.mark.parametrize(
    ("config", "preset"),
    [(GEMMA3_27B, "gemma-3-27b"), (MISTRAL_SMALL_31, "mistral-small-3.1-24b"), (PHI4, "phi-4")],
)
def test_transcribed_config_reproduces_the_preset(config: dict, preset: str) -> None:
    m = model_from_hf_config(config)
    assert m.model_dump(exclude=_NOT_SHAPE) == PRESETS[preset].model_dump(exclude=_NOT_SHAPE)


def test_gemma3_defaults_are_transformers_own() -> None:
    """vocab and context come from Gemma3TextConfig's defaults when the file leaves them out."""
    m = model_from_hf_config(GEMMA3_27B)
    assert (m.vocab, m.context_window_tokens) == (GEMMA3_DEFAULTS["vocab_size"], 131_072)
    assert m.tied_embeddings  # Gemma ties by default


# --- text_config nesting, layer_types, sliding_window_pattern ---------------------------------


def test_text_config_of_llama4_and_qwen35_multimodal_files() -> None:
    scout = load("llama-4-scout-17b-16e-instruct.json")
    assert "vision_config" in scout and scout["model_type"] == "llama4"
    m = imported("llama-4-scout-17b-16e-instruct.json")
    assert (m.layers, m.hidden, m.heads, m.kv_heads) == (48, 5120, 40, 8)  # text_config, not vision_config (34, 1408)
    q = imported("qwen3.5-27b.json")  # Qwen3_5ForConditionalGeneration, text_config.model_type qwen3_5_text
    assert (q.layers, q.hidden, q.heads, q.kv_heads, q.head_dim) == (64, 5120, 24, 4, 256)


def test_layer_types_alternating_sliding_and_full() -> None:
    cfg = load("gpt-oss-120b.json")
    assert cfg["layer_types"][:2] == ["sliding_attention", "full_attention"]
    m = imported("gpt-oss-120b.json")
    assert (m.sliding_window_tokens, m.sliding_window_layers, m.full_attention_layers) == (128, 18, 18)
    assert m.attention_sinks  # gpt-oss: one learned sink per head (modelling code, not config.json)


def test_layer_types_with_linear_attention_layers() -> None:
    m = imported("qwen3.5-27b.json")  # 48 linear_attention + 16 full_attention in layer_types
    assert (m.state_layers, m.full_attention_layers, m.sliding_window_layers) == (48, 16, 0)
    assert m.attention_output_gate  # attn_output_gate: true


def test_layer_types_chunked_needs_the_chunk_size() -> None:
    cfg = {**load("llama-3.3-70b-instruct.json"), "layer_types": ["chunked_attention", "full_attention"] * 40}
    with pytest.raises(ValueError, match="lists chunked_attention layers but 'attention_chunk_size' is missing"):
        model_from_hf_config(cfg)
    m = model_from_hf_config({**cfg, "attention_chunk_size": 4096})
    assert (m.chunked_attention_tokens, m.chunked_attention_layers, m.full_attention_layers) == (4096, 40, 40)


def test_unknown_layer_type_is_named() -> None:
    cfg = {**load("llama-3.3-70b-instruct.json"), "layer_types": ["full_attention"] * 79 + ["lightning_attention"]}
    with pytest.raises(ValueError, match=r"layer_types' names layer kinds the planner does not know \('lightning"):
        model_from_hf_config(cfg)


def test_sliding_window_pattern_of_any_family() -> None:
    # Gemma 3: all but every 6th layer local (62 - 10 = 52); Cohere 2 style pattern 4 on a generic decoder.
    assert model_from_hf_config(GEMMA3_27B).sliding_window_layers == 52
    cohere = {**PHI4, "model_type": "cohere2", "sliding_window": 4096, "sliding_window_pattern": 4}
    m = model_from_hf_config(cohere)
    assert (m.sliding_window_tokens, m.sliding_window_layers) == (4096, 40 - 40 // 4)


def test_llama4_chunked_layers_from_no_rope_layers() -> None:
    scout = load("llama-4-scout-17b-16e-instruct.json")
    flags = [1, 1, 0, 0] * 12  # an explicit no_rope_layers: half the layers RoPE (chunked)
    scout["text_config"] = {**scout["text_config"], "no_rope_layers": flags}
    assert model_from_hf_config(scout).chunked_attention_layers == 24
    scout["text_config"] = {**scout["text_config"], "attention_chunk_size": None}
    assert model_from_hf_config(scout).chunked_attention_layers == 0  # no chunk size: every layer global


# --- hybrids: state layers with a fixed state per sequence ------------------------------------


def test_qwen3_next_gated_deltanet_state() -> None:
    m = imported("qwen3-next-80b-a3b-thinking.json")
    # full_attention_interval 4 over 48 layers: 12 full attention, 36 Gated DeltaNet.
    assert (m.layers, m.state_layers, m.full_attention_layers) == (48, 36, 12)
    # conv (4 - 1) x (2·16·128 + 32·128) = 24,576 and ssm 32·128·128 = 524,288 elements, bf16:
    assert m.state_bytes_per_layer == (24_576 + 524_288) * 2 == 1_097_728
    assert state_bytes_per_sequence(m) == 36 * 1_097_728 == 39_518_208
    # KV: 12 layers x K,V x 2 heads x 256 x 2 B per token
    assert kv_elements_per_token(m) * 2 == 12 * 2 * 2 * 256 * 2 == 24_576
    assert (m.experts, m.experts_per_token, m.moe_ffn, m.shared_experts, m.shared_expert_ffn) == (512, 10, 512, 1, 512)
    assert param_counts(m).total == pytest.approx(80e9, rel=0.02)  # card: "80B in total and 3B activated"


def test_nemotron_h_blocks_fold_into_layers() -> None:
    cfg = load("nemotron-h-56b-base-8k.json")
    assert "Infinity" in (CONFIGS / "nemotron-h-56b-base-8k.json").read_text()  # parsed, not refused
    pattern = cfg["hybrid_override_pattern"]
    assert (pattern.count("M"), pattern.count("*"), pattern.count("-")) == (54, 10, 54)
    m = imported("nemotron-h-56b-base-8k.json")
    # 64 mixers (54 Mamba-2 + 10 attention) and 54 MLPs fold into 64 layers, 10 without an MLP.
    assert (m.layers, m.state_layers, m.full_attention_layers, m.mlp_free_layers) == (64, 54, 10, 10)
    assert (m.head_dim, m.gated_mlp) == (128, False)  # attention_head_dim; squared-ReLU MLP
    # conv 3 x (16384 + 2·8·256) = 61,440 (bf16) + ssm 256·64·256 = 4,194,304 in float32 (vLLM's
    # NemotronH default mamba_ssm_cache_dtype):
    assert m.state_bytes_per_layer == 61_440 * 2 + 4_194_304 * 4 == 16_900_096
    assert kv_elements_per_token(m) * 2 == 10 * 2 * 8 * 128 * 2 == 40_960
    assert param_counts(m).total == pytest.approx(56e9, rel=0.02)  # nvidia/Nemotron-H-56B-Base-8K: 56B


def test_jamba_mamba1_and_alternating_moe() -> None:
    m = model_from_hf_config(JAMBA_15_MINI)
    # attention iff i % 8 == 4: layers 4, 12, 20, 28; MoE iff i % 2 == 1: 16 layers.
    assert (m.state_layers, m.full_attention_layers, m.experts, m.dense_layers) == (28, 4, 16, 16)
    # I = 2·4096 = 8192: conv 3·8192 = 24,576 + ssm 8192·16 = 131,072 elements, bf16
    assert m.state_bytes_per_layer == (24_576 + 131_072) * 2 == 311_296
    assert kv_elements_per_token(m) * 2 == 4 * 2 * 8 * 128 * 2 == 16_384
    pc = param_counts(m)  # card: "12B active and 52B total"
    assert pc.total == pytest.approx(52e9, rel=0.02)
    assert pc.active == pytest.approx(12e9, rel=0.02)


def test_nemotron3_moe_blocks_and_ssm_dtype_from_the_config() -> None:
    m = imported("nemotron-3-nano-30b-a3b.json")
    assert (m.layers, m.state_layers, m.full_attention_layers, m.experts, m.experts_per_token) == (29, 23, 6, 128, 6)
    # 64 heads x 64: conv 3 x (4096 + 2·8·128) = 18,432 (bf16) + ssm 64·64·128 = 524,288 (float32 per the config)
    assert m.state_bytes_per_layer == 18_432 * 2 + 524_288 * 4
    assert param_counts(m).total == pytest.approx(31.6e9, rel=0.02)  # card: 31.6B total


def test_latent_moe_counts_the_same_weights() -> None:
    pc = param_counts(imported("nemotron-3-super-120b-a12b-fp8.json"))
    assert pc.total == pytest.approx(120e9, rel=0.02)  # "120B-A12B"
    assert pc.active == pytest.approx(12e9, rel=0.1)


# --- per-layer KV heads -----------------------------------------------------------------------


def test_decilm_blocks_without_attention() -> None:
    m = imported("llama-3.3-nemotron-super-49b-v1.json")
    # 49 blocks with n_heads_in_group 8 (64 / 8 = 8 KV heads), 31 no-op attention blocks.
    assert (m.layers, m.kv_heads, m.full_attention_layers, m.attention_free_layers) == (80, 8, 49, 31)
    assert kv_elements_per_token(m) * 2 == 49 * 2 * 8 * 128 * 2
    assert param_counts(m).total == pytest.approx(49e9, rel=0.02)  # card: 49B


def test_per_layer_kv_heads_list() -> None:
    base = load("llama-3.3-70b-instruct.json")
    assert model_from_hf_config({**base, "num_key_value_heads": [8] * 80}).kv_heads == 8
    with pytest.raises(ValueError, match=r"different KV-head counts \(\[4, 8\]\)"):
        model_from_hf_config({**base, "num_key_value_heads": [8] * 40 + [4] * 40})
    blocks = load("llama-3.3-nemotron-super-49b-v1.json")
    blocks["block_configs"][0]["attention"]["n_heads_in_group"] = 4
    with pytest.raises(ValueError, match=r"different KV-head groupings \(n_heads_in_group \[4, 8\]\)"):
        model_from_hf_config(blocks)


def test_gemma4_global_layers_of_another_width_are_refused_clearly() -> None:
    with pytest.raises(ValueError) as err:
        imported("gemma-4-26b-a4b.json")
    message = str(err.value)
    assert "'num_global_key_value_heads' (2) differs from 'num_key_value_heads' (8)" in message
    assert "'global_head_dim' (512) differs from 'head_dim' (256)" in message


# --- not a decoder-only transformer -----------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "kind"),
    [
        ({"model_type": "t5", "is_encoder_decoder": True, "d_model": 512, "num_layers": 6}, "an encoder-decoder model"),
        ({"model_type": "whisper", "d_model": 1280, "encoder_layers": 32}, "an encoder-decoder model"),
        ({"model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12}, "an encoder-only model"),
        ({"model_type": "xlm-roberta", "architectures": ["XLMRobertaForMaskedLM"]}, "an encoder-only model"),
        ({"model_type": "vit", "hidden_size": 768}, "a vision or speech encoder"),
        ({"_class_name": "UNet2DConditionModel", "in_channels": 4}, "a diffusers component"),
        ({"model_type": "mamba", "hidden_size": 768, "num_hidden_layers": 24}, "no attention layers"),
    ],
)
def test_not_a_decoder_is_named_in_one_sentence(config: dict, kind: str) -> None:
    with pytest.raises(ValueError) as err:
        model_from_hf_config(config)
    message = str(err.value)
    assert message.startswith("config.json describes ") and kind in message
    assert "not a decoder-only transformer" in message or "no attention layers" in message
