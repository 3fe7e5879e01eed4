"""The pieces a family handler reads, and the handler itself (:class:`Family`).

A config is read in four steps, each a plain function of the reader: the core
shape (every family), the attention (MLA when ``kv_lora_rank`` > 0, else the
family's KV-head rule), the MLP (routed experts recognised by their keys,
else the family's dense rule), and the family's flags and sliding-window rule.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from planner.model.hf_import.reader import ConfigReader


@dataclass(frozen=True)
class Core:
    """Fields every decoder config has; None where missing or unusable (a problem is recorded)."""

    model_type: str
    layers: int | None
    hidden: int | None
    heads: int | None
    vocab: int | None
    context_window_tokens: int | None


@dataclass(frozen=True)
class Attention:
    """ModelSpec's attention fields; the MLA ranks stay 0 for MHA/GQA/MQA."""

    kv_heads: int | None
    head_dim: int | None
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0


@dataclass(frozen=True)
class LayerKinds:
    """ModelSpec's layer-kind counts (all 0: every layer full attention with an MLP).

    ``layers`` replaces the config's layer count when a family folds its blocks
    (Nemotron-H: a mixer block and an MLP block make one planner layer)."""

    sliding_window_tokens: int = 0
    sliding_window_layers: int = 0
    chunked_attention_tokens: int = 0
    chunked_attention_layers: int = 0
    state_layers: int = 0
    attention_free_layers: int = 0
    mlp_free_layers: int = 0
    layers: int | None = None


@dataclass(frozen=True)
class StateMixer:
    """What one state layer (linear attention, Mamba) costs: fixed state per sequence and weights."""

    state_bytes_per_layer: int = 0
    state_params_per_layer: int = 0


@dataclass(frozen=True)
class Mlp:
    """ModelSpec's MLP fields: ``ffn`` dense (Mixtral: per expert); the MoE counts 0 for a dense model."""

    ffn: int | None
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_ffn: int = 0
    dense_layers: int = 0
    shared_expert_ffn: int = 0


#: (reader, core) -> KV heads of a non-MLA attention.
KvHeadsRule = Callable[[ConfigReader, Core], int | None]
#: (reader, core) -> the MLP of a model without routed experts.
DenseMlpRule = Callable[[ConfigReader, Core], Mlp]
#: reader -> whether the Q/K/V projections carry a bias.
BiasRule = Callable[[ConfigReader], bool]
#: (reader, layers) -> layers that use the sliding window; called only when the config
#: sets a window and no explicit ``layer_types``.
WindowRule = Callable[[ConfigReader, int], int]
#: (reader, core) -> the layer kinds of a family with its own layout keys (no ``layer_types``).
LayerKindsRule = Callable[[ConfigReader, Core], LayerKinds]
#: (reader, core) -> the cost of one state layer.
StateRule = Callable[[ConfigReader, Core], StateMixer]


@dataclass(frozen=True)
class Family:
    """How one model family's config.json maps onto a ModelSpec (``families.FAMILIES``)."""

    label: str
    kv_heads: KvHeadsRule
    dense_mlp: DenseMlpRule
    qkv_bias: BiasRule
    window_layers: WindowRule
    gated_mlp: bool = True
    #: Whether routed-expert keys (num_local_experts, n_routed_experts, num_experts) are read.
    routed_experts: bool = True
    tied_by_default: bool = False
    #: Context when the config has none; None: ``max_position_embeddings`` is required.
    default_context_tokens: int | None = None
    #: Vocabulary when the config has none (the config class's default); None: required.
    default_vocab: int | None = None
    #: The whole MLP rule of a family whose experts follow its own keys (Llama-4, Jamba,
    #: Nemotron-H); None: routed experts by their keys, else ``dense_mlp``.
    mlp: DenseMlpRule | None = None
    #: The layer layout of a family with its own keys; None: ``layer_types``, else the window rule.
    layer_kinds: LayerKindsRule | None = None
    #: The state layer's size and weights (hybrid families).
    state_mixer: StateRule | None = None
    #: One learned sink logit per head in every attention layer (gpt-oss).
    attention_sinks: bool = False
    #: Whether the attention output is gated (Qwen3-Next, Qwen3.5: q_proj twice as wide).
    output_gate: BiasRule | None = None
