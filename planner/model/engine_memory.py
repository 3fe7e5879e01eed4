"""How a serving engine sizes its KV cache: the ``[memory]`` part of an engine profile.

Every field is a version-dependent constant or switch of the engine's memory accounting; the TOML
file states each one with its source (``engine_profiles/<engine>/<version>.toml``).  The formulas
that use them are ``planner.engine.memory`` and ``planner.engine.defaults`` (docs/model.md §3):

  budget_rule "vllm"    KV = ⌈T · u⌉ − W − P − N (− f · G when ``cuda_graphs_in_budget``)   vLLM V1
              "sglang"  KV = (T − baseline) · u − W       (u = mem_fraction_static)            SGLang
              "trtllm"  KV = u · (T − baseline − W − P − N) (u = free_gpu_memory_fraction)     TensorRT-LLM

  T  total device memory as the driver reports it     W  weights per GPU
  P  peak activation of the start-up profile run      N  non-torch memory created after the start-up snapshot
  G  CUDA-graph memory                                baseline  memory in use at the start-up snapshot
  f  ``cuda_graph_estimate_factor``: what the engine subtracts for its graphs ÷ G

  P = P₀ + max(P_fwd, P_keep + P_sampler) + P_moe
      P_fwd     = C · (a_f · f/tp + a_h · d) · 2 B    the dense forward's MLP intermediates at C step tokens
      P_keep    = k_h · C · d · 2 B                   the dummy batch's hidden states, alive while sampling
      P_sampler = s · min(B, C) · V                   fp32 logits, top-k/top-p and softmax of B dummy requests
      P_moe     = C · k · (max(2 f_e/tp, d) + f_e/tp) · 2 B   fused-MoE intermediate caches (MoE models only)
  N, baseline: by tp (1, 2, ≥ 4)                      G = g₀ + g₁ · layers

  u when the scenario gives none: ``default_mem_util`` (vLLM gpu_memory_utilization), or SGLang's own
  mem_fraction_static rule (``static_fraction``, by the GPU's nvidia-smi memory).
  Sliding-window / chunked-local blocks of a request: W − 1 + n_b · C tokens (+1 block), n_b = 1, or with
  ``window_in_flight_batches`` the batches async scheduling keeps in flight (pp + 1, vLLM ≥ 0.26).
  Block: ``default_block_tokens``, or the attention backend's own size (``block_rule``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BudgetRule = Literal["vllm", "sglang", "trtllm"]
#: What the engine's start-up log prints as "GPU KV cache size": the pool's tokens (⌊blocks / groups⌋ · block)
#: or ⌊max concurrency × max_model_len⌋ (vLLM ≥ 0.21).
KvSizeRule = Literal["pool", "concurrency"]
#: The KV block when the scenario gives none: a fixed size, or the one the attention backend prefers.
BlockRule = Literal["fixed", "vllm_backend", "sglang_backend"]


class GpuMemoryTier(BaseModel):
    """One row of SGLang's GPU-memory table: below ``below_mib`` of nvidia-smi memory (the last row: any)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    below_mib: float | None = Field(default=None, gt=0, description="upper bound of the tier; None: the rest")
    chunked_prefill_size: int = Field(ge=1, le=1_048_576)
    cuda_graph_max_bs: int = Field(ge=1, le=65_536, description="decode CUDA-graph batch at tp < 4")
    cuda_graph_max_bs_tp4: int = Field(ge=1, le=65_536, description="… at tp ≥ 4")


class StaticFraction(BaseModel):
    """SGLang's default ``mem_fraction_static`` (``handle_gpu_memory_settings``):

    reserved = max(base + per_token · max(chunked_prefill_size, min_tokens) + per_rank · tp · pp
                   + graphs, floor) + [DeepEP] deepep_decode  (the floor only on GPUs above ``floor_above_mib``)
    graphs   = per_decode_bs · max_bs + [attention DP] attn_dp · max_bs · (per_dp_bs (+ per_dp_bs_large above
               large_bs)) + [prefill graphs, CUDA] per_prefill_graph · #prefill sizes (MLA: mla_prefill_graphs)
               (+ deepep_prefill_graphs with DeepEP)
    u        = round((M − reserved) / M, 3)           M = nvidia-smi memory.total, MiB
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_mib: float = Field(ge=0, le=1e6)
    per_token_mib: float = Field(ge=0, le=1e3)
    min_tokens: int = Field(ge=0, le=10_000_000)
    per_rank_mib: float = Field(ge=0, le=1e6, description="MiB per tp · pp rank")
    per_decode_bs_mib: float = Field(ge=0, le=1e3)
    per_dp_bs_mib: float = Field(ge=0, le=1e3)
    per_dp_bs_large_mib: float = Field(ge=0, le=1e3)
    large_bs: int = Field(ge=0, le=1_000_000)
    per_prefill_graph_mib: float = Field(ge=0, le=1e3)
    mla_prefill_graphs_mib: float = Field(ge=0, le=1e6)
    mla_prefill_max_bs: int = Field(ge=1, le=10_000_000, description="MLA's prefill graphs stop at this many tokens")
    deepep_prefill_graphs_mib: float = Field(
        default=0.0, ge=0, le=1e6, description="breakable prefill graphs with DeepEP"
    )
    floor_mib: float = Field(ge=0, le=1e6)
    floor_above_mib: float = Field(ge=0, le=1e7)
    deepep_decode_mib: float = Field(
        default=0.0, ge=0, le=1e6, description="DeepEP all-to-all buffers in the decode graphs, above the floor"
    )
    tiers: tuple[GpuMemoryTier, ...] = Field(min_length=1, max_length=32)
    source: str = Field(min_length=1, max_length=4000)


class EngineMemory(BaseModel):
    """The engine's KV-cache sizing constants (``[memory]`` of ``engine_profiles/*.toml``).

    The defaults are vLLM 0.19.0's; each shipped profile states every field itself, with its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget_rule: BudgetRule = Field(default="vllm", description="which budget formula the engine uses (module doc)")
    budget_source: str = Field(default="vLLM 0.19.0 v1/worker/gpu_worker.py:332-482", max_length=2000)
    default_mem_util: float = Field(
        default=0.9, gt=0, le=1, description="u when the scenario gives none (vLLM's gpu_memory_utilization default)"
    )
    static_fraction: StaticFraction | None = Field(
        default=None, description="SGLang: u from its own rule by GPU memory (replaces default_mem_util)"
    )
    mem_util_source: str = Field(default="", max_length=2000)
    cuda_graphs_in_budget: bool = Field(
        default=False, description="CUDA-graph memory is subtracted from the KV budget (vLLM ≥ 0.20 by default)"
    )
    cuda_graph_estimate_factor: float = Field(
        default=1.0, gt=0, le=10, description="f: the graph memory the engine subtracts ÷ the captured G"
    )
    window_in_flight_batches: bool = Field(
        default=False,
        description="a sliding-window / chunked-local request reserves the batches in flight (pp + 1 with async "
        "scheduling on the V2 model runner) × max_num_batched_tokens, not one (vLLM ≥ 0.26)",
    )
    window_source: str = Field(default="", max_length=2000)
    kv_size_printed: KvSizeRule = Field(default="pool", description="what the log's 'GPU KV cache size' counts")
    kv_size_source: str = Field(default="", max_length=2000)
    default_block_tokens: int = Field(default=16, ge=1, le=1024, description="the KV block when nothing picks one")
    block_rule: BlockRule = Field(default="fixed", description="who picks the block when the scenario gives none")
    block_source: str = Field(default="", max_length=2000)
    int8_kv_scale_bytes: float = Field(
        default=0.0,
        ge=0,
        le=64,
        description="bytes of scales per token per KV head an int8 KV cache stores beside its values "
        "(vLLM ≥ 0.20 int8_per_token_head: an fp32 scale for K and one for V, 8)",
    )
    swa_full_tokens_ratio: float = Field(
        default=0.0,
        ge=0,
        le=1,
        description="SGLang's hybrid sliding-window pool: window-layer tokens ÷ full-layer tokens (0: not SGLang)",
    )
    hybrid_swa_architectures: tuple[str, ...] = Field(
        default=(), max_length=200, description="SGLang: architectures whose window layers get their own pool"
    )
    swa_source: str = Field(default="", max_length=2000)
    activation_base_gib: float = Field(default=0.061, ge=0, le=1024, description="P₀, GiB")
    sampler_bytes_per_logit: float = Field(default=14.46, ge=0, le=1000, description="s, bytes per request · vocab")
    hidden_states_kept: float = Field(default=1.0, ge=0, le=16, description="k_h, hidden vectors kept per step token")
    forward_ffn_factor: float = Field(default=3.0, ge=0, le=64, description="a_f, FFN-wide vectors alive per token")
    forward_hidden_factor: float = Field(default=4.0, ge=0, le=64, description="a_h, hidden-wide vectors alive")
    moe_workspace: bool = Field(default=True, description="the fused-MoE caches add to the sampler peak")
    activation_source: str = Field(default="", max_length=4000)
    non_torch_gib_tp1: float = Field(default=0.25, ge=0, le=1024)
    non_torch_gib_tp2: float = Field(default=2.08, ge=0, le=1024)
    non_torch_gib_tp4: float = Field(default=2.16, ge=0, le=1024, description="tp ≥ 4")
    non_torch_source: str = Field(default="", max_length=4000)
    baseline_gib_tp1: float = Field(default=0.51, ge=0, le=1024)
    baseline_gib_tp2: float = Field(default=1.61, ge=0, le=1024)
    baseline_gib_tp4: float = Field(default=1.53, ge=0, le=1024, description="tp ≥ 4")
    baseline_source: str = Field(default="", max_length=4000)
    cuda_graph_base_gib: float = Field(default=0.328, ge=0, le=1024)
    cuda_graph_per_layer_gib: float = Field(default=0.0172, ge=0, le=16)
    cuda_graph_source: str = Field(default="", max_length=4000)
