"""How a serving engine sizes its KV cache: the ``[memory]`` part of an engine profile.

Every field is a version-dependent constant of the engine's memory accounting; the TOML file
states each one with its source (``engine_profiles/<key>.toml``).  The formulas that use
them are ``planner.engine.memory`` (docs/model.md §3):

  budget_rule "vllm"    KV = ⌈T · u⌉ − W − P − N (− G when ``cuda_graphs_in_budget``)       vLLM V1
              "sglang"  KV = (T − baseline) · u − W       (u = mem_fraction_static)            SGLang
              "trtllm"  KV = u · (T − baseline − W − P − N) (u = free_gpu_memory_fraction)     TensorRT-LLM

  T  total device memory as the driver reports it     W  weights per GPU
  P  peak activation of the start-up profile run      N  non-torch memory created after the start-up snapshot
  G  CUDA-graph memory                                baseline  memory in use at the start-up snapshot

  P = P₀ + max(P_fwd, P_keep + P_sampler) + P_moe
      P_fwd     = C · (a_f · f/tp + a_h · d) · 2 B    the dense forward's MLP intermediates at C step tokens
      P_keep    = k_h · C · d · 2 B                   the dummy batch's hidden states, alive while sampling
      P_sampler = s · min(B, C) · V                   fp32 logits, top-k/top-p and softmax of B dummy requests
      P_moe     = C · k · (max(2 f_e/tp, d) + f_e/tp) · 2 B   fused-MoE intermediate caches (MoE models only)
  N, baseline: by tp (1, 2, ≥ 4)                      G = g₀ + g₁ · layers
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BudgetRule = Literal["vllm", "sglang", "trtllm"]


class EngineMemory(BaseModel):
    """The engine's KV-cache sizing constants (``[memory]`` of ``engine_profiles/*.toml``).

    The defaults are vLLM 0.19.0's (the default engine); each shipped profile states every
    field itself, with its source."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    budget_rule: BudgetRule = Field(default="vllm", description="which budget formula the engine uses (module doc)")
    budget_source: str = Field(default="vLLM 0.19.0 v1/worker/gpu_worker.py:332-482", max_length=2000)
    cuda_graphs_in_budget: bool = Field(
        default=False, description="CUDA-graph memory is subtracted from the KV budget (vLLM ≥ 0.21 by default)"
    )
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
