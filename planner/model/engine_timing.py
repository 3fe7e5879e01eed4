"""How fast a serving engine's kernels and scheduler run: the ``[timing]`` part of an engine profile.

The fields (the efficiency model's fitted parameters, each with its fit and source) are
added with the efficiency model (docs/model.md §4–5)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EngineTiming(BaseModel):
    """The engine's fitted efficiency parameters (``[timing]`` of ``planner/data/engines/*.toml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
