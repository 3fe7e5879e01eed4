"""Mixture-of-experts MLPs, recognised by their keys whatever the ``model_type``.

* Mixtral (``num_local_experts``): ``intermediate_size`` is per expert.
* DeepSeek-V2/V3 (``n_routed_experts``): ``moe_intermediate_size`` per routed
  expert, ``n_shared_experts`` always used, the first ``first_k_dense_replace``
  layers dense and then every ``moe_layer_freq``-th layer MoE.
* Qwen2-MoE / Qwen3-MoE (``num_experts`` + ``moe_intermediate_size``): one
  shared expert of ``shared_expert_intermediate_size`` when it is set; layer i
  is MoE when (i + 1) is a multiple of ``decoder_sparse_step`` and i is not in
  ``mlp_only_layers``.

The layer counts loop over at most ModelSpec's 1,000 layers: the reader has
refused a larger ``num_hidden_layers`` before any of this runs.
"""

from __future__ import annotations

from planner.model.hf_import.parts import Core, Mlp
from planner.model.hf_import.reader import ConfigReader


def mixtral_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """Mixtral: every layer MoE, ``intermediate_size`` per expert, 2 experts per token by default."""
    ffn = reader.shape("intermediate_size", "ffn", required=True)
    return Mlp(
        ffn=ffn,
        experts=reader.shape("num_local_experts", "experts") or 0,
        experts_per_token=reader.shape("num_experts_per_tok", "experts_per_token", default=2) or 0,
        moe_ffn=ffn or 0,
    )


def deepseek_dense_layers(layers: int, first_dense: int, frequency: int) -> int:
    """Dense layers of a DeepSeek MoE: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0."""
    moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % frequency == 0)
    return layers - moe_layers


def deepseek_moe_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """DeepSeek-V2/V3: routed and shared experts, leading dense layers."""
    ffn = reader.shape("intermediate_size", "ffn", required=True)
    experts = reader.shape("n_routed_experts", "experts") or 0
    per_token = reader.shape("num_experts_per_tok", "experts_per_token", required=True) or 0
    shared = reader.shape("n_shared_experts", "shared_experts", minimum=0, default=0) or 0
    moe_ffn = reader.shape("moe_intermediate_size", "moe_ffn", required=True) or 0
    first_dense = reader.integer("first_k_dense_replace", minimum=0, default=0, spec_field="dense_layers") or 0
    frequency = reader.integer("moe_layer_freq", default=1) or 1
    dense = deepseek_dense_layers(core.layers, first_dense, frequency) if core.layers else 0
    return Mlp(ffn, experts, per_token, shared, moe_ffn, dense)


def _mlp_only_layers(reader: ConfigReader) -> frozenset[int]:
    """``mlp_only_layers`` as a set of layer indices (a problem unless a list of integers)."""
    only_mlp = reader.cfg.get("mlp_only_layers") or []
    if not isinstance(only_mlp, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only_mlp):
        reader.problems.append("config.json field 'mlp_only_layers' must be a list of layer indices")
        return frozenset()
    return frozenset(only_mlp)


def qwen_dense_layers(layers: int, step: int, mlp_only: frozenset[int]) -> int:
    """Dense layers of a Qwen MoE: layer i is MoE when (i + 1) % decoder_sparse_step == 0
    and i is not in mlp_only_layers."""
    moe_layers = sum(1 for i in range(layers) if i not in mlp_only and (i + 1) % step == 0)
    return layers - moe_layers


def qwen_moe_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """Qwen2-MoE / Qwen3-MoE / Qwen3-Next: routed experts plus one shared expert of
    ``shared_expert_intermediate_size``; ``intermediate_size`` (the dense MLP) is needed
    only when some layer is dense."""
    experts = reader.shape("num_experts", "experts") or 0
    per_token = reader.shape("num_experts_per_tok", "experts_per_token", required=True) or 0
    moe_ffn = reader.shape("moe_intermediate_size", "moe_ffn") or 0
    shared_ffn = reader.integer("shared_expert_intermediate_size", minimum=0, default=0) or 0
    step = reader.integer("decoder_sparse_step", default=1) or 1
    mlp_only = _mlp_only_layers(reader)
    dense = qwen_dense_layers(core.layers, step, mlp_only) if core.layers else 0
    ffn = reader.shape("intermediate_size", "ffn", required=dense > 0, default=None if dense else moe_ffn or None)
    shared = 1 if shared_ffn else 0
    return Mlp(ffn, experts, per_token, shared, moe_ffn, dense, shared_ffn)


def routed_experts_mlp(reader: ConfigReader, core: Core) -> Mlp | None:
    """The MoE MLP whose keys the config carries (checked in this order), else None."""
    cfg = reader.cfg
    if cfg.get("num_local_experts") is not None:
        return mixtral_mlp(reader, core)
    if cfg.get("n_routed_experts") is not None:
        return deepseek_moe_mlp(reader, core)
    if cfg.get("num_experts") is not None and cfg.get("moe_intermediate_size") is not None:
        return qwen_moe_mlp(reader, core)
    return None
