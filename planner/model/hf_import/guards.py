"""Refusing, in one clear sentence, a config.json that is not a decoder-only language model.

The planner sizes the KV cache and the steps of autoregressive decoding.  An encoder
(BERT), an encoder-decoder (T5, BART, Whisper), a vision or speech encoder, a diffusion
pipeline's component, or a pure state-space / recurrent model (Mamba, RWKV: no attention,
no KV cache) is named as what it is, before any field is read, instead of failing later
on a missing field.
"""

from __future__ import annotations

from typing import Any

ENCODER_ONLY = frozenset(
    {
        "albert", "bert", "camembert", "deberta", "deberta-v2", "distilbert", "electra", "ernie", "esm",
        "modernbert", "mpnet", "roberta", "xlm", "xlm-roberta", "xlm-roberta-xl", "nomic_bert",
    }
)  # fmt: skip
ENCODER_DECODER = frozenset(
    {
        "bart", "bigbird_pegasus", "blenderbot", "encoder-decoder", "fsmt", "led", "longt5", "m2m_100", "marian",
        "mbart", "mt5", "nllb-moe", "pegasus", "pegasus_x", "plbart", "prophetnet", "seamless_m4t",
        "speech-encoder-decoder", "switch_transformers", "t5", "umt5", "vision-encoder-decoder", "whisper",
    }
)  # fmt: skip
ENCODER_OTHER = frozenset(
    {
        "beit", "clip", "clip_vision_model", "convnext", "deit", "detr", "dinov2", "hubert", "resnet", "sam",
        "siglip", "siglip_vision_model", "swin", "vit", "wav2vec2", "wavlm",
    }
)  # fmt: skip
NO_ATTENTION = frozenset({"falcon_mamba", "mamba", "mamba2", "rwkv", "rwkv5", "rwkv6", "xlstm"})

SUPPORTED = (
    "the planner reads decoder-only language models (Llama, Qwen, Mistral, DeepSeek, Gemma, gpt-oss, Phi …, "
    "their multimodal wrappers' text_config, and hybrids such as Qwen3-Next, Jamba and Nemotron-H)"
)


def _architectures(cfg: dict[str, Any]) -> list[str]:
    arch = cfg.get("architectures")
    return [a for a in arch if isinstance(a, str)] if isinstance(arch, list) else []


def _kind(cfg: dict[str, Any], model_type: str) -> str | None:
    """What the config describes when it is not a decoder-only transformer; None when it may be one."""
    if isinstance(cfg.get("_class_name"), str) and "model_type" not in cfg:
        return f"a diffusers component ({cfg['_class_name'][:40]})"
    if cfg.get("is_encoder_decoder") is True or model_type in ENCODER_DECODER:
        return "an encoder-decoder model"
    arch = _architectures(cfg)
    if model_type in ENCODER_ONLY or any(a.endswith("ForMaskedLM") for a in arch):
        return "an encoder-only model"
    if model_type in ENCODER_OTHER:
        return "a vision or speech encoder"
    if model_type in NO_ATTENTION:
        return "a pure state-space / recurrent model with no attention layers (nothing grows a KV cache)"
    return None


def not_a_decoder(cfg: dict[str, Any], model_type: str) -> str | None:
    """The message for a config that is not a decoder-only transformer, else None."""
    kind = _kind(cfg, model_type)
    if kind is None:
        return None
    shown = f" (model_type '{model_type[:40]}')" if model_type else ""
    return f"config.json describes {kind}{shown}, not a decoder-only transformer: {SUPPORTED}"
