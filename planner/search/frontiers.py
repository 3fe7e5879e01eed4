"""Pareto frontiers over the sizing search's points (``planner.search.grid``).

A point is on a frontier when no other feasible point (one that meets the SLO) is at least as good
on both axes and better on one.  Two frontiers, as in NVIDIA AIConfigurator and Vidur-Search:
  throughput   output tokens/s per GPU at capacity (higher) against output tokens/s per user there (higher):
               each configuration's replica carrying the most requests/s it serves within the SLO (λ*, the
               screen's ``capacity_per_replica_per_s``): λ* × mean output tokens ÷ GPUs per replica, and
               tokens per step ÷ mean step at that load.  What the configuration can do, not what this
               scenario's demand asks of it (rate × output ÷ GPUs), so the frontier does not move with the
               arrival rate — as InferenceMAX and NVIDIA AIConfigurator draw throughput against interactivity.
               A disaggregated point counts the prefill GPUs that carry its decode pool's λ*.
  cost         $ per million output tokens (lower) against the TTFT percentile (lower)
Computed by one sort: along the first axis from best to worst, a point is on the frontier when it
beats the best second-axis value seen so far (a running maximum; ties on the first axis: the best of
them only, and of identical points the first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Frontier:
    key: str  # the column flagging its points
    title: str
    x: str  # column on the x axis
    y: str
    x_higher_is_better: bool
    y_higher_is_better: bool


FRONTIERS = (
    Frontier(
        "throughput_frontier",
        "Output tok/s per GPU at capacity (prefill included) vs tok/s per user",
        "capacity_output_tokens_per_s_per_user",
        "capacity_output_tokens_per_s_per_gpu",
        True,
        True,
    ),
    Frontier(
        "cost_frontier",
        "$ per million output tokens vs TTFT percentile",
        "ttft_q_s",
        "cost_per_million_output_tokens_usd",
        False,
        False,
    ),
)


def pareto_mask(x: np.ndarray, y: np.ndarray, x_higher: bool = True, y_higher: bool = True) -> np.ndarray:
    """Points no other point dominates (module doc); NaN points are never on it."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    sx = np.where(ok, x if x_higher else -x, -np.inf)
    sy = np.where(ok, y if y_higher else -y, -np.inf)
    order = np.lexsort((-sy, -sx))  # best x first; among equal x, best y first
    ys = sy[order]
    seen = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    mask = np.zeros(x.shape, dtype=bool)
    mask[order] = (ys > seen) & ok[order]
    return mask


def with_frontiers(points: pd.DataFrame) -> pd.DataFrame:
    """``points`` with a boolean column per frontier (``FRONTIERS``), over the points that meet the SLO."""
    out = points.copy()
    feasible = out["meets_slo"].to_numpy(dtype=bool)
    for f in FRONTIERS:
        x = np.where(feasible, out[f.x].to_numpy(dtype=float), np.nan)
        y = np.where(feasible, out[f.y].to_numpy(dtype=float), np.nan)
        out[f.key] = pareto_mask(x, y, f.x_higher_is_better, f.y_higher_is_better)
    return out


def frontier_points(points: pd.DataFrame, frontier: Frontier) -> pd.DataFrame:
    """The points on ``frontier`` in order along its x axis."""
    flagged = points if frontier.key in points else with_frontiers(points)
    on = flagged[flagged[frontier.key].astype(bool)]
    return on.sort_values(frontier.x, ascending=not frontier.x_higher_is_better, kind="stable")
