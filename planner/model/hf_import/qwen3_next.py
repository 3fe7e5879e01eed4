"""Qwen3-Next and Qwen3.5: Gated DeltaNet linear-attention layers between full-attention ones.

Layer i is linear attention unless (i + 1) is a multiple of ``full_attention_interval``
(default 4; transformers ``Qwen3NextConfig``), or as ``layer_types`` says (Qwen3.5).  A
linear layer keeps a fixed state per sequence (``state.gated_deltanet_elements``) of
``linear_num_key_heads`` × ``linear_key_head_dim`` keys and ``linear_num_value_heads`` ×
``linear_value_head_dim`` values, with a ``linear_conv_kernel_dim`` convolution; its weights
(transformers ``Qwen3NextGatedDeltaNet``):

  in_proj_qkvz  d · (2·n_k·h_k + 2·n_v·h_v)     in_proj_ba  d · 2·n_v
  conv1d        (2·n_k·h_k + n_v·h_v) · k        dt_bias, A_log  2·n_v      norm  h_v
  out_proj      n_v·h_v · d

The full-attention layers gate their output (q_proj twice as wide: ``attention_output_gate``).
The MoE and its shared expert are read as for Qwen2-MoE (``moe``).
"""

from __future__ import annotations

from planner.model.hf_import.parts import Core, LayerKinds, StateMixer
from planner.model.hf_import.reader import ConfigReader
from planner.model.hf_import.state import gated_deltanet_elements, model_dtype_bytes, ssm_dtype_bytes, state_bytes

#: transformers Qwen3NextConfig default: every 4th layer is full attention.
FULL_ATTENTION_INTERVAL = 4
GDN_KEYS = (
    "linear_num_key_heads",
    "linear_key_head_dim",
    "linear_num_value_heads",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
)


def qwen3_next_layers(reader: ConfigReader, core: Core) -> LayerKinds:
    """Linear-attention layers: all but every ``full_attention_interval``-th."""
    layers = core.layers or 0
    interval = reader.integer("full_attention_interval", default=FULL_ATTENTION_INTERVAL) or FULL_ATTENTION_INTERVAL
    return LayerKinds(state_layers=layers - layers // interval)


def gated_deltanet_state(reader: ConfigReader, core: Core) -> StateMixer:
    """State bytes and weights of one Gated DeltaNet layer (module doc)."""
    nk, hk, nv, hv, kernel = (reader.integer(key, required=True) or 0 for key in GDN_KEYS)
    conv, ssm = gated_deltanet_elements(nk, hk, nv, hv, kernel)
    conv_bytes = model_dtype_bytes(reader)
    d = core.hidden or 0
    conv_dim = 2 * nk * hk + nv * hv
    params = d * (2 * nk * hk + 2 * nv * hv) + d * 2 * nv + conv_dim * kernel + 2 * nv + hv + nv * hv * d
    return StateMixer(
        state_bytes_per_layer=state_bytes(conv, ssm, conv_bytes, ssm_dtype_bytes(reader, conv_bytes)),
        state_params_per_layer=params,
    )


def qwen3_next_output_gate(reader: ConfigReader) -> bool:
    """Qwen3-Next always gates its attention output; Qwen3.5 as ``attn_output_gate`` says (default true)."""
    return reader.flag("attn_output_gate", True)
