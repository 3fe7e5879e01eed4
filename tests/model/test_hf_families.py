"""The family table of the config.json importer and the pieces it is made of."""

from __future__ import annotations

import re

import pytest

import planner.model.hf_import as hf_import
from planner.model.hf_import import model_from_hf_config
from planner.model.hf_import.families import FAMILIES, GENERIC, family_for
from planner.model.hf_import.moe import deepseek_dense_layers, qwen_dense_layers
from planner.model.hf_import.parts import Family
from planner.model.hf_import.reader import ConfigReader, language_model_config, parse_config

#: A tiny decoder every family can read (Falcon and GPT-2 need fewer keys, OPT its own ffn key).
TINY = {
    "num_hidden_layers": 4,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "ffn_dim": 128,
    "vocab_size": 100,
    "max_position_embeddings": 512,
}


#: The model types the importer claims by name (package docstring): each must have a table entry.
CLAIMED = (
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "deepseek_v2", "deepseek_v3",
    "deepseek_v32", "gemma", "gemma2", "gemma3", "gemma3_text", "falcon", "refinedweb", "refinedwebmodel", "opt",
    "gpt2", "gpt_oss", "llama4", "llama4_text", "qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe",
    "qwen3_5_moe_text", "jamba", "nemotron_h", "nemotron-nas",
)  # fmt: skip

_GDN = {
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 16,
    "linear_num_value_heads": 4,
    "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4,
}
_BLOCK = {"attention": {"n_heads_in_group": 2, "no_op": False}, "ffn": {"ffn_mult": 1.5, "no_op": False}}
#: What a family with its own layout keys needs on top of TINY (and the layer count it then has).
EXTRA: dict[str, tuple[dict, int]] = {
    "llama4": ({"num_local_experts": 4, "num_experts_per_tok": 1, "intermediate_size_mlp": 256}, 4),
    "jamba": ({"attn_layer_period": 2, "attn_layer_offset": 1}, 4),
    "nemotron_h": (
        {"hybrid_override_pattern": "M-*-", "mamba_num_heads": 4, "mamba_head_dim": 32, "ssm_state_size": 16},
        2,
    ),
    "nemotron-nas": ({"block_configs": [_BLOCK] * 4}, 4),
    **{t: (_GDN, 4) for t in ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")},
}
EXTRA["llama4_text"] = EXTRA["llama4"]


def _tiny(model_type: str, **more) -> dict:
    return {**TINY, **EXTRA.get(model_type, ({}, 4))[0], "model_type": model_type, **more}


def test_table_keys_are_lower_case_model_types() -> None:
    assert all(k == k.lower() and re.fullmatch(r"[a-z0-9_-]+", k) for k in FAMILIES)
    assert all(isinstance(f, Family) for f in FAMILIES.values())


@pytest.mark.parametrize("model_type", CLAIMED)
def test_every_claimed_model_type_has_an_entry_and_imports(model_type: str) -> None:
    assert model_type in FAMILIES
    m = model_from_hf_config(_tiny(model_type))
    assert (m.layers, m.hidden, m.heads) == (EXTRA.get(model_type, ({}, 4))[1], 64, 4)
    family = FAMILIES[model_type]
    assert m.gated_mlp is family.gated_mlp
    assert m.tied_embeddings is family.tied_by_default


def test_the_table_holds_exactly_the_claimed_types() -> None:
    assert set(FAMILIES) == set(CLAIMED)
    doc = hf_import.__doc__ or ""
    for model_type in ("falcon", "RefinedWeb", "RefinedWebModel", "opt", "gpt2"):
        assert model_type in doc


def test_unknown_and_case_variants() -> None:
    assert family_for("some_new_llama") is GENERIC
    assert family_for("") is GENERIC
    # model_type is compared in lower case: RefinedWeb is Falcon.
    assert model_from_hf_config({**TINY, "model_type": "RefinedWeb"}).gated_mlp is False


def test_family_rules_differ_where_the_docs_say() -> None:
    layers = {t: model_from_hf_config(_tiny(t, sliding_window=64)).sliding_window_layers for t in FAMILIES}
    assert layers["mistral"] == layers["gemma"] == layers["gpt2"] == layers["gpt_oss"] == 4  # every layer
    assert layers["llama"] == layers["deepseek_v3"] == layers["falcon"] == layers["opt"] == 0  # ignored
    assert layers["llama4"] == layers["jamba"] == layers["nemotron_h"] == layers["nemotron-nas"] == 0
    assert layers["gemma2"] == 2  # alternating
    assert layers["gemma3"] == 4  # one global layer in six: none of four
    assert layers["qwen2"] == 0  # off unless use_sliding_window
    assert model_from_hf_config({**TINY, "model_type": "falcon"}).qkv_bias is False
    assert model_from_hf_config({**TINY, "model_type": "opt"}).qkv_bias is True
    assert model_from_hf_config({**TINY, "model_type": "qwen2"}).qkv_bias is True
    assert model_from_hf_config({**TINY, "model_type": "qwen3"}).qkv_bias is False


def test_falcon_context_defaults_and_others_require_it() -> None:
    bare = {k: v for k, v in TINY.items() if k != "max_position_embeddings"}
    assert model_from_hf_config({**bare, "model_type": "falcon"}).context_window_tokens == 2048
    with pytest.raises(ValueError, match="'max_position_embeddings'"):
        model_from_hf_config({**bare, "model_type": "llama"})


# --- reader -----------------------------------------------------------------------------


def test_reader_collects_every_problem() -> None:
    reader = ConfigReader({"a": "x", "b": 0, "c": 2.5, "d": "yes", "e": 3})
    assert reader.integer("a") is None
    assert reader.integer("b") is None
    assert reader.integer("c") is None
    assert reader.flag("d", True) is True
    assert reader.text("e") is None
    assert reader.integer("missing", required=True, default=7) == 7
    assert len(reader.problems) == 6
    assert reader.message() == "; ".join(reader.problems)


def test_reader_shape_checks_the_model_spec_bounds() -> None:
    reader = ConfigReader({"n_layer": 1001, "hidden_size": 4096})
    assert reader.shape(("num_hidden_layers", "n_layer"), "layers") is None
    assert reader.shape("hidden_size", "hidden") == 4096
    assert reader.shape("head_dim", "head_dim", default=5) == 5  # absent: the default, unchecked
    assert reader.problems == []
    assert reader.out_of_bounds == ["'n_layer' (layers): Input should be less than or equal to 1000"]
    assert reader.message() == (
        "config.json describes a model outside the planner's bounds: "
        "'n_layer' (layers): Input should be less than or equal to 1000"
    )
    assert ConfigReader({}).message() is None


def test_parse_and_text_config() -> None:
    assert parse_config('{"a": 1}') == {"a": 1}
    assert parse_config(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    inner = {"num_hidden_layers": 2, "model_type": "llama"}
    merged = language_model_config({"model_type": "llava", "name": "x", "text_config": inner})
    assert merged == {"model_type": "llama", "name": "x", "num_hidden_layers": 2}
    own = {"num_hidden_layers": 3, "text_config": inner}
    assert language_model_config(own) is own  # a top-level layer count wins


# --- MoE layer counts -----------------------------------------------------------------------


def test_moe_dense_layer_counts() -> None:
    assert deepseek_dense_layers(61, first_dense=3, frequency=1) == 3
    assert deepseek_dense_layers(27, first_dense=1, frequency=2) == 27 - 13
    assert qwen_dense_layers(24, step=1, mlp_only=frozenset()) == 0
    assert qwen_dense_layers(24, step=2, mlp_only=frozenset({1})) == 13
