"""Parallel layouts in the engine's arrays: the GPUs of an instance, pipeline stages, the MoE grid,
nodes, and the collectives that join them (docs/model.md "Parallelism").

  GPUs per instance   = tp · dp · pp                              (vLLM: world_size_across_dp = TP·PP·DP)
  MoE grid (a stage)  = ep × moe_tp = tp · dp GPUs                 (vLLM: ep ∈ {1, tp·dp}; SGLang, TensorRT-LLM:
                                                                   ep divides tp·dp; validity.py)
  experts per rank    = ⌈(E + r) / ep⌉ on the busiest (vLLM: the first E mod ep ranks hold one more; r: EPLB's
                        redundant copies of hot experts, whose weights every step also reads)
  stage layers        = L // pp, one spare each on r = L mod pp stages (``parallel_layout.stage_layers``)
  layer imbalance u   = pp · ⌈L / pp⌉ / L: the biggest stage's share of the layers, × pp
  expert imbalance    = min(ep_imbalance, ep) when ep > 1: routed tokens on the busiest EP rank ÷ the mean
  nodes               the GPUs of an instance are numbered tp fastest, then dp, then pp; a group of n GPUs
                      stays on the scale-up link when n ≤ G (``gpus_per_node``), else it crosses nodes

Collectives (nccl-tests doc/PERFORMANCE.md: busbw = algbw · 2(n−1)/n for all-reduce, (n−1)/n for
all-gather and reduce-scatter; "this is independent of the algorithm used"), for n GPUs, g = min(n, G) of
them per node on N = ⌈n / G⌉ nodes (NCCL's hierarchical algorithms: inside each node over the link, across
nodes each GPU's 1/g shard over its own NIC):
  all-reduce of S bytes                      α + 2(g−1)/g · S / (link · η) + 2(N−1)/N · (S/g) / scale-out
  all-gather, reduce-scatter                 α + (g−1)/g · S / (link · η) + (N−1)/N · (S/g) / scale-out
    α = the link's latency (+ the engine's overhead) inside a node, the inter-node latency across nodes
  all-to-all dispatch or combine (DeepEP)    α + bytes · max(f_in / (link · η_link), f_out / scale-out)
    low-latency (decode): every one of a token's k copies moves; f_in = (min(n, G) − 1) / n of them go to GPUs
    of its node, f_out = max(n − G, 0) / n leave it; with α = 45 µs and 50 GB/s this reproduces DeepEP's
    low-latency table (H800, CX7; docs/legacy.md) within 3 % at EP16–EP64 and 12 % at EP128;
    high-throughput (a step with prefill tokens: SGLang's --deepep-mode auto): a token crosses the network once
    per remote node its experts need, R = (N − 1) · (1 − (1 − 1/N)^k), then fans out over NVLink
  stage-to-stage send                        α + 2 · T · d · 2 B / tp / bw   (vLLM sends hidden states and the
                                             residual, each TP rank its 1/tp slice: parallel_state.py:810-905)
    n_cross of the pp − 1 boundaries cross nodes: all when tp·dp ≥ G, else ⌊(pp − 1) · tp·dp / G⌋
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.engine.inputs import Array, EngineInputs
from planner.engine.validity import tp_problems, valid_eps
from planner.model.parallel_layout import Layout
from planner.model.specs import GPU, ModelSpec
from planner.units import ACTIVATION_BYTES

#: The largest instance ``valid_layouts`` lists by default (DeepSeek's decode unit of EP320 is the largest published).
MAX_INSTANCE_GPUS = 512


def simple(x: EngineInputs) -> bool:
    """Every scenario of ``x`` is plain tensor parallelism inside one node (the common path, kept as it was)."""
    return bool(np.all(x.pp == 1) and np.all(x.dp == 1) and np.all(x.ep == 1) and np.all(x.tp <= x.gpus_per_node))


def plain_layout(x: EngineInputs) -> bool:
    """No scenario of ``x`` has pipeline stages, data-parallel ranks or expert parallelism (the memory plan's
    common path, kept as it was)."""
    return bool(np.all(x.pp == 1) and np.all(x.dp == 1) and np.all(x.ep == 1))


def gpus_per_instance(x: EngineInputs) -> Array:
    """tp · dp · pp: the GPUs of one serving instance."""
    return x.tp * x.dp * x.pp


def stage_gpus(x: EngineInputs) -> Array:
    """tp · dp: the GPUs of one pipeline stage (its attention ranks, and its MoE grid)."""
    return x.tp * x.dp


def moe_tp(x: EngineInputs) -> Array:
    """tp · dp / ep: the GPUs each expert's FFN is split over."""
    return x.tp * x.dp / x.ep


def expert_imbalance(x: EngineInputs) -> Array:
    """Routed tokens on the busiest EP rank ÷ the mean: min(ep_imbalance, ep) when ep > 1, else 1
    (with the experts sliced over tensor-parallel ranks every GPU sees every expert's tokens)."""
    return np.where(x.ep > 1, np.minimum(x.ep_imbalance, x.ep), 1.0)


def experts_on_busiest_rank(x: EngineInputs) -> Array:
    """⌈(E + r) / ep⌉ with EPLB's r redundant copies (vLLM ``determine_expert_map``: the first E mod ep ranks
    hold one more; EPLB: "NUM_MOE_LAYERS * BYTES_PER_EXPERT * (NUM_TOTAL_EXPERTS + NUM_REDUNDANT_EXPERTS) ÷
    NUM_EP_RANKS", vLLM docs expert_parallel_deployment.md)."""
    return np.ceil((x.experts + x.redundant_experts) / x.ep)


def physical_expert_frac(x: EngineInputs) -> Array:
    """(E + r) / E: the expert weights a step reads grow with the redundant copies (each rank reads its own)."""
    return np.where(x.experts > 0, (x.experts + x.redundant_experts) / np.maximum(x.experts, 1.0), 1.0)


def max_stage_layers(x: EngineInputs) -> Array:
    """⌈L / pp⌉: the biggest stage's layers (one spare layer on some stages under every split rule)."""
    return np.ceil(x.layers / x.pp)


def layer_imbalance(x: EngineInputs) -> Array:
    """u = pp · ⌈L / pp⌉ / L: the biggest stage's time ÷ the mean stage's (1 when the layers divide)."""
    return x.pp * max_stage_layers(x) / x.layers


@dataclass(frozen=True)
class Stage:
    """One pipeline stage's share of the model: its layers and what they hold."""

    index: Array
    layers: Array
    layer_frac: Array  # L_s / L
    dense_frac: Array  # D_s / D: the dense layers (leading, as DeepSeek's first_k_dense_replace) it holds
    moe_frac: Array  # M_s / M: the MoE layers it holds
    first: Array  # holds the embedding
    last: Array  # holds the LM head and the sampler


def whole_model(x: EngineInputs) -> Stage:
    """The one stage of pp = 1."""
    one = np.ones_like(np.asarray(x.layers, dtype=float))
    return Stage(index=0.0 * one, layers=x.layers, layer_frac=one, dense_frac=one, moe_frac=one, first=one, last=one)


def _split(x: EngineInputs) -> tuple[Array, Array, Array]:
    """(base, spare, first stage with a spare layer) of the engine's split rule (mem_rule: 0 vLLM, 1 SGLang,
    2 TensorRT-LLM; ``parallel_layout`` module doc)."""
    base = np.floor(x.layers / x.pp)
    spare = x.layers - base * x.pp
    lo = np.where(x.mem_rule == 1, x.pp - spare, np.where(x.mem_rule == 2, 0.0, x.pp - 1.0 - spare))
    return base, spare, lo


def stage_at(x: EngineInputs, index) -> Stage:
    """Stage ``index`` (0 … pp − 1) under the engine's split rule; dense layers lead, as in DeepSeek."""
    s = np.asarray(index, dtype=float)
    base, spare, lo = _split(x)
    layers = base + ((s >= lo) & (s < lo + spare))
    start = s * base + np.clip(s - lo, 0.0, spare)
    dense_total = x.dense_layers_count
    dense = np.clip(dense_total - start, 0.0, layers)
    moe_total = np.maximum(x.moe_layers, 1.0)
    return Stage(
        index=s,
        layers=layers,
        layer_frac=layers / x.layers,
        dense_frac=dense / np.maximum(dense_total, 1.0),
        moe_frac=np.where(x.moe_layers > 0, (layers - dense) / moe_total, 0.0),
        first=(s == 0).astype(float),
        last=(s == x.pp - 1.0).astype(float),
    )


def stages(x: EngineInputs) -> list[Stage]:
    """The stages that can hold the fewest KV blocks: the first (embedding), the last (LM head and sampler),
    the last middle stage (the fewest dense layers) and the last middle stage with a spare layer.  With dense
    layers leading and an MoE layer holding more per GPU than a dense one, no other stage holds fewer."""
    if not np.any(x.pp > 1):
        return [whole_model(x)]
    _, spare, lo = _split(x)
    last = x.pp - 1.0
    middle = np.maximum(x.pp - 2.0, 0.0)
    spare_middle = np.clip(lo + spare - 1.0, 0.0, last)
    return [stage_at(x, i) for i in (0.0, last, middle, spare_middle)]


# ---------------------------------------------------------------- collectives


def _phases(x: EngineInputs, n) -> tuple[Array, Array, Array, Array]:
    """(g GPUs of the group per node, N nodes, seconds per byte on the link, latency) of a group of n GPUs."""
    g = np.minimum(n, x.gpus_per_node)
    nodes = np.ceil(n / x.gpus_per_node)
    lat = np.where(nodes > 1, x.scale_out_latency_s, x.collective_latency_s)
    return g, nodes, 1.0 / (x.link_bytes_per_s * x.link_frac), lat


def allreduce_s(x: EngineInputs, n, size_bytes) -> Array:
    """α + 2(g − 1)/g · S / (link · η) + 2(N − 1)/N · (S / g) / scale-out over n GPUs, g per node on N nodes
    (0 for n = 1): NCCL's hierarchical all-reduce — inside each node over NVLink, across nodes each GPU's
    1/g shard over its own NIC (nccl-tests#290: "For NDR @ 400Gbps you should see 46-48GB/s per NIC").
    Inside one node: α + 2(n − 1)/n · S / (link · η)."""
    g, nodes, per_byte, lat = _phases(x, n)
    inside = 2.0 * (g - 1.0) / g * size_bytes * per_byte
    across = 2.0 * (nodes - 1.0) / nodes * size_bytes / g / x.scale_out_bytes_per_s
    return np.where(n > 1, lat + inside + across, 0.0)


def gather_s(x: EngineInputs, n, size_bytes) -> Array:
    """An all-gather or a reduce-scatter of S gathered bytes over n GPUs: α + (g − 1)/g · S / (link · η)
    + (N − 1)/N · (S / g) / scale-out (as ``allreduce_s``, one pass instead of two)."""
    g, nodes, per_byte, lat = _phases(x, n)
    inside = (g - 1.0) / g * size_bytes * per_byte
    across = (nodes - 1.0) / nodes * size_bytes / g / x.scale_out_bytes_per_s
    return np.where(n > 1, lat + inside + across, 0.0)


def all_to_all_s(x: EngineInputs, n, bytes_per_gpu) -> Array:
    """One DeepEP dispatch or combine over n GPUs: α + bytes · max(f_in / (link · η), f_out / scale-out)."""
    g = x.gpus_per_node
    f_in = (np.minimum(n, g) - 1.0) / n
    f_out = np.maximum(n - g, 0.0) / n
    per_byte = np.maximum(f_in / (x.link_bytes_per_s * x.link_frac), f_out / x.scale_out_bytes_per_s)
    lat = np.where(n <= g, x.collective_latency_s, x.scale_out_latency_s)
    return np.where(n > 1, lat + bytes_per_gpu * per_byte, 0.0)


def tp_allreduces(x: EngineInputs) -> Array:
    """All-reduces over tp per pass: 2 a layer (attention, MLP: Megatron-LM), but an MoE layer's second is
    replaced by the dispatch/combine when its tokens come from dp ranks (dp > 1)."""
    return 2.0 * x.layers - np.where(x.dp > 1, x.moe_layers, 0.0)


def tp_comm_s(x: EngineInputs, rank_tokens) -> Array:
    """The tensor-parallel all-reduces of one pass: n_AR · (α + 2(tp − 1)/tp · T_rank · d · 2 B / bw)."""
    return tp_allreduces(x) * allreduce_s(x, x.tp, rank_tokens * x.hidden * ACTIVATION_BYTES)


def moe_exchange_tokens(x: EngineInputs, rank_tokens, all_tokens) -> Array:
    """Tokens one GPU sends or receives in a dispatch: max(T_rank, imbalance · T_all / dp) / tp."""
    return np.maximum(rank_tokens, expert_imbalance(x) * all_tokens / x.dp) / x.tp


def remote_nodes_per_token(x: EngineInputs) -> Array:
    """R = (N − 1) · (1 − (1 − 1/N)^k): the other nodes a token's k experts land on (uniform routing over the
    N nodes of the EP group): DeepEP's high-throughput kernels send a token once per node over RDMA and fan it
    out over NVLink ("we limit each token to be dispatched to at most 4 nodes, thereby reducing IB traffic",
    DeepSeek-V3 report §3.2.2)."""
    nodes = np.ceil(stage_gpus(x) / x.gpus_per_node)
    return (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** x.experts_per_token)


def exchange_s_per_byte(x: EngineInputs, prefill) -> Array:
    """Seconds per byte of a token's activation one dispatch or combine moves, per GPU (module doc):
    decode (DeepEP low-latency: every expert copy) max(k · f_in / (link · η), k · f_out / scale-out);
    a step with prefill tokens (the high-throughput kernels) max(k · (g − 1)/g / (link · η), R / scale-out)."""
    n, g = stage_gpus(x), np.minimum(stage_gpus(x), x.gpus_per_node)
    k, link = x.experts_per_token, x.link_bytes_per_s * x.link_frac
    low_latency = np.maximum(
        k * (g - 1.0) / n / link, k * np.maximum(n - x.gpus_per_node, 0.0) / n / x.scale_out_bytes_per_s
    )
    high = np.maximum(k * (g - 1.0) / g / link, remote_nodes_per_token(x) / x.scale_out_bytes_per_s)
    return np.where(prefill, high, low_latency)


def moe_comm_s(x: EngineInputs, rank_tokens, all_tokens, prefill=False) -> Array:
    """The MoE layers' token exchange of one pass when dp > 1: per MoE layer a DeepEP dispatch + combine
    (ep > 1: 2α + X · d · (b_dispatch + 2 B) · ``exchange_s_per_byte``; ``prefill``: the step has prefill
    tokens) or vLLM's all-gather + reduce-scatter of every token (ep = 1, experts sliced over tp · dp)."""
    n = stage_gpus(x)
    lat = np.where(n <= x.gpus_per_node, x.collective_latency_s, x.scale_out_latency_s)
    moved = (
        moe_exchange_tokens(x, rank_tokens, all_tokens) * x.hidden * (x.dispatch_bytes_per_element + ACTIVATION_BYTES)
    )
    a2a = 2.0 * lat + moved * exchange_s_per_byte(x, prefill)
    gathered = 2.0 * gather_s(x, n, all_tokens * x.hidden * ACTIVATION_BYTES)
    per_layer = np.where(x.ep > 1, a2a, gathered)
    return np.where((x.dp > 1) & (x.moe_layers > 0), x.moe_layers * per_layer, 0.0)


def boundaries_crossing_nodes(x: EngineInputs) -> Array:
    """Of the pp − 1 stage boundaries, those between GPUs of different nodes."""
    s = stage_gpus(x)
    return np.where(s >= x.gpus_per_node, x.pp - 1.0, np.floor((x.pp - 1.0) * s / x.gpus_per_node))


def _send_s(x: EngineInputs, rank_tokens, across: bool) -> Array:
    size = 2.0 * rank_tokens * x.hidden * ACTIVATION_BYTES / x.tp
    if across:
        return x.scale_out_latency_s + size / x.scale_out_bytes_per_s
    return x.collective_latency_s + size / (x.link_bytes_per_s * x.link_frac)


def stage_send_s(x: EngineInputs, rank_tokens) -> Array:
    """One stage's send of a micro-batch to the next (the slower kind of boundary the instance has)."""
    t = np.where(boundaries_crossing_nodes(x) > 0, _send_s(x, rank_tokens, True), _send_s(x, rank_tokens, False))
    return np.where(x.pp > 1, t, 0.0)


def path_sends_s(x: EngineInputs, rank_tokens) -> Array:
    """The pp − 1 sends on a micro-batch's path through the stages: n_cross over the network, the rest on the link."""
    cross = boundaries_crossing_nodes(x)
    far = _send_s(x, rank_tokens, True)
    near = _send_s(x, rank_tokens, False)
    return np.where(x.pp > 1, cross * far + (x.pp - 1.0 - cross) * near, 0.0)


# ---------------------------------------------------------------- the layouts an engine accepts


def _degrees(limit: int, powers_of_two: bool) -> list[int]:
    if powers_of_two:
        return [1 << i for i in range(limit.bit_length()) if 1 << i <= limit]
    return list(range(1, limit + 1))


def valid_layouts(
    model: ModelSpec,
    gpu: GPU,
    max_gpus: int,
    engine: str = "vllm",
    *,
    group: int = 0,
    block: int = 0,
    eplb: bool = True,
    draft: ModelSpec | None = None,
    powers_of_two: bool = True,
    redundant_experts: int = 0,
) -> list[Layout]:
    """Every (tp, pp, ep, dp) layout of at most ``max_gpus`` GPUs that ``engine`` accepts for ``model``
    (``validity``: the tensor-parallel splits, pp ≤ layers, dp only for MoE models, ep on the engine's grid,
    each expert's FFN over moe_tp, FP8 blocks), in order of GPUs, then nodes of ``gpu`` spanned, then tp, pp, dp,
    ep.  Degrees are powers of two unless ``powers_of_two`` is False.  Whether a layout fits in memory is the
    engine's (``memory_plan``) to say: this is the design space."""
    out = []
    for tp in _degrees(min(max_gpus, 64), powers_of_two):
        if tp_problems(model, tp, group, 1, block):  # the attention and dense parts (the experts: below)
            continue
        if draft is not None and tp_problems(draft, tp):
            continue
        for dp in _degrees(max_gpus // tp, powers_of_two) if model.is_moe else [1]:
            for ep in valid_eps(model, tp, dp, engine, eplb, redundant_experts):
                if tp_problems(model, tp, group, tp * dp // ep, block):
                    continue
                for pp in _degrees(min(max_gpus // (tp * dp), model.layers), powers_of_two):
                    out.append(Layout(tp=tp, pp=pp, ep=ep, dp=dp))
    return sorted(out, key=lambda x: (x.gpus, x.nodes(gpu.gpus_per_node), x.tp, x.pp, x.dp, x.ep))


def kv_transfer_s(prefill: EngineInputs, decode: EngineInputs, prompt_tokens) -> Array:
    """A prompt's KV from a prefill instance to a decode instance over the network (docs/model.md
    "Parallelism"): α + P · max(KV per token / senders, the decode GPU's KV per token) / scale-out.

    The prefill GPUs send disjoint shares in parallel, each over its own NIC: senders = pp · min(tp, g)
    for grouped-query heads (heads replicate past g), pp for MLA (its latent is the same on every TP rank);
    each decode GPU receives what it holds (vLLM NixlConnector: the decode worker reads the blocks straight
    from the prefill GPUs' memory, after the prefill, not layer by layer: nixl_connector.py:506-518)."""
    per_layer = prefill.kv_elements_per_token_per_layer * prefill.kv_bytes_per_element
    layers = prefill.full_attention_layers + prefill.window_layers
    total = layers * per_layer
    senders = prefill.pp * np.where(prefill.kv_sharded > 0, np.minimum(prefill.tp, prefill.kv_heads), 1.0)
    share = np.where(decode.kv_sharded > 0, np.ceil(decode.kv_heads / decode.tp) / decode.kv_heads, 1.0)
    held = total * max_stage_layers(decode) / decode.layers * share
    per_gpu = np.maximum(total / senders, held)
    bw = np.minimum(prefill.scale_out_bytes_per_s, decode.scale_out_bytes_per_s)
    return prefill.scale_out_latency_s + prompt_tokens * per_gpu / bw
