"""The sizing search's power columns and its ``power_limit_kw`` constraint (docs/model.md §13 "Sizing").  Pure.

For each screened point that meets the SLO: its board power per GPU at its configured batch (the provisioning
view: ``engine/power.py``'s prefill and decode steps time-weighted at full load; a disaggregated point's prefill
pool at its prefill step and its decode pool at its decode step, GPU-weighted) and its fleet's IT power, GPUs ×
(board power + the server's non-GPU share).  With a limit set, a point over it does not meet the SLO
(``OVER_POWER``; ``POWER_UNKNOWN`` where the GPU has no published board power), and the points are re-ordered
as ``grid`` orders them (those meeting the SLO first, the rest of the order kept).
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pandas as pd

from planner.engine.inputs import Array, EngineInputs
from planner.engine.power import board_power_w, prefill_share
from planner.engine.roofline import decode, prefill

OVER_POWER = "meets the SLO but the fleet's IT power exceeds power_limit_kw"
#: A GPU without a published board power (a10g, h800 …): its fleet's power is unknown, so a limit cannot hold it.
POWER_UNKNOWN = (
    "meets the SLO but its board power is not published (give gpu_power_w): power_limit_kw cannot be checked"
)


def _rows(x: EngineInputs, rows: np.ndarray) -> EngineInputs:
    return EngineInputs(**{f.name: getattr(x, f.name)[rows] for f in fields(EngineInputs)})


def colocated_power_w(x0: EngineInputs, batch: Array) -> Array:
    """Board power per GPU of a colocated replica at ``batch`` streams (module doc)."""
    pre = prefill(x0)
    x = x0.with_(batch=batch)
    dec = decode(x)
    f_p = prefill_share(x, pre.time_s, dec.time_s)
    return np.asarray(f_p * board_power_w(x0, pre) + (1.0 - f_p) * board_power_w(x, dec), dtype=float)


def fleet_power_kw(gpus: Array, power_w: Array, host_w: Array) -> Array:
    """IT power of a fleet: GPUs × (board power + the server's non-GPU share), kW."""
    return np.asarray(gpus * (power_w + host_w) / 1e3, dtype=float)


def _colocated(xb: EngineInputs, p: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    x = _rows(xb, p["base"].to_numpy()).with_(chunk_tokens=p["chunk"].to_numpy(dtype=float))
    power = colocated_power_w(x, p["batch"].to_numpy(dtype=float))
    return power, fleet_power_kw(p["gpus"].to_numpy(dtype=float), power, x.host_power_w_per_gpu)


def _disaggregated(xb: EngineInputs, p: pd.DataFrame, prefill_batch: int) -> tuple[np.ndarray, np.ndarray]:
    dec = _rows(xb, p["base"].to_numpy()).with_(
        batch=p["batch"].to_numpy(dtype=float), chunk_tokens=p["chunk"].to_numpy(dtype=float)
    )
    chunk = p["prefill_chunk"].to_numpy(dtype=float)
    pre0 = _rows(xb, p["prefill_base"].to_numpy(dtype=np.int64))
    pre = pre0.with_(chunk_tokens=chunk, batch=np.minimum(chunk, prefill_batch) * pre0.dp)
    p_dec = np.asarray(board_power_w(dec, decode(dec)), dtype=float)
    p_pre = np.asarray(board_power_w(pre, prefill(pre)), dtype=float)
    g_dec = p["decode_replicas"].to_numpy(dtype=float) * p["gpus_per_replica"].to_numpy(dtype=float)
    g_pre = p["prefill_replicas"].to_numpy(dtype=float) * p["prefill_gpus_per_replica"].to_numpy(dtype=float)
    kw = fleet_power_kw(g_dec, p_dec, dec.host_power_w_per_gpu) + fleet_power_kw(g_pre, p_pre, pre.host_power_w_per_gpu)
    return (g_dec * p_dec + g_pre * p_pre) / (g_dec + g_pre), kw


def with_power(
    points: pd.DataFrame, xb: EngineInputs, limit_kw: float, colocated: str, statuses, prefill_batch: int
) -> pd.DataFrame:
    """``points`` with ``power_per_gpu_w`` and ``fleet_power_kw`` for the points meeting the SLO (NaN elsewhere),
    and ``power_limit_kw`` held (module doc).  ``colocated``: the ``mode`` of a colocated point; ``statuses``: the
    categories of the ``status`` column; ``prefill_batch``: a prefill-pool replica's max_num_seqs."""
    power = np.full(len(points), np.nan)
    kw = np.full(len(points), np.nan)
    meets = points["meets_slo"].to_numpy(dtype=bool)
    is_colocated = (points["mode"] == colocated).to_numpy()
    for sel, part in (
        (meets & is_colocated, lambda p: _colocated(xb, p)),
        (meets & ~is_colocated, lambda p: _disaggregated(xb, p, prefill_batch)),
    ):
        if sel.any():
            power[sel], kw[sel] = part(points[sel])
    out = points.assign(power_per_gpu_w=power, fleet_power_kw=kw)
    if limit_kw <= 0:
        return out
    over = meets & ~(kw <= limit_kw)
    if not over.any():
        return out
    status = np.array(out["status"].astype(object), dtype=object)
    status[over] = np.where(np.isnan(kw[over]), POWER_UNKNOWN, OVER_POWER)
    out["status"] = pd.Categorical(status, categories=list(statuses))
    out["meets_slo"] = meets & ~over
    out = out.iloc[np.argsort(~out["meets_slo"].to_numpy(), kind="stable")].reset_index(drop=True)
    out["point"] = np.arange(len(out))
    return out


__all__ = ["OVER_POWER", "POWER_UNKNOWN", "colocated_power_w", "fleet_power_kw", "with_power"]
