"""Falcon (``falcon``, ``RefinedWeb``, ``RefinedWebModel``).

With ``new_decoder_architecture`` (default true only for ``RefinedWeb``) the KV
heads are ``num_kv_heads`` (or ``n_head_kv``); otherwise ``multi_query``
(default true) means one KV head.  The MLP is ``ffn_hidden_size`` or
4 × hidden, not gated; biases as ``bias`` says (default false); the context is
2,048 tokens when the config has no ``max_position_embeddings``.
"""

from __future__ import annotations

from planner.model.hf_import.parts import Core, Mlp
from planner.model.hf_import.reader import ConfigReader

FALCON_CONTEXT_TOKENS = 2048
#: A Falcon MLP without ``ffn_hidden_size`` is this many times the hidden size.
FALCON_FFN_PER_HIDDEN = 4


def falcon_kv_heads(reader: ConfigReader, core: Core) -> int | None:
    """The new decoder architecture's KV groups, else 1 (multi-query) or one per head."""
    new_architecture = reader.flag("new_decoder_architecture", core.model_type == "refinedweb")
    multi_query = reader.flag("multi_query", True)
    if new_architecture:
        return reader.shape(("num_kv_heads", "n_head_kv"), "kv_heads", default=core.heads)
    return 1 if multi_query else core.heads


def falcon_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """``ffn_hidden_size``, else 4 × hidden."""
    ffn = reader.shape("ffn_hidden_size", "ffn")
    return Mlp(ffn=ffn or (FALCON_FFN_PER_HIDDEN * core.hidden if core.hidden else None))


def falcon_bias(reader: ConfigReader) -> bool:
    """Q/K/V bias as ``bias`` says (default false)."""
    return reader.flag("bias", False)
