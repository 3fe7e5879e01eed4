"""``model_from_hf_config``: config.json -> ModelSpec, step by step (see the package docstring)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from planner.model.hf_import.dense import head_dim_from_hidden
from planner.model.hf_import.families import family_for
from planner.model.hf_import.guards import not_a_decoder
from planner.model.hf_import.mla import mla_attention
from planner.model.hf_import.moe import routed_experts_mlp
from planner.model.hf_import.parts import Attention, Core, Family, LayerKinds, Mlp, StateMixer
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
from planner.model.hf_import.sliding import layer_kinds
from planner.model.specs import ModelSpec

SOURCE = "Hugging Face config.json"
MAX_LAYERS = 1000
MAX_NAME_CHARS = 120
#: ``head_dim`` and the alias Nemotron-H uses.
HEAD_DIM_KEYS = ("head_dim", "attention_head_dim")

_IDENTIFIER = re.compile(r"[A-Za-z0-9_]+")


def read_core(reader: ConfigReader, model_type: str, family: Family) -> Core:
    """Layers, hidden, heads, vocab and context, each checked against the ModelSpec bounds."""
    context_required = family.default_context_tokens is None
    return Core(
        model_type=model_type,
        layers=_layer_count(reader),
        hidden=reader.shape(HIDDEN_KEYS, "hidden", required=True),
        heads=reader.shape(HEADS_KEYS, "heads", required=True),
        vocab=reader.shape("vocab_size", "vocab", required=family.default_vocab is None, default=family.default_vocab),
        context_window_tokens=reader.shape(
            CONTEXT_KEYS, "context_window_tokens", required=context_required, default=family.default_context_tokens
        ),
    )


def _layer_count(reader: ConfigReader) -> int | None:
    """``num_hidden_layers`` (or an alias); else the length of a ``layers_block_type`` list (Nemotron-3)."""
    blocks = reader.cfg.get("layers_block_type")
    if not any(reader.cfg.get(k) is not None for k in LAYERS_KEYS) and isinstance(blocks, list) and blocks:
        reader.origin["layers"] = "layers_block_type"
        return len(blocks) if len(blocks) <= MAX_LAYERS else reader.shape(LAYERS_KEYS, "layers", required=True)
    return reader.shape(LAYERS_KEYS, "layers", required=True)


def read_attention(reader: ConfigReader, family: Family, core: Core) -> Attention:
    """MLA when ``kv_lora_rank`` > 0 (any family), else ``head_dim`` and the family's KV heads."""
    kv_lora_rank = reader.shape("kv_lora_rank", "kv_lora_rank", minimum=0, default=0) or 0
    if kv_lora_rank:
        return mla_attention(reader, core, kv_lora_rank)
    head_dim = reader.shape(HEAD_DIM_KEYS, "head_dim")
    kv_heads = family.kv_heads(reader, core)
    if head_dim is None:
        head_dim = head_dim_from_hidden(reader, core)
    return Attention(kv_heads=kv_heads, head_dim=head_dim)


def read_mlp(reader: ConfigReader, family: Family, core: Core) -> Mlp:
    """The family's own MLP rule, else routed experts when the config has their keys (and the
    family allows them), else the family's dense MLP."""
    if family.mlp is not None:
        return family.mlp(reader, core)
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


def read_state(reader: ConfigReader, family: Family, core: Core, kinds: LayerKinds) -> StateMixer:
    """The state layers' size and weights (zero when the model has none)."""
    if not kinds.state_layers or family.state_mixer is None:
        return StateMixer()
    return family.state_mixer(reader, core)


def model_fields(reader: ConfigReader, name: str | None) -> dict[str, Any]:
    """Every ModelSpec field the config gives, read in steps (core, attention, MLP, layer kinds,
    state, flags); problems are collected on ``reader``.  New readers add their fields here."""
    model_type = (reader.text("model_type") or "").lower()
    family = family_for(model_type)
    core = read_core(reader, model_type, family)
    attention = read_attention(reader, family, core)
    mlp = read_mlp(reader, family, core)
    kinds = layer_kinds(reader, family, core)
    state = read_state(reader, family, core, kinds)
    folded = {k: v for k, v in vars(kinds).items() if k != "layers"}
    return {
        "name": _label(reader, name, model_type),
        "layers": kinds.layers or core.layers,
        "hidden": core.hidden,
        "heads": core.heads,
        "vocab": core.vocab,
        "context_window_tokens": core.context_window_tokens,
        "tied_embeddings": reader.flag("tie_word_embeddings", family.tied_by_default),
        "gated_mlp": family.gated_mlp,
        "qkv_bias": family.qkv_bias(reader),
        "attention_sinks": family.attention_sinks,
        "attention_output_gate": family.output_gate(reader) if family.output_gate else False,
        **vars(attention),
        **vars(mlp),
        **folded,
        **vars(state),
        "architecture": _architecture(reader),
        "mtp_layers": _mtp_layers(reader, model_type),
        "source": SOURCE,
    }


def _architecture(reader: ConfigReader) -> str:
    """``architectures[0]`` when it is a class name (SGLang keys its hybrid sliding-window memory on it), else ''."""
    arch = reader.cfg.get("architectures")
    first = arch[0] if isinstance(arch, list) and arch else None
    return first if isinstance(first, str) and len(first) <= 120 and _IDENTIFIER.fullmatch(first) else ""


#: The multi-token-prediction layers a checkpoint ships: DeepSeek-V3/R1, Kimi, GLM, Nemotron-3 name them
#: ``num_nextn_predict_layers`` (vLLM's speculative config reads it as n_predict), Qwen3.5 ``mtp_num_hidden_layers``.
MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
#: Families whose checkpoint ships an MTP layer its config.json does not count: Qwen3-Next
#: (vLLM qwen3_next_mtp.py: ``self.num_mtp_layers = getattr(config, "num_nextn_predict_layers", 1)``,
#: vllm-project/vllm@055e47c28003156421365af985d676fc921cb075).
MTP_DEFAULT_BY_TYPE = {"qwen3_next": 1}


def _mtp_layers(reader: ConfigReader, model_type: str) -> int:
    default = MTP_DEFAULT_BY_TYPE.get(model_type, 0)
    return reader.shape(MTP_KEYS, "mtp_layers", minimum=0, default=default) or 0


def model_from_hf_config(config: str | bytes | dict, name: str | None = None) -> ModelSpec:
    """Map a Hugging Face ``config.json`` (text or parsed dict) to a :class:`ModelSpec`.

    Raises ``ValueError`` naming the offending config.json field(s) for a missing,
    mistyped or out-of-bounds field, invalid JSON, text over ``MAX_CONFIG_BYTES``, or a
    config that is not a decoder-only transformer (every problem at once); ``TypeError``
    for a ``config`` or ``name`` of the wrong type.
    """
    reader = ConfigReader(language_model_config(parse_config(config)))
    refused = not_a_decoder(reader.cfg, (reader.text("model_type") or "").lower())
    if refused:
        raise ValueError(refused)
    fields = model_fields(reader, name)
    problems = reader.message()
    if problems:
        raise ValueError(problems)
    return _spec(reader, fields)


def model_and_quantization_from_hf_config(
    config: str | bytes | dict, name: str | None = None
) -> tuple[ModelSpec, WeightQuant | None]:
    """``model_from_hf_config`` plus the checkpoint's weight quantisation (its ``quantization_config``,
    ``planner.model.hf_import.quantization``), None for a 16-bit checkpoint; ``ValueError`` names a
    field of either that cannot be read."""
    data = parse_config(config)
    return model_from_hf_config(data, name), quantization_from_config(data)
