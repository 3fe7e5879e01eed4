"""The weights' rates the roofline reads: bytes per weight streamed and the tensor-core peak, for the dense part and
for the routed experts, from the per-component formats in force (``planner.model.weight_plan``) and the engine's
kernels on the GPU (``planner.model.quant_support``).

  one format for every linear matrix (``WeightFormat.is_uniform``)
      b_d = b_e = quantised bytes (scales included) ÷ quantised weights, applied to every weight (16-bit: 2 B);
      one compute dtype: the format's where the engine runs it natively, else bf16 — the model the efficiency
      profiles were fitted with (docs/model.md §4–5), kept so their published-accuracy figures hold
  per-component formats (gpt-oss's MXFP4 experts + bf16 attention; NVFP4 with bf16 MLA projections)
      b_d = (stored bytes of every weight but the routed experts and an untied embedding lookup) ÷ those weights
      b_e = the routed experts' stored bytes ÷ their weights
      peak_d = N_d / Σ_c (N_c / peak_c)   over the dense matmul weights by component (attention, MLP, the
                                           16-bit rest: LM head, routers), each at its compute dtype's peak
      peak_e = the experts' compute dtype's peak
      MFU: the 8-bit plateau when the component with the most active matmul weights computes below 16 bit
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.model.params import moe_layers, param_counts
from planner.model.quant_support import Support, mxfp4_padding, weight_support
from planner.model.quantization import WEIGHT_16BIT_BYTES, Scheme, linear_matrices, matrix_bytes, weight_layout
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.model.weight_plan import ResolvedWeights
from planner.units import DTYPE_BYTES


@dataclass(frozen=True)
class WeightRates:
    bytes_per_param: float  # b_d
    expert_bytes_per_param: float  # b_e
    peak_flop_per_s: float  # peak_d
    expert_peak_flop_per_s: float  # peak_e
    eight_bit: bool  # the 8-bit MFU plateau applies
    expert_compute: str  # the experts' compute dtype (expert-parallel dispatch sends FP8 where it is fp8)
    support: dict[str, Support]  # per component: how the engine runs it


def _compute(support: Support) -> str:
    return support.compute if support.mode == "native" else "bf16"


def component_support(w: ResolvedWeights, gpu: GPU, engine: str) -> dict[str, Support]:
    f = w.fmt
    return {
        "attention": weight_support(engine, f.attention.key, gpu),
        "mlp": weight_support(engine, f.mlp.key, gpu),
        "experts": weight_support(engine, f.experts.key, gpu),
    }


def _uniform(model: ModelSpec, w: ResolvedWeights, gpu: GPU, support: dict[str, Support]) -> WeightRates:
    scheme: Scheme = w.fmt.experts
    if scheme.key == "none":
        b = DTYPE_BYTES[w.wdtype if w.wdtype in DTYPE_BYTES else "bf16"]
    else:
        b = weight_layout(model, w.fmt).bytes_per_quantized_param
    compute = _compute(support["experts"])
    peak = gpu.peak_for(compute)
    eight = compute != "bf16" and compute in gpu.peak_flop_per_s
    return WeightRates(b, b, peak, peak, eight, compute if eight else "bf16", support)


def weight_rates(model: ModelSpec, w: ResolvedWeights, gpu: GPU, engine: str) -> WeightRates:
    """The rates of the module doc for ``model`` stored as ``w`` on ``gpu`` under ``engine`` (a link key)."""
    support = component_support(w, gpu, engine)
    if w.fmt.is_uniform:
        return _uniform(model, w, gpu, support)
    pc = param_counts(model)
    lookup = 0.0 if model.tied_embeddings else float(model.vocab * model.hidden)
    n_expert = b_expert = 0.0
    n_comp = {"attention": 0.0, "mlp": 0.0}
    stored_dense = linear_dense = 0.0
    peaks: dict[str, float] = {}
    for x in linear_matrices(model):
        scheme = w.fmt.scheme_of(x)
        params = x.fan_in * x.fan_out * x.count
        stored = matrix_bytes(x, scheme, w.fmt.group, w.fmt)
        if x.expert:
            n_expert += params
            b_expert += stored
            continue
        linear_dense += params
        stored_dense += stored
        kept = scheme.key == "none"
        key = x.component if not kept else "16bit"
        n_comp[key] = n_comp.get(key, 0.0) + params
        peaks[key] = gpu.peak_for("bf16") if kept else gpu.peak_for(_compute(support[x.component]))
    dense_total = pc.total - lookup - n_expert
    rest = dense_total - linear_dense  # norms, routers, biases, the LM head, state mixers: 16 bit
    b_d = (stored_dense + rest * WEIGHT_16BIT_BYTES) / dense_total
    b_e = b_expert / n_expert if n_expert else b_d
    peak16 = gpu.peak_for("bf16")
    dense_matmul = pc.matmul_active - moe_layers(model) * model.experts_per_token * (
        n_expert / max(moe_layers(model) * model.experts, 1)
    )
    rest_matmul = max(dense_matmul - sum(n_comp.values()), 0.0)
    seconds = sum(n / peaks[k] for k, n in n_comp.items() if n) + rest_matmul / peak16
    peak_d = dense_matmul / seconds if seconds > 0 else peak16
    expert_compute = _compute(support["experts"])
    peak_e = gpu.peak_for(expert_compute)
    active_experts = n_expert * (model.experts_per_token / model.experts) if model.experts else 0.0
    shares = {
        "attention": n_comp.get("attention", 0.0),
        "mlp": n_comp.get("mlp", 0.0),
        "experts": active_experts,
    }
    main = max(shares, key=lambda k: shares[k])
    main_compute = _compute(support[main])
    eight = main_compute != "bf16" and main_compute in gpu.peak_flop_per_s
    dispatch = expert_compute if expert_compute in gpu.peak_flop_per_s else "bf16"
    return WeightRates(b_d, b_e, peak_d, peak_e, eight, dispatch, support)


def allocated(w: ResolvedWeights, s: Scenario, gpu: GPU, engine: str) -> ResolvedWeights:
    """``w`` with the dimensions the engine allocates MXFP4 experts at on ``gpu`` (``quant_support.mxfp4_padding``):
    the expert width is split over moe_tp = tp · dp / ep ranks."""
    if w.fmt.experts.key != "mxfp4":
        return w
    hidden, width = mxfp4_padding(engine, gpu)
    ranks = max(s.tp * s.dp // s.ep, 1)
    return replace(w, fmt=replace(w.fmt, expert_padding=(hidden, width, ranks)))
