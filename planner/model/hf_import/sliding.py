"""Sliding-window attention: an explicit ``layer_types`` list wins, else the family's rule."""

from __future__ import annotations

from typing import Any

from planner.model.hf_import.parts import Family
from planner.model.hf_import.reader import ConfigReader

WINDOW_KEYS = ("sliding_window", "sliding_window_size")
SLIDING = "sliding_attention"


def _explicit_layer_types(reader: ConfigReader, layer_types: Any, window: int, layers: int) -> tuple[int, int]:
    """(window, layers) from ``layer_types``: one entry per layer, ``sliding_attention`` for a local one."""
    if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
        reader.problems.append("config.json field 'layer_types' must be a list of strings")
        return 0, 0
    sliding_layers = sum(1 for t in layer_types if t == SLIDING)
    if sliding_layers and not window:
        reader.problems.append(
            "config.json field 'layer_types' lists sliding_attention layers but 'sliding_window' is missing"
        )
        return 0, 0
    if len(layer_types) != layers:
        reader.problems.append(f"config.json field 'layer_types' has {len(layer_types)} entries for {layers} layers")
        return 0, 0
    return (window, sliding_layers) if sliding_layers else (0, 0)


def sliding_window(reader: ConfigReader, family: Family, layers: int) -> tuple[int, int]:
    """(window tokens, layers that use it); (0, 0) when no layer does."""
    layer_types = reader.cfg.get("layer_types")
    window = reader.integer(WINDOW_KEYS, minimum=0, spec_field="sliding_window_tokens") or 0
    if layer_types is not None:
        return _explicit_layer_types(reader, layer_types, window, layers)
    if not window:
        return 0, 0
    window_layers = family.window_layers(reader, layers)
    return (window, window_layers) if window_layers else (0, 0)
