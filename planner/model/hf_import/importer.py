"""``model_from_hf_config``: config.json -> ModelSpec, step by step (see the package docstring)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from planner.model.hf_import.dense import head_dim_from_hidden
from planner.model.hf_import.families import family_for
from planner.model.hf_import.mla import mla_attention
from planner.model.hf_import.moe import routed_experts_mlp
from planner.model.hf_import.parts import Attention, Core, Family, Mlp
from planner.model.hf_import.quantization import WeightQuant, quantization_from_config
from planner.model.hf_import.reader import (
    CONTEXT_KEYS,
    HEADS_KEYS,
    HIDDEN_KEYS,
    LAYERS_KEYS,
    OUT_OF_BOUNDS,
    ConfigReader,
    default_name,
    language_model_config,
    parse_config,
)
from planner.model.hf_import.sliding import sliding_window
from planner.model.specs import ModelSpec

SOURCE = "Hugging Face config.json"
MAX_NAME_CHARS = 120


def read_core(reader: ConfigReader, model_type: str, family: Family) -> Core:
    """Layers, hidden, heads, vocab and context, each checked against the ModelSpec bounds."""
    context_required = family.default_context_tokens is None
    return Core(
        model_type=model_type,
        layers=reader.shape(LAYERS_KEYS, "layers", required=True),
        hidden=reader.shape(HIDDEN_KEYS, "hidden", required=True),
        heads=reader.shape(HEADS_KEYS, "heads", required=True),
        vocab=reader.shape("vocab_size", "vocab", required=True),
        context_window_tokens=reader.shape(
            CONTEXT_KEYS, "context_window_tokens", required=context_required, default=family.default_context_tokens
        ),
    )


def read_attention(reader: ConfigReader, family: Family, core: Core) -> Attention:
    """MLA when ``kv_lora_rank`` > 0 (any family), else ``head_dim`` and the family's KV heads."""
    kv_lora_rank = reader.shape("kv_lora_rank", "kv_lora_rank", minimum=0, default=0) or 0
    if kv_lora_rank:
        return mla_attention(reader, core, kv_lora_rank)
    head_dim = reader.shape("head_dim", "head_dim")
    kv_heads = family.kv_heads(reader, core)
    if head_dim is None:
        head_dim = head_dim_from_hidden(reader, core)
    return Attention(kv_heads=kv_heads, head_dim=head_dim)


def read_mlp(reader: ConfigReader, family: Family, core: Core) -> Mlp:
    """Routed experts when the config has their keys (and the family allows them), else the family's MLP."""
    mlp = routed_experts_mlp(reader, core) if family.routed_experts else None
    if mlp is None:
        return family.dense_mlp(reader, core)
    return mlp if mlp.experts else Mlp(ffn=mlp.ffn)


def _label(reader: ConfigReader, name: str | None, model_type: str) -> str:
    """The caller's ``name`` (stripped), else the config's own (``default_name``), at most 120 characters."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string, not {type(name).__name__}")
    chosen = name if name and name.strip() else default_name(reader, model_type)
    return chosen.strip()[:MAX_NAME_CHARS]


def _spec(reader: ConfigReader, fields: dict[str, Any]) -> ModelSpec:
    """``ModelSpec`` of ``fields``; a bound broken by a derived value is reported under its config.json key."""
    try:
        return ModelSpec.model_validate(fields)
    except ValidationError as exc:
        parts = []
        for e in exc.errors():
            field = ".".join(str(x) for x in e["loc"])
            key = reader.origin.get(field)
            where = f"'{key}' ({field})" if key else (field or "(model)")
            parts.append(f"{where}: {e['msg']}")
        raise ValueError(OUT_OF_BOUNDS + "; ".join(parts)) from None


def model_from_hf_config(config: str | bytes | dict, name: str | None = None) -> ModelSpec:
    """Map a Hugging Face ``config.json`` (text or parsed dict) to a :class:`ModelSpec`.

    Raises ``ValueError`` naming the offending config.json field(s) for a missing,
    mistyped or out-of-bounds field, invalid JSON, or text over ``MAX_CONFIG_BYTES``
    (every problem at once); ``TypeError`` for a ``config`` or ``name`` of the wrong type.
    """
    reader = ConfigReader(language_model_config(parse_config(config)))
    model_type = (reader.text("model_type") or "").lower()
    family = family_for(model_type)
    core = read_core(reader, model_type, family)
    attention = read_attention(reader, family, core)
    mlp = read_mlp(reader, family, core)
    tied = reader.flag("tie_word_embeddings", family.tied_by_default)
    qkv_bias = family.qkv_bias(reader)
    window, window_layers = sliding_window(reader, family, core.layers) if core.layers else (0, 0)
    label = _label(reader, name, model_type)
    problems = reader.message()
    if problems:
        raise ValueError(problems)
    return _spec(
        reader,
        {
            "name": label,
            "layers": core.layers,
            "hidden": core.hidden,
            "heads": core.heads,
            "vocab": core.vocab,
            "context_window_tokens": core.context_window_tokens,
            "tied_embeddings": tied,
            "gated_mlp": family.gated_mlp,
            "qkv_bias": qkv_bias,
            **vars(attention),
            **vars(mlp),
            "sliding_window_tokens": window,
            "sliding_window_layers": window_layers,
            "source": SOURCE,
        },
    )


def model_and_quantization_from_hf_config(
    config: str | bytes | dict, name: str | None = None
) -> tuple[ModelSpec, WeightQuant | None]:
    """``model_from_hf_config`` plus the checkpoint's weight quantisation (its ``quantization_config``,
    ``planner.model.hf_import.quantization``), None for a 16-bit checkpoint; ``ValueError`` names a
    field of either that cannot be read."""
    data = parse_config(config)
    return model_from_hf_config(data, name), quantization_from_config(data)
