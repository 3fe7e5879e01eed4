"""The scalars of one evaluated scenario, named as in the formulas (``Scalars``), and the shared
sub-expressions every Explain item writes with them.  Below every ``explain_*`` module: each takes a
``Scalars``; none is imported here but ``explain_text``."""

from __future__ import annotations

import numpy as np

from planner.engine import parallel
from planner.engine.evaluate import Result
from planner.engine.parallel import layer_imbalance
from planner.engine.roofline import micro_batches
from planner.studies.explain_text import _scalar, num
from planner.units import ACTIVATION_BYTES

STEP_TIME = (
    "t_step + L · t_layer + max(c_mm, m_mm) + max(c_att, m_att) + t_comm;  "
    "c_mm = [2 · N_body · (T + T½) + 2 · N_head · (T_logits + T½)] / tp / (peak · MFU) "
    "(+ MoE experts: 2 · L_moe · n_e · (k · T + E_hit · T½) / tp / (peak · MFU · η_moe)), "
    "m_mm = B_mm / (bandwidth · MBU), c_att = F_att / (peak₁₆ · a_c), m_att = B_att / (bandwidth · a_m)  "
    "(t_step, t_layer, T½, MFU, MBU, a_c, a_m, η_moe: the engine profile's fitted values; docs/model.md §4–6)"
)
STEP_TIME_REFINED = (
    STEP_TIME.replace("max(c_mm, m_mm)", "R(c_mm, m_mm)").replace("max(c_att, m_att)", "R(c_att, m_att)")
    + ",  R(c, m) = max(c, m) + (1 − o) · min(c, m) (o: the calibrated profile's measured overlap)"
)
COMM = (
    "t_comm = 2 · L · (2 · (tp − 1)/tp · T · d · 2 B / (link · η_link) + latency) when tp > 1 "
    "(latency: the link's + the engine's per-collective overhead)"
)
KERNEL_STEP = (
    "max(t_step + L · t_layer + tokens(T) + head(T_logits) + r_moe · experts(imb · T) + e · T + decode(B, ctx) · ρ_q "
    "+ prefill(prompts, S_eq) + n_AR · allreduce(T), h · (B + prompts))"
)
KERNEL_TERMS = (
    "tokens(T): every layer's dense GEMMs (QKV, O, MLP, shared experts, router) at T tokens, in the weights' "
    "quantised dtype; head: the LM head at the tokens that need logits; experts: the MoE layers' expert kernel "
    "at the tokens entering them (r_moe: this version's expert layer ÷ the tables' release's, fitted; 1 for the "
    "release itself); e · T: the element-wise kernels the tables do not time (norms, RoPE, "
    "activation: their activation traffic at the fitted bandwidth share); decode / prefill: every attention "
    "layer's attention kernel (ρ_q: q queries per sequence ÷ one, from the roofline; S_eq: the prompt of the "
    "same attention work as a chunk after cached tokens); allreduce: one all-reduce of T · d · 2 B "
    "; h · (B + prompts): the host's work on the step's sequences, hidden under the GPU's until it outgrows it "
    "(t_step, t_layer, e, h, r_moe: the engine version's fitted [kernels] values; docs/model.md §4–5)"
)


LAYOUT_NOTE = (
    '  Layout (docs/model.md "Parallelism"): the busiest data-parallel rank\'s pass — its own sequences and '
    "prompts through attention and the dense GEMMs, every rank's tokens through the experts over tp · dp "
    "(× the EP imbalance) — and t_comm = the tensor-parallel all-reduces over NVLink or the network, the MoE "
    "exchange and the stage sends (two-batch overlap: − f · min(compute, exchange)); with pp stages the step is "
    "max(busy, path) over its micro-batches"
)


def is_plain(s: Scalars) -> bool:
    """Plain tensor parallelism inside one node: the plain formulas of the Explain tab apply."""
    return parallel.simple(s.x.as_arrays())


class Scalars:
    """Scalars of one evaluated scenario, named as in the formulas."""

    def __init__(self, r: Result):
        x = r.inputs
        self.r, self.x, self.m, self.model = r, x, r.metrics, r.resolved.model
        f = _scalar
        self.L, self.h, self.g = f(x.layers), f(x.heads), f(x.kv_heads)
        self.tp, self.B, self.P, self.O = f(x.tp), f(x.batch), f(x.prompt_tokens), f(x.output_tokens)
        self.C, self.block = f(x.chunk_tokens), f(x.block_tokens)
        self.full, self.win, self.W = f(x.full_attention_layers), f(x.window_layers), f(x.window_tokens)
        self.peak, self.mfu, self.bw, self.mbu = f(x.peak_flop_per_s), f(x.mfu), f(x.bandwidth_bytes_per_s), f(x.mbu)
        self.a = f(x.activation_elements_per_token_per_layer)
        self.kv_b = f(x.kv_bytes_per_element)
        self.per_layer = f(x.kv_elements_per_token_per_layer) * self.kv_b
        # layers that cache K/V (state and no-mixer layers of hybrids do not) and their fixed state
        self.L_kv, self.state = self.full + self.win, f(x.state_bytes_per_sequence)
        self.o, self.a_c, self.a_m = (
            f(x.compute_memory_overlap),
            f(x.attention_compute_frac),
            f(x.attention_bandwidth_frac),
        )
        self.peak16, self.half = f(x.attention_peak_flop_per_s), f(x.matmul_half_tokens)
        self.t_step, self.t_layer, self.t_layer_dec = (
            f(x.step_overhead_s),
            f(x.layer_overhead_s),
            f(x.decode_layer_overhead_s),
        )
        self.rho = f(x.gqa_reread_frac)
        self.plain = is_plain(self)
        self.gpus = f(r.metrics["gpus_per_instance"])
        self.kernels = f(x.kernel_set) > 0  # the step times rest on measured kernels (explain_kernels)
        self.basis = r.time_basis

    @property
    def step_time_formula(self) -> str:
        if self.kernels:
            kernels = f"{KERNEL_STEP}  [{self.basis}];  {KERNEL_TERMS}"
            return kernels if self.plain else kernels + LAYOUT_NOTE
        plain = STEP_TIME if self.o == 1.0 else STEP_TIME_REFINED
        plain = plain + (f"  [{self.basis}]" if self.basis else "")
        return plain if self.plain else plain + LAYOUT_NOTE

    # ------------------------------------------------------------ shared sub-expressions

    def layer_tokens(self, tokens: str) -> str:
        """Σ over layers of tokens cached/attended: L_full · n + L_window · min(n, W)."""
        if self.win == 0:
            return f"{num(self.full)} · {tokens}"
        return f"({num(self.full)} · {tokens} + {num(self.win)} · min({tokens}, {num(self.W)}))"

    def state_gpu(self) -> str:
        """The hybrid state layers' fixed state of one sequence on one GPU, as a term to add ('' when none)."""
        return f" + {num(self.state)} / {num(self.tp)}" if self.state else ""

    def per_layer_gpu(self) -> str:
        """KV bytes per token per layer on one GPU: ⌈g/tp⌉ of the g heads (the MLA latent is replicated)."""
        if self.model.is_mla:
            return num(self.per_layer)
        return f"{num(self.per_layer)} · ⌈{num(self.g)} / {num(self.tp)}⌉ / {num(self.g)}"

    def weights_touched(self, tokens: float) -> str:
        x = self.x
        bw, tp = num(float(x.weight_bytes_per_param)), num(self.tp)
        read = float(x.total_params) - float(x.lookup_params)  # an untied embedding is a lookup, not a read
        if float(x.moe_layers) == 0:
            return f"{num(read)} · {bw} / {tp}"
        e, k, ml, ep = float(x.experts), float(x.experts_per_token), float(x.moe_layers), float(x.expert_params)
        dense = read - ml * e * ep
        experts_hit = f"{num(e)} · (1 - (1 - {num(k)} / {num(e)})^{num(tokens)})"
        return f"({num(dense)} + {num(ml)} · {experts_hit} · {num(ep)}) · {bw} / {tp}"

    def body_params(self) -> str:
        """N_matmul − N_head: the matmul parameters that run for every token."""
        return num(float(self.x.matmul_params - self.x.lm_head_params))

    def head_params(self) -> str:
        """N_head: the LM head, run only for tokens that need logits."""
        return num(float(self.x.lm_head_params))

    def activation_bytes(self) -> str:
        """Activation traffic of one token through the matmuls: L · a / tp · 2 B."""
        return f"{num(self.L)} · {num(self.a)} / {num(self.tp)} · {num(ACTIVATION_BYTES)}"

    def comm(self, tokens: float) -> str:
        if self.tp <= 1:
            return "0"
        x = self.x
        return (
            f"2 · {num(self.L)} · (2 · ({num(self.tp)} - 1) / {num(self.tp)} · {num(tokens)} · "
            f"{num(float(x.hidden))} · 2 / ({num(float(x.link_bytes_per_s))} · {num(float(x.link_frac))}) + "
            f"{num(float(x.collective_latency_s))})"
        )

    def kv_reads(self) -> str:
        """ρ_g = 1 + (h/max(g, tp) − 1)·ρ, or nothing when each KV group is loaded once."""
        per_gpu = max(self.g, self.tp)  # below g = tp the KV heads are replicated: one per GPU
        if self.rho == 0 or self.model.is_mla or per_gpu >= self.h:
            return ""
        return f" · (1 + ({num(self.h)} / {num(per_gpu)} - 1) · {num(self.rho)})"

    def overhead(self, prefill_tokens: float) -> str:
        """t_0 = t_step + L · t_layer (eager with prefill tokens, CUDA-graph replay without); with pipeline
        stages the bottleneck stage's share u/pp of its m micro-batches' (m = 1 for a lone prompt)."""
        layer = self.t_layer if prefill_tokens > 0 else self.t_layer_dec
        plain = f"{num(self.t_step)} + {num(self.L)} · {num(layer)}"
        xa = self.x.as_arrays()
        if not np.any(xa.pp > 1):
            return plain
        m = 1.0 if prefill_tokens > 0 else float(np.asarray(micro_batches(xa, self.B, 0.0)[0]))
        return f"{num(float(np.asarray(layer_imbalance(xa) / xa.pp)), 10)} · {num(m)} · ({plain})"

    def matmul_compute(self, tokens: float, logit_tokens: float) -> str:
        """c_mm: the GEMMs at T + T½ rows (the experts at k·T + E_hit·T½) over peak · MFU."""
        x = self.x
        tp, half = num(self.tp), num(self.half)
        peak = f"({num(self.peak)} · {num(self.mfu)})"
        routed = float(x.moe_layers * x.experts_per_token * x.expert_params)
        body = num(float(x.matmul_params - x.lm_head_params) - routed)
        dense = (
            f"(2 · {body} · ({num(tokens)} + {half}) + 2 · {self.head_params()} · ({num(logit_tokens)} + {half})) "
            f"/ {tp} / {peak}"
        )
        if float(x.moe_layers) == 0:
            return dense
        e, k = float(x.experts), float(x.experts_per_token)
        hit = f"{num(e)} · (1 - (1 - {num(k)} / {num(e)})^{num(tokens)})"
        return (
            f"{dense} + 2 · {num(float(x.moe_layers))} · {num(float(x.expert_params))} · ({num(k)} · {num(tokens)} "
            f"+ {hit} · {half}) / {tp} / ({num(self.peak)} · {num(self.mfu)} · {num(float(x.moe_matmul_frac))})"
        )
