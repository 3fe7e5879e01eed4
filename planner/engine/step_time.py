"""Duration of one scheduler step, for the simulator: ``roofline.step_cost`` made fast.

A step runs ``seqs`` decoding sequences, each passing q tokens (1; γ + 1 when
speculative decoding verifies a draft) at the running set's mean context ``ctx``,
plus prefill chunks j of n_j new tokens after p_j tokens already in the cache.

  T          = seqs·q + Σ n_j,  T½ = the profile's half-saturation tokens (0 when T = 0)
  K(k)       = L_full·k + L_win·min(k, W)                        (layer-keys, sliding windows)
  overhead   t_0 = t_step + L·t_layer   (T > 0; t_layer,decode for a step without prefill chunks)
  matmul     c_mm = [2·N_body·(T + T½) + 2·N_head·(seqs·q + #chunks + T½)] / tp / (peak·MFU)
                    + 2·L_moe·n_e·(k·T + E_hit(T)·T½) / tp / (peak·MFU·η_moe)
             m_mm = [weights touched(T) + T·activations] / (bw·MBU)
  attention  c_att = [2·h·d_dec·seqs·q·K(ctx) + Σ_j 2·h·d_pre·n_j·K(p_j + (n_j+1)/2)] / tp / (peak₁₆·a_c)
             m_att = [kv·ρ_g·seqs·K(ctx) + kv·Σ_j K(p_j) + T·kv·L_att + (seqs + #chunks)·S] / (bw·a_m),
                    ρ_g = 1 + (h/g − 1)·ρ, L_att = attention layers, S = a hybrid's fixed state
  time       = t_0 + R(c_mm, m_mm) + R(c_att, m_att) + t_comm(T)
             R(c, m) = max(c, m) + (1 − o)·min(c, m)   (``roofline.overlapped_s``)
  speculative: + γ · t_draft(seqs, ctx)   (the draft's own decode step, or c · the target's)

With at most one prefill chunk this is exactly ``roofline.step_cost(x, seqs, q, ctx, n, p)``
(checked to 1e-9 in tests); several chunks add their attention and KV reads.  The
coefficients are taken from ``EngineInputs`` once, so the engine profile's efficiency
parameters (and a calibrated profile's measured rates) apply unchanged.  Any object with
the two methods of ``StepTime`` can be injected into the simulator instead (e.g. a
measured step-time table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from planner.engine.efficiency import kv_group_reads
from planner.engine.inputs import EngineInputs
from planner.engine.memory import kv_bytes_per_token_per_layer
from planner.engine.roofline import overlapped_s
from planner.engine.speculative import draft_model_inputs
from planner.units import ACTIVATION_BYTES


class StepTime(Protocol):
    """What the simulator needs: the time of one mixed step, and of a run of pure decode steps."""

    def step_s(self, seqs: int, ctx: float, new: Sequence[float], past: Sequence[float]) -> float: ...

    def decode_steps_s(self, seqs: int, ctx: np.ndarray) -> np.ndarray: ...


def _scalar(v) -> float:
    a = np.asarray(v, dtype=float)
    if a.size != 1:
        raise ValueError("step time needs scalar engine inputs (one scenario)")
    return float(a.reshape(()))


_FIELDS = (
    "matmul_params",
    "lm_head_params",
    "lookup_params",
    "tp",
    "heads",
    "attention_dim_decode",
    "attention_dim_prefill",
    "full_attention_layers",
    "window_layers",
    "window_tokens",
    "state_bytes_per_sequence",
    "layers",
    "activation_elements_per_token_per_layer",
    "total_params",
    "moe_layers",
    "experts",
    "expert_params",
    "experts_per_token",
    "weight_bytes_per_param",
    "peak_flop_per_s",
    "mfu",
    "bandwidth_bytes_per_s",
    "mbu",
    "collective_latency_s",
    "hidden",
    "link_bytes_per_s",
    "link_frac",
    "compute_memory_overlap",
    "attention_compute_frac",
    "attention_bandwidth_frac",
    "attention_peak_flop_per_s",
    "step_overhead_s",
    "layer_overhead_s",
    "decode_layer_overhead_s",
    "gqa_reread_frac",
    "heads_per_kv_head",
    "matmul_half_tokens",
    "moe_matmul_frac",
)


@dataclass(frozen=True)
class Roofline:
    """Scalar coefficients of ``roofline.step_cost`` for one scenario (module doc)."""

    body_s_per_token: float  # 2·N_body / tp / (peak·MFU): dense GEMMs, per row
    head_s_per_token: float  # 2·N_head / tp / (peak·MFU), per logit row
    expert_s_per_token: float  # 2·L_moe·n_e / tp / (peak·MFU·η_moe), per expert row
    experts_per_token: float  # k
    experts: float  # E
    half_tokens: float  # T½
    decode_attn_s: float  # 2·h·d_dec / tp / (peak₁₆·a_c), per query per layer-key
    prefill_attn_s: float  # 2·h·d_pre / tp / (peak₁₆·a_c)
    full_layers: float
    window_layers: float
    window_tokens: float
    kv_layer_s: float  # KV bytes per token per layer per GPU / (bw·a_m)
    kv_decode_layer_s: float  # the same for decode queries: × ρ_g = 1 + (h/g − 1)·ρ
    kv_token_s: float  # KV written per token (all attention layers) / (bw·a_m)
    state_s: float  # a hybrid's fixed state per sequence per GPU / (bw·a_m), read each step (0: none)
    act_token_s: float  # activations through the matmuls, per token / (bw·MBU)
    dense_weight_s: float  # weights but the routed experts / (bw·MBU)
    expert_weight_s: float  # all routed experts / (bw·MBU)
    expert_miss: float  # 1 − k/E: chance one token skips a given expert
    overlap: float  # o: max(c, m) + (1 − o)·min(c, m)
    overhead_s: float  # t_step + L·t_layer (a step with prefill tokens)
    decode_overhead_s: float  # t_step + L·t_layer,decode (a decode-only step)
    comm_fixed_s: float  # 2·layers·latency (tp > 1)
    comm_s_per_token: float

    @classmethod
    def from_inputs(cls, x: EngineInputs) -> Roofline:
        f = {k: _scalar(getattr(x, k)) for k in _FIELDS if k != "heads_per_kv_head"}
        reads = _scalar(kv_group_reads(x))
        tp = f["tp"]
        kv_layer = _scalar(kv_bytes_per_token_per_layer(x))
        all_experts = f["moe_layers"] * f["experts"] * f["expert_params"]
        routed = f["moe_layers"] * f["experts_per_token"] * f["expert_params"]
        s_flop = 1.0 / (f["peak_flop_per_s"] * f["mfu"])
        s_byte = 1.0 / (f["bandwidth_bytes_per_s"] * f["mbu"])
        att_flop = 1.0 / (f["attention_peak_flop_per_s"] * f["attention_compute_frac"])
        att_byte = 1.0 / (f["bandwidth_bytes_per_s"] * f["attention_bandwidth_frac"])
        multi = tp > 1
        bus = f["link_bytes_per_s"] * f["link_frac"]
        return cls(
            body_s_per_token=2.0 * (f["matmul_params"] - f["lm_head_params"] - routed) / tp * s_flop,
            head_s_per_token=2.0 * f["lm_head_params"] / tp * s_flop,
            expert_s_per_token=2.0 * f["moe_layers"] * f["expert_params"] / tp * s_flop / f["moe_matmul_frac"],
            experts_per_token=f["experts_per_token"],
            experts=f["experts"],
            half_tokens=f["matmul_half_tokens"],
            decode_attn_s=2.0 * f["heads"] * f["attention_dim_decode"] / tp * att_flop,
            prefill_attn_s=2.0 * f["heads"] * f["attention_dim_prefill"] / tp * att_flop,
            full_layers=f["full_attention_layers"],
            window_layers=f["window_layers"],
            window_tokens=f["window_tokens"],
            kv_layer_s=kv_layer * att_byte,
            kv_decode_layer_s=kv_layer * att_byte * reads,
            kv_token_s=(f["full_attention_layers"] + f["window_layers"]) * kv_layer * att_byte,
            state_s=f["state_bytes_per_sequence"] / tp * att_byte,
            act_token_s=f["layers"] * f["activation_elements_per_token_per_layer"] / tp * ACTIVATION_BYTES * s_byte,
            dense_weight_s=(f["total_params"] - f["lookup_params"] - all_experts)
            * f["weight_bytes_per_param"]
            / tp
            * s_byte,
            expert_weight_s=all_experts * f["weight_bytes_per_param"] / tp * s_byte,
            expert_miss=1.0 - f["experts_per_token"] / max(f["experts"], 1.0),
            overlap=f["compute_memory_overlap"],
            overhead_s=f["step_overhead_s"] + f["layers"] * f["layer_overhead_s"],
            decode_overhead_s=f["step_overhead_s"] + f["layers"] * f["decode_layer_overhead_s"],
            comm_fixed_s=2.0 * f["layers"] * f["collective_latency_s"] if multi else 0.0,
            comm_s_per_token=2.0 * f["layers"] * 2.0 * (tp - 1.0) / tp * f["hidden"] * ACTIVATION_BYTES / bus
            if multi
            else 0.0,
        )

    def _keys(self, k):
        return self.full_layers * k + self.window_layers * np.minimum(k, self.window_tokens)

    def decode_time_s(self, seqs, q: float, ctx):
        """Decode-only step time (module doc, no chunks); ``ctx`` and ``seqs`` broadcast as arrays."""
        tokens = seqs * q
        keys = self._keys(ctx) if self.window_layers else self.full_layers * ctx
        hit = 1.0 - self.expert_miss**tokens
        runs = np.asarray(tokens) > 0
        pad = np.where(runs, self.half_tokens, 0.0)
        compute = (
            self.body_s_per_token * (tokens + pad)
            + self.head_s_per_token * (tokens + pad)
            + self.expert_s_per_token * (self.experts_per_token * tokens + self.experts * hit * pad)
        )
        matmul = overlapped_s(
            compute,
            self.dense_weight_s + self.expert_weight_s * hit + tokens * self.act_token_s,
            self.overlap,
        )
        attention = overlapped_s(
            self.decode_attn_s * tokens * keys,
            self.kv_decode_layer_s * seqs * keys + tokens * self.kv_token_s + seqs * self.state_s,
            self.overlap,
        )
        gpu = matmul + attention + self.comm_fixed_s + self.comm_s_per_token * tokens
        return np.where(runs, self.decode_overhead_s, 0.0) + gpu

    def scalar_time_s(
        self, seqs: float, q: float, ctx: float, new: Sequence[float] = (), past: Sequence[float] = ()
    ) -> float:
        """One mixed step's time (module doc) in plain Python floats: the simulator's per-step path."""
        full, win, w = self.full_layers, self.window_layers, self.window_tokens
        tokens = seqs * q + sum(new)
        if tokens <= 0:
            return 0.0
        keys = full * ctx + win * (ctx if ctx < w else w)
        chunks = sum(1 for n in new if n > 0)
        pad = self.half_tokens
        hit = 1.0 - self.expert_miss**tokens
        mc = (
            self.body_s_per_token * (tokens + pad)
            + self.head_s_per_token * (seqs * q + chunks + pad)
            + self.expert_s_per_token * (self.experts_per_token * tokens + self.experts * hit * pad)
        )
        ac = self.decode_attn_s * seqs * q * keys
        kv_read = 0.0
        for n, p in zip(new, past, strict=True):
            k = p + (n + 1.0) / 2.0
            ac += self.prefill_attn_s * n * (full * k + win * (k if k < w else w))
            kv_read += full * p + win * (p if p < w else w)
        mm = self.dense_weight_s + self.expert_weight_s * hit + tokens * self.act_token_s
        am = (
            self.kv_decode_layer_s * seqs * keys
            + self.kv_layer_s * kv_read
            + tokens * self.kv_token_s
            + (seqs + chunks) * self.state_s
        )
        o = self.overlap
        matmul = (mc + (1.0 - o) * mm) if mc >= mm else (mm + (1.0 - o) * mc)
        attention = (ac + (1.0 - o) * am) if ac >= am else (am + (1.0 - o) * ac)
        overhead = self.overhead_s if chunks else self.decode_overhead_s
        return overhead + matmul + attention + self.comm_fixed_s + self.comm_s_per_token * tokens


@dataclass(frozen=True)
class RooflineStepTime:
    """The default ``StepTime``: the target's roofline, plus γ draft steps when speculating."""

    target: Roofline
    q: float  # tokens per decoding sequence per step: 1, or γ + 1
    gamma: float
    draft: Roofline | None  # the draft preset's roofline; None → draft_ratio · target step
    draft_ratio: float

    @classmethod
    def from_inputs(cls, x: EngineInputs) -> RooflineStepTime:
        spec = _scalar(x.spec_on) > 0 and _scalar(x.gamma) > 0
        gamma = _scalar(x.gamma) if spec else 0.0
        own_draft = spec and _scalar(x.has_draft_model) > 0
        return cls(
            target=Roofline.from_inputs(x),
            q=gamma + 1.0,
            gamma=gamma,
            draft=Roofline.from_inputs(draft_model_inputs(x)) if own_draft else None,
            draft_ratio=_scalar(x.draft_ratio),
        )

    def _draft_s(self, seqs, ctx):
        if self.draft is not None:
            return self.draft.decode_time_s(seqs, 1.0, ctx)
        return self.draft_ratio * self.target.decode_time_s(seqs, 1.0, ctx)

    def step_s(self, seqs: int, ctx: float, new: Sequence[float] = (), past: Sequence[float] = ()) -> float:
        t = self.target.scalar_time_s(seqs, self.q if seqs else 1.0, ctx, new, past)
        if self.gamma and seqs:
            d = (
                self.draft.scalar_time_s(seqs, 1.0, ctx)
                if self.draft is not None
                else self.draft_ratio * self.target.scalar_time_s(seqs, 1.0, ctx)
            )
            t += self.gamma * d
        return t

    def decode_steps_s(self, seqs: int, ctx: np.ndarray) -> np.ndarray:
        ctx = np.asarray(ctx, dtype=float)
        t = self.target.decode_time_s(seqs, self.q, ctx)
        if self.gamma:
            t = t + self.gamma * self._draft_s(seqs, ctx)
        return t
