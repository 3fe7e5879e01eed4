"""The power model's inputs from a GPU profile and a scenario (``engine/power.py``'s module doc).  Pure."""

from __future__ import annotations

from planner.model.scenario import Scenario
from planner.model.specs import GPU

#: Idle board power ÷ TDP where the profile publishes no idle figure: the H100 SXM's 75 W of 700 W (Splitwise's
#: per-GPU constant, Mutinifni/splitwise-sim configs/power_model/constant.yaml).
DEFAULT_IDLE_FRAC = 75.0 / 700.0


def power_fields(
    gpu_tdp_w: float | None, gpu_idle_w: float | None, server_w: float | None, cap_w: float | None
) -> tuple[float, float, float]:
    """(TDP, idle, host share) W per GPU; NaN where no board power is known."""
    tdp = cap_w if cap_w is not None else gpu_tdp_w
    if tdp is None:
        return float("nan"), float("nan"), float("nan")
    idle = min(gpu_idle_w if gpu_idle_w is not None else DEFAULT_IDLE_FRAC * (gpu_tdp_w or tdp), tdp)
    host = max(server_w - gpu_tdp_w, 0.0) if server_w is not None and gpu_tdp_w is not None else 0.0
    return tdp, idle, host


def engine_power_fields(gpu: GPU, s: Scenario) -> dict[str, float]:
    """The ``EngineInputs`` power fields of ``gpu`` under ``s`` (the cap, PUE, price and limit)."""
    tdp, idle, host = power_fields(gpu.tdp_w, gpu.idle_w, gpu.server_power_w_per_gpu, s.gpu_power_w)
    return dict(
        tdp_w=tdp,
        idle_w=idle,
        host_power_w_per_gpu=host,
        pue=s.pue,
        electricity_usd_per_kwh=s.electricity_usd_per_kwh,
        power_limit_w=s.power_limit_kw * 1e3,
    )
