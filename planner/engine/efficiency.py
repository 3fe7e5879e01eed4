"""The efficiency model's terms: what real kernels and schedulers add to the roofline.

The roofline (``roofline.py``) counts each step's FLOP and bytes; these terms turn them into
the time a serving engine takes (docs/model.md §4–6; parameters: ``planner/model/engine_timing.py``,
fitted to published measurements by ``benchmarks/fit_timing.py``):

  fixed costs      t_0 = t_step + L · t_layer       scheduling and sampling once per step; kernel
                                                    launches and gaps once per layer (eager when
                                                    the step has prefill tokens, CUDA-graph replay
                                                    for a decode-only step)
  small GEMMs      a GEMM over M rows runs at M / (M + T½) of its plateau rate, so its time is
                   that of M + T½ rows at the plateau (``matmul_rows``); MoE experts pay T½ each
                   (every expert hit is its own small GEMM) at η_moe of the dense rate
  plateaus         MFU (16-bit or 8-bit by the compute dtype) and MBU per GPU family
  attention        a_c of the 16-bit peak (prefill), a_m of the bandwidth (KV streaming), and
                   ρ_g = 1 + (h/max(g, tp) − 1)·ρ KV loads per GQA group in decode (``kv_group_reads``)
  all-reduce       bus bandwidth = link · η_link (NVLink-class or PCIe), latency = the link's +
                   the engine's per-collective overhead

``plain_roofline`` switches every term off (the previous model: peaks derated by MFU and MBU
only), for comparison and for tests that pin roofline arithmetic.
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs


def overhead_s(x: EngineInputs, tokens, prefill_tokens) -> Array:
    """t_0 = t_step + L · t_layer for a step that runs (T > 0): t_layer is the eager per-layer
    cost when the step has prefill tokens, the CUDA-graph replay's for a decode-only step."""
    if np.ndim(prefill_tokens) == 0:  # one kind of step for every scenario: no per-element choice
        layer = x.layer_overhead_s if float(prefill_tokens) > 0 else x.decode_layer_overhead_s
    else:
        layer = np.where(prefill_tokens > 0, x.layer_overhead_s, x.decode_layer_overhead_s)
    return np.where(tokens > 0, x.step_overhead_s + x.layers * layer, 0.0)


def host_bound_s(x: EngineInputs, step_s, seqs, prompts=0.0) -> Array:
    """max(t, h · (seqs + prompts)): a step of ``seqs`` running sequences and ``prompts`` prefilling ones lasts at
    least the host's work on them.  The engines prepare step i + 1 on the CPU while the GPU runs step i (TensorRT-LLM's
    overlap scheduler, PyExecutor ``_executor_loop_overlap``, on by default), so the host's per-sequence work —
    scheduling, sampling, appending tokens, request bookkeeping — is hidden until it outgrows the GPU's step; then the
    step is the host's (docs/model.md §4, "Host-bound steps").  h: ``host_s_per_seq`` (``[kernels]``
    host_us_per_seq, fitted; 0 on the fitted roofline, whose constants were fitted without it)."""
    return np.maximum(step_s, x.host_s_per_seq * (seqs + prompts))


def matmul_pad_tokens(x: EngineInputs, tokens) -> Array:
    """T½ for a step that runs: the rows a GEMM over T rows costs beyond T (0 when T = 0)."""
    return np.where(tokens > 0, x.matmul_half_tokens, 0.0)


def kv_group_reads(x: EngineInputs) -> Array:
    """ρ_g = 1 + (h/g′ − 1) · ρ: how often a decode step loads each KV head's cache (MLA: once), with h/g′ the
    query heads one KV head serves on a GPU: h / max(g, tp) — below g = tp vLLM replicates the KV heads, and a
    replicated head serves only its GPU's h / tp query heads (so fewer KV heads than tp change nothing here)."""
    ratio = np.where(x.kv_sharded > 0, x.heads / np.maximum(x.kv_heads, x.tp), 1.0)
    return 1.0 + (ratio - 1.0) * x.gqa_reread_frac


def plain_roofline(x: EngineInputs) -> EngineInputs:
    """``x`` without the efficiency terms: no fixed costs, no small-GEMM or MoE penalty, one KV
    load per group, the link at its datasheet rate, attention at the matmul rates (peak · MFU,
    bandwidth · MBU) — the per-operator roofline with MFU and MBU as its only derating, never the measured
    kernels."""
    return x.with_(
        step_overhead_s=np.zeros_like(x.step_overhead_s),
        layer_overhead_s=np.zeros_like(x.layer_overhead_s),
        decode_layer_overhead_s=np.zeros_like(x.decode_layer_overhead_s),
        host_s_per_seq=np.zeros_like(x.host_s_per_seq),
        matmul_half_tokens=np.zeros_like(x.matmul_half_tokens),
        moe_matmul_frac=np.ones_like(x.moe_matmul_frac),
        gqa_reread_frac=np.zeros_like(x.gqa_reread_frac),
        link_frac=np.ones_like(x.link_frac),
        attention_compute_frac=x.mfu * x.peak_flop_per_s / x.attention_peak_flop_per_s,
        attention_bandwidth_frac=np.asarray(x.mbu, dtype=float),
        kernel_set=np.zeros_like(x.kernel_set),  # the roofline itself, not the measured kernels
        draft_kernel_set=np.zeros_like(x.draft_kernel_set),
    )
