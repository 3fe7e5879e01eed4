"""Serving-engine profiles: what one engine (vLLM, SGLang, TensorRT-LLM) does differently.

A profile is data (``engine_profiles/<engine>/<version>.toml``, with provenance; versions:
``planner.model.engine_versions``) and has three parts,
each owned by the model that uses it:
  ``memory``  how the engine sizes its KV cache (``planner.model.engine_memory``)
  ``timing``  the fitted efficiency parameters of its kernels and scheduler
              (``planner.model.engine_timing``): the fitted roofline
  ``kernels`` which measured kernel tables describe it and its fitted per-step costs on them
              (``planner.model.engine_kernels``; where a table covers the GPU it replaces ``timing``)
  ``launch``  how the version spells the deployment on its command line (``planner.model.engine_launch``)
The scenario's link key ``engine`` (``vllm@0.19``; ``vllm`` alone: its newest version) selects the profile.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from planner.model.engine_kernels import EngineKernels
from planner.model.engine_launch import EngineLaunch
from planner.model.engine_memory import EngineMemory
from planner.model.engine_timing import EngineTiming
from planner.model.engine_versions import engine_name
from planner.model.specs import FROZEN


class EngineProfileFile(BaseModel):
    """Schema of ``engine_profiles/*.toml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=80, description="the engine's name as people write it")
    version: str = Field(min_length=1, max_length=40, description="the release the parameters describe")
    source: str = Field(min_length=1, max_length=4000, description="where the parameters come from")
    notes: str = Field(default="", max_length=4000)
    memory: EngineMemory = Field(default_factory=EngineMemory)
    timing: EngineTiming = Field(default_factory=EngineTiming)
    kernels: EngineKernels = Field(default_factory=EngineKernels)
    launch: EngineLaunch = Field(default_factory=EngineLaunch)

    def to_profile(self, key: str) -> EngineProfile:
        return EngineProfile(key=key, **self.model_dump())


class EngineProfile(EngineProfileFile):
    """One loaded engine profile (the file's fields plus its key)."""

    model_config = FROZEN

    key: str = Field(
        min_length=1,
        max_length=80,
        description="the link value of ``engine``: NAME@VERSION of engine_profiles/NAME/VERSION.toml, or the stem "
        "of a plain engine_profiles/NAME.toml",
    )

    @property
    def kind(self) -> str:
        """The engine this profile is a version of: 'vllm' of 'vllm@0.19' (a plain file's own key)."""
        return engine_name(self.key)

    @property
    def label(self) -> str:
        """'vLLM 0.19.0': the engine and the release its constants describe, as headers name it."""
        return f"{self.name} {self.version}"
