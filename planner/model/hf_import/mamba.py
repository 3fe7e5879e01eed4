"""Mamba hybrids: Jamba (Mamba-1 layers, MoE every other layer) and Nemotron-H (Mamba-2 blocks).

**Jamba** (transformers ``JambaConfig``): layer i is attention when
i % ``attn_layer_period`` (8) == ``attn_layer_offset`` (4), else Mamba-1; its MLP is MoE
(``num_experts`` of ``intermediate_size``, ``num_experts_per_tok``) when
i % ``expert_layer_period`` (2) == ``expert_layer_offset`` (1), else dense.  A Mamba-1
layer of I = ``mamba_expand`` · d has the weights

  in_proj d·2I   conv1d I·d_conv (+ I bias)   x_proj I·(r + 2·d_state)   dt_proj r·I + I
  A_log I·d_state   D I   out_proj I·d   dt/B/C norms r + 2·d_state      (r = ``mamba_dt_rank``)

**Nemotron-H** (``hybrid_override_pattern``, one character per block: ``M`` Mamba-2,
``*`` attention, ``-`` MLP, ``E`` MoE): every block is a mixer or an MLP, so the planner
folds them into layers of one mixer and at most one MLP: layers = max(mixers, MLPs),
the mixer-less ones attention-free, the MLP-less ones MLP-free.  MLPs are squared-ReLU
(not gated).  A Mamba-2 layer of I = ``mamba_num_heads`` · ``mamba_head_dim`` has

  in_proj d·(2I + 2·n_g·d_state + n_heads)   conv1d (I + 2·n_g·d_state)·d_conv (+ bias)
  dt_bias, A_log, D 3·n_heads   norm I   out_proj I·d

State sizes: ``state``.  Counting the folded blocks as layers gives 2 all-reduces per
layer where Nemotron-H has one per block (128 vs 118 for the 56B).
"""

from __future__ import annotations

import math

from planner.model.hf_import.dense import FFN_KEYS
from planner.model.hf_import.parts import Core, LayerKinds, Mlp, StateMixer
from planner.model.hf_import.reader import ConfigReader
from planner.model.hf_import.state import (
    mamba1_elements,
    mamba2_elements,
    model_dtype_bytes,
    ssm_dtype_bytes,
    state_bytes,
)

#: transformers JambaConfig defaults.
JAMBA_ATTN_PERIOD, JAMBA_ATTN_OFFSET = 8, 4
JAMBA_EXPERT_PERIOD, JAMBA_EXPERT_OFFSET = 2, 1
JAMBA_EXPERTS, JAMBA_EXPERTS_PER_TOKEN = 16, 2
JAMBA_D_STATE, JAMBA_D_CONV, JAMBA_EXPAND = 16, 4, 2
#: Mamba-1's default dt rank is ⌈d / 16⌉ ("auto").
DT_RANK_DIVISOR = 16
#: Nemotron-H block characters.
MAMBA, ATTENTION, MLP, MOE = "M", "*", "-", "E"
BLOCK_NAMES = {"mamba": MAMBA, "attention": ATTENTION, "mlp": MLP, "moe": MOE}
#: vLLM NemotronHForCausalLMConfig.DEFAULT_MAMBA_SSM_CACHE_DTYPE = "float32".
NEMOTRON_SSM_BYTES = 4


def _periodic(layers: int, period: int, offset: int) -> int:
    """Layers i with i % period == offset."""
    return sum(1 for i in range(layers) if i % period == offset)


def jamba_layers(reader: ConfigReader, core: Core) -> LayerKinds:
    """Attention every ``attn_layer_period`` layers from ``attn_layer_offset``; Mamba elsewhere."""
    layers = core.layers or 0
    period = reader.integer("attn_layer_period", default=JAMBA_ATTN_PERIOD) or JAMBA_ATTN_PERIOD
    offset = reader.integer("attn_layer_offset", minimum=0, default=JAMBA_ATTN_OFFSET) or 0
    return LayerKinds(state_layers=layers - _periodic(layers, period, offset))


def jamba_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """MoE every ``expert_layer_period`` layers from ``expert_layer_offset``; dense elsewhere."""
    ffn = reader.shape(FFN_KEYS, "ffn", required=True)
    experts = reader.shape("num_experts", "experts", default=JAMBA_EXPERTS) or 0
    per_token = reader.shape("num_experts_per_tok", "experts_per_token", default=JAMBA_EXPERTS_PER_TOKEN) or 0
    period = reader.integer("expert_layer_period", default=JAMBA_EXPERT_PERIOD) or JAMBA_EXPERT_PERIOD
    offset = reader.integer("expert_layer_offset", minimum=0, default=JAMBA_EXPERT_OFFSET) or 0
    layers = core.layers or 0
    moe = _periodic(layers, period, offset) if experts > 1 else 0
    if not moe:
        return Mlp(ffn=ffn)
    return Mlp(ffn, experts, per_token, 0, ffn or 0, layers - moe)


def mamba1_state(reader: ConfigReader, core: Core) -> StateMixer:
    """State bytes and weights of one Jamba Mamba-1 layer (module doc)."""
    d = core.hidden or 0
    d_state = reader.integer("mamba_d_state", default=JAMBA_D_STATE) or JAMBA_D_STATE
    d_conv = reader.integer("mamba_d_conv", default=JAMBA_D_CONV) or JAMBA_D_CONV
    expand = reader.integer("mamba_expand", default=JAMBA_EXPAND) or JAMBA_EXPAND
    rank_value = reader.cfg.get("mamba_dt_rank")
    rank = math.ceil(d / DT_RANK_DIVISOR) if rank_value in (None, "auto") else reader.integer("mamba_dt_rank") or 0
    inner = expand * d
    conv, ssm = mamba1_elements(inner, d_conv, d_state)
    b = model_dtype_bytes(reader)
    conv_bias = inner if reader.flag("mamba_conv_bias", True) else 0
    proj_bias = 2 * inner + d if reader.flag("mamba_proj_bias", False) else 0  # in_proj 2I, out_proj d
    params = (
        d * 2 * inner
        + inner * d_conv
        + conv_bias
        + inner * (rank + 2 * d_state)
        + rank * inner
        + inner
        + inner * d_state
        + inner
        + inner * d
        + rank
        + 2 * d_state
        + proj_bias
    )
    return StateMixer(state_bytes(conv, ssm, b, ssm_dtype_bytes(reader, b)), params)


def _block_types(reader: ConfigReader) -> str | None:
    """``layers_block_type`` (newer Nemotron configs: 'mamba', 'attention', 'mlp', 'moe') as a pattern."""
    names = reader.cfg.get("layers_block_type")
    if not isinstance(names, list):
        return None
    if not all(isinstance(n, str) and n in BLOCK_NAMES for n in names):
        reader.problems.append(
            f"config.json field 'layers_block_type' may hold only {', '.join(repr(n) for n in BLOCK_NAMES)}"
        )
        return ""
    return "".join(BLOCK_NAMES[n] for n in names)


def _pattern(reader: ConfigReader, core: Core) -> str:
    """``hybrid_override_pattern`` (or ``layers_block_type``), one known character per layer ('' after a problem)."""
    pattern = reader.cfg.get("hybrid_override_pattern")
    if pattern is None:
        pattern = _block_types(reader)
    if not isinstance(pattern, str) or not pattern:
        if pattern is None:
            reader.problems.append(
                "config.json is missing required field 'hybrid_override_pattern' (or 'layers_block_type')"
            )
        return ""
    if set(pattern) - {MAMBA, ATTENTION, MLP, MOE}:
        reader.problems.append(
            "config.json field 'hybrid_override_pattern' may hold only 'M' (Mamba-2), '*' (attention), "
            "'-' (MLP) and 'E' (MoE)"
        )
        return ""
    if core.layers and len(pattern) != core.layers:
        reader.problems.append(
            f"config.json field 'hybrid_override_pattern' has {len(pattern)} blocks for "
            f"'num_hidden_layers' {core.layers}"
        )
        return ""
    return pattern


def nemotron_h_layers(reader: ConfigReader, core: Core) -> LayerKinds:
    """Fold the blocks into layers of one mixer and one MLP (module doc)."""
    pattern = _pattern(reader, core)
    if not pattern:
        return LayerKinds()
    mixers = pattern.count(MAMBA) + pattern.count(ATTENTION)
    mlps = pattern.count(MLP) + pattern.count(MOE)
    layers = max(mixers, mlps)
    return LayerKinds(
        state_layers=pattern.count(MAMBA),
        attention_free_layers=layers - mixers,
        mlp_free_layers=layers - mlps,
        layers=layers,
    )


def nemotron_h_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """Squared-ReLU MLPs (``intermediate_size``), MoE blocks ``E`` of ``n_routed_experts``.

    Latent MoE (``moe_latent_size`` ℓ, Nemotron-3-Super/Ultra): the routed experts work in
    ℓ dimensions between a down (d·ℓ) and an up (ℓ·d) projection that every token passes.
    The planner writes an expert of width f as one of width ℓ·f/d on the full d (the same
    weights and FLOPs) and the two projections as ℓ more width of the shared expert."""
    ffn = reader.shape(FFN_KEYS, "ffn", required=True)
    pattern = reader.cfg.get("hybrid_override_pattern")
    if pattern is None:
        pattern = _block_types(reader) or ""
    moe_blocks = pattern.count(MOE) if isinstance(pattern, str) else 0
    if not moe_blocks:
        return Mlp(ffn=ffn)
    experts = reader.shape("n_routed_experts", "experts", required=True) or 0
    per_token = reader.shape("num_experts_per_tok", "experts_per_token", required=True) or 0
    shared = reader.shape("n_shared_experts", "shared_experts", minimum=0, default=0) or 0
    moe_ffn = reader.shape("moe_intermediate_size", "moe_ffn", required=True) or 0
    shared_ffn = (reader.integer("moe_shared_expert_intermediate_size", minimum=0, default=0) or 0) if shared else 0
    latent = reader.integer("moe_latent_size", default=0) or 0
    if latent and core.hidden:
        moe_ffn = max(1, round(latent * moe_ffn / core.hidden))
        shared, shared_ffn = 1, shared_ffn + latent
    dense = pattern.count(MLP) if isinstance(pattern, str) else 0
    return Mlp(ffn, experts, per_token, shared, moe_ffn, dense, shared_ffn)


def mamba2_state(reader: ConfigReader, core: Core) -> StateMixer:
    """State bytes and weights of one Nemotron-H Mamba-2 layer (module doc)."""
    d = core.hidden or 0
    heads = reader.integer("mamba_num_heads", required=True) or 0
    head_dim = reader.integer("mamba_head_dim", required=True) or 0
    groups = reader.integer("n_groups", default=1) or 1
    d_state = reader.integer("ssm_state_size", required=True) or 0
    d_conv = reader.integer("conv_kernel", default=JAMBA_D_CONV) or JAMBA_D_CONV
    conv, ssm = mamba2_elements(heads, head_dim, groups, d_state, d_conv)
    inner = heads * head_dim
    conv_dim = inner + 2 * groups * d_state
    conv_bias = conv_dim if reader.flag("use_conv_bias", True) else 0
    params = d * (2 * inner + 2 * groups * d_state + heads) + conv_dim * d_conv + conv_bias + 3 * heads + inner
    params += inner * d
    b = model_dtype_bytes(reader)
    return StateMixer(state_bytes(conv, ssm, b, ssm_dtype_bytes(reader, NEMOTRON_SSM_BYTES)), params)
