"""Llama 4 (``llama4_text``, under ``text_config``): chunked local attention and a shared expert.

Attention (transformers ``Llama4TextConfig``, vLLM ``Llama4Attention``): a layer with
RoPE attends only within its ``attention_chunk_size``-token chunk; a NoPE layer attends
globally.  ``no_rope_layers`` holds 1 for a RoPE layer and 0 for a NoPE one; empty or
absent it defaults to [int((i + 1) % ``no_rope_layer_interval`` != 0)] (interval 4: every
4th layer global).  With no ``attention_chunk_size`` every layer attends globally.

MLP (``Llama4TextMoe``): the MoE layers (``moe_layers``, default every
``interleave_moe_layer_step``-th from step − 1) hold ``num_local_experts`` routed experts
of ``intermediate_size``, ``num_experts_per_tok`` used, plus one always-used shared
expert of the same size; the other layers are dense with ``intermediate_size_mlp``.
"""

from __future__ import annotations

from planner.model.hf_import.parts import Core, LayerKinds, Mlp
from planner.model.hf_import.reader import ConfigReader
from planner.model.hf_import.sliding import chunk_tokens

#: transformers Llama4TextConfig defaults.
NO_ROPE_LAYER_INTERVAL = 4
INTERLEAVE_MOE_LAYER_STEP = 1
SHARED_EXPERTS = 1


def _index_list(reader: ConfigReader, key: str) -> list[int] | None:
    """``key`` as a list of non-negative integers; None when absent or empty (a problem when mistyped)."""
    value = reader.cfg.get(key)
    if value is None or value == []:
        return None
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in value):
        reader.problems.append(f"config.json field '{key}' must be a list of non-negative integers")
        return None
    return value


def llama4_layers(reader: ConfigReader, core: Core) -> LayerKinds:
    """Chunked attention on the RoPE layers when ``attention_chunk_size`` is set."""
    layers = core.layers or 0
    chunk = chunk_tokens(reader)
    rope = _index_list(reader, "no_rope_layers")
    if rope is None:
        interval = reader.integer("no_rope_layer_interval", default=NO_ROPE_LAYER_INTERVAL) or NO_ROPE_LAYER_INTERVAL
        rope_layers = sum(1 for i in range(layers) if (i + 1) % interval)
    elif len(rope) < layers:
        reader.problems.append(f"config.json field 'no_rope_layers' has {len(rope)} entries for {layers} layers")
        return LayerKinds()
    else:
        rope_layers = sum(1 for flag in rope[:layers] if flag)
    if not chunk or not rope_layers:
        return LayerKinds()
    return LayerKinds(chunked_attention_tokens=chunk, chunked_attention_layers=rope_layers)


def llama4_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """Routed experts plus one shared expert on the MoE layers, dense ``intermediate_size_mlp`` elsewhere."""
    layers = core.layers or 0
    experts = reader.shape("num_local_experts", "experts", required=True) or 0
    per_token = reader.shape("num_experts_per_tok", "experts_per_token", default=1) or 0
    moe_ffn = reader.shape("intermediate_size", "moe_ffn", required=True) or 0
    ffn = reader.shape("intermediate_size_mlp", "ffn", default=moe_ffn or None)
    moe_layers = _index_list(reader, "moe_layers")
    if moe_layers is None:
        step = reader.integer("interleave_moe_layer_step", default=INTERLEAVE_MOE_LAYER_STEP) or 1
        n_moe = len(range(step - 1, layers, step))
    else:
        n_moe = len({i for i in moe_layers if i < layers})
    return Mlp(ffn, experts, per_token, SHARED_EXPERTS, moe_ffn, layers - n_moe)
