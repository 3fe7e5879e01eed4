"""A custom model shape as a compact link value (``model=custom&custom=…``).

Format: ``key`` letter(s) + integer, joined by ``-``, e.g.
``L32-H4096-A32-G8-D128-F14336-V128256-C131072``.  Only non-zero fields are
written; ``published_params`` and ``source`` are not carried.  Decoding
validates through ``ModelSpec``, so a hostile value gets a message naming the
field and never a traceback.
"""

from __future__ import annotations

import re

from pydantic import ValidationError

from planner.model.specs import ModelSpec

#: Longest link value read (the Scenario field ``custom`` has the same limit).
MAX_CUSTOM_CHARS = 600
CODES: dict[str, str] = {
    "L": "layers",
    "H": "hidden",
    "A": "heads",
    "G": "kv_heads",
    "D": "head_dim",
    "F": "ffn",
    "V": "vocab",
    "T": "tied_embeddings",
    "M": "gated_mlp",
    "B": "qkv_bias",
    "E": "experts",
    "K": "experts_per_token",
    "S": "shared_experts",
    "Fe": "moe_ffn",
    "Ld": "dense_layers",
    "Rkv": "kv_lora_rank",
    "Rq": "q_lora_rank",
    "Dr": "qk_rope_head_dim",
    "Dn": "qk_nope_head_dim",
    "Dv": "v_head_dim",
    "W": "sliding_window_tokens",
    "Lw": "sliding_window_layers",
    "C": "context_window_tokens",
    "P": "min_cacheable_prompt_tokens",
    "Wc": "chunked_attention_tokens",
    "Lc": "chunked_attention_layers",
    "Sk": "attention_sinks",
    "Og": "attention_output_gate",
    "Ls": "state_layers",
    "Sb": "state_bytes_per_layer",
    "Sp": "state_params_per_layer",
    "La": "attention_free_layers",
    "Ln": "mlp_free_layers",
    "Fs": "shared_expert_ffn",
    "Mt": "mtp_layers",
}
#: Fields written as 0/1.
FLAGS = ("tied_embeddings", "gated_mlp", "qkv_bias", "attention_sinks", "attention_output_gate")
_PART = re.compile(r"^([A-Z][a-z]{0,2})(\d{1,12})$")


def encode_model(m: ModelSpec) -> str:
    """The link value of ``m``: each non-zero field as code + integer (``gated_mlp`` always)."""
    parts = []
    for code, name in CODES.items():
        v = getattr(m, name)
        v = int(v) if isinstance(v, bool) else v
        if v or name == "gated_mlp":
            parts.append(f"{code}{int(v)}")
    return "-".join(parts)


def decode_model(text: str, name: str = "Custom model") -> ModelSpec:
    """Parse ``encode_model``'s output; ValueError names the bad part or field."""
    if not text:
        raise ValueError("custom: empty; expected e.g. L32-H4096-A32-G8-D128-F14336-V128256-C131072")
    if len(text) > MAX_CUSTOM_CHARS:
        raise ValueError(f"custom: longer than {MAX_CUSTOM_CHARS} characters")
    data: dict[str, object] = {"name": name}
    for part in text.split("-"):
        m = _PART.match(part)
        if not m or m.group(1) not in CODES:
            raise ValueError(f"custom: cannot read {part[:20]!r}; codes are {', '.join(CODES)}")
        field = CODES[m.group(1)]
        value = int(m.group(2))
        data[field] = bool(value) if field in FLAGS else value
    data.setdefault("gated_mlp", True)
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        msgs = [f"{'.'.join(map(str, e['loc'])) or 'shape'}: {e['msg']}" for e in exc.errors()]
        raise ValueError("custom: " + "; ".join(msgs)) from None
