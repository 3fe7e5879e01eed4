"""The engine's flat numeric input: one array (or scalar) per quantity, SI units.

``EngineInputs`` is what every formula module reads.  Every field is an ``Array``:
a float64 numpy array (0-d for one scenario); all fields broadcast against each
other, so a sweep of a million scenarios is one call.  ``from_specs`` builds it from
validated specs; ``with_`` swaps fields (e.g. a grid) and ``as_arrays`` turns what was
swapped in into arrays again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from planner.engine.defaults import block_in_force, mem_util_in_force
from planner.engine.draft_inputs import draft_weight_fields, speculation_fields
from planner.engine.kernel_basis import Basis, basis_for
from planner.engine.power_inputs import engine_power_fields
from planner.engine.weight_inputs import WeightRates, allocated, weight_rates
from planner.model.api_pricing import (
    CACHE_READ_MULTIPLIER,
    CACHE_WRITE_MULTIPLIER,
    DEFAULT_MIN_CACHEABLE_TOKENS,
    TTL_SECONDS,
)
from planner.model.engine_memory import EngineMemory
from planner.model.engine_profile import EngineProfile
from planner.model.engine_timing import (
    EngineTiming,
    ResolvedTiming,
    neutral_timing,
    parse_overrides,
    resolve_timing,
)
from planner.model.parallel_layout import (
    EP_IMBALANCE_EPLB,
    EP_IMBALANCE_NO_EPLB,
    TBO_OVERLAP_FRAC,
    dispatch_bytes_per_element,
    weight_groups,
)
from planner.model.params import (
    activation_elements_per_token_per_layer,
    attention_dims,
    expert_params,
    kv_elements_per_token_per_layer,
    moe_layers,
    param_counts,
    state_bytes_per_sequence,
)
from planner.model.quantization import (
    WeightFormat,
    kv_bytes_per_element,
    scheme_for,
    weight_layout,
)
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.model.weight_plan import resolve_weights
from planner.units import DTYPE_BYTES, TOKENS_PER_MTOK, GiB


def weight_bytes_per_param(wdtype: str, quant: str = "", group: int = 128, model: ModelSpec | None = None) -> float:
    """Bytes per quantised weight, scales included (``planner.model.quantization``): the dtype's
    size for 16-bit weights; for a quantised ``model`` its exact layout (a typical 4096 × 4096
    matrix without one)."""
    scheme = scheme_for(wdtype, quant)
    if scheme.key == "none":
        return DTYPE_BYTES[wdtype]
    if model is not None:
        return weight_layout(model, scheme, group).bytes_per_quantized_param
    side = 4096.0
    return scheme.element_bytes + scheme.scale_bytes(side, side, group) / side**2


def compute_dtype(wdtype: str, gpu: GPU) -> str:
    """Tensor-core dtype of the matmuls of one weight dtype where the chip has it, else bf16 (a user's calibration
    points and sidebar hints; the engine's per-component rule is ``planner.engine.weight_inputs``)."""
    if wdtype in ("fp8", "int8", "fp4") and wdtype in gpu.peak_flop_per_s:
        return wdtype
    return "bf16"


#: One quantity: a float64 array, 0-d for one scenario, any shape that broadcasts for many.
Array: TypeAlias = npt.NDArray[np.float64]
#: What a formula accepts for a quantity it is given: a number, or an array that broadcasts.
Quantity: TypeAlias = float | npt.NDArray[Any]
#: What the engine returns per metric: a number or a flag array, broadcast like the inputs.
MetricValue: TypeAlias = npt.NDArray[Any]


@dataclass(frozen=True)
class EngineInputs:
    # hardware (per GPU)
    memory_bytes: Array
    bandwidth_bytes_per_s: Array
    peak_flop_per_s: Array
    link_bytes_per_s: Array
    collective_latency_s: Array
    price_per_gpu_hour_usd: Array
    tdp_w: Array  # board power limit (the scenario's gpu_power_w cap, else the profile's; NaN: not published)
    idle_w: Array  # idle board power (published, else DEFAULT_IDLE_FRAC × TDP)
    host_power_w_per_gpu: Array  # the server's non-GPU nameplate share per GPU (0: not published)
    pue: Array
    electricity_usd_per_kwh: Array
    power_limit_w: Array  # 0: none
    compute_memory_overlap: Array  # o: per operator group max(c, m) + (1 − o)·min(c, m)
    attention_compute_frac: Array  # attention FLOP/s ÷ peak′
    attention_bandwidth_frac: Array  # attention bytes/s ÷ bw′
    # model shape
    layers: Array
    hidden: Array
    heads: Array
    kv_heads: Array
    head_dim: Array  # MLA: (k_nope + k_rope + k_v) / 2, for the MHA/MQA comparison only
    vocab: Array
    kv_elements_per_token_per_layer: Array  # 2·g·k, or r_kv + k_rope (MLA)
    kv_sharded: Array  # 1 if KV heads split across TP ranks (not MLA)
    full_attention_layers: Array  # attention layers that see the whole context
    window_layers: Array  # sliding-window or chunked-attention layers (at most window_tokens cached)
    window_tokens: Array
    context_window_tokens: Array
    total_params: Array
    matmul_params: Array  # active params a token multiplies through (LM head included)
    lm_head_params: Array  # v·d: run only for tokens that need logits
    lookup_params: Array  # v·d for an untied input embedding (a lookup: T rows read), else 0
    expert_params: Array  # one routed expert, one layer
    moe_layers: Array
    experts: Array
    experts_per_token: Array
    attention_dim_prefill: Array  # d_qk + d_v per head
    attention_dim_decode: Array
    activation_elements_per_token_per_layer: Array
    state_bytes_per_sequence: Array  # fixed recurrent state of the state layers, one sequence, all GPUs
    # dtypes (planner/engine/weight_inputs.py: the dense part's and the routed experts' own)
    weight_bytes_per_param: Array
    expert_weight_bytes_per_param: Array
    expert_peak_flop_per_s: Array  # the routed experts' tensor-core peak (their compute dtype)
    kv_bytes_per_element: Array
    # deployment and workload
    tp: Array
    batch: Array
    prompt_tokens: Array
    output_tokens: Array
    chunk_tokens: Array
    block_tokens: Array
    mfu: Array
    mbu: Array
    mem_util: Array
    # speculative decoding
    spec_on: Array
    gamma: Array
    alpha: Array
    draft_ratio: Array
    has_draft_model: Array
    draft_total_params: Array
    draft_matmul_params: Array
    draft_lm_head_params: Array
    draft_lookup_params: Array
    draft_layers: Array
    draft_hidden: Array
    draft_heads: Array
    draft_kv_elements_per_token_per_layer: Array
    draft_attention_dim: Array
    draft_activation_elements_per_token_per_layer: Array
    draft_kv_sharded: Array  # 1: the proposer's KV heads split over tp (0: an MLA latent, MTP of DeepSeek)
    draft_moe_layers: Array  # a proposer with routed experts (MTP layers of an MoE model)
    draft_experts: Array
    draft_experts_per_token: Array
    draft_expert_params: Array
    # prompt caching
    cache_hit_rate: Array
    gpu_hit_rate: Array  # share of requests whose prefix the GPUs' prefix cache holds (engine/prefix_reuse.py)
    prefix_tokens: Array
    min_cacheable_tokens: Array
    requests_per_min_per_prefix: Array
    ttl_s: Array
    cache_write_multiplier: Array
    cache_read_multiplier: Array
    price_in_per_token_usd: Array
    price_out_per_token_usd: Array
    # memory as the serving engine allocates it (engine/memory.py; docs/model.md §1-3)
    memory_reported_bytes: Array  # total memory the driver reports (what the engine sizes from)
    quantized_params: Array  # weights stored in the quantisation format (whole model)
    quantized_weight_bytes: Array  # those weights and their scales, bytes (whole model)
    other_weight_params: Array  # other 16-bit weights split over tp (biases, unquantised linears)
    embedding_stored_params: Array  # embedding (+ untied LM head), vocabulary padded to 64
    replicated_params: Array  # norms and MoE routers: a copy on every rank
    rope_cache_elements: Array  # RoPE cos/sin cache (max position · rotary dim), every rank
    ffn: Array
    moe_ffn: Array
    dense_layers_count: Array  # layers with a dense MLP
    forward_ffn: Array  # the dense MLP width the profile run's forward peaks at
    quant_group: Array  # weights per scale group (0: the scheme has none)
    hybrid_kv: Array  # 1: vLLM's hybrid KV manager on (window layers keep their window)
    draft_kv_heads: Array
    draft_vocab: Array
    draft_weight_bytes_split: Array  # the draft's weights split over tp (16 bit)
    draft_weight_bytes_replicated: Array  # its norms and RoPE cache, every rank
    # the engine profile's [memory] constants (planner/model/engine_memory.py)
    mem_rule: Array  # 0 vLLM, 1 SGLang, 2 TensorRT-LLM
    graphs_in_budget: Array
    act_base_bytes: Array
    sampler_bytes_per_logit: Array
    hidden_kept: Array
    fwd_ffn_factor: Array
    fwd_hidden_factor: Array
    moe_workspace: Array
    non_torch_tp1_bytes: Array
    non_torch_tp2_bytes: Array
    non_torch_tp4_bytes: Array
    baseline_tp1_bytes: Array
    baseline_tp2_bytes: Array
    baseline_tp4_bytes: Array
    graph_base_bytes: Array
    graph_per_layer_bytes: Array
    graph_estimate_factor: Array  # the graph memory the engine subtracts ÷ the captured G
    window_in_flight: Array  # 1: window blocks reserve the batches in flight (pp + 1), not one (vLLM ≥ 0.26)
    chunked_local: Array  # 1: the window layers are chunked local attention (vLLM sizes them without the −1 / +1)
    kv_size_concurrency: Array  # 1: the log's "GPU KV cache size" is ⌊concurrency × max_model_len⌋ (vLLM ≥ 0.21)
    swa_ratio: Array  # SGLang's hybrid sliding-window pool: window tokens ÷ full tokens (0: every layer full)
    # a start-up log's own figures (NaN: the model's)
    cal_weights_bytes: Array
    cal_activation_bytes: Array
    cal_non_torch_bytes: Array
    cal_graph_bytes: Array
    # efficiency model (planner/model/engine_timing.py; docs/model.md §4–6)
    step_overhead_s: Array  # fixed cost of every step (scheduler, sampling, launch)
    layer_overhead_s: Array  # fixed cost per layer of a step with prefill tokens
    decode_layer_overhead_s: Array  # fixed cost per layer of a decode-only step
    host_s_per_seq: Array  # the host's work per sequence of a step, under the GPU's (efficiency.host_bound_s)
    moe_time_ratio: Array  # measured kernels: this version's expert layer ÷ the tables' (1: the tables' own)
    gqa_reread_frac: Array  # decode attention: share of a KV group's query heads that reload its KV
    matmul_half_tokens: Array  # T½: a GEMM over T tokens runs at T/(T + T½) of its plateau
    moe_matmul_frac: Array  # grouped expert GEMMs' share of the dense matmul rate
    attention_peak_flop_per_s: Array  # 16-bit tensor peak (attention runs in bf16/fp16)
    link_frac: Array  # all-reduce bus bandwidth ÷ link bandwidth
    # API prompt-cache traffic
    followup_mode: Array  # 1: follow-ups sent after the previous response ends; 0: independent arrivals
    response_s: Array  # follow-ups: the API's response time before each follow-up
    # parallel layout (planner/engine/parallel.py; docs/model.md "Parallelism"): tp · dp · pp GPUs per instance
    pp: Array  # pipeline stages
    ep: Array  # expert-parallel degree (the routed experts of a stage over ep × moe_tp = tp · dp GPUs)
    dp: Array  # data-parallel attention ranks
    ep_imbalance: Array  # routed tokens on the busiest EP rank ÷ the mean (applies when ep > 1)
    gpus_per_node: Array  # GPUs sharing the scale-up link
    scale_out_bytes_per_s: Array  # network per GPU beyond the node, one direction
    scale_out_latency_s: Array  # fixed cost of one inter-node collective (the engine's overhead included)
    expert_weight_bytes: Array  # routed experts, whole model, as stored
    dense_mlp_weight_bytes: Array  # the dense layers' MLPs, as stored
    shared_expert_weight_bytes: Array  # shared experts, as stored
    replicated_linear_bytes: Array  # MLA q_a / kv_a projections: whole on every rank
    vocab_table_params: Array  # one vocabulary table (embedding or LM head), rows padded to 64
    tied_embeddings: Array  # 1: the LM head is the embedding
    dispatch_bytes_per_element: Array  # bytes per value an expert-parallel dispatch sends (fp8 + scales, or 16 bit)
    eplb: Array  # 1: the expert-parallel load balancer is on (experts must split evenly over ep)
    quant_block: Array  # FP8 block quantisation's block (128), 0 without
    tbo: Array  # two-batch overlap: the share of min(compute, exchange) it hides (0: off)
    redundant_experts: Array  # EPLB's extra expert copies: E + r physical experts over ep
    kernel_set: Array  # measured kernels (engine/kernel_basis.py): the id of the curves, 0 = the fitted roofline
    draft_kernel_set: Array  # the draft preset's curves (speculative decoding with a draft model), 0 = roofline
    elementwise_s_per_token: Array  # measured kernels: the untimed element-wise kernels per step token at tp = 1

    def with_(self, **changes: Any) -> EngineInputs:
        return replace(self, **changes)

    def as_arrays(self) -> EngineInputs:
        """Every field as a float64 numpy array (broadcasting untouched)."""
        return replace(self, **{f.name: np.asarray(getattr(self, f.name), dtype=float) for f in fields(self)})


def broadcast_shape(x: EngineInputs) -> tuple[int, ...]:
    """The shape every field broadcasts to."""
    return np.broadcast_shapes(*(np.shape(getattr(x, f.name)) for f in fields(x)))


def field_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(EngineInputs))


def stack_inputs(xs: Sequence[EngineInputs]) -> EngineInputs:
    """One EngineInputs whose every field is a 1-D array, element i from ``xs[i]`` (each field a scalar there)."""
    names = field_names()
    table = np.array([[getattr(x, n) for n in names] for x in xs], dtype=np.float64).reshape(len(xs), len(names))
    return EngineInputs(**{n: table[:, i].copy() for i, n in enumerate(names)})


def _local_attention(m: ModelSpec) -> tuple[int, int]:
    """(layers, tokens) of the model's local attention: sliding windows, else chunked attention.

    A chunked layer (Llama-4) caches and attends at most one chunk, like a window of that
    size: exact while the context is within one chunk, an upper bound (≤ 2× the mean) past it.
    """
    if m.sliding_window_layers and m.sliding_window_tokens:
        return m.sliding_window_layers, m.sliding_window_tokens
    if m.chunked_attention_layers:
        return m.chunked_attention_layers, m.chunked_attention_tokens
    return 0, 0


def _chunked_local(m: ModelSpec) -> bool:
    """The local layers ``_local_attention`` picks are chunked attention (no sliding window)."""
    return not (m.sliding_window_layers and m.sliding_window_tokens) and m.chunked_attention_layers > 0


def _model_fields(m: ModelSpec) -> dict[str, float]:
    pc = param_counts(m)
    win_layers, win_tokens = _local_attention(m)
    prefill_dim, decode_dim = attention_dims(m)
    return dict(
        layers=m.layers,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        head_dim=(m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2 if m.is_mla else m.head_dim,
        vocab=m.vocab,
        kv_elements_per_token_per_layer=kv_elements_per_token_per_layer(m),
        kv_sharded=0.0 if m.is_mla else 1.0,
        full_attention_layers=m.attention_layers - win_layers,
        window_layers=win_layers,
        window_tokens=win_tokens or 1.0,
        context_window_tokens=m.context_window_tokens,
        total_params=pc.total,
        matmul_params=pc.matmul_active,
        lm_head_params=float(m.vocab * m.hidden),
        lookup_params=0.0 if m.tied_embeddings else float(m.vocab * m.hidden),
        expert_params=expert_params(m),
        moe_layers=moe_layers(m),
        experts=m.experts,
        experts_per_token=m.experts_per_token,
        attention_dim_prefill=prefill_dim,
        attention_dim_decode=decode_dim,
        activation_elements_per_token_per_layer=activation_elements_per_token_per_layer(m),
        state_bytes_per_sequence=state_bytes_per_sequence(m),
    )


#: The profile ``from_specs`` uses without one: vLLM 0.19.0's constants (every schema default), no timing fit.
DEFAULT_PROFILE = EngineProfile(key="vllm@0.19", name="vLLM", version="0.19.0", source="schema defaults")

#: budget_rule → its code in ``EngineInputs.mem_rule``
MEM_RULES = {"vllm": 0.0, "sglang": 1.0, "trtllm": 2.0}


def _gib(v: float | None) -> float:
    return float("nan") if v is None else v * GiB


def _engine_memory_fields(mem: EngineMemory) -> dict[str, float]:
    return dict(
        mem_rule=MEM_RULES[mem.budget_rule],
        graphs_in_budget=1.0 if mem.cuda_graphs_in_budget else 0.0,
        act_base_bytes=mem.activation_base_gib * GiB,
        sampler_bytes_per_logit=mem.sampler_bytes_per_logit,
        hidden_kept=mem.hidden_states_kept,
        fwd_ffn_factor=mem.forward_ffn_factor,
        fwd_hidden_factor=mem.forward_hidden_factor,
        moe_workspace=1.0 if mem.moe_workspace else 0.0,
        non_torch_tp1_bytes=mem.non_torch_gib_tp1 * GiB,
        non_torch_tp2_bytes=mem.non_torch_gib_tp2 * GiB,
        non_torch_tp4_bytes=mem.non_torch_gib_tp4 * GiB,
        baseline_tp1_bytes=mem.baseline_gib_tp1 * GiB,
        baseline_tp2_bytes=mem.baseline_gib_tp2 * GiB,
        baseline_tp4_bytes=mem.baseline_gib_tp4 * GiB,
        graph_base_bytes=mem.cuda_graph_base_gib * GiB,
        graph_per_layer_bytes=mem.cuda_graph_per_layer_gib * GiB,
        graph_estimate_factor=mem.cuda_graph_estimate_factor,
        window_in_flight=1.0 if mem.window_in_flight_batches else 0.0,
        kv_size_concurrency=1.0 if mem.kv_size_printed == "concurrency" else 0.0,
    )


def sglang_swa_ratio(mem: EngineMemory, model: ModelSpec) -> float:
    """SGLang's window-pool ratio for ``model``: ``swa_full_tokens_ratio`` where its architecture has hybrid
    sliding-window memory, else 0 (its window layers are charged like full ones)."""
    if mem.budget_rule != "sglang" or not (model.sliding_window_layers or model.chunked_attention_layers):
        return 0.0
    return mem.swa_full_tokens_ratio if model.architecture in mem.hybrid_swa_architectures else 0.0


def kv_element_bytes(kvdtype: str, model: ModelSpec, mem: EngineMemory) -> float:
    """Bytes per cached K or V element: the KV dtype's, plus a per-token-head cache's scales spread over the head's
    elements (vLLM int8_per_token_head / fp8_per_token_head: 8 B of scales per token and head for 2 · head_dim
    values, ``quantization.kv_bytes_per_element``; the plain ``int8`` a version spells int8_per_token_head, vLLM
    0.33, costs its profile's ``int8_kv_scale_bytes``)."""
    if kvdtype.endswith("_per_token_head"):
        return kv_bytes_per_element(kvdtype, model.head_dim)
    element = DTYPE_BYTES[kvdtype]
    if kvdtype == "int8" and mem.int8_kv_scale_bytes and not model.is_mla:
        element += mem.int8_kv_scale_bytes / (2 * model.head_dim)
    return element


def _kv_layout_fields(model: ModelSpec, s: Scenario, mem: EngineMemory, kvdtype: str) -> dict[str, float]:
    """The KV cache's element size (``kvdtype``: the one in force, ``weight_plan.resolve_weights``) and how the
    engine lays out window layers (vLLM's hybrid manager, SGLang's window pool, chunked local attention)."""
    return dict(
        kv_bytes_per_element=kv_element_bytes(kvdtype, model, mem),
        hybrid_kv=1.0 if s.hybrid_kv else 0.0,
        chunked_local=1.0 if _chunked_local(model) else 0.0,
        swa_ratio=sglang_swa_ratio(mem, model) if s.hybrid_kv else 0.0,
    )


def _weight_fields(model: ModelSpec, fmt: WeightFormat, draft: ModelSpec | None, s: Scenario) -> dict[str, float]:
    """The weights as vLLM stores them (``planner.model.quantization``); a draft preset in 16 bit, a method's head
    as ``planner.model.spec_methods`` holds it."""
    w = weight_layout(model, fmt)
    moe = moe_layers(model)
    forward_ffn = model.ffn if model.layers > moe else model.shared_experts * model.moe_ffn
    return dict(
        quantized_params=w.quantized_params,
        quantized_weight_bytes=w.quantized_bytes,
        other_weight_params=w.other_params,
        embedding_stored_params=w.embedding_stored_params,
        replicated_params=w.replicated_params,
        rope_cache_elements=w.rope_cache_elements,
        ffn=model.ffn,
        moe_ffn=model.moe_ffn,
        dense_layers_count=model.layers - moe,
        forward_ffn=forward_ffn,
        quant_group=float(fmt.group) if fmt.grouped else 0.0,
        **draft_weight_fields(model, draft, s, w),
    )


def _layout_fields(
    gpu: GPU, model: ModelSpec, fmt: WeightFormat, rates: WeightRates, s: Scenario, t: ResolvedTiming, measured: float
) -> dict[str, float]:
    """The layout, the network beyond the node, the weight groups layouts split; ``measured``: the tables' EP skew."""
    groups = weight_groups(model, fmt)
    default_imbalance = EP_IMBALANCE_EPLB if s.eplb else (measured or EP_IMBALANCE_NO_EPLB)
    return dict(
        pp=s.pp,
        ep=s.ep,
        dp=s.dp,
        ep_imbalance=s.ep_imbalance if s.ep_imbalance is not None else default_imbalance,
        gpus_per_node=gpu.gpus_per_node,
        scale_out_bytes_per_s=gpu.scale_out_bytes_per_s,
        scale_out_latency_s=gpu.scale_out_latency_s + t.allreduce_overhead_s,
        expert_weight_bytes=groups.expert_bytes,
        dense_mlp_weight_bytes=groups.dense_mlp_bytes,
        shared_expert_weight_bytes=groups.shared_expert_bytes,
        replicated_linear_bytes=groups.replicated_linear_bytes,
        vocab_table_params=groups.vocab_table_params,
        tied_embeddings=1.0 if model.tied_embeddings else 0.0,
        dispatch_bytes_per_element=dispatch_bytes_per_element(rates.expert_compute),
        eplb=1.0 if s.eplb else 0.0,
        quant_block=float(fmt.block),
        tbo=TBO_OVERLAP_FRAC if s.tbo else 0.0,
        redundant_experts=s.redundant_experts,
    )


def timing_for(gpu: GPU, s: Scenario, engine: EngineTiming | None = None) -> ResolvedTiming:
    """The efficiency parameters in force: the engine profile's for the GPU's family, with the
    scenario's ``timing`` overrides; a calibrated (measured) GPU runs the plain roofline at its
    measured rates (no overheads, every share 1, its own attention shares)."""
    if gpu.calibrated:
        return neutral_timing()
    return resolve_timing(engine or EngineTiming(), gpu, s.timing)


def efficiencies(gpu: GPU, s: Scenario, t: ResolvedTiming, eight_bit: bool) -> tuple[float, float]:
    """(MFU, MBU) in force: the scenario's override, else the profile's fitted plateau for the
    compute dtype (8-bit rate for fp8/int8/fp4 tensor cores); 1 on a calibrated profile."""
    if gpu.calibrated:
        return 1.0, 1.0
    mfu = s.mfu if s.mfu is not None else (t.matmul_frac_8bit if eight_bit else t.matmul_frac)
    mbu = s.mbu if s.mbu is not None else t.bandwidth_frac
    return mfu, mbu


def _kernel_fields(
    gpu: GPU, model: ModelSpec, s: Scenario, draft: ModelSpec | None, engine: EngineProfile | None, t: ResolvedTiming
) -> dict[str, float]:
    """The time basis's fields (``kernel_basis.basis_for``): the curves' ids of the model and its draft (which
    runs in 16 bit on the target's tensor-parallel GPUs), the untimed element-wise cost, the fixed costs."""
    basis = basis_for(gpu, model, s, engine)
    draft_set = 0.0
    if draft is not None and basis.measured and s.spec_method in ("", "draft_model"):
        kv = resolve_weights(model, s).kvdtype  # the draft's KV cache is the target's dtype
        formats = dict(wdtype="bf16", quant="", quant_attn="", quant_mlp="", quant_experts="", quant_keep="")
        plain = s.model_copy(update=formats | dict(kvdtype=kv, ep=1, dp=1, pp=1))
        draft_set = basis_for(gpu, draft, plain, engine).kernel_set
    return dict(
        ep_imbalance=basis.ep_imbalance,  # popped by from_specs for _layout_fields
        kernel_set=basis.kernel_set,
        draft_kernel_set=draft_set,
        elementwise_s_per_token=basis.elementwise_s_per_token,
        **_overheads(t, basis, s),
    )


def _overheads(t: ResolvedTiming, basis: Basis, s: Scenario) -> dict[str, float]:
    """The fixed costs in force: the fitted roofline's (``[timing]``, with the link's ``timing`` overrides),
    or the kernel basis's (``[kernels]``; the link's s, l and d overrides still apply)."""
    fixed = ("step_overhead_s", "layer_overhead_s", "decode_layer_overhead_s")
    if not basis.measured:
        return {k: getattr(t, k) for k in fixed} | {"host_s_per_seq": 0.0, "moe_time_ratio": 1.0}
    values = {k: getattr(basis, k) for k in (*fixed, "host_s_per_seq", "moe_time_ratio")}
    values.update({k: v for k, v in parse_overrides(s.timing).items() if k in values})
    return values


def from_specs(
    gpu: GPU,
    model: ModelSpec,
    s: Scenario,
    draft: ModelSpec | None = None,
    engine: EngineProfile | None = None,
) -> EngineInputs:
    """Flatten validated specs into SI engine inputs (0-d float64 arrays).

    ``engine``: the scenario's engine profile — its ``[memory]`` constants (default: vLLM 0.19's)
    and its ``[timing]`` efficiency parameters (None: the plain roofline at MFU 0.5 / MBU 0.7).
    MFU and MBU derate a datasheet profile's peaks; a calibrated profile (measured by
    ``python -m planner bench``) already holds achieved rates, so it runs at MFU = MBU = 1
    whatever the scenario says (the scenario's values still apply to the datasheet GPUs it is
    compared with)."""
    t = timing_for(gpu, s, engine.timing if engine is not None else None)
    profile = engine or DEFAULT_PROFILE
    mem = profile.memory
    weights = allocated(resolve_weights(model, s), s, gpu, profile.key)
    rates = weight_rates(model, weights, gpu, profile.key)
    mfu, mbu = efficiencies(gpu, s, t, rates.eight_bit)
    kernels = _kernel_fields(gpu, model, s, draft, engine, t)
    measured_imbalance = kernels.pop("ep_imbalance")
    mf = _model_fields(model)
    reported = gpu.memory_reported_bytes or gpu.memory_bytes
    min_cache = (
        s.min_prefix
        if s.min_prefix is not None
        else (model.min_cacheable_prompt_tokens or DEFAULT_MIN_CACHEABLE_TOKENS)
    )
    price = s.gpu_price if s.gpu_price is not None else gpu.price_per_gpu_hour_usd
    values: dict[str, float] = dict(
        memory_bytes=gpu.memory_bytes,
        bandwidth_bytes_per_s=gpu.memory_bandwidth_bytes_per_s,
        peak_flop_per_s=rates.peak_flop_per_s,
        link_bytes_per_s=gpu.interconnect_bytes_per_s,
        collective_latency_s=gpu.collective_latency_s + t.allreduce_overhead_s,
        price_per_gpu_hour_usd=price,
        **engine_power_fields(gpu, s),
        compute_memory_overlap=gpu.compute_memory_overlap,
        attention_compute_frac=gpu.attention_compute_frac if gpu.calibrated else t.attention_compute_frac,
        attention_bandwidth_frac=gpu.attention_bandwidth_frac if gpu.calibrated else t.attention_bandwidth_frac,
        **mf,
        weight_bytes_per_param=rates.bytes_per_param,
        expert_weight_bytes_per_param=rates.expert_bytes_per_param,
        expert_peak_flop_per_s=rates.expert_peak_flop_per_s,
        tp=s.tp,
        batch=s.batch,
        prompt_tokens=s.prompt,
        output_tokens=s.output,
        chunk_tokens=s.chunk,
        block_tokens=block_in_force(profile, gpu, model, s),
        mfu=mfu,  # a calibrated profile's rates are achieved ones: no derating
        mbu=mbu,
        mem_util=mem_util_in_force(profile, gpu, model, s),
        **speculation_fields(s, model, draft),
        cache_hit_rate=s.hit,
        gpu_hit_rate=s.gpu_hit_rate,
        prefix_tokens=s.prefix,
        min_cacheable_tokens=min_cache,
        requests_per_min_per_prefix=s.rpm,
        ttl_s=TTL_SECONDS[s.ttl],
        cache_write_multiplier=CACHE_WRITE_MULTIPLIER[s.ttl],
        cache_read_multiplier=CACHE_READ_MULTIPLIER,
        price_in_per_token_usd=s.price_in / TOKENS_PER_MTOK,
        price_out_per_token_usd=s.price_out / TOKENS_PER_MTOK,
        memory_reported_bytes=reported if s.cal_total_gib is None else s.cal_total_gib * GiB,
        **_weight_fields(model, weights.fmt, draft, s),
        **_kv_layout_fields(model, s, mem, weights.kvdtype),
        **_engine_memory_fields(mem),
        cal_weights_bytes=_gib(s.cal_weights_gib),
        cal_activation_bytes=_gib(s.cal_act_gib),
        cal_non_torch_bytes=_gib(s.cal_nontorch_gib),
        cal_graph_bytes=_gib(s.cal_graph_gib),
        **kernels,
        gqa_reread_frac=t.gqa_reread_frac,
        matmul_half_tokens=t.matmul_half_tokens,
        moe_matmul_frac=t.moe_matmul_frac,
        attention_peak_flop_per_s=gpu.peak_for("fp8" if weights.attn_dtype == "fp8" else "bf16"),
        link_frac=t.bus_frac,
        followup_mode=1.0 if s.cache_traffic == "followups" else 0.0,
        response_s=s.response_s,
        **_layout_fields(gpu, model, weights.fmt, rates, s, t, measured_imbalance),
    )
    return EngineInputs(**{k: np.asarray(v, dtype=np.float64) for k, v in values.items()})
