"""Which measured kernel tables describe an engine version, and its fitted per-step costs on them: the
``[kernels]`` part of an engine profile (docs/model.md §4–5 "Measured kernels"; docs/kernel_tables.md).

An engine version whose profile names a table release (``engine``, ``version``) takes its step times from
the measured kernels of that release on every GPU a table covers (``relation`` says how the two releases
relate: "nearest measured" when the version itself was never measured); on other GPUs — and in a
profile without the section — the fitted roofline of ``[timing]`` stays.

What the tables do not hold is fitted, with its source (``benchmarks/fit_kernels.py``):
  step_overhead_us           once per scheduler step (scheduling, sampling, the host's launch of the step)
  layer_overhead_us          once per layer of a step with prefill tokens (eager launches, the gaps between them)
  decode_layer_overhead_us   once per layer of a decode-only step (CUDA-graph replay)
  elementwise_bandwidth_frac the share of the HBM bandwidth the kernels the tables do not time reach
                             (norms, RoPE, activation, residual adds: the activation traffic of each layer)
  host_us_per_seq            the host's work per sequence of a step (scheduling, sampling, request bookkeeping),
                             overlapped with the GPU's: a step lasts at least that × its sequences
                             (``engine.efficiency.host_bound_s``)
  moe_time_ratio             this version's expert layer ÷ the table release's, the same shapes and tokens
                             (a version older than the tables ran slower MoE kernels; 1 for the release itself)
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Distribution = Literal["balanced", "power_law_1.01", "power_law_1.2"]


class EngineKernels(BaseModel):
    """The ``[kernels]`` section of ``engine_profiles/<engine>/<version>.toml`` (module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str = Field(
        default="", pattern=r"^$|^[a-z0-9][a-z0-9._-]{0,63}$", description="the engine of the tables ('' = none)"
    )
    version: str = Field(default="", max_length=40, description="the measured release whose tables are used")
    relation: str = Field(
        default="", max_length=400, description="how the measured release relates to this version (nearest measured)"
    )
    source: str = Field(default="", max_length=4000, description="the fit of the constants below")
    fitted_rows: int = Field(default=0, ge=0, le=100_000)
    step_overhead_us: float = Field(default=0.0, ge=0.0, le=1e5)
    layer_overhead_us: float = Field(default=0.0, ge=0.0, le=1e4)
    decode_layer_overhead_us: float = Field(default=0.0, ge=0.0, le=1e4)
    elementwise_bandwidth_frac: float = Field(default=0.8, gt=0.0, le=1.0)
    host_us_per_seq: float = Field(default=0.0, ge=0.0, le=1e4)
    moe_time_ratio: float = Field(default=1.0, gt=0.0, le=10.0)
    moe_distribution: Distribution = Field(
        default="balanced",
        description=(
            "the routing of the MoE table's rows used without EPLB: balanced (the busiest rank's surplus is the "
            "layout's ep_imbalance) or a power law (the tables time the busiest EP group, so its surplus is measured)"
        ),
    )
    moe_distribution_mla: Distribution | None = Field(
        default=None, description="the routing of MLA (DeepSeek-architecture) models where it differs (None: the same)"
    )
    moe_distribution_source: str = Field(default="", max_length=1000, description="why that routing")

    @property
    def enabled(self) -> bool:
        return bool(self.engine and self.version)
