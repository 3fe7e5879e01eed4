"""Gemma 2 / Gemma 3 sliding windows (the Gemma families also tie their embeddings by default).

Gemma 2 alternates local and global layers, the even-indexed ones local (half
the layers, rounded up); Gemma 3 has one global layer in every
``sliding_window_pattern`` (default 6), the others local.
"""

from __future__ import annotations

from planner.model.hf_import.reader import ConfigReader

#: Gemma 3's default ``sliding_window_pattern``: five local layers, then one global.
GEMMA3_WINDOW_PATTERN = 6
#: transformers ``Gemma3TextConfig`` defaults, which the published Gemma 3 config.json files rely on
#: (google/gemma-3-27b-it's text_config gives neither ``vocab_size`` nor ``max_position_embeddings``).
GEMMA3_VOCAB = 262_208
GEMMA3_CONTEXT_TOKENS = 131_072


def gemma2_alternating(reader: ConfigReader, layers: int) -> int:
    """Layers 0, 2, 4, … are local: ⌈layers / 2⌉."""
    return (layers + 1) // 2


def gemma3_pattern(reader: ConfigReader, layers: int) -> int:
    """All but one layer in every ``sliding_window_pattern``: layers − ⌊layers / pattern⌋."""
    pattern = reader.integer("sliding_window_pattern", default=GEMMA3_WINDOW_PATTERN) or GEMMA3_WINDOW_PATTERN
    return layers - layers // pattern
