"""Every metric ``engine.evaluate.compute`` returns: its unit, its meaning, and how it is exported.

One table, so the engine, the CSV/JSON export, the docs and the tests agree on each
metric's name, unit and export rule (``tests/engine/test_metrics.py`` checks that
``compute`` returns exactly these names and that docs/model.md lists them).

Export rules (``planner.export.present_value``):
  number       the SI value; whole numbers as integers; non-finite → "n/a"
  flag         "true" / "false"
  bound        a flag, plus a ``<phase>_bound`` column reading "compute" or "memory"
  never_if_inf the number, or "never" when it is +inf (a turn that never comes)
  none_if_zero the number, or "none" when it is 0 (no tp up to 64 fits)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ExportRule = Literal["number", "flag", "bound", "never_if_inf", "none_if_zero"]


@dataclass(frozen=True)
class Metric:
    unit: str  # SI unit, or "1" for a count or ratio, "bool" for a flag
    meaning: str
    export: ExportRule = "number"


def _m(unit: str, meaning: str, export: ExportRule = "number") -> Metric:
    return Metric(unit, meaning, export)


METRICS: dict[str, Metric] = {
    # memory (engine/memory.py)
    "kv_bytes_per_token": _m("B", "KV cache one token adds, all layers, all GPUs of a replica"),
    "kv_bytes_per_token_per_gpu": _m("B", "KV cache one token adds on one GPU"),
    "kv_bytes_per_sequence": _m("B", "KV cache of one prompt + output sequence, whole replica"),
    "weight_bytes_total": _m("B", "weights of the model as stored (quantised with scales, 16-bit embeddings)"),
    "weight_bytes_per_gpu": _m("B", "weights one GPU holds (split over tp; norms replicated; a draft's too)"),
    "reserve_bytes_per_gpu": _m(
        "B", "what the engine's budget sets aside besides weights and KV (activation peak, non-torch)"
    ),
    "usable_bytes_per_gpu": _m("B", "the engine's budget per GPU: weights + reserve + KV (vLLM: ⌈total × mem_util⌉)"),
    "kv_budget_bytes_per_gpu": _m("B", "the KV cache memory per GPU (vLLM's 'Available KV cache memory'), at least 0"),
    "fits": _m(
        "bool", "the engine starts: one prompt + output sequence fits and the memory outside the budget too", "flag"
    ),
    "kv_capacity_tokens": _m(
        "tokens", "tokens the KV cache holds (vLLM's 'GPU KV cache size'): blocks ÷ groups × block"
    ),
    "max_concurrent_sequences": _m(
        "1", "prompt + output sequences the KV blocks hold at once (vLLM's 'Maximum concurrency'), fractional"
    ),
    "max_concurrent_sequences_contiguous": _m("1", "sequences that fit at once with contiguous (worst-case) KV"),
    "kv_waste_frac_paged": _m("1", "share of reserved KV unused with paged allocation"),
    "kv_waste_frac_contiguous": _m("1", "share of reserved KV unused with contiguous allocation"),
    "batch_fits_memory": _m("bool", "the batch fits in the KV cache", "flag"),
    "min_tp_that_fits": _m("1", "smallest tp in 1, 2, 4 … 64 the engine accepts and that fits", "none_if_zero"),
    "memory_total_bytes_per_gpu": _m("B", "device memory as the driver reports it (what the engine sizes from)"),
    "draft_weight_bytes_per_gpu": _m("B", "the draft model's weights per GPU (0 without one)"),
    "activation_bytes_per_gpu": _m("B", "peak activation of the engine's start-up profile run"),
    "non_torch_bytes_per_gpu": _m("B", "non-torch memory created after start-up (NCCL buffers at tp ≥ 2, cuBLAS)"),
    "cuda_graph_bytes_per_gpu": _m("B", "CUDA-graph memory (vLLM 0.19 captures it after sizing the KV cache)"),
    "startup_baseline_bytes_per_gpu": _m(
        "B", "memory in use when the engine takes its start-up snapshot (CUDA context)"
    ),
    "memory_headroom_bytes_per_gpu": _m("B", "total − baseline − budget − what lives outside it (< 0: start-up fails)"),
    "kv_blocks": _m("1", "paged KV blocks in the pool (vLLM's num_gpu_blocks)"),
    "kv_blocks_per_request": _m("1", "blocks one prompt + output request holds over all KV groups"),
    "feasible_batch": _m(
        "1", "the largest batch ≤ batch whose sequences fit at once (each dummy request adds to the peak)"
    ),
    "config_valid": _m("bool", "the engine accepts the configuration (tp, batch ≤ chunk, context ≤ window)", "flag"),
    "kv_bytes_per_token_mha": _m("B", "KV per token if every query head had its own K/V (MHA)"),
    "kv_bytes_per_token_mqa": _m("B", "KV per token with one shared K/V head (MQA)"),
    # prefill (engine/roofline.py)
    "ttft_s": _m("s", "time to first token: one prompt's prefill on an idle replica"),
    "prefill_compute_bound": _m("bool", "the prefill step's arithmetic time is at least its memory time", "bound"),
    "prefill_flop": _m("FLOP", "prefill FLOP per GPU"),
    "prefill_bytes": _m("B", "prefill bytes moved per GPU"),
    "prefill_compute_s": _m("s", "prefill arithmetic time: matmul and attention FLOP at their rates"),
    "prefill_memory_s": _m("s", "prefill memory time: weights, activations and KV at their rates"),
    "prefill_comm_s": _m("s", "prefill communication time: tensor-parallel all-reduces, MoE exchange, stage sends"),
    # decode
    "plain_tpot_s": _m("s", "one decode step without speculative decoding"),
    "decode_compute_bound": _m("bool", "the decode step's arithmetic time is at least its memory time", "bound"),
    "decode_flop": _m("FLOP", "decode-step FLOP per GPU"),
    "decode_bytes": _m("B", "decode-step bytes moved per GPU"),
    "decode_compute_s": _m("s", "decode-step arithmetic time: matmul and attention FLOP at their rates"),
    "decode_memory_s": _m("s", "decode-step memory time: weights, activations and KV at their rates"),
    "decode_comm_s": _m("s", "decode-step communication: tensor-parallel all-reduces, MoE exchange, stage sends"),
    "ridge_batch": _m("1", "batch from which the whole decode step is compute-bound", "never_if_inf"),
    # chunked prefill (engine/chunked.py)
    "chunked_steps": _m("1", "mixed steps a newcomer's prompt takes (C − B tokens each)", "never_if_inf"),
    "chunked_ttft_s": _m(
        "s", "newcomer's time to first token with chunked prefill under the batch (never when B ≥ C)", "never_if_inf"
    ),
    "chunked_max_itl_s": _m("s", "running streams' largest inter-token gap with chunked prefill"),
    "chunked_mean_itl_s": _m("s", "running streams' mean inter-token gap while the prompt is chunked in"),
    "nochunk_ttft_s": _m("s", "newcomer's time to first token without chunking"),
    "nochunk_max_itl_s": _m("s", "running streams' largest gap without chunking"),
    # speculative decoding (engine/speculative.py)
    "spec_expected_tokens_per_step": _m("tokens", "E(α, γ): tokens one verification pass yields"),
    "spec_step_s": _m("s", "γ draft steps + one verification pass"),
    "spec_tpot_s": _m("s", "speculative step ÷ E"),
    "spec_speedup": _m("1", "plain step ÷ speculative time per token"),
    "spec_best_gamma": _m("tokens", "γ in 0 … 16 with the highest speedup"),
    "spec_best_speedup": _m("1", "speedup at the best γ"),
    # throughput and cost (engine/evaluate.py)
    "tpot_s": _m("s", "time per output token at the batch (speculative when on)"),
    "decode_tokens_per_s": _m("tokens/s", "decode-only throughput of one replica: B / TPOT"),
    "decode_tokens_per_s_per_gpu": _m("tokens/s", "decode-only throughput per GPU (÷ tp × dp × pp)"),
    "output_tokens_per_s": _m("tokens/s", "output tokens/s of one replica, prefill GPU time included"),
    "output_tokens_per_s_per_gpu": _m("tokens/s", "output tokens/s per GPU, prefill GPU time included"),
    "static_batch_latency_s": _m("s", "B prompts prefilled together, then O − 1 decode steps"),
    "static_batch_output_tokens_per_s_per_gpu": _m(
        "tokens/s", "B · O / static-batch latency / GPUs (TensorRT-LLM and LMDeploy benchmarks)"
    ),
    "price_per_replica_hour_usd": _m("USD/h", "price of one replica's GPUs per hour"),
    "cost_per_million_output_tokens_usd": _m("USD", "GPU cost of a million output tokens, prefill time included"),
    "request_latency_s": _m("s", "TTFT + (output − 1) × TPOT"),
    # power and energy (engine/power.py; docs/model.md §13)
    "power_per_gpu_w": _m("W", "board power of one GPU at the scenario's load: prefill and decode time-weighted"),
    "prefill_power_per_gpu_w": _m("W", "board power during a prefill step: idle + (TDP − idle) · u(compute, memory)"),
    "decode_power_per_gpu_w": _m("W", "board power during a decode step at the batch"),
    "prefill_time_frac": _m("1", "share of the replica's GPU time in prefill: B·TTFT / (B·TTFT + O·TPOT)"),
    "replica_power_kw": _m("kW", "IT power of one replica: GPUs × (board power + the server's non-GPU share)"),
    "replica_site_power_kw": _m("kW", "one replica's site power: IT power × PUE"),
    "energy_per_output_token_j": _m("J", "GPU board energy per output token (ML.ENERGY's measure), prefill included"),
    "kwh_per_million_output_tokens": _m("kWh", "site energy of a million output tokens"),
    "energy_cost_per_million_output_tokens_usd": _m("USD", "electricity cost of a million output tokens"),
    "replicas_within_power_limit": _m("1", "replicas the power limit holds at this load (inf: no limit)"),
    # prompt caching (engine/prompt_cache.py)
    "cache_applies": _m("bool", "the prefix is at least the model's minimum cacheable length", "flag"),
    "cache_hit_rate": _m("1", "hit rate used: the input, or the TTL-implied one from requests/min"),
    "cache_cost_per_request_usd": _m("USD", "API cost of one request with prompt caching"),
    "nocache_cost_per_request_usd": _m("USD", "API cost of one request without caching"),
    "cache_saving_frac": _m("1", "1 − cost with cache ÷ cost without (negative: a surcharge)"),
    "cache_break_even_hit_rate": _m("1", "hit rate above which caching pays"),
    "cached_ttft_s": _m("s", "expected TTFT with the prefix cache"),
    # efficiency model in force (planner/model/engine_timing.py)
    "decode_overhead_s": _m("s", "fixed cost of a decode step: t_step + layers × t_layer (CUDA-graph replay)"),
    "prefill_overhead_s": _m("s", "fixed cost of a prefill step: t_step + layers × t_layer (eager launches)"),
    "matmul_frac": _m("1", "large-matmul FLOP/s ÷ dense peak in force (MFU)"),
    "bandwidth_frac": _m("1", "weight-streaming bytes/s ÷ peak bandwidth in force (MBU)"),
    # parallel layout (engine/parallel.py; docs/model.md "Parallelism")
    "gpus_per_instance": _m("1", "GPUs of one serving instance: tp × dp × pp"),
    "memory_stage_layers": _m(
        "1", "layers of the pipeline stage the per-GPU memory plan describes (the one holding the fewest KV blocks)"
    ),
    "decode_exchange_s": _m("s", "decode step's MoE token exchange across data-parallel ranks (dispatch + combine)"),
    "decode_send_s": _m("s", "decode step's pipeline stage-to-stage sends on the bottleneck stage"),
    "decode_pipeline_s": _m("s", "decode step's pipeline time beyond the bottleneck stage's work (bubble, sends)"),
    "decode_comm_frac": _m("1", "share of the decode step spent in collectives, exchanges and stage sends"),
    "kv_transfer_bytes_per_request": _m("B", "KV a disaggregated prefill pool sends for one prompt: P × KV per token"),
    "kv_transfer_s": _m(
        "s", "that transfer over the network: each GPU sends its own share of the prompt's KV over its own NIC"
    ),
}

#: Flags exported with an extra ``<phase>_bound`` column: flag name → column name.
BOUND_COLUMNS: dict[str, str] = {
    name: name.removesuffix("_compute_bound") + "_bound" for name, m in METRICS.items() if m.export == "bound"
}
