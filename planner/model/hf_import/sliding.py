"""Which layers attend how: an explicit ``layer_types`` list wins, else the family's layout rule.

``layer_types`` (one entry per layer, as transformers writes it for gpt-oss, Gemma 3,
Qwen3.5 …) may name ``full_attention``, ``sliding_attention`` (needs ``sliding_window``),
``chunked_attention`` (needs ``attention_chunk_size``) and the state layers
``linear_attention`` / ``mamba`` (need the family's state keys).  Without it a family with
its own layout keys (Llama-4, Qwen3-Next, Jamba, Nemotron-H, DeciLM) uses its rule; any
other family puts ``sliding_window`` on the layers its window rule picks, or on all but
every ``sliding_window_pattern``-th layer when the config gives a pattern (Gemma 3, Cohere 2).
"""

from __future__ import annotations

from typing import Any

from planner.model.hf_import.dense import no_window
from planner.model.hf_import.gemma import gemma3_pattern
from planner.model.hf_import.parts import Core, Family, LayerKinds
from planner.model.hf_import.reader import ConfigReader

WINDOW_KEYS = ("sliding_window", "sliding_window_size")
SLIDING = "sliding_attention"
CHUNK_KEY = "attention_chunk_size"
#: ``layer_types`` entries, by the kind of layer they name.
FULL_TYPES = frozenset({"full_attention", "attention", "global_attention"})
SLIDING_TYPES = frozenset({SLIDING, "local_attention"})
CHUNKED_TYPES = frozenset({"chunked_attention"})
STATE_TYPES = frozenset({"linear_attention", "mamba", "mamba2"})
KNOWN_TYPES = FULL_TYPES | SLIDING_TYPES | CHUNKED_TYPES | STATE_TYPES


def window_tokens(reader: ConfigReader) -> int:
    """``sliding_window`` (0 when absent or null)."""
    return reader.integer(WINDOW_KEYS, minimum=0, spec_field="sliding_window_tokens") or 0


def chunk_tokens(reader: ConfigReader) -> int:
    """``attention_chunk_size`` (0 when absent or null)."""
    return reader.integer(CHUNK_KEY, minimum=0, spec_field="chunked_attention_tokens") or 0


def _type_list(reader: ConfigReader, layer_types: Any, layers: int) -> list[str] | None:
    """``layer_types`` as a list of known kinds, one per layer; None (a problem recorded) otherwise."""
    if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
        reader.problems.append("config.json field 'layer_types' must be a list of strings")
        return None
    unknown = sorted({t for t in layer_types if t not in KNOWN_TYPES})
    if unknown:
        shown = ", ".join(repr(t[:40]) for t in unknown[:5])
        reader.problems.append(
            f"config.json field 'layer_types' names layer kinds the planner does not know ({shown}); "
            f"it knows {', '.join(sorted(KNOWN_TYPES))}"
        )
        return None
    if len(layer_types) != layers:
        reader.problems.append(f"config.json field 'layer_types' has {len(layer_types)} entries for {layers} layers")
        return None
    return layer_types


def _explicit_layer_types(reader: ConfigReader, family: Family, layer_types: Any, layers: int) -> LayerKinds:
    """The counts of each kind in ``layer_types``; a kind needs its size key."""
    types = _type_list(reader, layer_types, layers)
    if types is None:
        return LayerKinds()
    sliding = sum(1 for t in types if t in SLIDING_TYPES)
    chunked = sum(1 for t in types if t in CHUNKED_TYPES)
    state = sum(1 for t in types if t in STATE_TYPES)
    window = window_tokens(reader) if sliding else 0
    chunk = chunk_tokens(reader) if chunked else 0
    if sliding and not window:
        reader.problems.append(
            "config.json field 'layer_types' lists sliding_attention layers but 'sliding_window' is missing"
        )
    if chunked and not chunk:
        reader.problems.append(
            "config.json field 'layer_types' lists chunked_attention layers but 'attention_chunk_size' is missing"
        )
    if state and family.state_mixer is None:
        reader.problems.append(
            "config.json field 'layer_types' lists linear-attention/Mamba layers, but the planner knows their "
            "state size only for Qwen3-Next / Qwen3.5, Jamba and Nemotron-H configs"
        )
    return LayerKinds(
        sliding_window_tokens=window if sliding else 0,
        sliding_window_layers=sliding if window else 0,
        chunked_attention_tokens=chunk if chunked else 0,
        chunked_attention_layers=chunked if chunk else 0,
        state_layers=state,
    )


def _window_by_rule(reader: ConfigReader, family: Family, layers: int) -> LayerKinds:
    """``sliding_window`` on the layers the pattern (when given) or the family's rule picks."""
    window = window_tokens(reader)
    if not window:
        return LayerKinds()
    if reader.cfg.get("sliding_window_pattern") is not None and family.window_layers is not no_window:
        window_layers = gemma3_pattern(reader, layers)
    else:
        window_layers = family.window_layers(reader, layers)
    if not window_layers:
        return LayerKinds()
    return LayerKinds(sliding_window_tokens=window, sliding_window_layers=window_layers)


def layer_kinds(reader: ConfigReader, family: Family, core: Core) -> LayerKinds:
    """The layer kinds of the config (see the module doc); all zero when no layer count was read."""
    if not core.layers:
        return LayerKinds()
    layer_types = reader.cfg.get("layer_types")
    if layer_types is not None:
        return _explicit_layer_types(reader, family, layer_types, core.layers)
    if family.layer_kinds is not None:
        return family.layer_kinds(reader, core)
    return _window_by_rule(reader, family, core.layers)
