"""Turn a benchmark's measured peaks into a scenario's MFU and MBU.

When the results were measured on the scenario's GPU (``device.profile_key``
equals the scenario's ``gpu``):
    MFU = measured matmul FLOP/s / datasheet dense bf16 FLOP/s
    MBU = measured bandwidth      / datasheet bandwidth
so that datasheet × MFU (× MBU) equals what was measured.  Both are rounded
to 3 decimals (they go in the link) and clipped to the Scenario's bounds
[0.01, 1]; a clip is reported.  Otherwise there is nothing to scale: the
calibrated profile TOML is the way to use the measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.bench.results import BenchResults
from planner.model.scenario import Scenario
from planner.model.specs import GPU


def _bounds(name: str) -> tuple[float, float]:
    """The Scenario field's (ge, le) bounds, read from its pydantic metadata."""
    meta = Scenario.model_fields[name].metadata
    lo = next(m.ge for m in meta if getattr(m, "ge", None) is not None)
    hi = next(m.le for m in meta if getattr(m, "le", None) is not None)
    return float(lo), float(hi)


_BOUNDS = {name: _bounds(name) for name in ("mfu", "mbu")}


@dataclass(frozen=True)
class Calibration:
    mfu: float
    mbu: float
    notes: tuple[str, ...]


def _fraction(name: str, measured: float, datasheet: float, notes: list[str]) -> float:
    lo, hi = _BOUNDS[name]
    raw = measured / datasheet
    value = round(min(max(raw, lo), hi), 3)
    if raw > hi:
        notes.append(f"{name.upper()}: measured {raw:.3f} × the datasheet figure; capped at {hi:g}")
    elif raw < lo:
        notes.append(f"{name.upper()}: measured {raw:.4f} × the datasheet figure; raised to the minimum {lo:g}")
    return value


def scenario_calibration(r: BenchResults, gpu: GPU) -> Calibration | None:
    """MFU/MBU for scenarios on ``gpu`` from results measured on it; None if measured elsewhere."""
    if r.device.profile_key != gpu.key:
        return None
    notes: list[str] = []
    mfu = _fraction("mfu", r.measured_peak_flop_per_s, gpu.peak_for("bf16"), notes)
    mbu = _fraction("mbu", r.measured_bandwidth_bytes_per_s, gpu.memory_bandwidth_bytes_per_s, notes)
    return Calibration(mfu=mfu, mbu=mbu, notes=tuple(notes))
