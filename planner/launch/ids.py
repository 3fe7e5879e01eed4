"""The Hugging Face repository of a model preset: read from its ``source`` (the config.json link)."""

from __future__ import annotations

import re

from planner.model.specs import ModelSpec

_HF_LINK = re.compile(r"huggingface\.co/([A-Za-z0-9][\w.-]{0,95})/([A-Za-z0-9][\w.-]{0,95})(?:/|$|\s|;)")
#: Suffixes the instruction-tuned checkpoints add to a base model's name.
_VARIANTS = ("-instruct", "-it", "-chat", "-hf", "-base")


def hf_repo_id(model: ModelSpec) -> str | None:
    """``org/name`` of the first Hugging Face link in the preset's ``source``, or None."""
    m = _HF_LINK.search(model.source or "")
    return f"{m.group(1)}/{m.group(2)}" if m else None


def _stem(repo: str) -> str:
    name = repo.strip().lower()
    for suffix in _VARIANTS:
        name = name.removesuffix(suffix)
    return name


def same_checkpoint(repo: str, other: str) -> bool:
    """Whether two Hugging Face ids name the same model (ignoring case and an -Instruct/-it/-chat suffix)."""
    return _stem(repo) == _stem(other)
