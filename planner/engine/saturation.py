"""Offline maximum throughput: every request queued at once, the engine kept full (docs/model.md §10).

What ``trtllm-bench throughput`` and an all-at-once ``vllm bench serve`` measure: fixed-length requests
(P prompt, O output tokens) wait in a queue while the engine runs as many as it can at once, admitting a
new one whenever one finishes.  In steady state B requests run,

    B = min(batch, ⌊KV blocks' sequences⌋, C · O / (O + P))      (max_num_seqs; the KV pool at P + O tokens a
                                                                  sequence; the step budget C holds the B
                                                                  decodes and, on average, B · P / O prefill tokens)

and every O steps B requests finish and B new prompts are prefilled inside the decode steps.  Each prompt
costs its marginal kernel time, Δ(P) = g(B decodes + one P-token prompt) − g(B decodes) (g: a step's time
without its fixed costs; with dp data-parallel attention ranks the B/dp prompts of a rank side by side with
the other ranks': Δ is the step with one P-token prompt on every rank — each rank's attention and dense GEMMs
see its own P tokens, the lock-stepped expert layers and the dispatch every rank's dp · P), and a share
f = min(1, B / (dp · O)) of the steps carry a prompt (their fixed cost is a prefill step's, the others' a
decode-only step's), so

    max_throughput_tpot_s   = g_dec(B) + (B / dp) · Δ(P) / O + f · t0_prefill + (1 − f) · t0_decode
                              (the mean step: what each request's TPOT is)
    max_throughput_output_tokens_per_s_per_gpu = B / max_throughput_tpot_s / GPUs

(g at the mean context P + O/2), and the mean step lasts at least the host's work on its sequences and prompts,

    max_throughput_tpot_s ← max(max_throughput_tpot_s, h · (B/dp + B/(dp · O)))    (efficiency.host_bound_s)

— bounded on the mean step, not inside Δ: a host-bound decode step would hide the first prompt's kernels under
the host's time and make every prompt look free (Qwen3-30B-A3B on a B200 at 2,048 in / 128 out: 29,311 output
tok/s predicted, 6,251 measured, before 2026-12-02).  The marginal form keeps a whole prompt's causal attention
(P² / 2 per prompt) and lets the decodes share its weight reads, as an in-flight batch does; it ignores the ramp-up and
the drain at the ends of a finite run (the tables' request counts are chosen to reach a steady state).
"""

from __future__ import annotations

import numpy as np

from planner.engine import parallel
from planner.engine.efficiency import host_bound_s
from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.engine.roofline import decode_context_tokens
from planner.engine.step_times import step_times_and_overheads_s


def saturated_batch(x: EngineInputs, kv_sequences) -> Array:
    """B = min(batch, ⌊KV sequences⌋, C · O / (O + P)), at least 1 (module doc); 0 where nothing fits."""
    p, o = x.prompt_tokens, x.output_tokens
    budget = x.chunk_tokens * o / (o + p)
    b = np.minimum(np.minimum(x.batch, np.floor(np.asarray(kv_sequences, dtype=float))), np.maximum(budget, 1.0))
    return np.where(np.asarray(kv_sequences, dtype=float) >= 1.0, np.maximum(b, 1.0), 0.0)


def max_throughput(x: EngineInputs, kv_sequences) -> dict[str, MetricValue]:
    """The offline maximum-throughput figures (module doc)."""
    b = saturated_batch(x, kv_sequences)
    runs = b > 0
    seqs = np.where(runs, b, 1.0)
    ctx = decode_context_tokens(x)
    # a decode step, and one with one prompt on every data-parallel rank at once: each rank's attention and dense
    # GEMMs see its own P tokens, the lock-stepped expert layers (and the dispatch) every rank's dp · P
    # the GPU's times alone: the host's work is bounded on the mean step below, not on each marginal prompt
    gpu = x.with_(host_s_per_seq=np.zeros_like(x.host_s_per_seq))
    (dec_s, dec_fixed), (mix_s, mix_fixed) = step_times_and_overheads_s(
        gpu, seqs, ctx, [(0.0, 0.0, None), (x.prompt_tokens * x.dp, 0.0, x.dp * 1.0)]
    )
    g_dec, g_mix = dec_s - dec_fixed, mix_s - mix_fixed
    per_rank = seqs / x.dp  # data-parallel ranks prefill their own prompts side by side
    share = np.minimum(per_rank / x.output_tokens, 1.0)
    fixed = share * mix_fixed + (1.0 - share) * dec_fixed
    gpu_tpot = g_dec + per_rank * np.maximum(g_mix - g_dec, 0.0) / x.output_tokens + fixed
    tpot = host_bound_s(x, gpu_tpot, per_rank, per_rank / x.output_tokens)  # a rank's B/dp and its B/(dp·O) prompts
    gpus = x.tp if parallel.plain_layout(x) else parallel.gpus_per_instance(x)
    rate = np.where(runs, seqs / tpot / gpus, 0.0)
    return {
        "max_throughput_batch": b,
        "max_throughput_tpot_s": np.where(runs, tpot, 0.0),  # 0: nothing fits, nothing runs
        "max_throughput_output_tokens_per_s_per_gpu": rate,
    }
