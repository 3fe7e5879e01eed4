"""The family table: ``model_type`` -> :class:`Family`, the one place a family is named.

A ``model_type`` not listed here is read as :data:`GENERIC` (Llama-style, with
Mistral's sliding-window rule); routed experts and MLA are recognised by their
keys in every family that allows them, so a new Llama look-alike needs no entry.
"""

from __future__ import annotations

from dataclasses import replace

from planner.model.hf_import.dense import (
    always_bias,
    attention_bias,
    dense_mlp,
    every_layer,
    gqa_kv_heads,
    no_window,
    qwen_upper_layers,
)
from planner.model.hf_import.falcon import FALCON_CONTEXT_TOKENS, falcon_bias, falcon_kv_heads, falcon_mlp
from planner.model.hf_import.gemma import gemma2_alternating, gemma3_pattern
from planner.model.hf_import.gpt2 import gpt2_mlp
from planner.model.hf_import.opt import opt_bias, opt_mlp
from planner.model.hf_import.parts import Family

GENERIC = Family(
    label="Llama-style decoder (MHA/GQA/MQA or MLA, dense or MoE)",
    kv_heads=gqa_kv_heads,
    dense_mlp=dense_mlp,
    qkv_bias=attention_bias,
    window_layers=every_layer,
)
LLAMA = replace(GENERIC, label="Llama", window_layers=no_window)
MISTRAL = replace(GENERIC, label="Mistral / Mixtral")
QWEN2 = replace(GENERIC, label="Qwen2 / Qwen2-MoE", qkv_bias=always_bias, window_layers=qwen_upper_layers)
QWEN3 = replace(GENERIC, label="Qwen3 / Qwen3-MoE", window_layers=qwen_upper_layers)
DEEPSEEK = replace(GENERIC, label="DeepSeek-V2/V3 (MLA, MoE)", window_layers=no_window)
GEMMA = replace(GENERIC, label="Gemma", tied_by_default=True)
GEMMA2 = replace(GEMMA, label="Gemma 2", window_layers=gemma2_alternating)
GEMMA3 = replace(GEMMA, label="Gemma 3", window_layers=gemma3_pattern)
FALCON = Family(
    label="Falcon",
    kv_heads=falcon_kv_heads,
    dense_mlp=falcon_mlp,
    qkv_bias=falcon_bias,
    window_layers=no_window,
    gated_mlp=False,
    routed_experts=False,
    tied_by_default=True,
    default_context_tokens=FALCON_CONTEXT_TOKENS,
)
OPT = Family(
    label="OPT",
    kv_heads=gqa_kv_heads,
    dense_mlp=opt_mlp,
    qkv_bias=opt_bias,
    window_layers=no_window,
    gated_mlp=False,
    routed_experts=False,
    tied_by_default=True,
)
GPT2 = replace(GENERIC, label="GPT-2", dense_mlp=gpt2_mlp, qkv_bias=always_bias, gated_mlp=False, tied_by_default=True)

#: Every ``model_type`` the importer knows by name (lower case, as ``model_from_hf_config`` compares).
FAMILIES: dict[str, Family] = {
    "llama": LLAMA,
    "mistral": MISTRAL,
    "mixtral": MISTRAL,
    "qwen2": QWEN2,
    "qwen2_moe": QWEN2,
    "qwen3": QWEN3,
    "qwen3_moe": QWEN3,
    "deepseek_v2": DEEPSEEK,
    "deepseek_v3": DEEPSEEK,
    "deepseek_v32": DEEPSEEK,
    "gemma": GEMMA,
    "gemma2": GEMMA2,
    "gemma3": GEMMA3,
    "gemma3_text": GEMMA3,
    "falcon": FALCON,
    "refinedweb": FALCON,
    "refinedwebmodel": FALCON,
    "opt": OPT,
    "gpt2": GPT2,
}


def family_for(model_type: str) -> Family:
    """The family of a lower-case ``model_type``; :data:`GENERIC` for any other."""
    return FAMILIES.get(model_type, GENERIC)
