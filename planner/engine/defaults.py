"""The settings an engine version picks itself when the scenario leaves them out (link keys ``mem_util`` and
``block`` absent): its memory share and its KV block, and SGLang's GPU-memory defaults.  Pure.

  memory share u   vLLM: gpu_memory_utilization's default (0.9 in 0.19, 0.92 from 0.20; profile
                   ``default_mem_util``).  SGLang: mem_fraction_static by its own rule
                   (``planner.model.engine_memory.StaticFraction``, arg_groups/memory_hook.py):
                     M        = nvidia-smi memory.total, MiB (profile ``memory_smi_mib``; else the CUDA total)
                     tier     = chunked_prefill_size and the decode CUDA-graph max_bs by M (and tp < 4 or not)
                     max_bs   = min(tier max_bs, max_running_requests) — kvplan passes batch as the latter
                     graphs   = 2·max_bs + [dp > 1] attn_dp·max_bs·(3 (+1.5 above 300)) + [CUDA] 8·#prefill graph sizes
                                (prefill graphs up to chunked_prefill_size; MLA: 1,536 MiB flat; + 1,024 with DeepEP)
                     reserved = max(512 + 1.5·max(C_sgl, 2048) + tp·pp/8·1024 + graphs, 10,240 if M > 61,440)
                                + 2,048 with DeepEP's all-to-all
                     u        = round((M − reserved) / M, 3)     C_sgl = the chunked_prefill_size the command passes
  KV block         vLLM 0.19 as kvplan launches it: 16.  vLLM 0.33: the attention backend's preferred block
                   (platforms/interface.py update_block_size_for_backend): MLA on SM 10.x FLASHINFER_MLA 32,
                   MLA on SM 9.x with an fp8 cache FLASHMLA 64, else 16.  SGLang: page 1 on CUDA, 64 where it
                   picks trtllm_mha (dense models on SM 10.x, no n-gram tree).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.engine_memory import GpuMemoryTier, StaticFraction
from planner.model.engine_profile import EngineProfile
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.model.weight_plan import resolve_weights
from planner.units import MiB

#: The sizes SGLang captures prefill CUDA graphs at, before the cut at max_bs (cuda_graph_hook.py:480-497).
_PREFILL_GRAPH_RANGES = ((4, 33, 4), (48, 257, 16), (288, 513, 32), (576, 1025, 64), (1280, 4097, 256))
_PREFILL_GRAPH_TAIL = (4608, 512)
#: SGLang's largest page for dense models on SM 10.x (trtllm_mha, arg_groups/overrides.py:1176-1187).
TRTLLM_MHA_PAGE = 64
#: vLLM 0.33's MLA blocks (FLASHINFER_MLA on SM 10.x, FLASHMLA on SM 9.x with an fp8 cache).
FLASHINFER_MLA_BLOCK = 32
FLASHMLA_BLOCK = 64


@dataclass(frozen=True)
class SglangDefaults:
    """What SGLang 0.5.23 derives from the GPU's memory for one deployment (module doc)."""

    gpu_memory_mib: float
    chunked_prefill_size: int  # its own default on this GPU (kvplan's command passes chunk · dp instead)
    cuda_graph_max_bs: int  # the decode CUDA graphs' largest batch, after the --max-running-requests cap
    prefill_graph_sizes: int  # prefill CUDA graphs captured (0 off CUDA)
    reserved_mib: float  # memory left outside mem_fraction_static
    mem_fraction_static: float


def gpu_memory_mib(gpu: GPU) -> float:
    """nvidia-smi's memory.total in MiB (what SGLang sizes from); the CUDA total where the profile has none."""
    total = gpu.memory_smi_bytes or gpu.memory_reported_bytes or gpu.memory_bytes
    return total / MiB


def prefill_graph_sizes(max_bs: int) -> int:
    """How many prefill CUDA graphs SGLang captures up to ``max_bs`` tokens (cuda_graph_hook.py:480-497)."""
    sizes = [n for lo, hi, step in _PREFILL_GRAPH_RANGES for n in range(lo, hi, step)]
    sizes += list(range(_PREFILL_GRAPH_TAIL[0], max_bs + 1, _PREFILL_GRAPH_TAIL[1]))
    return sum(1 for n in sizes if n <= max_bs)


def _tier(rule: StaticFraction, mib: float) -> GpuMemoryTier:
    return next((t for t in rule.tiers if t.below_mib is None or mib < t.below_mib), rule.tiers[-1])


def sglang_defaults(rule: StaticFraction, gpu: GPU, model: ModelSpec, s: Scenario) -> SglangDefaults:
    """SGLang's GPU-memory defaults for the command kvplan writes (``--tp-size tp·dp``, ``--pp-size``,
    ``--chunked-prefill-size chunk·dp``, ``--max-running-requests batch``, attention DP over dp)."""
    mib = gpu_memory_mib(gpu)
    tp_size = s.tp * s.dp
    tier = _tier(rule, mib)
    max_bs = min(tier.cuda_graph_max_bs if tp_size < 4 else tier.cuda_graph_max_bs_tp4, s.batch)
    chunk = s.chunk * s.dp
    graphs = rule.per_decode_bs_mib * max_bs
    if s.dp > 1:
        graphs += max_bs * s.dp * (rule.per_dp_bs_mib + (rule.per_dp_bs_large_mib if max_bs > rule.large_bs else 0.0))
    prefill = prefill_graph_sizes(min(chunk, rule.mla_prefill_max_bs) if model.is_mla else chunk)
    prefill = prefill if gpu.cuda_major else 0  # breakable prefill graphs are on by default on CUDA only
    deepep = sglang_deepep(s)
    if prefill:
        graphs += rule.mla_prefill_graphs_mib if model.is_mla else rule.per_prefill_graph_mib * prefill
        graphs += rule.deepep_prefill_graphs_mib if deepep else 0.0
    reserved = rule.base_mib + rule.per_token_mib * max(chunk, rule.min_tokens) + rule.per_rank_mib * tp_size * s.pp
    reserved += graphs
    if mib > rule.floor_above_mib:
        reserved = max(reserved, rule.floor_mib)
    reserved += rule.deepep_decode_mib if deepep else 0.0
    return SglangDefaults(mib, tier.chunked_prefill_size, max_bs, prefill, reserved, round((mib - reserved) / mib, 3))


def sglang_deepep(s: Scenario) -> bool:
    """kvplan's SGLang command runs DeepEP's all-to-all (``--moe-a2a-backend deepep``): experts over the whole
    tp_size (ep = tp · dp) with data-parallel attention."""
    return s.ep > 1 and s.ep == s.tp * s.dp and s.dp > 1


def mem_util_in_force(engine: EngineProfile, gpu: GPU, model: ModelSpec, s: Scenario) -> float:
    """The scenario's ``mem_util``, else the engine version's own (module doc)."""
    if s.mem_util is not None:
        return s.mem_util
    rule = engine.memory.static_fraction
    if rule is not None:
        return sglang_defaults(rule, gpu, model, s).mem_fraction_static
    return engine.memory.default_mem_util


def sglang_ngram(s: Scenario) -> bool:
    """SGLang proposes by n-gram lookup: ``spec_method=ngram``, or speculation priced by a cost ratio (no method, no
    draft preset: the launch command's draft-free NGRAM)."""
    return s.spec and (s.spec_method == "ngram" or (not s.spec_method and not s.draft))


def block_in_force(engine: EngineProfile, gpu: GPU, model: ModelSpec, s: Scenario) -> int:
    """The scenario's ``block``, else the block (page) the engine version picks (module doc)."""
    if s.block is not None:
        return s.block
    mem = engine.memory
    major = gpu.cuda_major
    if mem.block_rule == "vllm_backend" and model.is_mla:
        if major == 10:
            return FLASHINFER_MLA_BLOCK
        if major == 9 and resolve_weights(model, s).kvdtype == "fp8":
            return FLASHMLA_BLOCK
    if mem.block_rule == "sglang_backend" and major == 10 and not model.is_mla:
        ngram = sglang_ngram(s)  # NGRAM leaves the top-k unset: flashinfer or triton, page 1
        if not ngram:
            return TRTLLM_MHA_PAGE
    return mem.default_block_tokens
