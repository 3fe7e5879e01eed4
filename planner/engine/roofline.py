"""Step times: prefill, decode and mixed steps, per GPU of a TP group (docs/model.md §4–6).

One scheduler step processes ``seqs`` running sequences with ``q`` new tokens each at
context ``ctx`` (decode: q = 1; speculative verification: q = γ + 1), plus ``n`` prefill
tokens of ``prompts`` prompts (n/prompts each) whose first ``past`` tokens are cached.
T = seqs·q + n tokens pass through the weights.

A step is a fixed overhead plus two operator groups that run one after the other, each
with its own roofline (per-operator roofline, as in LLM-Viewer), plus the all-reduces:

  overhead   t_0 = t_step + L · t_layer     (engine profile: scheduling and sampling per step; kernel
                                           launches and gaps per layer — eager with prefill tokens,
                                           CUDA-graph replay for a decode-only step; 0 if T = 0)
  host       the step lasts at least h · (seqs + prompts) of the busiest rank: the host's work on its
             sequences, hidden under the GPU's until it outgrows it (``efficiency.host_bound_s``; h = 0 on
             the fitted roofline; not modelled with pipeline parallelism)
  matmul     c_mm = [2·N_body·(T + T½) + 2·N_head·(T_logits + T½)] / tp / (peak·MFU)
                    + 2·L_moe·n_e·(k·T + E_hit·T½) / tp / (peak·MFU·η_moe)
             m_mm = [weights touched + T · layers · activations / tp · 2 B] / (bw·MBU)
               N_body = N_active − N_head − L_moe·k·n_e (the routed experts are apart),
               T_logits = seqs·q + prompts (the LM head runs for tokens that need logits),
               E_hit = E·(1 − (1 − k/E)^T) experts hit by T tokens routed uniformly.
               T½: a GEMM over M rows runs at M/(M + T½) of its plateau rate (small GEMMs
               run below peak), i.e. its time is that of M + T½ rows at the plateau.
  attention  c_att = 2·h·d_att·L_eff·(seqs·q·ctx + n·(past + (n/prompts + 1)/2)) / tp / (peak₁₆·a_c)
             m_att = [seqs·KV(ctx)·ρ_g + prompts·KV(past) + T·KV/token] / (bw·a_m)
               ρ_g = 1 + (h/g − 1)·ρ: a decode kernel that does not group a GQA head's h/g query
               heads loads its KV again for a share ρ of them (MLA: ρ_g = 1)
  comm       t_comm = 2·L·(2(tp−1)/tp · T·d·2 B / (link·η_link) + latency),  tp > 1
             (Megatron-LM: two all-reduces per layer; ring all-reduce over the bus bandwidth;
             latency = the link's + the engine's per-collective overhead)
  time       = t_0 + R(c_mm, m_mm) + R(c_att, m_att) + t_comm,  R(c, m) = max(c, m) + (1 − o)·min(c, m)

MFU and MBU are the profile's fitted plateau shares (or the user's override), a_c and a_m
the attention kernels' shares of the 16-bit peak and the bandwidth, o the profile's
overlap (1: the roofline).  A calibrated (measured) GPU runs with no overheads, T½ = 0 and
every share 1 but its measured ones.  Totals kept for display: flop = F_mm + F_att, bytes =
B_mm + B_att, compute_s = c_mm + c_att, memory_s = m_mm + m_att; the step is
compute-bound when compute_s ≥ memory_s (the whole step, not one part).
Weights touched: all weights except an untied input-embedding table (a lookup reads
only T of its rows, neglected); MoE: the dense part + the experts hit.
d_att = d_qk + d_v per head; sliding-window layers attend to at most W keys.

Parallel layouts (planner/engine/parallel.py; docs/model.md "Parallelism"):
  data-parallel attention (dp)  each rank runs its own seqs/dp sequences and the prompts it was given
             (the busiest holds n / min(prompts, dp) prefill tokens); dense GEMMs, attention, KV and
             activations count the busiest rank's tokens T_r, the routed experts every rank's T_all
             (the dp ranks run the MoE layers in lock-step): their FLOPs
             2·L_moe·n_e·(k·imb·T_all + E_hit(T_all)·T½)/(tp·dp), their weights E_hit(T_all)·n_e/(tp·dp)
  expert parallel (ep > 1)      imb = the busiest EP rank's routed tokens ÷ the mean
  comm       t_comm = n_AR · allreduce(tp, T_r · d · 2 B) + MoE exchange (dp > 1) (+ stage sends, pp > 1)
  two-batch overlap (tbo)       one micro-batch's exchange runs under the other's compute: the step loses
             f · min(R(c_mm, m_mm) + R(c_att, m_att), exchange), f = ``parallel_layout.TBO_OVERLAP_FRAC``
             (SGLang TBO, vLLM DBO; f fitted to SGLang's one published on/off pair)
  pipeline (pp)                 the step's B sequences form m = min(max(B, prompts), pp) micro-batches,
             the prefill ones m_p = min(prompts, m); each micro-batch passes the whole model (t_dec,
             t_mix as above at B/m sequences); u = pp·⌈L/pp⌉/L the biggest stage's share:
               busy  = u/pp · ((m − m_p)·t_dec + m_p·t_mix) + m · t_send      (the bottleneck stage's cycle)
               path  = (m_p − 1)·(u/pp · t_mix + t_send) + t_mix + Σ_boundaries t_send   (a prefill's way out)
               time  = max(busy, path)     (pp = 1: t_mix); pipeline_s = time − the combined parts
             so one lone prompt takes its whole pass plus pp − 1 sends (TTFT), and a decode step of B ≥ pp
             sequences u · t_dec(B/pp) (+ sends): pp micro-batches in flight, as vLLM's batch queue keeps
             (v1/executor/multiproc_executor.py:468-472, "PP requires PP-size concurrent batches")
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from planner.engine import parallel
from planner.engine.efficiency import host_bound_s, kv_group_reads, matmul_pad_tokens, overhead_s
from planner.engine.inputs import Array, EngineInputs, MetricValue, Quantity
from planner.engine.kernel_step import decode_steps, has_kernels, kernel_parts, measured_everywhere
from planner.engine.memory import (
    kv_bytes_per_token_per_layer,
    kv_layers,
    kv_token_bytes_per_sequence,
    state_bytes_per_gpu,
)
from planner.units import ACTIVATION_BYTES


@dataclass(frozen=True)
class StepCost:
    """Per-GPU cost of one step: the work (FLOP, bytes) of each part and its times (module doc)."""

    matmul_flop: Array  # F_mm
    matmul_bytes: Array  # B_mm
    attention_flop: Array  # F_att
    attention_bytes: Array  # B_att
    matmul_compute_s: Array  # c_mm (with the small-GEMM and MoE terms)
    matmul_memory_s: Array  # m_mm
    attention_compute_s: Array  # c_att
    attention_memory_s: Array  # m_att
    comm_s: Array  # every collective: tensor-parallel all-reduces, the MoE exchange, stage sends
    overhead_s: Array  # t_step + L · t_layer: the fixed costs (scheduler; launches and gaps per layer)
    overlap: Quantity = 1.0  # o in overlapped_s
    exchange_s: Quantity = 0.0  # the MoE dispatch/combine (or all-gather/reduce-scatter) part of comm_s
    send_s: Quantity = 0.0  # the stage-to-stage sends part of comm_s
    pipeline_s: Quantity = 0.0  # the cycle beyond the bottleneck stage's work: bubble and sends on the path
    rank_tokens: Quantity = 0.0  # T_r: tokens of the busiest data-parallel rank (per micro-batch)
    hidden_s: Quantity = 0.0  # two-batch overlap: the part of the exchange hidden under compute
    host_s: Quantity = 0.0  # the host's work on the step's sequences, under the GPU's (efficiency.host_bound_s)
    # measured kernels (kernel_step): each part's time where the scenario has tables, the roofline's elsewhere
    measured_matmul_s: Quantity | None = None
    measured_attention_s: Quantity | None = None

    @property
    def flop(self) -> Array:
        return self.matmul_flop + self.attention_flop

    @property
    def bytes(self) -> Array:
        return self.matmul_bytes + self.attention_bytes

    @property
    def compute_s(self) -> Array:
        """Each part's arithmetic time, summed (display; the step time sums the parts' rooflines)."""
        return self.matmul_compute_s + self.attention_compute_s

    @property
    def memory_s(self) -> Array:
        """Each part's memory time, summed (display)."""
        return self.matmul_memory_s + self.attention_memory_s

    @property
    def matmul_s(self) -> Array:
        """The matmul group's time: its measured kernels where the scenario has tables, else R(c_mm, m_mm)."""
        if self.measured_matmul_s is not None:
            return np.asarray(self.measured_matmul_s)
        return overlapped_s(self.matmul_compute_s, self.matmul_memory_s, self.overlap)

    @property
    def attention_s(self) -> Array:
        """The attention group's time: measured kernels, else R(c_att, m_att)."""
        if self.measured_attention_s is not None:
            return np.asarray(self.measured_attention_s)
        return overlapped_s(self.attention_compute_s, self.attention_memory_s, self.overlap)

    @property
    def gpu_s(self) -> Array:
        """R(matmul) + R(attention) + t_comm (− the exchange two-batch overlap hides): the kernels' own time."""
        return self.matmul_s + self.attention_s + self.comm_s - self.hidden_s

    @property
    def time_s(self) -> Array:
        """t_step + L · t_layer + R(matmul) + R(attention) + t_comm (+ the pipeline's rest; module doc), at least
        the host's work on the step's sequences (``host_s``: a host-bound step, ``efficiency.host_bound_s``)."""
        return np.maximum(self.overhead_s + self.gpu_s + self.pipeline_s, self.host_s)

    @property
    def comm_frac(self) -> Array:
        """t_comm / t_step: the step's share in collectives, exchanges and stage sends (``decode_comm_frac``)."""
        return self.comm_s / self.time_s

    @property
    def compute_bound(self) -> MetricValue:
        """The whole step's arithmetic time is at least its memory time (both parts together)."""
        return self.compute_s >= self.memory_s


def overlapped_s(compute_s, memory_s, overlap):
    """Time of an operator group that must do ``compute_s`` of arithmetic and ``memory_s`` of
    memory traffic:  max(c, m) + (1 − o) · min(c, m).

    o = 1: the two hide under each other completely — the roofline, max(c, m) (Williams,
    Waterman & Patterson 2009).  o = 0: they run back to back, c + m (what the
    Execution-Cache-Memory model of Hager & Wellein assumes for a CPU core's loads and
    arithmetic).  o < 0: slower than back to back (a kernel that re-packs its operand on
    every call).  Datasheet profiles keep o = 1; ``python -m planner bench`` measures it
    (docs/benchmark.md).  Also the simulator's per-step path (``step_time``) — keep in step.
    """
    if np.all(np.asarray(overlap) == 1.0):  # every datasheet profile: the plain max, one array operation
        return np.maximum(compute_s, memory_s)
    lo = np.minimum(compute_s, memory_s)
    return np.maximum(compute_s, memory_s) + (1.0 - overlap) * lo


def weight_bytes_read_per_gpu(x: EngineInputs) -> Array:
    """W = [(N − N_lookup − N_experts) · b_d + N_experts · b_e] / tp: every weight but an untied embedding table
    (a lookup), every expert (the routed experts over tp · dp when data-parallel ranks share them); b_d and b_e are
    the dense part's and the experts' bytes per weight (``engine.weight_inputs``: equal for one format)."""
    experts = x.moe_layers * x.experts * x.expert_params
    dense = x.total_params - x.lookup_params - experts
    if parallel.simple(x):
        return (dense * x.weight_bytes_per_param + experts * x.expert_weight_bytes_per_param) / x.tp
    return (
        dense / x.tp * x.weight_bytes_per_param
        + experts * parallel.physical_expert_frac(x) / (x.tp * x.dp) * x.expert_weight_bytes_per_param
    )


def experts_hit(x: EngineInputs, tokens) -> Array:
    """E_hit = E · (1 − (1 − k/E)^T): distinct routed experts T tokens reach (uniform routing)."""
    miss_one = 1.0 - np.clip(x.experts_per_token / np.maximum(x.experts, 1.0), 0.0, 1.0)
    return x.experts * (1.0 - miss_one**tokens)


def routed_params(x: EngineInputs) -> Array:
    """L_moe · k · n_e: the routed-expert parameters one token multiplies through."""
    return x.moe_layers * x.experts_per_token * x.expert_params


def weight_bytes_touched_per_gpu(x: EngineInputs, tokens) -> Array:
    """Weights read in a step of ``tokens`` tokens (every rank's, for the experts): not the untied
    embedding table (a lookup); for MoE only the experts hit."""
    if not np.any(x.experts > 0):  # no MoE in this batch of scenarios: every weight is read
        return weight_bytes_read_per_gpu(x)
    dense = x.total_params - x.lookup_params - x.moe_layers * x.experts * x.expert_params
    hit = x.moe_layers * experts_hit(x, tokens) * x.expert_params
    if parallel.simple(x):
        return (dense * x.weight_bytes_per_param + hit * x.expert_weight_bytes_per_param) / x.tp
    return (
        dense / x.tp * x.weight_bytes_per_param
        + hit * parallel.physical_expert_frac(x) / (x.tp * x.dp) * x.expert_weight_bytes_per_param
    )


def _attended_layer_keys(x: EngineInputs, keys) -> Array:
    """Σ over layers of keys attended: full layers see ``keys``, window layers min(keys, W)."""
    if not np.any(x.window_layers > 0):
        return x.full_attention_layers * keys
    return x.full_attention_layers * keys + x.window_layers * np.minimum(keys, x.window_tokens)


def attention_flop(x: EngineInputs, queries, keys, dim) -> Array:
    """2 · h · d_att · Σ_layers keys · queries (QKᵀ and AV, 2 FLOP per MAC)."""
    return 2.0 * x.heads * dim * queries * _attended_layer_keys(x, keys)


def activation_bytes_per_token(x: EngineInputs) -> Array:
    """Activation traffic of one token through the matmuls: layers · a / tp · 2 B."""
    return x.layers * x.activation_elements_per_token_per_layer / x.tp * ACTIVATION_BYTES


def comm_s(x: EngineInputs, tokens, all_tokens=None) -> Array:
    """Two ring all-reduces per layer of a (tokens × hidden) bf16 activation, over the bus
    bandwidth link · η_link, each paying the per-collective latency; beyond one node's tensor
    parallelism, the layout's collectives (``parallel.tp_comm_s`` + ``parallel.moe_comm_s``)."""
    if not parallel.simple(x):
        rank = tokens if all_tokens is None else all_tokens
        return parallel.tp_comm_s(x, tokens) + parallel.moe_comm_s(x, tokens, rank)
    if not np.any(x.tp > 1):
        return np.zeros(np.broadcast_shapes(np.shape(tokens), np.shape(x.tp)))
    bus = x.link_bytes_per_s * x.link_frac
    per_token = 2.0 * x.layers * 2.0 * (x.tp - 1.0) / x.tp * x.hidden * ACTIVATION_BYTES / bus
    return np.where(x.tp > 1, per_token * tokens + 2.0 * x.layers * x.collective_latency_s, 0.0)


def matmul_compute_s(x: EngineInputs, tokens, logit_tokens, all_tokens=None) -> Array:
    """c_mm: the dense GEMMs at T + T½ rows and the routed experts at k·T + E_hit·T½ rows (module doc);
    with data-parallel ranks the experts at k·imb·T_all + E_hit(T_all)·T½ rows over tp · dp."""
    pad = matmul_pad_tokens(x, tokens)
    head = x.lm_head_params
    s_per_flop = 1.0 / (x.peak_flop_per_s * x.mfu)
    if not np.any(x.experts > 0):
        per_row = 2.0 / x.tp * s_per_flop  # folded first: the per-scenario constants are often scalars
        return (per_row * (x.matmul_params - head)) * (tokens + pad) + (per_row * head) * (logit_tokens + pad)
    routed = routed_params(x)
    body = x.matmul_params - head - routed
    dense = 2.0 * body * (tokens + pad) + 2.0 * head * (logit_tokens + pad)
    s_per_flop_e = 1.0 / (x.expert_peak_flop_per_s * x.mfu)  # the routed experts at their compute dtype's peak
    if all_tokens is None:
        expert = 2.0 * x.moe_layers * x.expert_params * (x.experts_per_token * tokens + experts_hit(x, tokens) * pad)
        return dense / x.tp * s_per_flop + expert / x.moe_matmul_frac / x.tp * s_per_flop_e
    rows = x.experts_per_token * parallel.expert_imbalance(x) * all_tokens
    rows = rows + experts_hit(x, all_tokens) * matmul_pad_tokens(x, all_tokens)
    expert = 2.0 * x.moe_layers * x.expert_params * rows / (x.tp * x.dp)
    return dense / x.tp * s_per_flop + expert / x.moe_matmul_frac * s_per_flop_e


def _none(v) -> bool:
    """A 0-d zero: the part it scales is absent from every scenario (skipped, not computed as zeros)."""
    return np.ndim(v) == 0 and float(v) == 0.0


def step_cost(x: EngineInputs, seqs=0.0, q=1.0, ctx=0.0, n=0.0, past=0.0, prompts=None) -> StepCost:
    """Cost of one mixed step (see module doc).  All arguments broadcast; ``prompts``
    (default: 1 when n > 0) splits the n prefill tokens evenly, each after ``past`` cached."""
    seqs, q, ctx, n, past = (np.asarray(v, dtype=float) for v in (seqs, q, ctx, n, past))
    k = (n > 0).astype(float) if prompts is None else np.asarray(prompts, dtype=float)
    if np.any(x.pp > 1):
        return _pipelined(x, seqs, q, ctx, n, past, k)
    return pass_cost(x, seqs, q, ctx, n, past, k)


def micro_batches(x: EngineInputs, seqs, prompts) -> tuple[Array, Array]:
    """(m, m_p): micro-batches in flight, min(max(seqs, prompts), pp) (at least 1), and those with
    prefill tokens, min(prompts, m) (at least 1; module doc)."""
    m = np.clip(np.maximum(seqs, prompts), 1.0, x.pp)
    return m, np.clip(prompts, 1.0, m)


@dataclass(frozen=True)
class PipelineParts:
    """A pipelined step's pieces (module doc): its micro-batches, their passes and the sends."""

    m: Array  # micro-batches in flight
    m_p: Array  # those with prefill tokens
    u_pp: Array  # u / pp: the biggest stage's share of a pass
    dec: StepCost  # a decode-only micro-batch's pass through the whole model
    mix: StepCost  # a micro-batch with prefill tokens
    send_dec: Array  # one stage's send of each
    send_mix: Array
    path_sends: Array  # the pp − 1 sends on a micro-batch's way out

    @property
    def busy_s(self) -> Array:
        """u/pp · ((m − m_p) · t_dec + m_p · t_mix) + (m − m_p) · send_dec + m_p · send_mix."""
        work = self.u_pp * ((self.m - self.m_p) * self.dec.time_s + self.m_p * self.mix.time_s)
        return work + (self.m - self.m_p) * self.send_dec + self.m_p * self.send_mix

    @property
    def path_s(self) -> Array:
        """(m_p − 1) · (u/pp · t_mix + send_mix) + t_mix + the path's sends."""
        return (self.m_p - 1.0) * (self.u_pp * self.mix.time_s + self.send_mix) + self.mix.time_s + self.path_sends


def pipeline_parts(x: EngineInputs, seqs=0.0, q=1.0, ctx=0.0, n=0.0, past=0.0, prompts=None) -> PipelineParts:
    """The pieces of ``step_cost`` on a pipelined instance (module doc); arguments as ``step_cost``."""
    seqs, q, ctx, n, past = (np.asarray(v, dtype=float) for v in (seqs, q, ctx, n, past))
    k = (n > 0).astype(float) if prompts is None else np.asarray(prompts, dtype=float)
    m, m_p = micro_batches(x, seqs, k)
    zero = np.zeros(())
    dec = pass_cost(x, seqs / m, q, ctx, zero, zero, zero)
    mix = pass_cost(x, seqs / m, q, ctx, n / m_p, past, k / m_p)
    return PipelineParts(
        m=m,
        m_p=m_p,
        u_pp=parallel.layer_imbalance(x) / x.pp,
        dec=dec,
        mix=mix,
        send_dec=parallel.stage_send_s(x, dec.rank_tokens),
        send_mix=parallel.stage_send_s(x, mix.rank_tokens),
        path_sends=parallel.path_sends_s(x, mix.rank_tokens),
    )


def _pipelined(x: EngineInputs, seqs, q, ctx, n, past, k) -> StepCost:
    """One step of a pipelined instance: its micro-batches through the stages (module doc)."""
    p = pipeline_parts(x, seqs, q, ctx, n, past, k)
    w_dec, w_mix = p.u_pp * (p.m - p.m_p), p.u_pp * p.m_p
    sends = (p.m - p.m_p) * p.send_dec + p.m_p * p.send_mix

    def both(name: str) -> Array:
        return w_dec * getattr(p.dec, name) + w_mix * getattr(p.mix, name)

    parts = {
        name: both(name)
        for name in (
            "matmul_flop",
            "matmul_bytes",
            "attention_flop",
            "attention_bytes",
            "matmul_compute_s",
            "matmul_memory_s",
            "attention_compute_s",
            "attention_memory_s",
            "overhead_s",
        )
    }
    measured = p.mix.measured_matmul_s is not None
    combined = StepCost(
        **parts,
        comm_s=both("comm_s") + sends,
        overlap=x.compute_memory_overlap,
        exchange_s=both("exchange_s"),
        send_s=sends,
        rank_tokens=p.mix.rank_tokens,
        hidden_s=both("hidden_s"),
        measured_matmul_s=both("matmul_s") if measured else None,
        measured_attention_s=both("attention_s") if measured else None,
    )
    cycle = np.maximum(p.busy_s, p.path_s)
    extra = cycle - combined.time_s
    return replace(combined, pipeline_s=np.where(extra > 1e-12 * cycle, extra, 0.0))  # rounding is not a bubble


def _rank_share(x: EngineInputs, seqs, n, k) -> tuple[Array, Array, Array]:
    """(seqs, n, prompts) of the busiest data-parallel rank: seqs/dp decodes, n/min(prompts, dp) prefill
    tokens of prompts/min(prompts, dp) prompts (module doc)."""
    if np.all(x.dp == 1):
        return seqs, n, k
    share = 1.0 / np.minimum(np.maximum(k, 1.0), x.dp)
    return seqs / x.dp, n * share, k * share


def pass_cost(x: EngineInputs, seqs, q, ctx, n, past, k) -> StepCost:
    """One pass of a (micro-)batch through the whole model on the busiest GPU (module doc)."""
    plain = parallel.simple(x)
    all_tokens = seqs * q + n
    seqs, n, k = _rank_share(x, seqs, n, k)
    decodes = seqs * q
    tokens = decodes + n
    logit_tokens = decodes + k
    attention_flop_: Array = np.zeros(())
    attention_bytes: Array = tokens * (kv_layers(x) * kv_bytes_per_token_per_layer(x))  # KV written
    state = state_bytes_per_gpu(x)  # a hybrid's fixed state: read once per sequence a step
    if not _none(seqs):
        attention_flop_ = attention_flop(x, decodes, ctx, x.attention_dim_decode)
        attention_bytes = attention_bytes + seqs * (kv_token_bytes_per_sequence(x, ctx) * kv_group_reads(x) + state)
    if not _none(n):
        per_prompt = n / np.maximum(k, 1.0)
        keys = past + (per_prompt + 1.0) / 2.0
        attention_flop_ = attention_flop_ + attention_flop(x, n, keys, x.attention_dim_prefill)
        if not (_none(past) and _none(x.state_bytes_per_sequence)):
            attention_bytes = attention_bytes + k * (kv_token_bytes_per_sequence(x, past) + state)
    attention_flop_ = attention_flop_ / x.tp
    if plain:
        matmul_bytes = weight_bytes_touched_per_gpu(x, tokens) + tokens * activation_bytes_per_token(x)
        matmul_flop = (
            2.0 * (x.matmul_params - x.lm_head_params) * tokens + 2.0 * x.lm_head_params * logit_tokens
        ) / x.tp
        compute, comm = matmul_compute_s(x, tokens, logit_tokens), comm_s(x, tokens)
        exchange: Quantity = 0.0
    else:
        matmul_bytes = weight_bytes_touched_per_gpu(x, all_tokens) + tokens * activation_bytes_per_token(x)
        routed = routed_params(x)
        body = 2.0 * (x.matmul_params - x.lm_head_params - routed) * tokens + 2.0 * x.lm_head_params * logit_tokens
        matmul_flop = body / x.tp + 2.0 * routed * parallel.expert_imbalance(x) * all_tokens / (x.tp * x.dp)
        compute = matmul_compute_s(x, tokens, logit_tokens, all_tokens)
        exchange = parallel.moe_comm_s(x, tokens, all_tokens, n > 0)
        comm = parallel.tp_comm_s(x, tokens) + exchange
    cost = StepCost(
        matmul_flop=matmul_flop,
        matmul_bytes=matmul_bytes,
        attention_flop=attention_flop_,
        attention_bytes=attention_bytes,
        matmul_compute_s=compute,
        matmul_memory_s=matmul_bytes / (x.bandwidth_bytes_per_s * x.mbu),
        attention_compute_s=attention_flop_ / (x.attention_peak_flop_per_s * x.attention_compute_frac),
        attention_memory_s=attention_bytes / (x.bandwidth_bytes_per_s * x.attention_bandwidth_frac),
        comm_s=comm,
        overhead_s=overhead_s(x, tokens, n),
        overlap=x.compute_memory_overlap,
        exchange_s=exchange,
        rank_tokens=tokens,
        host_s=host_bound_s(x, 0.0, seqs, k),
    )
    if has_kernels(x):
        cost = _measured(x, cost, seqs, q, ctx, n, past, k, None if plain else all_tokens)
    if plain or not np.any(x.tbo > 0):
        return cost
    hidden = x.tbo * np.minimum(cost.matmul_s + cost.attention_s, exchange)
    return replace(cost, hidden_s=hidden)


def _ratio_terms(x: EngineInputs, seqs, ctx) -> tuple[Array, Array]:
    """(c, m) of ρ_q: the decode attention's FLOP time at one query per sequence and its KV-read time."""
    c = attention_flop(x, seqs, ctx, x.attention_dim_decode) / x.tp
    c = c / (x.attention_peak_flop_per_s * x.attention_compute_frac)
    m = seqs * kv_token_bytes_per_sequence(x, ctx) * kv_group_reads(x)
    m = m / (x.bandwidth_bytes_per_s * x.attention_bandwidth_frac)
    return c, m


def measured_decode_steps(x: EngineInputs, seqs, ctx):
    """q ↦ ``step_cost(x, seqs, q, ctx).time_s`` on measured kernels, fast (``kernel_step.decode_steps``); None
    where it does not apply (a layout beyond one node's tensor parallelism, a scenario without tables)."""
    if not (parallel.simple(x) and has_kernels(x) and measured_everywhere(x)):
        return None
    seqs, ctx = np.asarray(seqs, dtype=float), np.asarray(ctx, dtype=float)
    overhead = overhead_s(x, seqs, 0.0)
    return decode_steps(x, seqs, ctx, _ratio_terms(x, seqs, ctx), overhead, lambda t: comm_s(x, t))


def decode_attention_ratio(x: EngineInputs, seqs, q, ctx) -> Array:
    """ρ_q = max(c·q, m) / max(c, m): the roofline's decode attention of q queries per sequence ÷ of one, with
    c = 2·h·d_dec·K(ctx)·seqs / tp / (peak₁₆·a_c) and m = seqs·KV(ctx)·ρ_g / (bw·a_m) (kernel_step's ρ_q)."""
    q = np.asarray(q, dtype=float)
    if np.all(q == 1.0):
        return np.ones(())
    c, m = _ratio_terms(x, seqs, ctx)
    one = np.maximum(c, m)
    return np.where(one > 0, np.maximum(c * q, m) / np.where(one > 0, one, 1.0), 1.0)


def _measured(x: EngineInputs, cost: StepCost, seqs, q, ctx, n, past, k, all_tokens) -> StepCost:
    """``cost`` with its parts' times from the measured kernels where the scenario has tables (kernel_step)."""
    exchange = cost.exchange_s
    tp_comm = cost.comm_s - exchange
    ratio = decode_attention_ratio(x, seqs, q, ctx)
    mm, att, comm = kernel_parts(x, seqs, q, ctx, n, past, k, all_tokens, ratio, tp_comm)
    on = (x.kernel_set > 0) & np.isfinite(mm) & np.isfinite(att) & np.isfinite(comm)  # NaN: not measured there
    return replace(
        cost,
        measured_matmul_s=np.where(on, mm, cost.matmul_s),
        measured_attention_s=np.where(on, att, cost.attention_s),
        comm_s=np.where(on, comm + exchange, cost.comm_s),
    )


def prefill(x: EngineInputs, tokens=None, past=0.0) -> StepCost:
    """Prefill of one prompt on an idle replica (TTFT): ``tokens`` new after ``past`` cached."""
    return step_cost(x, n=x.prompt_tokens if tokens is None else tokens, past=past)


def batched_prefill(x: EngineInputs, prompts=None) -> StepCost:
    """One step prefilling ``prompts`` (default: the batch) whole prompts together, as a
    static-batch benchmark's context phase does (TensorRT-LLM gptSessionBenchmark, LMDeploy)."""
    b = x.batch if prompts is None else np.asarray(prompts, dtype=float)
    return step_cost(x, n=b * x.prompt_tokens, prompts=b)


def decode_context_tokens(x: EngineInputs) -> Array:
    """Mean context over a generation: prompt + output / 2."""
    return x.prompt_tokens + x.output_tokens / 2.0


def decode(x: EngineInputs, batch=None, ctx=None) -> StepCost:
    """One decode step for ``batch`` sequences at context ``ctx``."""
    return step_cost(
        x,
        seqs=x.batch if batch is None else batch,
        ctx=decode_context_tokens(x) if ctx is None else ctx,
    )


@dataclass(frozen=True)
class RidgeTerms:
    """The decode step at batch B as compute_s = c0 + B·(a_mm + a_att), memory_s = w + B·(b_act + b_kv)."""

    w: Array  # all weights read, at bw′
    c0: Array  # the small-GEMM penalty: T½ rows of every GEMM (all experts), at peak′
    a_mm: Array  # matmul arithmetic per sequence
    a_att: Array  # attention arithmetic per sequence at ctx
    b_act: Array  # activation traffic per sequence
    b_kv: Array  # KV read (ρ_g times) and written per sequence at ctx


def ridge_terms(x: EngineInputs, ctx=None) -> RidgeTerms:
    """The terms of ``ridge_batch`` (its doc)."""
    ctx = decode_context_tokens(x) if ctx is None else np.asarray(ctx, dtype=float)
    peak = x.peak_flop_per_s * x.mfu
    bw = x.bandwidth_bytes_per_s * x.mbu
    routed = routed_params(x)
    moe_frac = x.moe_matmul_frac * x.expert_peak_flop_per_s / x.peak_flop_per_s  # the experts at their own peak
    kv = (
        kv_token_bytes_per_sequence(x, ctx) * kv_group_reads(x)
        + state_bytes_per_gpu(x)
        + kv_layers(x) * kv_bytes_per_token_per_layer(x)
    )
    if parallel.simple(x):
        pad_flop = 2.0 * (x.matmul_params - routed) + 2.0 * x.moe_layers * x.experts * x.expert_params / moe_frac
        a_mm = (2.0 * (x.matmul_params - routed) + 2.0 * routed / moe_frac) / x.tp / peak
        per_rank: Quantity = 1.0
    else:  # per instance sequence: dense work on 1/dp of them, the experts' on all over tp · dp (module doc)
        experts = 2.0 * x.moe_layers * x.experts * x.expert_params / moe_frac / x.dp
        pad_flop = 2.0 * (x.matmul_params - routed) + experts
        routed_rows = 2.0 * routed * parallel.expert_imbalance(x) / moe_frac
        a_mm = (2.0 * (x.matmul_params - routed) + routed_rows) / x.dp / x.tp / peak
        per_rank = 1.0 / x.dp
    return RidgeTerms(
        w=weight_bytes_read_per_gpu(x) / bw,
        c0=x.matmul_half_tokens * pad_flop / x.tp / peak,
        a_mm=a_mm,
        a_att=attention_flop(x, 1.0, ctx, x.attention_dim_decode)
        / x.tp
        / (x.attention_peak_flop_per_s * x.attention_compute_frac)
        * per_rank,
        b_act=activation_bytes_per_token(x) / bw * per_rank,
        b_kv=kv / (x.bandwidth_bytes_per_s * x.attention_bandwidth_frac) * per_rank,
    )


def ridge_batch(x: EngineInputs, ctx=None) -> Array:
    """Batch from which the whole decode step is compute-bound (compute_s ≥ memory_s).

    At batch B (all experts read, module doc): compute_s = c₀ + B·a, memory_s = w + B·b with
      a = 2·N_matmul/tp/peak′ (+ the routed experts at η_moe) + 2·h·d_att·K(ctx)/tp/(peak₁₆·a_c)
      b = L·act/tp·2 B/bw′ + (KV(ctx)·ρ_g + KV/token)/(bw·a_m),   w = W/bw′,
      c₀ = T½·(2·N_body + 2·N_head)/tp/peak′ + T½·E·2·L_moe·n_e/tp/(peak′·η_moe)
    so B* = max(w − c₀, 0) / (a − b); ``inf`` when a ≤ b (KV and activation reads grow faster
    than the arithmetic: never compute-bound).  It moves with context: longer contexts read
    more KV per sequence."""
    t = ridge_terms(x, ctx)
    denom = (t.a_mm + t.a_att) - (t.b_act + t.b_kv)
    with np.errstate(divide="ignore", invalid="ignore"):
        ridge = np.where(denom > 0, np.maximum(t.w - t.c0, 0.0) / np.where(denom > 0, denom, 1.0), np.inf)
    return ridge if not np.any(x.pp > 1) else ridge * x.pp  # each of the pp micro-batches at B/pp
