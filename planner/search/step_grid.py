"""The sizing search's data in the screening model's terms (``analytic``): the user's traffic as a
few numbers, and every configuration's step times (the simulator's formulas over arrays).

``StepModel.time_s`` is ``roofline.step_cost`` with one prefill chunk, its coefficients taken once per
configuration as ``step_time.Roofline`` takes them for one (equal to it to 1e-9; tests/search/test_search.py).
A configuration whose layout goes beyond one node's tensor parallelism (pipeline stages, data-parallel
attention, expert parallelism, tp across nodes: ``parallel.simple`` false) is timed by ``LayoutStepModel``:
``step_time.Roofline``'s layout coefficients over arrays (equal to ``roofline.step_cost`` to 1e-9).  A grid
with configurations on measured kernels (``kernel_step``) is timed by ``MeasuredStepModel``: ``step_cost``
itself, the kernels looked up per step.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property

import numpy as np

from planner.engine import parallel
from planner.engine.efficiency import kv_group_reads
from planner.engine.inputs import Array, EngineInputs
from planner.engine.kernel_step import has_kernels
from planner.engine.memory import kv_bytes_per_token_per_layer
from planner.engine.roofline import overlapped_s, step_cost
from planner.engine.speculative import draft_model_inputs, expected_tokens_per_step
from planner.sim.slo import Slo
from planner.sim.workload import Workload
from planner.units import ACTIVATION_BYTES

#: Quantile nodes of the uncached prompt length (the chunk-size and ITL terms average over them).
NODES = 12


@dataclass(frozen=True)
class TrafficStats:
    """The user's traffic as the screening model reads it (module doc), token counts per request."""

    rate_per_s: float  # the whole fleet's arrivals
    prompt_mean_tokens: float
    uncached_mean_tokens: float
    uncached_sq_mean_tokens: float  # E[Pu²]
    uncached_q_tokens: float  # at the SLO percentile
    uncached_goodput_tokens: float  # at the goodput share's percentile
    output_mean_tokens: float
    cached_mean_tokens: float
    shared_prefix_tokens: float  # the longest prefix requests share (held once in the KV cache)
    nodes: tuple[float, ...] = ()  # Pu at the midpoints of ``NODES`` equal-probability bins
    output_q_tokens: float = 0.0  # the output length at the SLO's percentile (E2EL)
    output_goodput_tokens: float = 0.0  # … at the goodput share's
    gaps_inv_mean: float = 0.0  # E[1 / (O − 1)] over outputs of more than one token (a request's TPOT spread)

    @classmethod
    def of(cls, w: Workload, slo: Slo, rate_per_s: float, prefix_cache: str = "pool") -> TrafficStats:
        """From a workload sample: cached tokens are those an unbounded prefix cache would serve
        (``Workload.reusable_prefix_tokens``; none with the prefix cache off)."""
        prompt = w.prompt_tokens.astype(float)
        cached = np.zeros_like(prompt) if prefix_cache == "off" else w.reusable_prefix_tokens().astype(float)
        uncached = np.maximum(prompt - cached, 1.0)
        g = slo.goodput_frac * 100.0 if slo.goodput_frac > 0 else slo.q
        q, qg = np.quantile(uncached, [slo.q / 100.0, g / 100.0], method="inverted_cdf")
        out = w.output_tokens.astype(float)
        oq, og = np.quantile(out, [slo.q / 100.0, g / 100.0], method="inverted_cdf")
        gaps = out[out > 1] - 1.0
        return cls(
            rate_per_s=float(rate_per_s),
            prompt_mean_tokens=float(prompt.mean()),
            uncached_mean_tokens=float(uncached.mean()),
            uncached_sq_mean_tokens=float(np.mean(uncached**2)),
            uncached_q_tokens=float(q),
            uncached_goodput_tokens=float(qg),
            output_mean_tokens=float(w.output_tokens.mean()),
            cached_mean_tokens=float(cached.mean()),
            shared_prefix_tokens=float(cached.max()) if cached.size else 0.0,
            nodes=tuple(float(v) for v in np.quantile(uncached, (np.arange(NODES) + 0.5) / NODES)),
            output_q_tokens=float(oq),
            output_goodput_tokens=float(og),
            gaps_inv_mean=float(np.mean(1.0 / gaps)) if gaps.size else 0.0,
        )

    def prefill_steps(self, budget) -> Array:
        """k = E[⌈Pu / b⌉]: the steps one prompt's prefill takes alone at budget b (over the nodes)."""
        nodes = np.asarray(self.nodes).reshape((-1,) + (1,) * np.ndim(budget))
        return np.ceil(nodes / budget).sum(axis=0) / len(self.nodes)  # whole numbers: the sum is exact

    @property
    def decode_context_tokens(self) -> float:
        return self.prompt_mean_tokens + self.output_mean_tokens / 2.0


@dataclass(frozen=True)
class StepModel:
    """``roofline.step_cost`` with one prefill chunk, its coefficients per configuration (arrays)."""

    body: Array  # 2·N_body / tp / (peak·MFU), per row
    head: Array
    expert: Array
    experts_per_token: Array
    experts: Array
    half: Array  # T½
    dec_attn: Array
    pre_attn: Array
    full_layers: Array
    window_layers: Array
    window_tokens: Array
    kv_layer: Array
    kv_dec_layer: Array
    kv_token: Array
    state: Array
    act: Array
    dense_weight: Array
    expert_weight: Array
    expert_miss: Array
    overlap: Array
    prefill_overhead: Array
    decode_overhead: Array
    comm_fixed: Array
    comm_per_token: Array
    moe: bool  # any configuration routes experts
    windows: bool
    full_overlap: bool  # every configuration's compute and memory overlap completely (o = 1)

    @classmethod
    def of(cls, x: EngineInputs) -> StepModel:
        """The coefficients of ``step_time.Roofline`` for every configuration of ``x`` at once."""
        x = x.as_arrays()
        tp = x.tp
        s_flop = 1.0 / (x.peak_flop_per_s * x.mfu)
        s_flop_e = 1.0 / (x.expert_peak_flop_per_s * x.mfu)  # the routed experts at their compute dtype
        s_byte = 1.0 / (x.bandwidth_bytes_per_s * x.mbu)
        att_flop = 1.0 / (x.attention_peak_flop_per_s * x.attention_compute_frac)
        att_byte = 1.0 / (x.bandwidth_bytes_per_s * x.attention_bandwidth_frac)
        routed = x.moe_layers * x.experts_per_token * x.expert_params
        all_experts = x.moe_layers * x.experts * x.expert_params
        kv_layer = kv_bytes_per_token_per_layer(x) * att_byte
        multi = tp > 1
        bus = x.link_bytes_per_s * x.link_frac
        return cls(
            body=2.0 * (x.matmul_params - x.lm_head_params - routed) / tp * s_flop,
            head=2.0 * x.lm_head_params / tp * s_flop,
            expert=2.0 * x.moe_layers * x.expert_params / tp * s_flop_e / x.moe_matmul_frac,
            experts_per_token=x.experts_per_token,
            experts=x.experts,
            half=x.matmul_half_tokens,
            dec_attn=2.0 * x.heads * x.attention_dim_decode / tp * att_flop,
            pre_attn=2.0 * x.heads * x.attention_dim_prefill / tp * att_flop,
            full_layers=x.full_attention_layers,
            window_layers=x.window_layers,
            window_tokens=x.window_tokens,
            kv_layer=kv_layer,
            kv_dec_layer=kv_layer * kv_group_reads(x),
            kv_token=(x.full_attention_layers + x.window_layers) * kv_layer,
            state=x.state_bytes_per_sequence / tp * att_byte,
            act=x.layers * x.activation_elements_per_token_per_layer / tp * ACTIVATION_BYTES * s_byte,
            dense_weight=(x.total_params - x.lookup_params - all_experts) * x.weight_bytes_per_param / tp * s_byte,
            expert_weight=all_experts * x.expert_weight_bytes_per_param / tp * s_byte,
            expert_miss=1.0 - x.experts_per_token / np.maximum(x.experts, 1.0),
            overlap=x.compute_memory_overlap,
            prefill_overhead=x.step_overhead_s + x.layers * x.layer_overhead_s,
            decode_overhead=x.step_overhead_s + x.layers * x.decode_layer_overhead_s,
            comm_fixed=np.where(multi, 2.0 * x.layers * x.collective_latency_s, 0.0),
            comm_per_token=np.where(
                multi, 2.0 * x.layers * 2.0 * (tp - 1.0) / tp * x.hidden * ACTIVATION_BYTES / bus, 0.0
            ),
            moe=bool(np.any(x.experts > 0)),
            windows=bool(np.any(x.window_layers > 0)),
            full_overlap=bool(np.all(x.compute_memory_overlap == 1.0)),
        )

    def take(self, shape: tuple[int, ...], index: tuple[np.ndarray, ...]) -> StepModel:
        """The configurations at ``index`` of the grid ``shape`` (1-D coefficient arrays)."""
        return replace(
            self,
            **{
                f.name: np.broadcast_to(getattr(self, f.name), shape)[index]
                for f in fields(self)
                if f.name not in ("moe", "windows", "full_overlap")
            },
        )

    def overlapped_s(self, compute_s, memory_s) -> Array:
        """``roofline.overlapped_s`` with this grid's overlap (its o = 1 test made once, at ``of``)."""
        return np.maximum(compute_s, memory_s) if self.full_overlap else overlapped_s(compute_s, memory_s, self.overlap)

    def _keys(self, k):
        if not self.windows:
            return self.full_layers * k
        return self.full_layers * k + self.window_layers * np.minimum(k, self.window_tokens)

    def time_s(self, seqs, q, ctx, n=0.0, past=0.0) -> Array:
        """One step: ``seqs`` sequences passing q tokens each at context ``ctx``, plus one prefill chunk
        of ``n`` tokens after ``past`` cached (n = 0: a decode-only step, whose chunk terms are not
        computed).  All arguments broadcast; seqs·q + n must be > 0 (an empty step takes no time and
        is not asked for)."""
        decodes = seqs * q
        decode_only = np.ndim(n) == 0 and float(n) == 0.0
        tokens = decodes if decode_only else decodes + n
        heads = decodes if decode_only else decodes + (np.asarray(n) > 0)  # the LM head: decodes and one per chunk
        if self.moe:
            hit = 1.0 - self.expert_miss**tokens
            mc = (
                self.body * (tokens + self.half)
                + self.head * (heads + self.half)
                + self.expert * (self.experts_per_token * tokens + self.experts * hit * self.half)
            )
            mm = self.dense_weight + self.expert_weight * hit + tokens * self.act
        else:
            mc = self.body * (tokens + self.half) + self.head * (heads + self.half)
            mm = self.dense_weight + tokens * self.act
        dec_keys = self._keys(ctx)
        ac = self.dec_attn * decodes * dec_keys
        am = self.kv_dec_layer * seqs * dec_keys + tokens * self.kv_token
        if decode_only:
            am = am + seqs * self.state
            overhead = self.decode_overhead
        else:
            chunk = np.asarray(n) > 0
            chunks = chunk.astype(float)
            ac = ac + self.pre_attn * n * self._keys(past + (n + 1.0) / 2.0)
            am = am + (seqs + chunks) * self.state + chunks * self.kv_layer * self._keys(past)
            overhead = np.where(chunk, self.prefill_overhead, self.decode_overhead)
        return (
            overhead
            + self.overlapped_s(mc, mm)
            + self.overlapped_s(ac, am)
            + self.comm_fixed
            + self.comm_per_token * tokens
        )


@dataclass(frozen=True)
class LayoutTerms:
    """The layout coefficients of ``step_time.Layout`` as arrays (one per configuration)."""

    dp: Array
    pp: Array
    u_pp: Array  # u / pp: the biggest stage's share of a pass
    imbalance: Array
    moe_fixed: Array  # the MoE exchange's latencies per pass (dp > 1)
    moe_token: Array  # … per exchanged token, decode-only steps
    moe_prefill_token: Array  # … in a step with prefill tokens
    by_rank: Array  # ep > 1: X = max(T_r, imb · T_all / dp)
    tbo: Array
    cross: Array  # stage boundaries crossing nodes
    far_fixed: Array
    far_token: Array
    near_fixed: Array
    near_token: Array

    @classmethod
    def of(cls, x: EngineInputs) -> LayoutTerms:
        one = x.with_(layers=np.ones_like(x.layers), moe_layers=np.ones_like(x.moe_layers))  # per layer, one token
        n = x.tp * x.dp
        ep_on = x.ep > 1
        per_token = x.hidden * (x.dispatch_bytes_per_element + ACTIVATION_BYTES) / x.tp
        zero, unit = (parallel.gather_s(one, n, v * x.hidden * 2.0) for v in (0.0, 1.0))
        moe_token = np.where(ep_on, per_token * parallel.exchange_s_per_byte(x, False), 2.0 * (unit - zero))
        moe_prefill = np.where(ep_on, per_token * parallel.exchange_s_per_byte(x, True), 2.0 * (unit - zero))
        moe_fixed = np.where(ep_on, 2.0 * parallel.all_to_all_s(one, n, 0.0), 2.0 * zero)
        active = (x.dp > 1) & (x.moe_layers > 0)
        near0, near1 = (parallel._send_s(x, v, False) for v in (0.0, 1.0))
        far0, far1 = (parallel._send_s(x, v, True) for v in (0.0, 1.0))
        return cls(
            dp=x.dp,
            pp=x.pp,
            u_pp=parallel.layer_imbalance(x) / x.pp,
            imbalance=parallel.expert_imbalance(x),
            moe_fixed=np.where(active, x.moe_layers * moe_fixed, 0.0),
            moe_token=np.where(active, x.moe_layers * moe_token, 0.0),
            moe_prefill_token=np.where(active, x.moe_layers * moe_prefill, 0.0),
            by_rank=ep_on.astype(float),
            tbo=x.tbo,
            cross=parallel.boundaries_crossing_nodes(x),
            far_fixed=far0,
            far_token=far1 - far0,
            near_fixed=near0,
            near_token=near1 - near0,
        )

    def stage_send_s(self, rank_tokens) -> Array:
        far = self.far_fixed + self.far_token * rank_tokens
        near = self.near_fixed + self.near_token * rank_tokens
        return np.where(self.pp > 1, np.where(self.cross > 0, far, near), 0.0)

    def path_sends_s(self, rank_tokens) -> Array:
        far = self.far_fixed + self.far_token * rank_tokens
        near = self.near_fixed + self.near_token * rank_tokens
        return np.where(self.pp > 1, self.cross * far + (self.pp - 1.0 - self.cross) * near, 0.0)


@dataclass(frozen=True)
class LayoutStepModel:
    """``roofline.step_cost`` with one prefill chunk for configurations with a parallel layout (module doc):
    ``step_time.Roofline``'s layout coefficients over arrays — the plain ones of the stage with the experts over
    tp · dp and the layout's all-reduces, and ``LayoutTerms`` (equal to ``step_cost`` to 1e-9; tests)."""

    base: StepModel
    lay: LayoutTerms

    @classmethod
    def of(cls, x: EngineInputs) -> LayoutStepModel:
        x = x.as_arrays()
        one = np.ones_like(x.dp)
        base = StepModel.of(x.with_(dp=one, ep=one, pp=one, gpus_per_node=np.maximum(x.gpus_per_node, x.tp)))
        lay = LayoutTerms.of(x)
        multi = x.tp > 1
        ar0 = np.where(multi, parallel.allreduce_s(x, x.tp, 0.0), 0.0)
        ar1 = np.where(multi, parallel.allreduce_s(x, x.tp, x.hidden * ACTIVATION_BYTES), 0.0) - ar0
        n_ar = parallel.tp_allreduces(x)
        base = replace(
            base,
            experts_per_token=base.experts_per_token * lay.imbalance,
            expert=base.expert / x.dp,
            expert_weight=base.expert_weight / x.dp * parallel.physical_expert_frac(x),
            comm_fixed=n_ar * ar0,
            comm_per_token=n_ar * ar1,
        )
        return cls(base, lay)

    @cached_property
    def pipelined(self) -> bool:
        """Some configuration runs pipeline stages."""
        return bool(np.any(self.lay.pp > 1))

    @property
    def prefill_overhead(self) -> Array:
        return self.base.prefill_overhead

    @property
    def decode_overhead(self) -> Array:
        return self.base.decode_overhead

    def take(self, shape: tuple[int, ...], index: tuple[np.ndarray, ...]) -> LayoutStepModel:
        """The configurations at ``index`` of the grid ``shape`` (1-D coefficient arrays)."""
        terms = {f.name: np.broadcast_to(getattr(self.lay, f.name), shape)[index] for f in fields(self.lay)}
        return LayoutStepModel(self.base.take(shape, index), LayoutTerms(**terms))

    def _pass(self, seqs, q, ctx, n, past) -> tuple[Array, Array]:
        """(time, the busiest rank's tokens) of one pass (``step_time.Roofline._layout_pass_s``, one chunk; like
        ``StepModel.time_s`` it is not asked for an empty step)."""
        m, lay = self.base, self.lay
        decode_only = np.ndim(n) == 0 and float(n) == 0.0
        seqs_r = seqs / lay.dp
        dec_r = seqs_r * q
        tokens_r = dec_r if decode_only else dec_r + n
        keys = m._keys(ctx)
        pad = np.where(np.asarray(tokens_r) > 0, m.half, 0.0)
        mm = m.dense_weight + tokens_r * m.act
        ac = m.dec_attn * dec_r * keys
        am = m.kv_dec_layer * seqs_r * keys + tokens_r * m.kv_token
        if decode_only:
            count: Array = np.zeros(())
            mc = m.body * (tokens_r + pad) + m.head * (dec_r + pad)
            am = am + seqs_r * m.state
            overhead = m.decode_overhead
        else:
            count = (np.asarray(n) > 0).astype(float)
            mc = m.body * (tokens_r + pad) + m.head * (dec_r + count + pad)
            ac = ac + m.pre_attn * n * m._keys(past + (n + 1.0) / 2.0)
            am = am + m.kv_layer * count * m._keys(past) + (seqs_r + count) * m.state
            overhead = np.where(count > 0, m.prefill_overhead, m.decode_overhead)
        comm = m.comm_fixed + m.comm_per_token * tokens_r
        if not m.moe:  # no experts anywhere: their terms, the exchange and its overlap are all 0
            return overhead + m.overlapped_s(mc, mm) + m.overlapped_s(ac, am) + comm, tokens_r
        tokens_all = seqs * q + n
        pad_all = np.where(np.asarray(tokens_all) > 0, m.half, 0.0)
        hit = 1.0 - m.expert_miss**tokens_all
        mc = mc + m.expert * (m.experts_per_token * tokens_all + m.experts * hit * pad_all)
        mm = mm + m.expert_weight * hit
        exchanged = np.where(lay.by_rank > 0, np.maximum(tokens_r, lay.imbalance * tokens_all / lay.dp), tokens_all)
        exchange = lay.moe_fixed + np.where(count > 0, lay.moe_prefill_token, lay.moe_token) * exchanged
        work = m.overlapped_s(mc, mm) + m.overlapped_s(ac, am)
        return overhead + work + comm + exchange - lay.tbo * np.minimum(work, exchange), tokens_r

    def time_s(self, seqs, q, ctx, n=0.0, past=0.0) -> Array:
        """One step (``StepModel.time_s``): the pipeline's max(busy, path) over m = min(max(seqs, 1), pp)
        micro-batches, one of them carrying the chunk (``roofline`` module doc)."""
        seqs, q, ctx, n, past = (np.asarray(v, dtype=float) for v in (seqs, q, ctx, n, past))
        lay = self.lay
        mb = np.clip(np.maximum(seqs, (n > 0).astype(float)), 1.0, lay.pp)
        t_mix, r_mix = self._pass(seqs / mb, q, ctx, n, past)
        if not self.pipelined:
            return t_mix
        if np.any(n > 0):
            t_dec, r_dec = self._pass(seqs / mb, q, ctx, 0.0, 0.0)
            t_dec, r_dec = np.where(n > 0, t_dec, t_mix), np.where(n > 0, r_dec, r_mix)
        else:
            t_dec, r_dec = t_mix, r_mix
        send_dec, send_mix = lay.stage_send_s(r_dec), lay.stage_send_s(r_mix)
        busy = lay.u_pp * ((mb - 1.0) * t_dec + t_mix) + (mb - 1.0) * send_dec + send_mix
        path = t_mix + lay.path_sends_s(r_mix)
        return np.where(lay.pp > 1, np.maximum(busy, path), t_mix)


@dataclass(frozen=True)
class MeasuredStepModel:
    """``roofline.step_cost`` itself for configurations on measured kernels (``planner.engine.kernel_step``):
    their kernels are looked up per step at its shapes, not folded into coefficients (module doc)."""

    x: EngineInputs

    @classmethod
    def of(cls, x: EngineInputs) -> MeasuredStepModel:
        return cls(x.as_arrays())

    @property
    def prefill_overhead(self) -> Array:
        return self.x.step_overhead_s + self.x.layers * self.x.layer_overhead_s

    @property
    def decode_overhead(self) -> Array:
        return self.x.step_overhead_s + self.x.layers * self.x.decode_layer_overhead_s

    def take(self, shape: tuple[int, ...], index: tuple[np.ndarray, ...]) -> MeasuredStepModel:
        """The configurations at ``index`` of the grid ``shape``."""
        picked = {f.name: np.broadcast_to(getattr(self.x, f.name), shape)[index] for f in fields(EngineInputs)}
        return MeasuredStepModel(EngineInputs(**picked))

    def time_s(self, seqs, q, ctx, n=0.0, past=0.0) -> Array:
        """One step with one prefill chunk of ``n`` tokens after ``past`` cached (``StepModel.time_s``)."""
        return step_cost(self.x, seqs=seqs, q=q, ctx=ctx, n=n, past=past).time_s


#: A grid's step model: the coefficient form for plain tensor parallelism, the engine's function for layouts,
#: the engine's own step on measured kernels.
Step = StepModel | LayoutStepModel | MeasuredStepModel


def step_model(x: EngineInputs) -> Step:
    """``MeasuredStepModel`` where a configuration of ``x`` runs on measured kernels, else ``StepModel`` where
    every configuration is plain tensor parallelism inside one node, else ``LayoutStepModel`` (module doc)."""
    if has_kernels(x):
        return MeasuredStepModel.of(x)
    return StepModel.of(x) if parallel.simple(x) else LayoutStepModel.of(x)


@dataclass(frozen=True)
class ReplicaGrid:
    """A grid of replica configurations: step models and the scheduler's limits (broadcast arrays)."""

    step: Step
    draft: Step | None  # the draft preset's own decode step; None: draft_ratio × the target's
    draft_ratio: Array
    gamma: Array  # draft tokens per step; 0 where speculative decoding is off
    alpha: Array
    batch: Array
    chunk: Array
    kv_tokens: Array  # the KV cache's tokens (vLLM's "GPU KV cache size")
    block: Array

    @classmethod
    def of(cls, x: EngineInputs, kv_tokens: Array) -> ReplicaGrid:
        x = x.as_arrays()
        spec = (x.spec_on > 0) & (x.gamma > 0)
        own = bool(np.any(spec & (x.has_draft_model > 0)))
        return cls(
            step=step_model(x),
            draft=step_model(draft_model_inputs(x)) if own else None,
            draft_ratio=np.where(x.has_draft_model > 0, np.nan, x.draft_ratio) if own else x.draft_ratio,
            gamma=np.where(spec, x.gamma, 0.0),
            alpha=x.alpha,
            batch=x.batch,
            chunk=x.chunk_tokens,
            kv_tokens=kv_tokens,
            block=x.block_tokens,
        )

    def take(self, shape: tuple[int, ...], index: tuple[np.ndarray, ...]) -> ReplicaGrid:
        """The configurations at ``index`` of the grid ``shape``."""
        arrays = {
            f.name: np.broadcast_to(getattr(self, f.name), shape)[index]
            for f in fields(self)
            if f.name not in ("step", "draft")
        }
        draft = self.draft.take(shape, index) if self.draft is not None else None
        return replace(self, step=self.step.take(shape, index), draft=draft, **arrays)

    # q, E and the acceptance shares are fixed per grid; the screening asks for them at every probe.
    @cached_property
    def speculates(self) -> bool:
        """Some configuration runs speculative decoding (γ > 0)."""
        return bool(np.any(self.gamma > 0))

    @cached_property
    def q(self) -> Array:
        return self.gamma + 1.0

    @cached_property
    def tokens_per_step(self) -> Array:
        return expected_tokens_per_step(self.alpha, self.gamma)

    def draft_s(self, seqs, ctx) -> Array:
        """The γ draft steps of a scheduler step with ``seqs`` decoding at context ``ctx`` (0 where nothing
        speculates).  They depend on neither the step's prefill chunk nor its cached prefix, so the steps
        of one decode count can share them (``step_s``'s ``draft``)."""
        if not self.speculates:
            return np.zeros(())
        if self.draft is None:
            d = self.draft_ratio * self.step.time_s(seqs, 1.0, ctx)
        else:
            own = self.draft.time_s(seqs, 1.0, ctx)
            d = np.where(np.isnan(self.draft_ratio), own, self.draft_ratio * self.step.time_s(seqs, 1.0, ctx))
        return self.gamma * np.where(np.asarray(seqs) > 0, d, 0.0)

    def step_s(self, seqs, ctx, n=0.0, past=0.0, draft: Array | None = None) -> Array:
        """A scheduler step: the target's pass (q tokens per decode) plus γ draft steps when decoding
        (``draft_s(seqs, ctx)``, computed here unless given)."""
        return self.step.time_s(seqs, self.q, ctx, n, past) + (self.draft_s(seqs, ctx) if draft is None else draft)

    @cached_property
    def accept_var(self) -> Array:
        """Var(a) of the tokens a step emits: E·Σ share_j·j − E² (shares of tokens, ``acceptance``)."""
        if not self.speculates:
            return np.zeros(())
        e = self.tokens_per_step
        return np.maximum(e * sum(share * j for j, share in self._acceptance) - e * e, 0.0)

    def acceptance(self) -> list[tuple[float, Array]]:
        """(j, share of tokens emitted j at a time) for j = 1 … γ_max + 1: P(a = j)·j / E."""
        return self._acceptance

    @cached_property
    def _acceptance(self) -> list[tuple[float, Array]]:
        top = int(np.max(self.gamma)) if np.size(self.gamma) else 0
        e = self.tokens_per_step
        out = []
        for j in range(1, top + 2):
            p = np.where(j <= self.gamma, self.alpha ** (j - 1) * (1.0 - self.alpha), 0.0)
            p = np.where(j == self.gamma + 1, self.alpha**self.gamma, p)
            out.append((float(j), p * j / e))
        return out
