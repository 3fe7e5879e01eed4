"""Memory plan per GPU as the engine version sizes it: weights, the reserve outside the KV cache, the
KV budget, paged blocks and concurrency (``kv_fit``: the screen's two figures of it, by the same steps).
Functions take ``EngineInputs`` (arrays broadcast) and return arrays.  Sources: docs/model.md §1–3
(file:line per version); the constants are data (``engine_profiles/<engine>/<version>.toml [memory]``).

KV bytes per token        = 2 · layers · kv_heads · head_dim · kv_dtype_bytes
                            (MLA: layers · (kv_lora_rank + rope_dim) · kv_dtype_bytes)
Total memory T            = what the driver reports (profile ``memory_reported_gib``; a log's figure)
Weights per GPU W         = (quantised + scales + other 16-bit + padded embedding/head) / tp
                            + norms, routers and the RoPE cache (every rank)  (+ a draft model's, 16 bit)
Peak activation P         = P₀ + max(P_fwd, P_keep + P_sampler) + P_moe  (planner.model.engine_memory)
Non-torch N, baseline     by tp (1, 2, ≥ 4): NCCL, custom all-reduce, cuBLAS, the CUDA context
KV budget (vLLM)          = ⌈T · u⌉ − W − P − N  (− G, CUDA graphs, only where the engine subtracts them)
Page                      = block · bytes per token per layer per GPU
Blocks                    = ⌊KV / (page · layers per group)⌋   (+ a draft's pages: one pool for both)
KV tokens                 = ⌊blocks / groups⌋ · block       (vLLM's "GPU KV cache size")
Blocks per request        = Σ groups: full ⌈L/block⌉; sliding window ⌈min(W − 1 + C, L)/block⌉ + 1
Max concurrency           = blocks / blocks per request    (vLLM's "Maximum concurrency …", fractional)
Fixed state               = the state layers' (linear attention, Mamba) state per sequence / tp, charged
                            with every sequence's blocks; those layers cache no K/V

Parallel layouts (planner/engine/parallel.py; docs/model.md "Parallelism"): every per-GPU figure is that
of the pipeline stage that holds the fewest KV blocks (vLLM gives every worker the smallest worker's block
count, ``get_kv_cache_configs``, v1/core/kv_cache_utils.py:1599-1614).  A stage s of L_s layers holds
  W_s = [rest · L_s/L + dense MLPs · D_s/D + shared experts · M_s/M + vocabulary tables_s] / tp
        + routed experts · M_s/M · ⌈E/ep⌉/E / moe_tp + replicated linears · L_s/L + (norms, routers) · L_s/L + RoPE
        (tables_s: the embedding on the first stage, the LM head on the last; moe_tp = tp · dp / ep)
  its layers' KV (heads over tp), the sampler's share of the peak only on the last stage, CUDA graphs of its
  layers, and ⌈group size · L_s/L⌉ layers per KV-cache group.  Each of the dp ranks is its own engine with
  batch / dp sequences: the instance holds dp × the engine's KV tokens and concurrency.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from planner.engine import parallel
from planner.engine.inputs import Array, EngineInputs, MetricValue, Quantity, broadcast_shape
from planner.engine.parallel import Stage
from planner.engine.validity import config_valid, tp_free_valid
from planner.model.parallel_layout import EP_BUFFER_BYTES
from planner.model.quantization import WEIGHT_16BIT_BYTES
from planner.units import ACTIVATION_BYTES

TP_CANDIDATES = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)


def kv_bytes_per_token_per_layer(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """Bytes one token adds to one layer's cache on one GPU.

    With tensor parallelism K/V heads are split across ranks: each holds
    ⌈g / tp⌉ heads (replicated when tp > g).  The MLA latent is replicated.
    """
    tp = x.tp if tp is None else tp
    per_layer = x.kv_elements_per_token_per_layer * x.kv_bytes_per_element
    share = np.ceil(x.kv_heads / tp) / x.kv_heads
    return per_layer * np.where(x.kv_sharded > 0, share, 1.0)


def kv_bytes_per_token(x: EngineInputs) -> Array:
    """Whole-model KV bytes per token (all attention layers, all GPUs): 2·L·g·k·b (MLA: L·(r+k_rope)·b)."""
    return kv_layers(x) * x.kv_elements_per_token_per_layer * x.kv_bytes_per_element


def kv_layers(x: EngineInputs) -> Array:
    """Layers that cache K/V: full plus sliding/chunked attention (state layers cache none)."""
    return x.full_attention_layers + x.window_layers


def kv_bytes_per_token_for_heads(x: EngineInputs, kv_heads: Quantity) -> Array:
    """What the cache would cost per token with ``kv_heads`` K/V heads (MHA = heads, MQA = 1):
    2 · L · g · k · b.  For an MLA model k is the mean of its expanded K and V head dims."""
    return 2 * kv_layers(x) * kv_heads * x.head_dim * x.kv_bytes_per_element


def kv_cached_layer_tokens(x: EngineInputs, context_tokens: Quantity) -> Array:
    """Σ over layers of tokens cached: full layers keep L, sliding-window layers min(L, W)."""
    return x.full_attention_layers * context_tokens + x.window_layers * np.minimum(context_tokens, x.window_tokens)


def kv_token_bytes_per_sequence(x: EngineInputs, context_tokens: Quantity, tp: Quantity | None = None) -> Array:
    """K/V bytes of the tokens one sequence of ``context_tokens`` holds on one GPU (no fixed state)."""
    return kv_bytes_per_token_per_layer(x, tp) * kv_cached_layer_tokens(x, context_tokens)


def state_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """The state layers' fixed state of one sequence on one GPU (split over the tp ranks with their
    heads, as vLLM's MambaStateShapeCalculator does); 0 for a model without state layers."""
    return x.state_bytes_per_sequence / (x.tp if tp is None else tp)


def kv_bytes_per_sequence(x: EngineInputs, context_tokens: Quantity, tp: Quantity | None = None) -> Array:
    """KV bytes of one sequence of ``context_tokens`` on one GPU, plus the state layers' fixed state."""
    return kv_token_bytes_per_sequence(x, context_tokens, tp) + state_bytes_per_gpu(x, tp)


# ---------------------------------------------------------------- weights


def _tp(x: EngineInputs, tp: Quantity | None) -> Array:
    return np.asarray(x.tp if tp is None else tp, dtype=float)


def _calibrated(value: Array, modelled: Array) -> Array:
    """A start-up log's figure where the scenario carries one (``cal_*``), else the model's."""
    return np.where(np.isfinite(value), value, modelled)


def weight_bytes_total(x: EngineInputs) -> Array:
    """The whole model's weights as stored (tp = 1): quantised weights with their scales, 16-bit rest."""
    b16 = WEIGHT_16BIT_BYTES
    return (
        x.quantized_weight_bytes
        + (x.other_weight_params + x.embedding_stored_params + x.replicated_params + x.rope_cache_elements) * b16
    )


def _whole_stage(stage: Stage | None) -> bool:
    return stage is None or (np.ndim(stage.layer_frac) == 0 and float(stage.layer_frac) == 1.0)


def target_weight_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None, stage: Stage | None = None) -> Array:
    """The target model's weights on one rank (``quantization.weight_bytes_of_layout``) of pipeline stage
    ``stage`` (None: the whole model) under the scenario's layout (module doc)."""
    tp = _tp(x, tp)
    b16 = WEIGHT_16BIT_BYTES
    split = x.quantized_weight_bytes + (x.other_weight_params + x.embedding_stored_params) * b16
    if _whole_stage(stage) and parallel.plain_layout(x) and not np.any(x.replicated_linear_bytes > 0):
        return split / tp + (x.replicated_params + x.rope_cache_elements) * b16
    st = stage or parallel.whole_model(x)
    experts, dense, shared = x.expert_weight_bytes, x.dense_mlp_weight_bytes, x.shared_expert_weight_bytes
    tables = np.where(x.pp > 1, st.first + st.last, 2.0 - x.tied_embeddings)
    vocab = x.vocab_table_params * b16 * tables
    rest = split - experts - dense - shared - x.replicated_linear_bytes - x.embedding_stored_params * b16
    by_tp = rest * st.layer_frac + dense * st.dense_frac + shared * st.moe_frac + vocab
    share = parallel.experts_on_busiest_rank(x) / np.maximum(x.experts, 1.0) / parallel.moe_tp(x)
    routed = np.where(x.experts > 0, experts * st.moe_frac * np.where(x.experts > 0, share, 0.0), 0.0)
    own = (
        x.replicated_linear_bytes * st.layer_frac + (x.replicated_params * st.layer_frac + x.rope_cache_elements) * b16
    )
    return by_tp / tp + routed + own


def draft_weight_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """A draft model's weights on one rank (vLLM runs the draft at the target's tp), 0 without one."""
    tp = _tp(x, tp)
    own = x.draft_weight_bytes_split / tp + x.draft_weight_bytes_replicated
    return np.where((x.spec_on > 0) & (x.has_draft_model > 0), own, 0.0)


def weight_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None, stage: Stage | None = None) -> Array:
    """W: target + draft weights on one rank (of the binding stage), or the log's ``Model loading took`` figure."""
    st = _stage(x, tp, stage)
    modelled = target_weight_bytes_per_gpu(x, tp, st) + draft_weight_bytes_per_gpu(x, tp)
    return _calibrated(x.cal_weights_bytes, modelled)


# ---------------------------------------------------------------- reserved outside the KV cache


def engine_batch(x: EngineInputs, batch: Quantity | None = None) -> Array:
    """Sequences of one engine (one data-parallel rank): batch / dp (vLLM's max_num_seqs of each DP engine)."""
    return (x.batch if batch is None else batch) / x.dp


def step_tokens(x: EngineInputs, batch: Quantity | None = None) -> Array:
    """Tokens of the profile run's dummy batch: max_num_batched_tokens (the chunk; ≥ the engine's batch)."""
    return np.maximum(x.chunk_tokens, engine_batch(x, batch))


def _by_tp(tp: Array, one: Array, two: Array, four: Array) -> Array:
    return np.where(tp <= 1, one, np.where(tp <= 2, two, four))


def activation_terms(
    x: EngineInputs, tp: Quantity | None = None, batch: Quantity | None = None, stage: Stage | None = None
) -> dict[str, Array]:
    """The parts of the profile run's peak (planner.model.engine_memory): forward, kept hidden
    states, sampler (on the last pipeline stage only), fused-MoE caches (experts split over moe_tp) and
    the constant, bytes per GPU (at ``batch``: x.batch, batch / dp per engine)."""
    tp = _tp(x, tp)
    b_seqs = engine_batch(x, batch)
    c = np.maximum(x.chunk_tokens, b_seqs)
    b = ACTIVATION_BYTES
    forward = c * (x.fwd_ffn_factor * x.forward_ffn / tp + x.fwd_hidden_factor * x.hidden) * b
    keep = x.hidden_kept * c * x.hidden * b
    sampler = x.sampler_bytes_per_logit * np.minimum(b_seqs, c) * x.vocab
    expert_tp = tp if parallel.plain_layout(x) else tp * x.dp / x.ep
    moe_wide = np.maximum(2.0 * x.moe_ffn / expert_tp, x.hidden) + x.moe_ffn / expert_tp
    moe = np.where((x.experts > 0) & (x.moe_workspace > 0), c * x.experts_per_token * moe_wide * b, 0.0)
    if stage is not None and np.any(x.pp > 1):
        sampler = sampler * stage.last
        moe = np.where(stage.moe_frac > 0, moe, 0.0)
    return {"base": x.act_base_bytes, "forward": forward, "keep": keep, "sampler": sampler, "moe": moe}


def activation_bytes_per_gpu(
    x: EngineInputs, tp: Quantity | None = None, batch: Quantity | None = None, stage: Stage | None = None
) -> Array:
    """P = P₀ + max(P_fwd, P_keep + P_sampler) + P_moe, or the log's peak-activation figure."""
    t = activation_terms(x, tp, batch, _stage(x, tp, stage))
    modelled = t["base"] + np.maximum(t["forward"], t["keep"] + t["sampler"]) + t["moe"]
    return _calibrated(x.cal_activation_bytes, modelled)


def non_torch_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """N: non-torch memory created after the start-up snapshot (NCCL buffers at tp ≥ 2; DeepEP's buffer where
    expert parallelism runs all-to-all, dp > 1 and ep > 1), or the log's."""
    modelled = _by_tp(_tp(x, tp), x.non_torch_tp1_bytes, x.non_torch_tp2_bytes, x.non_torch_tp4_bytes)
    if not parallel.plain_layout(x):
        modelled = modelled + np.where((x.dp > 1) & (x.ep > 1), EP_BUFFER_BYTES, 0.0)
    return _calibrated(x.cal_non_torch_bytes, modelled)


def baseline_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """Memory in use at the start-up snapshot (CUDA context, NCCL set-up); vLLM does not charge it to u."""
    return _by_tp(_tp(x, tp), x.baseline_tp1_bytes, x.baseline_tp2_bytes, x.baseline_tp4_bytes)


def cuda_graph_bytes_per_gpu(x: EngineInputs, stage: Stage | None = None) -> Array:
    """G = g₀ + g₁ · layers (of the stage), or the log's ``Graph capturing finished … took X GiB``."""
    layers = x.layers if stage is None or not np.any(x.pp > 1) else stage.layers
    return _calibrated(x.cal_graph_bytes, x.graph_base_bytes + x.graph_per_layer_bytes * layers)


def cuda_graph_charged_bytes_per_gpu(x: EngineInputs, stage: Stage | None = None, graphs: Array | None = None) -> Array:
    """The CUDA-graph memory the budget subtracts: 0 where the engine captures after sizing (vLLM 0.19);
    its estimate f · G where it profiles the graphs first (vLLM ≥ 0.20), or a log's own figure."""
    g = cuda_graph_bytes_per_gpu(x, stage) if graphs is None else graphs
    estimate = np.where(np.isfinite(x.cal_graph_bytes), g, x.graph_estimate_factor * g)
    return np.where(x.graphs_in_budget > 0, estimate, 0.0)


def reserve_bytes_per_gpu(x: EngineInputs, tp: Quantity | None = None, stage: Stage | None = None) -> Array:
    """What the budget sets aside besides weights and KV: P + N (+ the graphs' estimate where the engine
    subtracts it); SGLang's static fraction holds weights and KV only (its activations live outside it)."""
    st = _stage(x, tp, stage)
    charged = activation_bytes_per_gpu(x, tp, stage=st) + non_torch_bytes_per_gpu(x, tp)
    charged = charged + cuda_graph_charged_bytes_per_gpu(x, st)
    return np.where(x.mem_rule == 1, 0.0, charged)


def requested_bytes_per_gpu(x: EngineInputs) -> Array:
    """vLLM's budget R = ⌈T · gpu_memory_utilization⌉ (``request_memory``, v1/worker/utils.py:403)."""
    return np.ceil(x.memory_reported_bytes * x.mem_util)


def kv_budget_raw_bytes(x: EngineInputs, tp: Quantity | None = None, stage: Stage | None = None) -> Array:
    """The engine's KV budget per GPU by its rule (negative when the weights do not fit):
    vLLM R − W − reserve; SGLang (T − baseline) · u − W; TensorRT-LLM u · (T − baseline − W − reserve)
    (of the binding pipeline stage)."""
    st = _stage(x, tp, stage)
    w, reserve = weight_bytes_per_gpu(x, tp, st), reserve_bytes_per_gpu(x, tp, st)
    return _budget(x, w, reserve, baseline_bytes_per_gpu(x, tp))


def _budget(x: EngineInputs, w: Array, reserve: Array, baseline: Array) -> Array:
    """``kv_budget_raw_bytes`` from its already-computed terms."""
    free = x.memory_reported_bytes - baseline
    vllm = requested_bytes_per_gpu(x) - w - reserve
    sglang = free * x.mem_util - w
    trtllm = x.mem_util * (free - w - reserve)
    return np.where(x.mem_rule == 1, sglang, np.where(x.mem_rule == 2, trtllm, vllm))


# ---------------------------------------------------------------- paged KV cache (vLLM's layout)


def context_tokens(x: EngineInputs) -> Array:
    return x.prompt_tokens + x.output_tokens


def paged_context_tokens(x: EngineInputs) -> Array:
    """Tokens a paged sequence reserves: its context rounded up to whole blocks."""
    return np.ceil(context_tokens(x) / x.block_tokens) * x.block_tokens


def contiguous_context_tokens(x: EngineInputs) -> Array:
    """Tokens a contiguous allocator reserves: the whole window (or the context, if longer)."""
    return np.maximum(x.context_window_tokens, context_tokens(x))


def kv_groups(x: EngineInputs, stage: Stage | None = None) -> dict[str, Array]:
    """vLLM's KV-cache groups (``_get_kv_cache_groups_uniform_page_size``, kv_cache_utils.py:959-1078):
    one group when every layer is alike (or the hybrid manager is off: window layers then count as
    full); else ``layers per group`` = the smaller layer count (the larger when < 1.5× the smaller),
    each kind split into ⌈n / layers per group⌉ groups.  The groups are the whole model's; a pipeline
    stage holds ⌈layers per group · L_s / L⌉ of each group's layers (``_project_kv_cache_groups_to_worker``)."""
    attention = kv_layers(x)  # state layers (linear attention, Mamba) hold no K/V pages
    win = np.where(x.hybrid_kv > 0, x.window_layers, 0.0)
    full = attention - win
    hybrid = (win > 0) & (full > 0)
    lo, hi = np.minimum(full, win), np.maximum(full, win)
    size = np.where(hybrid, np.where(hi < 1.5 * lo, hi, lo), attention)
    safe = np.maximum(size, 1.0)
    full_groups = np.where(hybrid, np.ceil(full / safe), np.where(win > 0, 0.0, 1.0))
    window_groups = np.where(hybrid, np.ceil(win / safe), np.where(win > 0, 1.0, 0.0))
    sglang = x.mem_rule == 1  # one pool of tokens (sglang_pool_layers), no groups
    size = np.where(sglang, sglang_pool_layers(x), size)
    full_groups, window_groups = np.where(sglang, 1.0, full_groups), np.where(sglang, 0.0, window_groups)
    if stage is not None and np.any(x.pp > 1):
        size = np.ceil(size * stage.layer_frac)
    return {"layers_per_group": size, "full_groups": full_groups, "window_groups": window_groups}


def draft_kv_bytes_per_token_per_gpu(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """A draft model's KV per token on one GPU, all its layers, its K/V heads split over tp like the target's."""
    tp = _tp(x, tp)
    share = np.where(x.draft_kv_sharded > 0, np.ceil(x.draft_kv_heads / tp) / x.draft_kv_heads, 1.0)
    per_token = x.draft_layers * x.draft_kv_elements_per_token_per_layer * x.kv_bytes_per_element * share
    return np.where((x.spec_on > 0) & (x.has_draft_model > 0), per_token, 0.0)


def _page_bytes(x: EngineInputs, tp: Quantity | None) -> Array:
    """Bytes of one block of one layer on one GPU: block · KV bytes per token per layer."""
    return x.block_tokens * kv_bytes_per_token_per_layer(x, tp)


def block_bytes(
    x: EngineInputs, tp: Quantity | None = None, groups: dict[str, Array] | None = None, stage: Stage | None = None
) -> Array:
    """Bytes one block index costs: page · layers per group, plus the draft's pages of that block."""
    g = kv_groups(x, _stage(x, tp, stage)) if groups is None else groups
    draft = x.block_tokens * draft_kv_bytes_per_token_per_gpu(x, tp)
    return _page_bytes(x, tp) * g["layers_per_group"] + draft / (g["full_groups"] + g["window_groups"])


def window_in_flight_tokens(x: EngineInputs, batch: Quantity | None = None) -> Array:
    """Tokens a window layer's request reserves beyond its window: n_b · C, n_b the batches in flight
    (vLLM ≥ 0.26 ``max_in_flight_tokens``: pp + 1 with async scheduling on the V2 model runner; before, 1)."""
    batches = np.where(x.window_in_flight > 0, x.pp + 1.0, 1.0)
    return batches * step_tokens(x, batch)


def window_blocks(x: EngineInputs, context: Quantity, batch: Quantity | None = None) -> Array:
    """Blocks one window layer of a request holds at most (``max_admission_blocks_per_request``):
    sliding ⌈min(W − 1 + n_b·C, L)/B⌉ + 1 (the window may start inside a block); chunked local
    ⌈min(W + n_b·C, L)/B⌉ (W its chunk)."""
    held = x.window_tokens - 1.0 + x.chunked_local + window_in_flight_tokens(x, batch)
    return np.ceil(np.minimum(held, context) / x.block_tokens) + 1.0 - x.chunked_local


def sglang_pool_layers(x: EngineInputs) -> Array:
    """Layers one SGLang pool token stands for: every KV layer, or with its hybrid sliding-window memory
    (``swa_ratio`` > 0) the full layers + ratio × the window layers (HybridSWAPoolConfigurator: the window
    pool holds ratio × the full pool's tokens); a model of window layers only has one pool, no ratio."""
    full = x.full_attention_layers
    hybrid = (x.swa_ratio > 0) & (x.window_layers > 0) & (full > 0)
    return np.where(hybrid, full + x.swa_ratio * x.window_layers, kv_layers(x))


def _sglang_blocks(x: EngineInputs, context: Quantity, batch: Quantity | None) -> Array:
    """Pages one SGLang request needs of its pool: ⌈L/P⌉, and with a hybrid window pool at least its
    window share ⌈min(W + C, L)/P⌉ / ratio (the window pool holds ratio × the full pool's tokens; a chunk
    is written before the tokens that left the window are freed)."""
    full = np.ceil(np.asarray(context) / x.block_tokens)
    held = np.ceil(np.minimum(x.window_tokens + step_tokens(x, batch), context) / x.block_tokens)
    hybrid = (x.swa_ratio > 0) & (x.window_layers > 0)
    window = held / np.where(x.full_attention_layers > 0, np.maximum(x.swa_ratio, 1e-9), 1.0)
    return np.where(hybrid, np.where(x.full_attention_layers > 0, np.maximum(full, window), held), full)


def blocks_per_request(
    x: EngineInputs, context: Quantity, groups: dict[str, Array] | None = None, batch: Quantity | None = None
) -> Array:
    """Blocks one request of ``context`` tokens needs, over all groups (``max_memory_usage_bytes``):
    full ⌈L/B⌉; window layers ``window_blocks``; SGLang's pool ``_sglang_blocks``."""
    g = kv_groups(x) if groups is None else groups
    full = np.ceil(np.asarray(context) / x.block_tokens)
    vllm = g["full_groups"] * full + g["window_groups"] * window_blocks(x, context, batch)
    return np.where(x.mem_rule == 1, _sglang_blocks(x, context, batch), vllm)


def _fixed_state_bytes(x: EngineInputs, tp: Quantity | None, stage: Stage | None) -> Array:
    """The state layers' fixed state of one sequence on one GPU of the stage (its share of the layers)."""
    state = kv_bytes_per_sequence(x, 0.0, tp)
    return state if stage is None or not np.any(x.pp > 1) else state * stage.layer_frac


def kv_allocated_bytes_per_sequence(
    x: EngineInputs,
    context: Quantity,
    tp: Quantity | None = None,
    groups: dict[str, Array] | None = None,
    batch: Quantity | None = None,
    stage: Stage | None = None,
) -> Array:
    """Bytes of the blocks one sequence of ``context`` tokens holds on one GPU (all groups, the draft's
    pages too), plus any fixed per-sequence state ``kv_bytes_per_sequence`` charges at 0 tokens."""
    st = _stage(x, tp, stage)
    g = kv_groups(x, st) if groups is None else groups
    draft = np.ceil(np.asarray(context) / x.block_tokens) * x.block_tokens * draft_kv_bytes_per_token_per_gpu(x, tp)
    paged = blocks_per_request(x, context, g, batch) * _page_bytes(x, tp) * g["layers_per_group"]
    return paged + draft + _fixed_state_bytes(x, tp, st)


def _stage_blocks(x: EngineInputs, tp: Quantity | None, stage: Stage) -> Array:
    """⌊KV budget / block bytes⌋ of one stage (``get_num_blocks``, kv_cache_utils.py:839-854)."""
    return np.floor(np.maximum(kv_budget_raw_bytes(x, tp, stage), 0.0) / block_bytes(x, tp, None, stage))


def binding_stage(x: EngineInputs, tp: Quantity | None = None) -> Stage:
    """The pipeline stage with the fewest KV blocks: vLLM gives every worker that count (module doc); the
    whole model at pp = 1.  Ties go to the later stage."""
    candidates = parallel.stages(x)
    if len(candidates) == 1:
        return candidates[0]
    blocks = np.stack(np.broadcast_arrays(*(_stage_blocks(x, tp, st) for st in candidates)))
    pick = blocks.shape[0] - 1 - np.argmin(blocks[::-1], axis=0)

    def chosen(name: str) -> Array:
        values = np.stack(np.broadcast_arrays(*(getattr(st, name) for st in candidates), blocks[0]))[:-1]
        return np.take_along_axis(values, pick[None, ...], axis=0)[0]

    return Stage(**{name: chosen(name) for name in Stage.__dataclass_fields__})


def _stage(x: EngineInputs, tp: Quantity | None, stage: Stage | None) -> Stage | None:
    """``stage``, else the binding stage when some scenario has pipeline stages (None: the whole model)."""
    if stage is not None or not np.any(x.pp > 1):
        return stage
    return binding_stage(x, tp)


def kv_blocks(x: EngineInputs, tp: Quantity | None = None) -> Array:
    """⌊KV budget / block bytes⌋ (``get_num_blocks``, kv_cache_utils.py:839-854) of the binding stage."""
    st = _stage(x, tp, None)
    return np.floor(np.maximum(kv_budget_raw_bytes(x, tp, st), 0.0) / block_bytes(x, tp, None, st))


def max_concurrency(x: EngineInputs, context: Quantity, tp: Quantity | None = None) -> Array:
    """Requests of ``context`` tokens the instance holds at once: dp · blocks · block bytes / allocated bytes
    per sequence (= blocks / blocks per request; ``get_max_concurrency_for_kv_cache_config``), fractional."""
    st = _stage(x, tp, None)
    g = kv_groups(x, st)
    bb = block_bytes(x, tp, g, st)
    blocks = np.floor(np.maximum(kv_budget_raw_bytes(x, tp, st), 0.0) / bb)
    return x.dp * blocks * bb / kv_allocated_bytes_per_sequence(x, context, tp, g, stage=st)


def max_batch_that_fits(x: EngineInputs, lo: Quantity, hi: Quantity) -> Array:
    """Largest batch B in [lo, hi] whose sequences fit at once, max concurrency(B) ≥ B (B is also
    max_num_seqs, so the sampler's share of the peak activation grows with it; concurrency falls as B
    rises, so a bisection finds it).  ``lo`` must fit (0 always does).  Only the activation peak and
    the window's chunk depend on B: the budget moves by the change of the peak (× u for TensorRT-LLM,
    not at all for SGLang, whose activations lie outside its static fraction)."""
    low: Array = np.floor(np.asarray(lo, dtype=float))
    high: Array = np.maximum(np.floor(np.asarray(hi, dtype=float)), low)
    ctx = context_tokens(x)
    st = _stage(x, None, None)
    groups = kv_groups(x, st)
    bb = block_bytes(x, None, groups, st)
    raw0, peak0 = kv_budget_raw_bytes(x, None, st), activation_bytes_per_gpu(x, stage=st)
    share = np.where(x.mem_rule == 1, 0.0, np.where(x.mem_rule == 2, x.mem_util, 1.0))
    while np.any(high > low):
        mid = np.ceil((low + high) / 2.0)
        b = np.maximum(mid, 1.0)
        raw = raw0 + share * (peak0 - activation_bytes_per_gpu(x, None, b, st))
        alloc = kv_allocated_bytes_per_sequence(x, ctx, None, groups, b, st)
        held = x.dp * np.floor(np.maximum(raw, 0.0) / bb) * bb / alloc
        ok = held >= mid
        low, high = np.where(ok, mid, low), np.where(ok, high, mid - 1.0)
    return low


def _feasible_batch(
    x: EngineInputs, concurrency: Array, groups: dict[str, Array], bb: Array, stage: Stage | None
) -> Array:
    """min(batch, the largest batch that fits), in closed form: with the chunk fixed the budget at batch B
    is min(A_flat, A_lin − u′·s·V·B) (the profile peak is max(forward, kept states + sampler)), so
    B* = ⌊min(A_flat / a, A_lin / (a + u′·s·V))⌋ with a the blocks one sequence holds (exact: a is whole
    blocks) and u′ the budget's share of the peak (1 vLLM, u TensorRT-LLM, 0 SGLang); per engine, × dp."""
    fits = concurrency >= x.batch
    if np.all(fits):
        return np.broadcast_to(x.batch, np.shape(concurrency)).astype(float)
    t = activation_terms(x, stage=stage)
    share = np.where(x.mem_rule == 1, 0.0, np.where(x.mem_rule == 2, x.mem_util, 1.0))
    share = np.where(np.isfinite(x.cal_activation_bytes), 0.0, share)  # a logged peak does not move
    raw0, peak0 = kv_budget_raw_bytes(x, None, stage), activation_bytes_per_gpu(x, stage=stage)
    flat = raw0 + share * (peak0 - t["base"] - t["moe"] - t["forward"])
    linear = raw0 + share * (peak0 - t["base"] - t["moe"] - t["keep"])
    per_request = np.floor(kv_allocated_bytes_per_sequence(x, context_tokens(x), None, groups, stage=stage) / bb) * bb
    slope = share * x.sampler_bytes_per_logit * x.vocab
    if stage is not None and np.any(x.pp > 1):
        slope = slope * stage.last
    best = x.dp * np.floor(np.minimum(flat / per_request, linear / (per_request + slope)))
    return np.where(fits, x.batch, np.clip(best, 0.0, x.batch))


def memory_plan(x: EngineInputs) -> dict[str, MetricValue]:
    """The per-GPU memory plan (of the binding pipeline stage) and the instance's concurrency limits
    (see module doc)."""
    st = _stage(x, None, None)
    weights, act = weight_bytes_per_gpu(x, stage=st), activation_bytes_per_gpu(x, stage=st)
    non_torch, graphs, baseline = non_torch_bytes_per_gpu(x), cuda_graph_bytes_per_gpu(x, st), baseline_bytes_per_gpu(x)
    in_budget = act + non_torch + cuda_graph_charged_bytes_per_gpu(x, st, graphs)
    reserve = np.where(x.mem_rule == 1, 0.0, in_budget)  # as reserve_bytes_per_gpu
    raw = _budget(x, weights, reserve, baseline)
    budget = np.maximum(raw, 0.0)
    ctx = context_tokens(x)
    frac = 1.0 if st is None else st.layer_frac
    seq_actual = kv_bytes_per_sequence(x, ctx)
    seq_paged = kv_bytes_per_sequence(x, paged_context_tokens(x))
    seq_contig = kv_bytes_per_sequence(x, contiguous_context_tokens(x)) * frac
    groups = kv_groups(x, st)
    bb = block_bytes(x, None, groups, st)
    blocks = np.floor(budget / bb)
    concurrency = x.dp * blocks * bb / kv_allocated_bytes_per_sequence(x, ctx, None, groups, stage=st)
    outside = np.where(x.graphs_in_budget > 0, 0.0, graphs)
    outside = outside + np.where(x.mem_rule == 1, act + non_torch, 0.0)
    usable = raw + weights + reserve  # the budget the engine asks for, even where the model does not fit
    headroom = x.memory_reported_bytes - baseline - usable - outside
    return {
        "kv_bytes_per_token": kv_bytes_per_token(x),
        "kv_bytes_per_token_per_gpu": kv_layers(x) * frac * kv_bytes_per_token_per_layer(x),
        "kv_bytes_per_sequence": kv_bytes_per_sequence(x, ctx, tp=1.0),
        "weight_bytes_total": weight_bytes_total(x),
        "weight_bytes_per_gpu": weights,
        "reserve_bytes_per_gpu": reserve,
        "usable_bytes_per_gpu": usable,
        "kv_budget_bytes_per_gpu": budget,
        "fits": (raw > 0) & (concurrency >= x.dp) & (headroom >= 0),
        "kv_capacity_tokens": x.dp
        * np.floor(blocks / (groups["full_groups"] + groups["window_groups"]))
        * x.block_tokens,
        "logged_kv_cache_tokens": _logged_kv_tokens(x, blocks, groups, concurrency, ctx),
        "max_concurrent_sequences": concurrency,
        "max_concurrent_sequences_contiguous": x.dp * np.floor(budget / seq_contig),
        "kv_waste_frac_paged": 1.0 - seq_actual / seq_paged,
        "kv_waste_frac_contiguous": 1.0 - seq_actual / kv_bytes_per_sequence(x, contiguous_context_tokens(x)),
        "batch_fits_memory": concurrency >= x.batch,
        "min_tp_that_fits": min_tp_that_fits(x),
        "memory_total_bytes_per_gpu": x.memory_reported_bytes,
        "draft_weight_bytes_per_gpu": draft_weight_bytes_per_gpu(x),
        "activation_bytes_per_gpu": act,
        "non_torch_bytes_per_gpu": non_torch,
        "cuda_graph_bytes_per_gpu": graphs,
        "cuda_graph_charged_bytes_per_gpu": cuda_graph_charged_bytes_per_gpu(x, st, graphs),
        "mem_util_frac": np.broadcast_to(x.mem_util, broadcast_shape(x)).astype(float),
        "block_tokens": np.broadcast_to(x.block_tokens, broadcast_shape(x)).astype(float),
        "startup_baseline_bytes_per_gpu": baseline,
        "memory_headroom_bytes_per_gpu": headroom,
        "kv_blocks": blocks,
        "kv_blocks_per_request": blocks_per_request(x, ctx, groups),
        "feasible_batch": _feasible_batch(x, concurrency, groups, bb, st),
        "config_valid": config_valid(x),
        "gpus_per_instance": parallel.gpus_per_instance(x),
        "memory_stage_layers": x.layers if st is None else st.layers,
    }


def _logged_kv_tokens(
    x: EngineInputs, blocks: Array, groups: dict[str, Array], concurrency: Array, ctx: Array
) -> Array:
    """What one engine's start-up log prints as "GPU KV cache size": its pool's ⌊blocks / groups⌋ · block
    (vLLM ≤ 0.20, SGLang's max_total_num_tokens), or ⌊max concurrency × max_model_len⌋ (vLLM ≥ 0.21,
    ``get_kv_cache_capacity``): far more than the pool holds per layer for window and hybrid models."""
    pool = np.floor(blocks / (groups["full_groups"] + groups["window_groups"])) * x.block_tokens
    return np.where(x.kv_size_concurrency > 0, np.floor(concurrency / x.dp * ctx), pool)


def _fits_at_tp(x: EngineInputs, tp: float) -> Array:
    """Whether the engine accepts tp and one sequence fits there (``min_tp_that_fits``), per scenario of ``x``."""
    tps = np.asarray(tp)
    at = x.with_(tp=tps) if parallel.plain_layout(x) else x.with_(tp=tps, ep=np.where(x.ep > 1, tps * x.dp, 1.0))
    ctx = context_tokens(x)
    return np.asarray(config_valid(at) & (kv_budget_raw_bytes(at, tps) > 0) & (max_concurrency(at, ctx, tps) >= at.dp))


def _rows(x: EngineInputs, shape: tuple[int, ...], rows: np.ndarray) -> EngineInputs:
    """The scenarios at flat positions ``rows`` of the broadcast ``shape`` (scalar fields stay scalars)."""
    changes = {}
    for f in fields(x):
        a = np.asarray(getattr(x, f.name))
        if a.size > 1:
            changes[f.name] = np.broadcast_to(a, shape).reshape(-1)[rows]
    return x.with_(**changes)


def min_tp_that_fits(x: EngineInputs) -> Array:
    """Smallest tp in 1, 2, 4 … 64 that the engine accepts (``validity.config_valid``) and where one
    sequence fits, at the scenario's pp and dp (expert parallelism, when on, spanning tp · dp); 0 if none.

    Each tp is tried on the scenarios no smaller one fits (most fit at the first tries) and that break no rule
    tp leaves as it is (``validity.tp_free_valid``): elementwise the same test as every tp on every scenario."""
    shape = broadcast_shape(x)
    size = int(np.prod(shape, dtype=np.int64))
    out = np.zeros(size)
    left = np.flatnonzero(np.broadcast_to(np.asarray(tp_free_valid(x), dtype=bool), shape))
    sub, sub_shape = (x, shape) if left.size == size else (_rows(x, shape, left), (left.size,))
    for tp in TP_CANDIDATES:
        if not left.size:
            break
        ok = np.broadcast_to(np.asarray(_fits_at_tp(sub, float(tp)), dtype=bool), sub_shape).reshape(-1)
        out[left[ok]] = tp
        left = left[~ok]
        sub, sub_shape = _rows(x, shape, left), (left.size,)
    return out.reshape(shape)
