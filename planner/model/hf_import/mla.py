"""DeepSeek-V2/V3 multi-head latent attention (MLA), chosen by ``kv_lora_rank`` > 0 in any family.

The KV cache holds the ``kv_lora_rank`` latent plus the decoupled RoPE key;
``q_lora_rank`` may be null (no query compression).  ``head_dim`` is set to
``qk_nope_head_dim + qk_rope_head_dim`` and every head reads the shared latent,
so ``kv_heads`` = ``heads``.
"""

from __future__ import annotations

from planner.model.hf_import.parts import Attention, Core
from planner.model.hf_import.reader import ConfigReader

#: The per-head widths MLA needs (each required).
MLA_HEAD_DIMS = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


def mla_attention(reader: ConfigReader, core: Core, kv_lora_rank: int) -> Attention:
    """The MLA fields of a config whose ``kv_lora_rank`` is ``kv_lora_rank`` (> 0)."""
    q_lora_rank = reader.shape("q_lora_rank", "q_lora_rank", minimum=0, default=0) or 0
    rope, nope, value = (reader.shape(key, key, required=True) or 0 for key in MLA_HEAD_DIMS)
    return Attention(
        kv_heads=core.heads,
        head_dim=(nope + rope) or None,
        kv_lora_rank=kv_lora_rank,
        q_lora_rank=q_lora_rank,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=value,
    )
