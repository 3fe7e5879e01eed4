"""Llama / Mistral / Qwen-style dense decoders: MHA, GQA or MQA, a gated MLP of ``intermediate_size``.

KV heads from ``num_key_value_heads`` (absent or null: MHA, one KV head per
head); ``head_dim`` explicit or ``hidden_size // num_attention_heads``.
Sliding windows: Mistral (and any family not listed) puts ``sliding_window``
on every layer unless ``use_sliding_window`` is false; Qwen2/Qwen3 only when
``use_sliding_window`` is true (default false), on the layers at index >=
``max_window_layers`` (default 28); Llama ignores the key.
"""

from __future__ import annotations

from planner.model.hf_import.parts import Core, Mlp
from planner.model.hf_import.reader import ConfigReader

KV_HEADS_KEYS = ("num_key_value_heads", "num_kv_heads", "n_head_kv")
FFN_KEYS = ("intermediate_size", "n_inner", "ffn_dim")
#: Qwen2's default ``max_window_layers``: the layers below it use full attention.
QWEN_MAX_WINDOW_LAYERS = 28


def gqa_kv_heads(reader: ConfigReader, core: Core) -> int | None:
    """``num_key_value_heads`` (or an alias); absent: as many as the attention heads (MHA).

    A list (one entry per layer, as OpenELM writes it) is read when every layer has the
    same count; layers that differ are refused, naming the counts: the planner holds one
    KV-head count for all attention layers.  Gemma-4-style global layers with their own
    ``num_global_key_value_heads`` / ``global_head_dim`` are refused the same way."""
    _global_layers_differ(reader)
    key = next((k for k in KV_HEADS_KEYS if reader.cfg.get(k) is not None), None)
    per_layer = reader.cfg.get(key) if key else None
    if not isinstance(per_layer, list):
        return reader.shape(KV_HEADS_KEYS, "kv_heads", default=core.heads)
    counts = set(per_layer)
    if not per_layer or not all(isinstance(g, int) and not isinstance(g, bool) and g > 0 for g in counts):
        reader.problems.append(f"config.json field '{key}' must be an integer or a list of integers > 0 per layer")
        return None
    if len(counts) > 1:
        reader.problems.append(
            f"config.json field '{key}' gives the layers different KV-head counts ({sorted(counts)[:8]}); "
            "the planner needs one KV-head count for every attention layer"
        )
        return None
    if core.layers and len(per_layer) != core.layers:
        reader.problems.append(f"config.json field '{key}' has {len(per_layer)} entries for {core.layers} layers")
        return None
    return counts.pop()


def _global_layers_differ(reader: ConfigReader) -> None:
    """A problem when global layers declare their own KV heads or head size (Gemma 4)."""
    for key, base in (("num_global_key_value_heads", "num_key_value_heads"), ("global_head_dim", "head_dim")):
        value, base_value = reader.cfg.get(key), reader.cfg.get(base)
        if value is not None and value != base_value:
            reader.problems.append(
                f"config.json field '{key}' ({value!r:.20}) differs from '{base}' ({base_value!r:.20}): the global "
                "layers cache a different K/V width; the planner needs one width for every attention layer"
            )


def head_dim_from_hidden(reader: ConfigReader, core: Core) -> int | None:
    """``hidden // heads`` when it divides evenly; otherwise a problem asking for ``head_dim``."""
    if not (core.hidden and core.heads):
        return None
    if core.hidden % core.heads:
        hidden_key = reader.origin.get("hidden", "hidden_size")
        heads_key = reader.origin.get("heads", "num_attention_heads")
        reader.problems.append(
            f"config.json field '{hidden_key}' ({core.hidden}) is not divisible by "
            f"'{heads_key}' ({core.heads}); give 'head_dim'"
        )
        return None
    return core.hidden // core.heads


def dense_mlp(reader: ConfigReader, core: Core) -> Mlp:
    """A dense MLP of ``intermediate_size`` (required)."""
    return Mlp(ffn=reader.shape(FFN_KEYS, "ffn", required=True))


def attention_bias(reader: ConfigReader) -> bool:
    """Q/K/V bias as the config's ``attention_bias`` says (default false)."""
    return reader.flag("attention_bias", False)


def always_bias(reader: ConfigReader) -> bool:
    """Families whose Q/K/V projections always carry a bias (Qwen2, GPT-2)."""
    return True


def no_window(reader: ConfigReader, layers: int) -> int:
    """Families whose attention ignores a ``sliding_window`` key in their config."""
    return 0


def every_layer(reader: ConfigReader, layers: int) -> int:
    """Mistral's rule: the window on every layer unless ``use_sliding_window`` is false."""
    return layers if reader.flag("use_sliding_window", True) else 0


def qwen_upper_layers(reader: ConfigReader, layers: int) -> int:
    """Qwen2/Qwen3: only when ``use_sliding_window`` is true, on layers at index >= ``max_window_layers``."""
    if not reader.flag("use_sliding_window", False):
        return 0
    first = reader.integer("max_window_layers", default=QWEN_MAX_WINDOW_LAYERS, minimum=0)
    full_layers = QWEN_MAX_WINDOW_LAYERS if first is None else first
    return max(0, min(layers, layers - full_layers))
