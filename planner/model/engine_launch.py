"""How an engine version spells a deployment on its command line: the ``[launch]`` part of an engine profile.

The flags themselves are the engine's (``planner.launch.commands`` writes them); what changed between
releases is data here, each with its source, and every flag a command uses is checked against the
version's flag table (``engine_profiles/<engine>/<version>-flags.json``, ``planner.model.engine_flags``).
The defaults are vLLM 0.19.0's spellings.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

#: SGLang's data-parallel attention: ``--dp-size N --enable-dp-attention`` (≤ 0.5.2x) or ``--attn-dp-size N``.
DpAttention = Literal["dp_size_enable", "attn_dp_size"]


class EngineLaunch(BaseModel):
    """The version-dependent spellings of ``kvplan launch``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    fp8_quantization: str = Field(
        default="fp8",
        max_length=40,
        description="--quantization for weights quantised to FP8 at load time (vLLM ≥ 0.31: fp8_per_tensor)",
    )
    int8_kv_cache_dtype: str = Field(
        default="", max_length=40, description="--kv-cache-dtype of an int8 KV cache ('' = the version has none)"
    )
    prefix_caching_off: str = Field(
        default="--no-enable-prefix-caching",
        max_length=60,
        description="the flag that turns prefix caching off (vLLM ≥ 0.33: --disable-prefix-caching)",
    )
    dp_attention: DpAttention = Field(default="dp_size_enable", description="SGLang's data-parallel attention flags")
    source: str = Field(default="", max_length=4000)
