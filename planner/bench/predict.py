"""The engine's prediction for exactly the shapes the benchmark timed.

Each measured step (``plan.Case``) maps one-to-one onto ``roofline.step_cost``:
  prefill P          step_cost(n=P)
  decode B at c      step_cost(seqs=B, q=1, ctx=c)
  mixed              step_cost(seqs=B, q=1, ctx=c, n=chunk, past=p)
  verify             step_cost(seqs=B, q=γ+1, ctx=c)
with tp = 1 and the profile's peak × MFU and bandwidth × MBU.

Element sizes: the engine's dtype set starts at 16 bits.  An fp32 (CPU) run
passes 4 bytes through ``EngineInputs.with_``: weights and KV per element, and
the activation element count × 4 / ACTIVATION_BYTES so the engine's fixed
2-byte activation term counts 4-byte activations.  The engine's formulas are
used as they are.

error = (predicted − measured) / measured; per phase the median |error|.
Ridge batch (decode turns compute-bound), per context: ``ridge_batch_fit`` on the
measured times and, the same way, on the predicted times; and the engine's own
``roofline.ridge_batch`` (where the step's matmul part turns compute-bound; the
context is pinned, though the per-operator ridge no longer depends on it).

serial = compute_s + memory_s (+ comm), totals over both operator groups: the
step time if compute and memory traffic did not overlap at all — the pessimistic
bound beside the engine's per-operator roofline (max per part, parts summed).
Reported as a diagnostic; the engine predicts the per-operator roofline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import median

import numpy as np

from planner.bench.plan import Case
from planner.engine.inputs import EngineInputs, from_specs
from planner.engine.roofline import StepCost, ridge_batch, step_cost
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.units import ACTIVATION_BYTES, DTYPE_BYTES


def engine_inputs(gpu: GPU, model: ModelSpec, bytes_per_element: float, mfu: float, mbu: float) -> EngineInputs:
    """EngineInputs for the bench decoder on ``gpu`` (tp = 1), element size ``bytes_per_element``."""
    x = from_specs(gpu, model, Scenario(tp=1, mfu=mfu, mbu=mbu))
    if bytes_per_element != DTYPE_BYTES["bf16"]:
        x = x.with_(
            weight_bytes_per_param=bytes_per_element,
            kv_bytes_per_element=bytes_per_element,
            activation_elements_per_token_per_layer=x.activation_elements_per_token_per_layer
            * bytes_per_element
            / ACTIVATION_BYTES,
        )
    return x


def predict_cases(x: EngineInputs, cases: Sequence[Case]) -> StepCost:
    """One vectorised ``step_cost`` call over every case."""

    def col(attr: str) -> np.ndarray:
        return np.array([getattr(c, attr) for c in cases], dtype=float)

    return step_cost(x.as_arrays(), seqs=col("seqs"), q=col("q"), ctx=col("ctx"), n=col("n"), past=col("past"))


def error_frac(predicted_s: float, measured_s: float) -> float:
    return (predicted_s - measured_s) / measured_s


def median_abs_error(errors: Sequence[float]) -> float:
    """Median of |error|; ``errors`` must not be empty."""
    return median(abs(e) for e in errors)


def _finite_or_none(v: float) -> float | None:
    return float(v) if math.isfinite(v) and v > 0 else None


def ridge_batch_fit(batches: Sequence[int], times_s: Sequence[float]) -> float | None:
    """Batch where a decode step's compute equals its weight streaming, from step times alone:
    B* = t(B_min) / s, s = the per-sequence slope between the two largest batches (the
    compute-bound cost of one more sequence), t(B_min) ≈ the memory-bound floor.  Exact for
    max(t_m, B·c) and for t_m + B·c alike; None with fewer than three batches or no slope."""
    pts = sorted(zip(batches, times_s, strict=True))
    if len(pts) < 3:
        return None
    (_, t_min), (b3, t3), (b4, t4) = pts[0], pts[-2], pts[-1]
    slope = (t4 - t3) / (b4 - b3)
    return _finite_or_none(t_min / slope) if slope > 0 else None


def predicted_ridge_batch(x: EngineInputs, ctx: int) -> float | None:
    """``roofline.ridge_batch`` with the decode context pinned to ``ctx``."""
    return _finite_or_none(float(ridge_batch(x.with_(prompt_tokens=float(ctx), output_tokens=0.0).as_arrays())))
