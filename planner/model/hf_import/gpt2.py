"""GPT-2: a GELU MLP (not gated) of ``n_inner`` or 4 × hidden, Q/K/V biases, tied embeddings.

The ``n_layer``/``n_embd``/``n_head`` names are aliases every family accepts
(``reader``).
"""

from __future__ import annotations

from planner.model.hf_import.dense import FFN_KEYS
from planner.model.hf_import.parts import Core, Mlp
from planner.model.hf_import.reader import ConfigReader

#: GPT-2's MLP without ``n_inner`` is this many times the hidden size.
GPT2_FFN_PER_HIDDEN = 4


def gpt2_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """``n_inner`` (or ``intermediate_size``), else 4 × hidden."""
    ffn = reader.shape(FFN_KEYS, "ffn")
    if ffn is None and core.hidden:
        ffn = GPT2_FFN_PER_HIDDEN * core.hidden
    return Mlp(ffn=ffn)
