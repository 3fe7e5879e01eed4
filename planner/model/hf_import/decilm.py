"""DeciLM / Nemotron-NAS (``nemotron-nas``, e.g. Llama-3.3-Nemotron-Super-49B): a shape per block.

``block_configs`` holds one entry per layer: ``attention`` with ``n_heads_in_group``
(KV heads = ``num_attention_heads`` / it) or ``no_op`` (the block has no attention and
caches nothing), and ``ffn`` with ``ffn_mult`` or ``no_op``.  An FFN multiplier becomes
the width int(2 · ffn_mult · d / 3) rounded up to a multiple of 256 (the model's own
``_ffn_mult_to_intermediate_size``).  The planner takes one KV-head count for all
attention layers (a config whose attention blocks differ is refused, naming the counts)
and the mean FFN width rounded to a multiple of 256 (every block's width is one, so the tp
values vLLM accepts stay the model's; the totals move by < 0.3 %).  Blocks ``replace_with_linear``
are refused: the planner has no term for them.
"""

from __future__ import annotations

import math
from typing import Any

from planner.model.hf_import.parts import Core, LayerKinds, Mlp
from planner.model.hf_import.reader import ConfigReader

#: DeciLM rounds FFN widths up to a multiple of this.
FFN_MULTIPLE = 256


def ffn_width(ffn_mult: float, hidden: int) -> int:
    """DeciLM's ``_ffn_mult_to_intermediate_size``: int(2·m·d/3) rounded up to a multiple of 256."""
    width = int(2 * ffn_mult * hidden / 3)
    return math.ceil(width / FFN_MULTIPLE) * FFN_MULTIPLE


def _blocks(reader: ConfigReader, core: Core) -> list[dict[str, Any]]:
    """``block_configs``, one dict with ``attention`` and ``ffn`` dicts per layer ([] after a problem)."""
    blocks = reader.cfg.get("block_configs")
    if not isinstance(blocks, list) or not all(
        isinstance(b, dict) and isinstance(b.get("attention"), dict) and isinstance(b.get("ffn"), dict) for b in blocks
    ):
        reader.problems.append(
            "config.json field 'block_configs' must be a list of {'attention': {...}, 'ffn': {...}} per layer"
        )
        return []
    if core.layers and len(blocks) != core.layers:
        reader.problems.append(f"config.json field 'block_configs' has {len(blocks)} entries for {core.layers} layers")
        return []
    if any(b["attention"].get("replace_with_linear") or b["ffn"].get("replace_with_linear") for b in blocks):
        reader.problems.append(
            "config.json field 'block_configs' has replace_with_linear blocks, which the planner cannot represent"
        )
        return []
    return blocks


def decilm_kv_heads(reader: ConfigReader, core: Core) -> int | None:
    """KV heads of the attention blocks: heads / ``n_heads_in_group``, one value for all of them."""
    groups = {b["attention"].get("n_heads_in_group") for b in _blocks(reader, core) if not b["attention"].get("no_op")}
    if not groups or not all(isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in groups):
        reader.problems.append("config.json field 'block_configs' needs 'n_heads_in_group' > 0 on attention blocks")
        return None
    if len(groups) > 1:
        reader.problems.append(
            f"config.json field 'block_configs' gives attention blocks different KV-head groupings "
            f"(n_heads_in_group {sorted(groups)}); the planner needs one KV-head count for every attention layer"
        )
        return None
    group = groups.pop()
    if core.heads and core.heads % group:
        reader.problems.append(f"'n_heads_in_group' {group} does not divide 'num_attention_heads' {core.heads}")
        return None
    return core.heads // group if core.heads else None


def decilm_layers(reader: ConfigReader, core: Core) -> LayerKinds:
    """No-op attention blocks are attention-free, no-op FFN blocks MLP-free."""
    blocks = _blocks(reader, core)
    return LayerKinds(
        attention_free_layers=sum(1 for b in blocks if b["attention"].get("no_op")),
        mlp_free_layers=sum(1 for b in blocks if b["ffn"].get("no_op")),
    )


def decilm_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """The mean FFN width of the blocks that have one."""
    mults = [b["ffn"].get("ffn_mult") for b in _blocks(reader, core) if not b["ffn"].get("no_op")]
    if not mults or not all(isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0 for m in mults):
        reader.problems.append("config.json field 'block_configs' needs 'ffn_mult' > 0 on FFN blocks")
        return Mlp(ffn=None)
    widths = [ffn_width(float(m), core.hidden or 0) for m in mults]
    # rounded to the multiple every block's width is, so the tp values vLLM accepts stay the model's
    return Mlp(ffn=max(FFN_MULTIPLE, round(sum(widths) / len(widths) / FFN_MULTIPLE) * FFN_MULTIPLE))
