"""Measured points and the engine's prediction of each, with per-point efficiency parameters.

A ``Point`` is one measured number about one deployment (a ``Scenario``: GPU, model, tp,
dtypes, lengths, batch or concurrency).  ``PointSet`` resolves every point once, stacks
them into one ``EngineInputs`` and predicts all of them in one vectorised call for any
efficiency parameters (one value, or one per point), which is what a fit needs.

Points are predicted on the fitted roofline, also for an engine version whose step times are measured
kernels elsewhere: the fit's parameters are the roofline's, and the calibrated link runs on it.

Kinds, and the engine quantity that predicts each (docs/model.md §4–10):
  ttft            prefill of one prompt on an idle replica                 ``ttft_s``
  tpot            one decode step at the batch, context P + O/2            ``plain_tpot_s``
  throughput      static batch: B · O / (batched prefill + (O − 1) · TPOT) / tp
                                                        ``static_batch_output_tokens_per_s_per_gpu``
  e2e_latency     the same static batch's latency                          ``static_batch_latency_s``
  serving_ttft    online serving at mean concurrency N and λ requests/s: the newcomer's
                  chunked prefill beside N − 1 running streams (``chunked_ttft_s``), after
                  waiting for the prefills ahead of it — u = λ · t_prefill of the GPU's time
                  goes to prefills, and a deterministic-service queue waits
                  u / (2 (1 − u)) · t_prefill on average (Pollaczek–Khinchine, M/D/1)
  serving_tpot    online serving: the decode step at batch N, stretched by the share of
                  GPU time prefills take:  t_decode(N) / (1 − u)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from planner.engine.chunked import chunked_prefill
from planner.engine.evaluate import resolve
from planner.engine.inputs import EngineInputs, compute_dtype, from_specs, stack_inputs
from planner.engine.roofline import batched_prefill, decode, prefill
from planner.model.catalog import Catalog
from planner.model.engine_kernels import EngineKernels
from planner.model.engine_timing import OVERRIDE_LETTERS, EngineTiming, gpu_family, link_kind
from planner.model.scenario import Scenario
from planner.model.weight_plan import resolve_weights

Kind = Literal["ttft", "tpot", "throughput", "e2e_latency", "serving_ttft", "serving_tpot"]
KINDS: tuple[Kind, ...] = ("ttft", "tpot", "throughput", "e2e_latency", "serving_ttft", "serving_tpot")
#: Largest share of GPU time prefills may take in the serving-TPOT stretch (beyond it the server saturates).
MAX_PREFILL_SHARE = 0.9

#: The efficiency parameters a fit may set (``ResolvedTiming`` fields, SI): the ones the link form overrides.
PARAMS = tuple(name for name, _scale in OVERRIDE_LETTERS.values())


@dataclass(frozen=True)
class Point:
    """One measured number (SI) about the deployment ``scenario`` describes."""

    scenario: Scenario
    kind: Kind
    measured: float
    label: str
    request_rate_per_s: float = 0.0  # serving kinds: completed requests per second


class PointSet:
    """Points resolved once and predicted together (module doc)."""

    def __init__(self, points: Sequence[Point], catalog: Catalog):
        if not points:
            raise ValueError("no points to predict")
        self.points = list(points)
        xs, latency, eight, pcie, fams = [], [], [], [], []
        for p in self.points:
            r = resolve(p.scenario, catalog)
            # the engine's memory, a neutral timing on the roofline (no measured-kernel tables: the fit's parameters
            # are the roofline's, and a calibrated link runs on the roofline, kernel_basis.basis_for)
            neutral = r.engine.model_copy(update={"timing": EngineTiming(), "kernels": EngineKernels()})
            xs.append(from_specs(r.gpu, r.model, p.scenario, r.draft, neutral))
            latency.append(r.gpu.collective_latency_s)
            eight.append(compute_dtype(resolve_weights(r.model, p.scenario).wdtype, r.gpu) != "bf16")
            pcie.append(link_kind(r.gpu) == "pcie")
            fams.append(gpu_family(r.gpu))
        self.base = stack_inputs(xs)
        self.gpu_latency_s = np.array(latency)
        self.eight_bit = np.array(eight)
        self.pcie = np.array(pcie)
        self.family = np.array(fams)
        self.kind = np.array([p.kind for p in self.points])
        self.measured = np.array([p.measured for p in self.points], dtype=float)
        self.rate = np.array([p.request_rate_per_s for p in self.points], dtype=float)

    def inputs(self, t: Mapping[str, object]) -> EngineInputs:
        """The stacked inputs with the efficiency parameters ``t`` (name → value or per-point array)."""
        mm = np.where(self.eight_bit, np.asarray(t["matmul_frac_8bit"]), np.asarray(t["matmul_frac"]))
        return self.base.with_(
            step_overhead_s=np.asarray(t["step_overhead_s"], dtype=float),
            layer_overhead_s=np.asarray(t["layer_overhead_s"], dtype=float),
            decode_layer_overhead_s=np.asarray(t["decode_layer_overhead_s"], dtype=float),
            gqa_reread_frac=np.asarray(t["gqa_reread_frac"], dtype=float),
            matmul_half_tokens=np.asarray(t["matmul_half_tokens"], dtype=float),
            mfu=mm,
            mbu=np.asarray(t["bandwidth_frac"], dtype=float),
            moe_matmul_frac=np.asarray(t["moe_matmul_frac"], dtype=float),
            attention_compute_frac=np.asarray(t["attention_compute_frac"], dtype=float),
            attention_bandwidth_frac=np.asarray(t["attention_bandwidth_frac"], dtype=float),
            collective_latency_s=self.gpu_latency_s + np.asarray(t["allreduce_overhead_s"], dtype=float),
            link_frac=np.asarray(t["bus_frac"], dtype=float),
        )

    def predict(self, t: Mapping[str, object]) -> np.ndarray:
        """Every point's predicted figure (SI) under the parameters ``t`` (module doc)."""
        x = self.inputs(t).as_arrays()
        ttft = prefill(x).time_s
        tpot = decode(x).time_s
        static_s = batched_prefill(x).time_s + (x.output_tokens - 1.0) * tpot
        out = np.empty(len(self.points))
        pick = {
            "ttft": ttft,
            "tpot": tpot,
            "throughput": x.batch * x.output_tokens / static_s / x.tp,
            "e2e_latency": static_s,
        }
        serving = np.isin(self.kind, ("serving_ttft", "serving_tpot"))
        if serving.any():
            others = np.maximum(x.batch - 1.0, 0.0)
            share = np.minimum(self.rate * ttft, MAX_PREFILL_SHARE)
            wait = share / (2.0 * (1.0 - share)) * ttft
            pick["serving_ttft"] = np.asarray(chunked_prefill(x.with_(batch=others))["chunked_ttft_s"]) + wait
            pick["serving_tpot"] = tpot / (1.0 - share)
        for kind, values in pick.items():
            mask = self.kind == kind
            out[mask] = np.broadcast_to(values, out.shape)[mask]
        return out
