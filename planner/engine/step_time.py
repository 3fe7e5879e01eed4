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

Parallel layouts (``roofline`` module doc; ``Layout`` below): the pass is the busiest data-parallel rank's
(seqs/dp decodes, a chunk on one rank; the experts over tp · dp see every rank's tokens), the collectives
those of the layout, and with pp stages a step is the pipeline's cycle max(busy, path) over m micro-batches.

With at most one prefill chunk this is exactly ``roofline.step_cost(x, seqs, q, ctx, n, p)``
(checked to 1e-9 in tests); several chunks add their attention and KV reads.  The
coefficients are taken from ``EngineInputs`` once, so the engine profile's efficiency
parameters (and a calibrated profile's measured rates) apply unchanged.  Any object with
the two methods of ``StepTime`` can be injected into the simulator instead (e.g. a
measured step-time table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from planner.engine import parallel
from planner.engine.efficiency import kv_group_reads
from planner.engine.inputs import EngineInputs
from planner.engine.kernel_step_time import MeasuredStep
from planner.engine.memory import kv_bytes_per_token_per_layer
from planner.engine.roofline import overlapped_s
from planner.engine.speculative import draft_model_inputs
from planner.kernels.curves import curves as kernel_curves
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
    "expert_weight_bytes_per_param",
    "peak_flop_per_s",
    "expert_peak_flop_per_s",
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
class Layout:
    """Scalar coefficients of a layout beyond one node's tensor parallelism (``roofline`` module doc)."""

    dp: float
    pp: float
    u_pp: float  # u / pp: the biggest stage's share of a pass
    imbalance: float  # routed tokens on the busiest EP rank ÷ the mean
    moe_fixed_s: float  # the MoE exchange's latencies per pass (dp > 1)
    moe_s_per_token: float  # … per exchanged token (X for ep > 1, T_all for ep = 1), decode-only steps
    moe_prefill_s_per_token: float  # … in a step with prefill tokens (DeepEP's high-throughput kernels)
    moe_by_rank: bool  # ep > 1: X = max(T_r, imb · T_all / dp)
    tbo: float  # two-batch overlap: the share of min(compute, exchange) hidden
    cross: float  # stage boundaries crossing nodes
    far_fixed_s: float
    far_s_per_token: float
    near_fixed_s: float
    near_s_per_token: float

    @classmethod
    def from_inputs(cls, x: EngineInputs) -> Layout:
        f = {k: _scalar(getattr(x, k)) for k in ("dp", "pp", "moe_layers", "experts_per_token", "hidden", "tp")}
        one = x.with_(layers=np.asarray(1.0), moe_layers=np.asarray(1.0))  # per-layer collectives, one token
        n = f["tp"] * f["dp"]
        ep_on = _scalar(x.ep) > 1
        if ep_on:
            per_token = f["hidden"] * (_scalar(x.dispatch_bytes_per_element) + ACTIVATION_BYTES) / f["tp"]
            moe_token = per_token * _scalar(parallel.exchange_s_per_byte(x, False))
            moe_prefill = per_token * _scalar(parallel.exchange_s_per_byte(x, True))
            moe_fixed = 2.0 * _scalar(parallel.all_to_all_s(one, n, 0.0))
        else:
            zero, unit = (_scalar(parallel.gather_s(one, n, v * f["hidden"] * 2.0)) for v in (0.0, 1.0))
            moe_token, moe_fixed = 2.0 * (unit - zero), 2.0 * zero
            moe_prefill = moe_token
        active = f["dp"] > 1 and f["moe_layers"] > 0
        near0, near1 = (_scalar(parallel._send_s(x, v, False)) for v in (0.0, 1.0))
        far0, far1 = (_scalar(parallel._send_s(x, v, True)) for v in (0.0, 1.0))
        return cls(
            dp=f["dp"],
            pp=f["pp"],
            u_pp=_scalar(parallel.layer_imbalance(x)) / f["pp"],
            imbalance=_scalar(parallel.expert_imbalance(x)),
            moe_fixed_s=f["moe_layers"] * moe_fixed if active else 0.0,
            moe_s_per_token=f["moe_layers"] * moe_token if active else 0.0,
            moe_prefill_s_per_token=f["moe_layers"] * moe_prefill if active else 0.0,
            moe_by_rank=ep_on,
            tbo=_scalar(x.tbo),
            cross=_scalar(parallel.boundaries_crossing_nodes(x)),
            far_fixed_s=far0,
            far_s_per_token=far1 - far0,
            near_fixed_s=near0,
            near_s_per_token=near1 - near0,
        )

    def stage_send_s(self, rank_tokens: float) -> float:
        if self.pp <= 1:
            return 0.0
        if self.cross > 0:
            return self.far_fixed_s + self.far_s_per_token * rank_tokens
        return self.near_fixed_s + self.near_s_per_token * rank_tokens

    def path_sends_s(self, rank_tokens: float) -> float:
        if self.pp <= 1:
            return 0.0
        far = self.far_fixed_s + self.far_s_per_token * rank_tokens
        near = self.near_fixed_s + self.near_s_per_token * rank_tokens
        return self.cross * far + (self.pp - 1.0 - self.cross) * near


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
    layout: Layout | None = None  # a layout beyond one node's tensor parallelism (None: plain)

    @classmethod
    def from_inputs(cls, x: EngineInputs) -> Roofline:
        if not parallel.simple(x):
            return cls._with_layout(x)
        f = {k: _scalar(getattr(x, k)) for k in _FIELDS if k != "heads_per_kv_head"}
        reads = _scalar(kv_group_reads(x))
        tp = f["tp"]
        kv_layer = _scalar(kv_bytes_per_token_per_layer(x))
        all_experts = f["moe_layers"] * f["experts"] * f["expert_params"]
        routed = f["moe_layers"] * f["experts_per_token"] * f["expert_params"]
        s_flop = 1.0 / (f["peak_flop_per_s"] * f["mfu"])
        s_flop_e = 1.0 / (f["expert_peak_flop_per_s"] * f["mfu"])  # the routed experts at their compute dtype
        s_byte = 1.0 / (f["bandwidth_bytes_per_s"] * f["mbu"])
        att_flop = 1.0 / (f["attention_peak_flop_per_s"] * f["attention_compute_frac"])
        att_byte = 1.0 / (f["bandwidth_bytes_per_s"] * f["attention_bandwidth_frac"])
        multi = tp > 1
        bus = f["link_bytes_per_s"] * f["link_frac"]
        return cls(
            body_s_per_token=2.0 * (f["matmul_params"] - f["lm_head_params"] - routed) / tp * s_flop,
            head_s_per_token=2.0 * f["lm_head_params"] / tp * s_flop,
            expert_s_per_token=2.0 * f["moe_layers"] * f["expert_params"] / tp * s_flop_e / f["moe_matmul_frac"],
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
            expert_weight_s=all_experts * f["expert_weight_bytes_per_param"] / tp * s_byte,
            expert_miss=1.0 - f["experts_per_token"] / max(f["experts"], 1.0),
            overlap=f["compute_memory_overlap"],
            overhead_s=f["step_overhead_s"] + f["layers"] * f["layer_overhead_s"],
            decode_overhead_s=f["step_overhead_s"] + f["layers"] * f["decode_layer_overhead_s"],
            comm_fixed_s=2.0 * f["layers"] * f["collective_latency_s"] if multi else 0.0,
            comm_s_per_token=2.0 * f["layers"] * 2.0 * (tp - 1.0) / tp * f["hidden"] * ACTIVATION_BYTES / bus
            if multi
            else 0.0,
        )

    @classmethod
    def _with_layout(cls, x: EngineInputs) -> Roofline:
        """The coefficients of a layout: experts over tp · dp, the layout's tensor-parallel all-reduces."""
        tp, dp = _scalar(x.tp), _scalar(x.dp)
        one_rank = np.asarray(1.0)
        base = cls.from_inputs(
            x.with_(dp=one_rank, ep=one_rank, pp=one_rank, gpus_per_node=np.maximum(x.gpus_per_node, x.tp))
        )
        lay = Layout.from_inputs(x)
        ar0 = _scalar(parallel.allreduce_s(x, tp, 0.0)) if tp > 1 else 0.0
        ar1 = _scalar(parallel.allreduce_s(x, tp, _scalar(x.hidden) * ACTIVATION_BYTES)) - ar0 if tp > 1 else 0.0
        n_ar = _scalar(parallel.tp_allreduces(x))
        return replace(
            base,
            experts_per_token=base.experts_per_token * lay.imbalance,
            expert_s_per_token=base.expert_s_per_token / dp,
            expert_weight_s=base.expert_weight_s / dp * _scalar(parallel.physical_expert_frac(x)),
            comm_fixed_s=n_ar * ar0,
            comm_s_per_token=n_ar * ar1,
            layout=lay,
        )

    def _keys(self, k):
        return self.full_layers * k + self.window_layers * np.minimum(k, self.window_tokens)

    def _layout_pass_s(self, seqs, q: float, ctx, new: Sequence[float], past: Sequence[float], scale: float):
        """(time, the busiest rank's tokens) of one pass under the layout: ``scale`` of each chunk (a micro-batch's
        share), the busiest data-parallel rank's tokens through the dense parts, every rank's through the experts."""
        lay = self.layout
        assert lay is not None
        full, win, w = self.full_layers, self.window_layers, self.window_tokens
        count = sum(1 for n in new if n > 0)
        chunks = scale * count
        f = scale / min(max(chunks, 1.0), lay.dp)  # a chunk's share on the busiest rank
        seqs_r = seqs / lay.dp
        dec_r = seqs_r * q
        new_sum = sum(new)
        tokens_r = dec_r + f * new_sum
        tokens_all = seqs * q + scale * new_sum
        keys = full * ctx + win * np.minimum(ctx, w)
        pad = np.where(np.asarray(tokens_r) > 0, self.half_tokens, 0.0)
        pad_all = np.where(np.asarray(tokens_all) > 0, self.half_tokens, 0.0)
        hit = 1.0 - self.expert_miss**tokens_all
        mc = (
            self.body_s_per_token * (tokens_r + pad)
            + self.head_s_per_token * (dec_r + f * count + pad)
            + self.expert_s_per_token * (self.experts_per_token * tokens_all + self.experts * hit * pad_all)
        )
        ac = self.decode_attn_s * dec_r * keys
        kv_read = 0.0
        for n, p in zip(new, past, strict=True):
            k = p + (n + 1.0) / 2.0
            ac = ac + self.prefill_attn_s * f * n * (full * k + win * (k if k < w else w))
            kv_read += full * p + win * (p if p < w else w)
        mm = self.dense_weight_s + self.expert_weight_s * hit + tokens_r * self.act_token_s
        am = (
            self.kv_decode_layer_s * seqs_r * keys
            + self.kv_layer_s * f * kv_read
            + tokens_r * self.kv_token_s
            + (seqs_r + f * count) * self.state_s
        )
        exchanged = np.maximum(tokens_r, lay.imbalance * tokens_all / lay.dp) if lay.moe_by_rank else tokens_all
        exchange = lay.moe_fixed_s + (lay.moe_prefill_s_per_token if count else lay.moe_s_per_token) * exchanged
        comm = self.comm_fixed_s + self.comm_s_per_token * tokens_r + exchange
        overhead = self.overhead_s if count else self.decode_overhead_s
        work = overlapped_s(mc, mm, self.overlap) + overlapped_s(ac, am, self.overlap)
        t = overhead + work + comm - (lay.tbo * np.minimum(work, exchange) if lay.tbo else 0.0)
        return np.where(np.asarray(tokens_r) > 0, t, 0.0), tokens_r

    def _layout_step_s(self, seqs, q: float, ctx, new: Sequence[float], past: Sequence[float]):
        """A step under the layout: the pipeline's max(busy, path) over its micro-batches (roofline module doc)."""
        lay = self.layout
        assert lay is not None
        k = float(sum(1 for n in new if n > 0))
        m = np.clip(np.maximum(seqs, k), 1.0, lay.pp)
        m_p = np.clip(k, 1.0, m)
        t_mix, r_mix = self._layout_pass_s(seqs / m, q, ctx, new, past, 1.0 / float(np.max(m_p)))
        if lay.pp <= 1:
            return t_mix
        t_dec, r_dec = self._layout_pass_s(seqs / m, q, ctx, (), (), 1.0) if k else (t_mix, r_mix)
        send_dec, send_mix = lay.stage_send_s(r_dec), lay.stage_send_s(r_mix)
        busy = lay.u_pp * ((m - m_p) * t_dec + m_p * t_mix) + (m - m_p) * send_dec + m_p * send_mix
        path = (m_p - 1.0) * (lay.u_pp * t_mix + send_mix) + t_mix + lay.path_sends_s(r_mix)
        return np.maximum(busy, path)

    def decode_time_s(self, seqs, q: float, ctx):
        """Decode-only step time (module doc, no chunks); ``ctx`` and ``seqs`` broadcast as arrays."""
        if self.layout is not None:
            return self._layout_step_s(np.asarray(seqs, dtype=float), q, np.asarray(ctx, dtype=float), (), ())
        if isinstance(seqs, int | float) and seqs > 0:
            return self._decode_run_s(seqs, q, np.asarray(ctx, dtype=float))
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

    def _decode_run_s(self, seqs: float, q: float, ctx: np.ndarray) -> np.ndarray:
        """``decode_time_s`` for one batch size > 0 over an array of contexts (the simulator's jumps): the
        batch's terms in Python floats, the context's in a few in-place array operations — every operation
        and its order as in ``decode_time_s``, so the values are the same to the bit (an exact no-op, + 0 or
        × 1, is skipped)."""
        tokens = seqs * q
        hit = 1.0 - self.expert_miss**tokens
        pad = self.half_tokens
        compute = (
            self.body_s_per_token * (tokens + pad)
            + self.head_s_per_token * (tokens + pad)
            + self.expert_s_per_token * (self.experts_per_token * tokens + self.experts * hit * pad)
        )
        memory = self.dense_weight_s + self.expert_weight_s * hit + tokens * self.act_token_s
        o = self.overlap
        matmul = max(compute, memory) if o == 1.0 else max(compute, memory) + (1.0 - o) * min(compute, memory)
        if self.window_layers:
            keys = self._keys(ctx)
        else:
            keys = ctx * self.full_layers if self.full_layers != 1.0 else ctx.copy()
        att_c = keys * (self.decode_attn_s * tokens)
        att_m = keys
        att_m *= self.kv_decode_layer_s * seqs
        att_m += tokens * self.kv_token_s
        if self.state_s:
            att_m += seqs * self.state_s
        if o == 1.0:
            out = np.maximum(att_c, att_m, out=att_c)
        else:
            lo = np.minimum(att_c, att_m)
            out = np.maximum(att_c, att_m, out=att_c)
            out += (1.0 - o) * lo
        out += matmul
        if self.comm_fixed_s:
            out += self.comm_fixed_s
        comm = self.comm_s_per_token * tokens
        if comm:
            out += comm
        out += self.decode_overhead_s
        return out

    def chunk_run_s(self, seqs: int, q: float, ctx: np.ndarray, new: int, past: np.ndarray) -> np.ndarray:
        """``scalar_time_s(seqs, q, ctx[j], (new,), (past[j],))`` for every j: a run of mixed steps with one
        prefill chunk of ``new`` tokens each (the simulator's prefill runs).  The terms that do not depend on
        j in Python floats, the rest over the arrays, every operation in ``scalar_time_s``'s order (the same
        values to the bit; an exact no-op, + 0 or × 1, is skipped)."""
        if self.layout is not None:
            return np.array(
                [self.scalar_time_s(seqs, q, c, (new,), (p,)) for c, p in zip(ctx.tolist(), past.tolist(), strict=True)]
            )
        full, win, w = self.full_layers, self.window_layers, self.window_tokens
        tokens = seqs * q + new
        chunks = 1 if new > 0 else 0
        pad = self.half_tokens
        hit = 1.0 - self.expert_miss**tokens
        mc = (
            self.body_s_per_token * (tokens + pad)
            + self.head_s_per_token * (seqs * q + chunks + pad)
            + self.expert_s_per_token * (self.experts_per_token * tokens + self.experts * hit * pad)
        )
        keys = full * ctx + win * np.minimum(ctx, w) if win else full * ctx
        ac = keys * (self.decode_attn_s * seqs * q)
        k = past + (new + 1.0) / 2.0
        kk = full * k + win * np.minimum(k, w) if win else full * k
        kk *= self.prefill_attn_s * new
        ac += kk
        kv_read = full * past + win * np.minimum(past, w) if win else full * past
        mm = self.dense_weight_s + self.expert_weight_s * hit + tokens * self.act_token_s
        am = keys
        am *= self.kv_decode_layer_s * seqs
        kv_read *= self.kv_layer_s
        am += kv_read
        am += tokens * self.kv_token_s
        if self.state_s:
            am += (seqs + chunks) * self.state_s
        o = self.overlap
        matmul = (mc + (1.0 - o) * mm) if mc >= mm else (mm + (1.0 - o) * mc)
        if o == 1.0:
            attention = np.maximum(ac, am, out=ac)
        else:
            attention = np.where(ac >= am, ac + (1.0 - o) * am, am + (1.0 - o) * ac)
        overhead = self.overhead_s if chunks else self.decode_overhead_s
        out = attention
        out += overhead + matmul
        if self.comm_fixed_s:
            out += self.comm_fixed_s
        comm = self.comm_s_per_token * tokens
        if comm:
            out += comm
        return out

    def scalar_time_s(
        self, seqs: float, q: float, ctx: float, new: Sequence[float] = (), past: Sequence[float] = ()
    ) -> float:
        """One mixed step's time (module doc) in plain Python floats: the simulator's per-step path."""
        full, win, w = self.full_layers, self.window_layers, self.window_tokens
        tokens = seqs * q + sum(new)
        if tokens <= 0:
            return 0.0
        if self.layout is not None:
            return float(self._layout_step_s(float(seqs), q, float(ctx), new, past))
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


def step_of(x: EngineInputs) -> Roofline | MeasuredStep:
    """The scenario's step: its measured kernels where it has tables (``kernel_step_time``), else its roofline."""
    roofline = Roofline.from_inputs(x)
    measured = _scalar(x.kernel_set) > 0 and (
        kernel_curves(_scalar(x.kernel_set), _scalar(x.tp), _scalar(x.ep), _scalar(x.dp)) is not None
    )
    return MeasuredStep.from_inputs(x, roofline) if measured else roofline


@dataclass(frozen=True)
class RooflineStepTime:
    """The default ``StepTime``: the target's roofline, plus γ draft steps when speculating."""

    target: Roofline | MeasuredStep
    q: float  # tokens per decoding sequence per step: 1, or γ + 1
    gamma: float
    draft: Roofline | MeasuredStep | None  # the draft preset's step; None → draft_ratio · target step
    draft_ratio: float

    @classmethod
    def from_inputs(cls, x: EngineInputs) -> RooflineStepTime:
        spec = _scalar(x.spec_on) > 0 and _scalar(x.gamma) > 0
        gamma = _scalar(x.gamma) if spec else 0.0
        own_draft = spec and _scalar(x.has_draft_model) > 0
        return cls(
            target=step_of(x),
            q=gamma + 1.0,
            gamma=gamma,
            draft=step_of(draft_model_inputs(x)) if own_draft else None,
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

    def chunk_run_s(self, seqs: int, q: float, ctx: np.ndarray, new: int, past: np.ndarray) -> np.ndarray:
        """``step_s(seqs, ctx[j], (new,), (past[j],))`` for every j (``Roofline.chunk_run_s``)."""
        if self.gamma:
            pairs = zip(ctx.tolist(), past.tolist(), strict=True)
            return np.array([self.step_s(seqs, c, (new,), (p,)) for c, p in pairs])
        return self.target.chunk_run_s(seqs, q if seqs else 1.0, ctx, new, past)

    def decode_steps_s(self, seqs: int, ctx: np.ndarray) -> np.ndarray:
        ctx = np.asarray(ctx, dtype=float)
        if self.gamma and self.draft is None and isinstance(self.target, MeasuredStep):
            t, one = self.target.decode_pair_s(seqs, self.q, ctx)  # one attention lookup for both (to the bit)
            return t + self.gamma * (self.draft_ratio * one)
        t = self.target.decode_time_s(seqs, self.q, ctx)
        if self.gamma:
            t = t + self.gamma * self._draft_s(seqs, ctx)
        return t
