"""OPT: ``ffn_dim``, a ReLU MLP (not gated), biases (``enable_bias``), tied embeddings.

``word_embed_proj_dim`` different from ``hidden_size`` (only OPT-350m) cannot
be represented; the embedding is counted at ``hidden_size`` (the key is
type-checked only).
"""

from __future__ import annotations

from planner.model.hf_import.parts import Core, Mlp
from planner.model.hf_import.reader import ConfigReader


def opt_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """``ffn_dim`` (required); the projection and layer-norm keys are only type-checked."""
    ffn = reader.shape("ffn_dim", "ffn", required=True)
    reader.integer("word_embed_proj_dim")
    reader.flag("do_layer_norm_before", True)
    return Mlp(ffn=ffn)


def opt_bias(reader: ConfigReader) -> bool:
    """Q/K/V bias as ``enable_bias`` says (default true)."""
    return reader.flag("enable_bias", True)
