"""How a serving engine sizes its KV cache: the ``[memory]`` part of an engine profile.

The fields (version-dependent constants of the engine's memory accounting, each with
its source) are added with the vLLM-faithful memory model (docs/model.md §3)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EngineMemory(BaseModel):
    """The engine's KV-cache sizing constants (``[memory]`` of ``planner/data/engines/*.toml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
