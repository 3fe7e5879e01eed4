"""The family table: ``model_type`` -> :class:`Family`, the one place a family is named.

A ``model_type`` not listed here is read as :data:`GENERIC` (Llama-style, with
Mistral's sliding-window rule); routed experts and MLA are recognised by their
keys in every family that allows them, so a new Llama look-alike needs no entry.
"""

from __future__ import annotations

from dataclasses import replace

from planner.model.hf_import.decilm import decilm_kv_heads, decilm_layers, decilm_mlp
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
from planner.model.hf_import.gemma import GEMMA3_CONTEXT_TOKENS, GEMMA3_VOCAB, gemma2_alternating, gemma3_pattern
from planner.model.hf_import.gpt2 import gpt2_mlp
from planner.model.hf_import.llama4 import llama4_layers, llama4_mlp
from planner.model.hf_import.mamba import (
    jamba_layers,
    jamba_mlp,
    mamba1_state,
    mamba2_state,
    nemotron_h_layers,
    nemotron_h_mlp,
)
from planner.model.hf_import.opt import opt_bias, opt_mlp
from planner.model.hf_import.parts import Family
from planner.model.hf_import.qwen3_next import gated_deltanet_state, qwen3_next_layers, qwen3_next_output_gate

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
GEMMA3 = replace(
    GEMMA,
    label="Gemma 3",
    window_layers=gemma3_pattern,
    default_context_tokens=GEMMA3_CONTEXT_TOKENS,
    default_vocab=GEMMA3_VOCAB,
)
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
GPT_OSS = replace(GENERIC, label="gpt-oss (MoE, sliding/full attention, attention sinks)", attention_sinks=True)
LLAMA4 = replace(
    GENERIC, label="Llama 4 (MoE + shared expert, chunked attention)", mlp=llama4_mlp, layer_kinds=llama4_layers
)
QWEN3_NEXT = replace(
    QWEN3,
    label="Qwen3-Next / Qwen3.5 (Gated DeltaNet + full attention)",
    layer_kinds=qwen3_next_layers,
    state_mixer=gated_deltanet_state,
    output_gate=qwen3_next_output_gate,
)
JAMBA = replace(
    GENERIC,
    label="Jamba (Mamba-1 + attention, MoE)",
    mlp=jamba_mlp,
    layer_kinds=jamba_layers,
    state_mixer=mamba1_state,
    window_layers=no_window,
)
NEMOTRON_H = replace(
    GENERIC,
    label="Nemotron-H (Mamba-2 + attention blocks)",
    mlp=nemotron_h_mlp,
    layer_kinds=nemotron_h_layers,
    state_mixer=mamba2_state,
    window_layers=no_window,
    gated_mlp=False,
)
DECILM = replace(
    LLAMA,
    label="DeciLM / Nemotron-NAS (per-block attention and FFN)",
    kv_heads=decilm_kv_heads,
    mlp=decilm_mlp,
    layer_kinds=decilm_layers,
)

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
    "gpt_oss": GPT_OSS,
    "llama4": LLAMA4,
    "llama4_text": LLAMA4,
    "qwen3_next": QWEN3_NEXT,
    "qwen3_5": QWEN3_NEXT,
    "qwen3_5_text": QWEN3_NEXT,
    "qwen3_5_moe": QWEN3_NEXT,
    "qwen3_5_moe_text": QWEN3_NEXT,
    "jamba": JAMBA,
    "nemotron_h": NEMOTRON_H,
    "nemotron-nas": DECILM,
}


def family_for(model_type: str) -> Family:
    """The family of a lower-case ``model_type``; :data:`GENERIC` for any other."""
    return FAMILIES.get(model_type, GENERIC)
