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


#: The name people read for each throughput and GPU cost, saying what it includes — the headline, the
#: findings, the tables and the CLI all print these (one name per quantity; ``label``).
LABELS: dict[str, str] = {
    "output_tokens_per_s": "output tok/s per replica, prefill included",
    "output_tokens_per_s_per_gpu": "output tok/s per GPU, prefill included",
    "decode_tokens_per_s": "decode-only tok/s per replica",
    "decode_tokens_per_s_per_gpu": "decode-only tok/s per GPU",
    "static_batch_output_tokens_per_s_per_gpu": "static-batch output tok/s per GPU",
    "cost_per_million_output_tokens_usd": "GPU $ per million output tokens, prefill included",
    "decode_cost_per_million_output_tokens_usd": "GPU $ per million output tokens, decode only",
    "cost_per_million_input_tokens_usd": "GPU $ per million input tokens (the prefill's share)",
    "cost_per_million_tokens_usd": "GPU $ per million tokens, input and output",
    "cost_per_request_usd": "GPU $ per request",
}


def label(name: str, capital: bool = False) -> str:
    """The name people read for metric ``name`` (``LABELS``; else the metric's key), with a capital first
    letter for the start of a sentence (``capital``; the rest as written: 'GPU' stays)."""
    text = LABELS.get(name, name)
    return text[:1].upper() + text[1:] if capital else text


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
    "usable_bytes_per_gpu": _m(
        "B",
        "the engine's budget per GPU: weights + reserve + KV (vLLM: ⌈total × mem_util⌉), also where the model "
        "does not fit in it",
    ),
    "kv_budget_bytes_per_gpu": _m("B", "the KV cache memory per GPU (vLLM's 'Available KV cache memory'), at least 0"),
    "fits": _m(
        "bool", "the engine starts: one prompt + output sequence fits and the memory outside the budget too", "flag"
    ),
    "kv_capacity_tokens": _m(
        "tokens",
        "tokens the KV pool holds per layer group: blocks ÷ groups × block (vLLM 0.19's 'GPU KV cache size', "
        "SGLang's max_total_num_tokens)",
    ),
    "logged_kv_cache_tokens": _m(
        "tokens",
        "what one engine's start-up log prints as 'GPU KV cache size' (vLLM ≥ 0.21: ⌊max concurrency × max_model_len⌋; "
        "vLLM 0.19 and SGLang: kv_capacity_tokens of one engine)",
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
    "cuda_graph_bytes_per_gpu": _m("B", "CUDA-graph memory the engine captures"),
    "cuda_graph_charged_bytes_per_gpu": _m(
        "B", "the CUDA-graph memory the KV budget subtracts (vLLM ≥ 0.20: its estimate; 0.19 captures after sizing: 0)"
    ),
    "mem_util_frac": _m(
        "1", "the memory share in force: mem_util, else the engine version's default (vLLM 0.33: 0.92)"
    ),
    "block_tokens": _m("tokens", "the KV block (SGLang: page) in force: block, else the engine version's choice"),
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
    # prefill and the GPUs' prefix cache (engine/prefix_reuse.py)
    "ttft_s": _m(
        "s", "time to first token on an idle replica: the prefill, expected over the GPUs' prefix-cache hit rate"
    ),
    "ttft_nocache_s": _m("s", "idle TTFT of the whole prompt (a prefix-cache miss, or no prefix cache)"),
    "ttft_hit_s": _m("s", "idle TTFT on a prefix-cache hit: the P − X_hit new tokens after the X_hit cached"),
    "gpu_cache_hit_rate": _m(
        "1", "share of requests whose prefix the GPUs' prefix cache holds (gpu_hit, else hit; 0 with it off)"
    ),
    "gpu_cached_tokens": _m("tokens", "prompt tokens a prefix-cache hit reads: whole blocks of the prefix, ≤ P − 1"),
    "prefill_saved_per_request_s": _m(
        "s", "prefill time the GPUs' prefix cache saves per request: hit rate × (whole prompt − hit)"
    ),
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
        "s",
        "newcomer's time to first token with chunked prefill under the batch, expected over the prefix-cache "
        "hits (never when B ≥ C)",
        "never_if_inf",
    ),
    "chunked_max_itl_s": _m("s", "running streams' largest inter-token gap with chunked prefill (a whole prompt)"),
    "chunked_mean_itl_s": _m("s", "running streams' mean inter-token gap while a whole prompt is chunked in"),
    "nochunk_ttft_s": _m("s", "newcomer's time to first token without chunking (expected over the prefix-cache hits)"),
    "nochunk_max_itl_s": _m("s", "running streams' largest gap without chunking (a whole prompt)"),
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
    "prefill_time_per_request_s": _m(
        "s", "replica time one request's prefill holds (idle TTFT with the prefix cache; ÷ pp·dp for layouts)"
    ),
    "static_batch_latency_s": _m("s", "B prompts prefilled together, then O − 1 decode steps"),
    "static_batch_output_tokens_per_s_per_gpu": _m(
        "tokens/s", "B · O / static-batch latency / GPUs (TensorRT-LLM and LMDeploy benchmarks)"
    ),
    "price_per_replica_hour_usd": _m("USD/h", "price of one replica's GPUs per hour"),
    "cost_per_million_output_tokens_usd": _m(
        "USD", "GPU cost of a million output tokens, prefill time included (from output_tokens_per_s_per_gpu)"
    ),
    "decode_cost_per_million_output_tokens_usd": _m(
        "USD", "the decode share of the GPU cost per million output tokens (from decode_tokens_per_s_per_gpu)"
    ),
    "cost_per_million_input_tokens_usd": _m("USD", "the prefill share of the GPU cost per million input tokens"),
    "cost_per_million_tokens_usd": _m("USD", "GPU cost per million tokens, input and output together"),
    "cost_per_request_usd": _m("USD", "GPU cost of one request: its prefill and its share of the decode steps"),
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
    # API prompt caching (engine/prompt_cache.py)
    "cache_applies": _m("bool", "the prefix is at least the model's minimum cacheable length", "flag"),
    "cache_hit_rate": _m("1", "hit rate used: the input, or the TTL-implied one from requests/min"),
    "cache_cost_per_request_usd": _m("USD", "API cost of one request with prompt caching"),
    "nocache_cost_per_request_usd": _m("USD", "API cost of one request without caching"),
    "cache_saving_frac": _m("1", "1 − cost with cache ÷ cost without (negative: a surcharge)"),
    "cache_break_even_hit_rate": _m("1", "hit rate above which caching pays"),
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
    # offline maximum throughput (engine/saturation.py): trtllm-bench's figure
    "max_throughput_batch": _m(
        "1", "requests in flight when every request is queued at once: min(batch, KV sequences, C·O/(O + P))"
    ),
    "max_throughput_tpot_s": _m(
        "s", "mean step (each request's TPOT) at that load: the decode step + the prompts' marginal prefill"
    ),
    "max_throughput_output_tokens_per_s_per_gpu": _m(
        "tokens/s", "offline maximum output tokens/s per GPU, every request queued (trtllm-bench throughput)"
    ),
}

#: Text columns exported after the metrics, one value per scenario (not arrays of ``compute``): name → meaning.
TEXT_COLUMNS: dict[str, str] = {
    "time_basis": "what every time figure rests on: 'measured kernels (engine release, GPU)' where kernel tables "
    "cover the scenario, else 'fitted roofline (engine profile, published rows; why no table applies)' "
    "(engine/kernel_basis.py)",
    "weight_formats": "the formats in force and where they come from: the weights per component (attention, MLP, "
    "experts, the matrices kept in 16 bit) with the checkpoint's repository or 'your link's format', the KV cache "
    "dtype and the attention math (model/weight_plan.py ResolvedWeights.describe)",
}

#: Flags exported with an extra ``<phase>_bound`` column: flag name → column name.
BOUND_COLUMNS: dict[str, str] = {
    name: name.removesuffix("_compute_bound") + "_bound" for name, m in METRICS.items() if m.export == "bound"
}
