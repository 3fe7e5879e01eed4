"""Duration of one scheduler step, for the simulator: ``roofline.step_cost`` made fast.

A step runs ``seqs`` decoding sequences, each passing q tokens (1; γ + 1 when
speculative decoding verifies a draft) at the running set's mean context ``ctx``,
plus prefill chunks j of n_j new tokens after p_j tokens already in the cache.

  T          = seqs·q + Σ n_j
  K(k)       = L_full·k + L_win·min(k, W)                        (layer-keys, sliding windows)
  matmul     F_mm = [2·(N_active − N_head)·T + 2·N_head·(seqs·q + #chunks)] / tp
             B_mm = weights touched(T) + T·activations
  attention  F_att = [2·h·d_dec·seqs·q·K(ctx) + Σ_j 2·h·d_pre·n_j·K(p_j + (n_j+1)/2)] / tp
             B_att = kv·seqs·K(ctx) + kv·Σ_j K(p_j) + T·kv·L_att + (seqs + #chunks)·S   (S: a hybrid's state)
  time       = R(F_mm/(peak·MFU), B_mm/(bw·MBU)) + R(F_att/(a_c·peak·MFU), B_att/(a_m·bw·MBU)) + t_comm(T)
             R(c, m) = max(c, m) + (1 − o)·min(c, m)   (``roofline.overlapped_s``; o = a_c = a_m = 1
             in datasheet profiles: the plain roofline)
  speculative: + γ · t_draft(seqs, ctx)   (the draft's own decode step, or c · the target's)

With at most one prefill chunk this is exactly ``roofline.step_cost(x, seqs, q, ctx, n, p)``
(checked to 1e-9 in tests); several chunks add their attention and KV reads.  The
coefficients are taken from ``EngineInputs`` once, so a calibrated profile (MFU, MBU,
peak, bandwidth, overlap, attention fractions) applies unchanged.  Any object with the two methods of ``StepTime``
can be injected into the simulator instead (e.g. a measured step-time table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

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


@dataclass(frozen=True)
class Roofline:
    """Scalar coefficients of ``roofline.step_cost`` for one scenario (module doc)."""

    matmul_flop_per_token: float  # 2·(N_active − N_head) / tp
    logit_flop_per_token: float  # 2·N_head / tp, for tokens that need logits
    decode_attn_flop: float  # 2·h·d_dec / tp, per query per layer-key
    prefill_attn_flop: float  # 2·h·d_pre / tp
    full_layers: float
    window_layers: float
    window_tokens: float
    kv_layer_bytes: float  # per token per layer per GPU
    act_token_bytes: float  # activations through the matmuls, per token
    kv_token_bytes: float  # KV written, per token (all attention layers)
    state_bytes: float  # a hybrid's fixed state per sequence per GPU, read each step (0: none)
    dense_weight_bytes: float
    expert_weight_bytes: float  # all routed experts
    expert_miss: float  # 1 − k/E: chance one token skips a given expert
    s_per_flop: float  # 1 / (peak·MFU)
    s_per_byte: float  # 1 / (bw·MBU)
    att_s_per_flop: float  # 1 / (a_c·peak·MFU)
    att_s_per_byte: float  # 1 / (a_m·bw·MBU)
    overlap: float  # o: max(c, m) + (1 − o)·min(c, m)
    comm_fixed_s: float  # 2·layers·latency (tp > 1)
    comm_s_per_token: float

    @classmethod
    def from_inputs(cls, x: EngineInputs) -> Roofline:
        f = {
            k: _scalar(getattr(x, k))
            for k in (
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
                "compute_memory_overlap",
                "attention_compute_frac",
                "attention_bandwidth_frac",
            )
        }
        tp = f["tp"]
        kv_layer = _scalar(kv_bytes_per_token_per_layer(x))
        experts = f["moe_layers"] * f["experts"] * f["expert_params"]
        multi = tp > 1
        return cls(
            matmul_flop_per_token=2.0 * (f["matmul_params"] - f["lm_head_params"]) / tp,
            logit_flop_per_token=2.0 * f["lm_head_params"] / tp,
            decode_attn_flop=2.0 * f["heads"] * f["attention_dim_decode"] / tp,
            prefill_attn_flop=2.0 * f["heads"] * f["attention_dim_prefill"] / tp,
            full_layers=f["full_attention_layers"],
            window_layers=f["window_layers"],
            window_tokens=f["window_tokens"],
            kv_layer_bytes=kv_layer,
            act_token_bytes=f["layers"] * f["activation_elements_per_token_per_layer"] / tp * ACTIVATION_BYTES,
            kv_token_bytes=(f["full_attention_layers"] + f["window_layers"]) * kv_layer,
            state_bytes=f["state_bytes_per_sequence"] / tp,
            dense_weight_bytes=(f["total_params"] - f["lookup_params"] - experts) * f["weight_bytes_per_param"] / tp,
            expert_weight_bytes=experts * f["weight_bytes_per_param"] / tp,
            expert_miss=1.0 - f["experts_per_token"] / max(f["experts"], 1.0),
            s_per_flop=1.0 / (f["peak_flop_per_s"] * f["mfu"]),
            s_per_byte=1.0 / (f["bandwidth_bytes_per_s"] * f["mbu"]),
            att_s_per_flop=1.0 / (f["attention_compute_frac"] * f["peak_flop_per_s"] * f["mfu"]),
            att_s_per_byte=1.0 / (f["attention_bandwidth_frac"] * f["bandwidth_bytes_per_s"] * f["mbu"]),
            overlap=f["compute_memory_overlap"],
            comm_fixed_s=2.0 * f["layers"] * f["collective_latency_s"] if multi else 0.0,
            comm_s_per_token=2.0
            * f["layers"]
            * 2.0
            * (tp - 1.0)
            / tp
            * f["hidden"]
            * ACTIVATION_BYTES
            / f["link_bytes_per_s"]
            if multi
            else 0.0,
        )

    def _keys(self, k):
        return self.full_layers * k + self.window_layers * np.minimum(k, self.window_tokens)

    def decode_time_s(self, seqs, q: float, ctx):
        """Decode-only step time (module doc, no chunks); ``ctx`` and ``seqs`` broadcast as arrays."""
        tokens = seqs * q
        keys = self._keys(ctx) if self.window_layers else self.full_layers * ctx
        weights = self.dense_weight_bytes + self.expert_weight_bytes * (1.0 - self.expert_miss**tokens)
        matmul = overlapped_s(
            (self.matmul_flop_per_token + self.logit_flop_per_token) * tokens * self.s_per_flop,
            (weights + tokens * self.act_token_bytes) * self.s_per_byte,
            self.overlap,
        )
        attention = overlapped_s(
            self.decode_attn_flop * tokens * self.att_s_per_flop * keys,
            (self.kv_layer_bytes * seqs * keys + seqs * self.state_bytes + tokens * self.kv_token_bytes)
            * self.att_s_per_byte,
            self.overlap,
        )
        return matmul + attention + self.comm_fixed_s + self.comm_s_per_token * tokens

    def scalar_time_s(
        self, seqs: float, q: float, ctx: float, new: Sequence[float] = (), past: Sequence[float] = ()
    ) -> float:
        """One mixed step's time (module doc) in plain Python floats: the simulator's per-step path."""
        full, win, w = self.full_layers, self.window_layers, self.window_tokens
        tokens = seqs * q + sum(new)
        keys = full * ctx + win * (ctx if ctx < w else w)
        chunks = sum(1 for n in new if n > 0)
        mm_flop = self.matmul_flop_per_token * tokens + self.logit_flop_per_token * (seqs * q + chunks)
        att_flop = self.decode_attn_flop * seqs * q * keys
        kv_read = seqs * keys
        for n, p in zip(new, past, strict=True):
            k = p + (n + 1.0) / 2.0
            att_flop += self.prefill_attn_flop * n * (full * k + win * (k if k < w else w))
            kv_read += full * p + win * (p if p < w else w)
        weights = self.dense_weight_bytes + self.expert_weight_bytes * (1.0 - self.expert_miss**tokens)
        mm_bytes = weights + tokens * self.act_token_bytes
        att_bytes = self.kv_layer_bytes * kv_read + tokens * self.kv_token_bytes + (seqs + chunks) * self.state_bytes
        o = self.overlap
        mc, mm = mm_flop * self.s_per_flop, mm_bytes * self.s_per_byte
        ac, am = att_flop * self.att_s_per_flop, att_bytes * self.att_s_per_byte
        matmul = (mc + (1.0 - o) * mm) if mc >= mm else (mm + (1.0 - o) * mc)
        attention = (ac + (1.0 - o) * am) if ac >= am else (am + (1.0 - o) * ac)
        return matmul + attention + self.comm_fixed_s + self.comm_s_per_token * tokens


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
