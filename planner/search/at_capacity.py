"""The sizing screen's columns at capacity (``planner.search.frontiers``' throughput frontier): what each
configuration does when its replica carries its capacity λ* — the most requests/s it serves within the
SLO — rather than this scenario's demand.

  colocated      output tokens/s per GPU = λ* × mean output tokens ÷ GPUs per replica
  disaggregated  mean output ÷ (decode GPUs ÷ λ*_d + prefill GPUs ÷ λ*_p): decode replicas at their λ*_d
                 with the prefill GPUs that carry the same rate (λ*_p per prefill replica)
  per user       tokens per step ÷ mean step at that load (the screening model's operating point)

Neither depends on the arrival rate, so the frontier does not move with it (as InferenceMAX and NVIDIA
AIConfigurator draw throughput against interactivity, each configuration at its own saturation).
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array
from planner.search.analytic import colocated_state, mean_step_s, operating_x
from planner.search.step_grid import ReplicaGrid, TrafficStats
from planner.sim.slo import Slo


def per_user_at_capacity(
    g: ReplicaGrid, shape_a: tuple[int, ...], ok: np.ndarray, capacity_per_s: Array, t: TrafficStats, slo: Slo
) -> Array:
    """Output tokens/s per user (tokens per step ÷ mean step) of each feasible point when its replica carries
    its capacity (the most requests/s it serves within the SLO): the frontier's x axis, as InferenceMAX and
    AIConfigurator draw it at each configuration's own saturation point (NaN where infeasible)."""
    where = np.nonzero(ok)
    out = np.full(ok.shape, np.nan)
    if not where[0].size:
        return out
    sub = g.take(shape_a, (where[0], np.zeros_like(where[0]), where[2]))
    lam = np.asarray(capacity_per_s, dtype=float)[where]
    x_op = operating_x(lambda v: mean_step_s(sub, t, v)[0], lam, lam * sub.step_s(1.0, t.decode_context_tokens))
    st = colocated_state(sub, t, slo, x_op)
    out[where] = np.broadcast_to(sub.tokens_per_step / st.mean_step_s, lam.shape)
    return out


def capacity_columns(per_gpu: Array, per_user: Array) -> dict[str, Array]:
    """The frontier's columns at capacity: output tokens/s per GPU when every replica carries its capacity
    (λ* × mean output ÷ GPUs per replica; independent of the arrival rate) and tokens/s per user there."""
    return dict(capacity_output_tokens_per_s_per_gpu=per_gpu, capacity_output_tokens_per_s_per_user=per_user)


def pools_per_gpu(
    output_mean_tokens: float, decode_gpus: Array, decode_capacity_per_s: Array, prefill_gpus: Array,
    prefill_capacity_per_s: Array,
) -> Array:  # fmt: skip
    """A disaggregated point's output tokens/s per GPU at capacity (module doc); NaN where a pool has none."""
    with np.errstate(invalid="ignore", divide="ignore"):
        gpu_s_per_request = decode_gpus / decode_capacity_per_s + prefill_gpus / prefill_capacity_per_s
        return output_mean_tokens / gpu_s_per_request
