"""The kernels one step of a scenario runs, at their per-GPU shapes (docs/model.md §4–5 "Measured kernels").

Per layer, on one GPU of a tensor-parallel group of ``tp`` (KV heads ``⌈g/tp⌉``: replicated once tp > g):

  attention layers   qkv  Linear(d → (h/tp + 2·g_l)·k)   o  Linear(h/tp·k → d)   [+ output gate Linear(d → h/tp·k)]
                     MLA: the attention module (its own table), or q_a Linear(d → r_q), q_b Linear(r_q →
                     h/tp·(k_n+k_r)), kv_a Linear(d → r_kv + k_r), o Linear(h/tp·k_v → d) + the MLA kernel
                     (+ kv_b Linear(r_kv → h/tp·(k_n + k_v)) in prefill, the absorbed BMMs in decode)
  dense MLP layers   gate_up Linear(d → 2·f/tp) (up Linear(d → f/tp) when not gated)   down Linear(f/tp → d)
  MoE layers         the expert layer (``moe`` table: E experts of width f_e over moe_tp × moe_ep) + the shared
                     experts as one dense MLP of width S·f_s + the router Linear(d → E) (16 bit)
  the LM head        Linear(d → ⌈v/64⌉·64/tp), 16 bit, for the tokens that need logits
  collectives        2 all-reduces of T·d·2 B per layer when tp > 1 (the layout's count otherwise)

GEMM dtypes follow the weights' quantisation layout (``GEMM_DTYPE``: keyed by ``quantization.Scheme.key``, so a
layout added there is measured where a table holds its key); the embedding and LM head stay 16 bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.model.params import activation_elements_per_token_per_layer, moe_layers, shared_expert_ffn
from planner.model.quantization import VOCAB_PADDING
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.model.weight_plan import resolve_weights
from planner.units import ACTIVATION_BYTES

#: Quantisation layout (``Scheme.key``) → the GEMM table's dtype.  W8A8 INT8 has no measured table yet.
GEMM_DTYPE = {
    "none": "bfloat16",
    "fp8": "fp8",
    "fp8-channel": "fp8",
    "fp8-block": "fp8_block",
    "gptq": "int4_wo",
    "awq": "int4_wo",
    "w4a16": "int4_wo",
    "nvfp4": "nvfp4",
    "mxfp4": "bfloat16",  # MXFP4 quantises the routed experts only
    "w8a8": "int8_sq",
}
#: Quantisation layout → the MoE table's dtype (MXFP4: its W4A16 kernel; Blackwell's W4A8 where measured).
MOE_DTYPE = {
    "none": "bfloat16",
    "fp8": "fp8",
    "fp8-channel": "fp8",
    "fp8-block": "fp8_block",
    "gptq": "int4_wo",
    "awq": "int4_wo",
    "w4a16": "int4_wo",
    "nvfp4": "nvfp4",
    "mxfp4": "w4a16_mxfp4",
    "w8a8": "int8_sq",
}
KV_DTYPE = {"bf16": "bfloat16", "fp16": "bfloat16", "fp8": "fp8"}
#: The DeepSeek-V3 attention geometry the MLA module tables measure (hidden, q_lora, kv_lora, rope, nope, v).
MLA_MODULE_GEOMETRY = (7168, 1536, 512, 64, 128, 128)
MLA_KERNEL_GEOMETRY = (512, 64)  # kv_lora, rope: what the MLA kernel tables fix
MLA_MODEL = "deepseek-ai/DeepSeek-V3"


@dataclass(frozen=True)
class Gemm:
    """``count`` calls per step of Linear(k → n) on every token of the step."""

    name: str
    n: float
    k: float
    count: float
    dtype: str


@dataclass(frozen=True)
class MoeShape:
    dtype: str
    hidden: int
    inter: int
    topk: int
    experts: int
    moe_tp: int
    moe_ep: int
    layers: int
    wide: bool = False  # data-parallel attention with expert parallelism: a DeepEP dispatch feeds the experts


@dataclass(frozen=True)
class Shapes:
    """Everything the curves of one scenario need (module doc), hashable: the registry's key."""

    gemms: tuple[Gemm, ...]  # the dense per-token GEMMs of every layer (MLA projections only when composed)
    head: Gemm
    moe: MoeShape | None
    attention_layers: int
    window_layers: int
    window_tokens: int
    heads: float  # query heads per GPU
    kv_heads: int  # KV heads per GPU
    head_dim: int
    kv_dtype: str
    mla: str  # "" (not MLA), "module" or "kernel"
    mla_gemm_dtype: str
    mla_prefill_gemms: tuple[Gemm, ...]  # composed MLA: the projections of a prefill (per token)
    mla_decode_gemms: tuple[Gemm, ...]
    layers: int
    tp: int
    hidden: int
    unsupported: str  # why no table can describe this model ("" when one may)


def _attention_gemms(m: ModelSpec, tp: int, dtype: str, layers: int) -> list[Gemm]:
    h_l = m.heads / tp
    g_l = max(1, m.kv_heads // tp)  # vLLM: KV heads replicate once tp > g
    out = [
        Gemm("qkv", (h_l + 2 * g_l) * m.head_dim, m.hidden, layers, dtype),
        Gemm("o", m.hidden, h_l * m.head_dim, layers, dtype),
    ]
    if m.attention_output_gate:
        out.append(Gemm("gate", h_l * m.head_dim, m.hidden, layers, dtype))
    return out


def _mlp_gemms(name: str, d: int, f_local: float, gated: bool, layers: int, dtype: str) -> list[Gemm]:
    if layers <= 0 or f_local <= 0:
        return []
    up = Gemm(f"{name}_gate_up" if gated else f"{name}_up", (2 if gated else 1) * f_local, d, layers, dtype)
    return [up, Gemm(f"{name}_down", d, f_local, layers, dtype)]


def _mla(m: ModelSpec, tp: int, dtype: str, layers: int) -> tuple[str, tuple[Gemm, ...], tuple[Gemm, ...]]:
    """(kind, prefill projections, decode projections) of an MLA model's attention (module doc)."""
    geometry = (m.hidden, m.q_lora_rank, m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim)
    if geometry == MLA_MODULE_GEOMETRY:
        kind = "module"
    elif (m.kv_lora_rank, m.qk_rope_head_dim) == MLA_KERNEL_GEOMETRY:
        kind = "kernel"
    else:
        return "", (), ()
    h_l = m.heads / tp
    rope, nope, v = m.qk_rope_head_dim, m.qk_nope_head_dim, m.v_head_dim
    q = (
        [
            Gemm("q_a", m.q_lora_rank, m.hidden, layers, dtype),
            Gemm("q_b", h_l * (nope + rope), m.q_lora_rank, layers, dtype),
        ]
        if m.q_lora_rank
        else [Gemm("q", h_l * (nope + rope), m.hidden, layers, dtype)]
    )
    kv_a = Gemm("kv_a", m.kv_lora_rank + rope, m.hidden, layers, dtype)
    common = [*q, kv_a, Gemm("o", m.hidden, h_l * v, layers, dtype)]
    prefill = (*common, Gemm("kv_b", h_l * (nope + v), m.kv_lora_rank, layers, dtype))
    return kind, prefill, tuple(common)


def elementwise_s_per_token(gpu: GPU, m: ModelSpec, tp: float, bandwidth_frac: float) -> float:
    """The kernels no table times — norms, RoPE, the activation, residual adds — as their activation traffic
    (L · a / tp · 2 B per token, ``params.activation_elements_per_token_per_layer``) at ``bandwidth_frac`` of
    the HBM bandwidth."""
    elements = m.layers * activation_elements_per_token_per_layer(m) / tp
    return elements * ACTIVATION_BYTES / (gpu.memory_bandwidth_bytes_per_s * bandwidth_frac)


@dataclass(frozen=True)
class Dtypes:
    """The formats in force the kernels are keyed by (``weight_plan.resolve_weights``: the link's, else the
    checkpoint's): each component's quantisation layout (``Scheme.key``), the matrices a checkpoint keeps in 16 bit,
    the KV-cache dtype."""

    attention: str
    mlp: str
    experts: str
    kvdtype: str
    keep_16bit: frozenset[str] = frozenset()
    attn_dtype: str = "bf16"  # the attention math (FP8 with an fp8 KV cache: no measured kernel)

    @classmethod
    def of(cls, m: ModelSpec, s: Scenario) -> Dtypes:
        w = resolve_weights(m, s)
        f = w.fmt
        return cls(f.attention.key, f.mlp.key, f.experts.key, w.kvdtype, f.keep_16bit, w.attn_dtype)


def _gemm_dtype(key: str) -> str:
    return GEMM_DTYPE.get(key, key.replace("-", "_"))


def shapes(m: ModelSpec, s: Dtypes, tp: int, ep: int = 1, dp: int = 1) -> Shapes:
    """The kernels of ``m`` at dtypes ``s`` under the layout tp × dp with ep-way expert parallelism (module doc):
    the attention projections at the attention format's GEMM dtype, the dense MLPs and shared experts at the MLP
    format's, the routed experts at theirs."""
    dtype = _gemm_dtype(s.attention)
    mlp_dtype = _gemm_dtype(s.mlp)
    attn_layers = m.attention_layers
    n_moe = moe_layers(m)
    dense_mlp = m.layers - m.mlp_free_layers - n_moe
    gemms: list[Gemm] = []
    mla_kind: str = ""
    mla_pre: tuple[Gemm, ...] = ()
    mla_dec: tuple[Gemm, ...] = ()
    if m.is_mla:
        mla_kind, mla_pre, mla_dec = _mla(m, tp, "fp8_block" if s.attention == "fp8-block" else "bfloat16", attn_layers)
    else:
        gemms += _attention_gemms(m, tp, dtype, attn_layers)
    gemms += _mlp_gemms("mlp", m.hidden, m.ffn / tp, m.gated_mlp, dense_mlp, mlp_dtype)
    moe = None
    if n_moe:
        experts_local = ep if ep > 1 else 1
        moe_tp = max(1, (tp * dp) // experts_local)
        moe = MoeShape(
            MOE_DTYPE.get(s.experts, s.experts.replace("-", "_")),
            m.hidden,
            m.moe_ffn,
            m.experts_per_token,
            m.experts,
            moe_tp,
            experts_local,
            n_moe,
            wide=ep > 1 and dp > 1,
        )
        shared = m.shared_experts * shared_expert_ffn(m)
        gemms += _mlp_gemms("shared", m.hidden, shared / tp, m.gated_mlp, n_moe, mlp_dtype)
        gemms.append(Gemm("router", m.experts, m.hidden, n_moe, "bfloat16"))
    padded_vocab = math.ceil(m.vocab / VOCAB_PADDING) * VOCAB_PADDING
    win_layers, win_tokens = (
        (m.sliding_window_layers, m.sliding_window_tokens)
        if m.sliding_window_layers and m.sliding_window_tokens
        else (m.chunked_attention_layers, m.chunked_attention_tokens)
    )
    unsupported = ""
    if m.state_layers or m.attention_free_layers:
        unsupported = "a hybrid model's state layers have no kernel table"
    elif m.is_mla and not mla_kind:
        unsupported = "an MLA geometry no MLA table measures"
    elif s.keep_16bit:
        unsupported = "a checkpoint's 16-bit matrices beside quantised ones have no kernel table mapping"
    elif s.attn_dtype == "fp8":
        unsupported = "FP8 attention math has no measured attention kernel"
    elif s.kvdtype not in KV_DTYPE:
        unsupported = f"{s.kvdtype} KV cache has no measured attention kernel"
    return Shapes(
        gemms=tuple(gemms),
        head=Gemm("lm_head", padded_vocab / tp, m.hidden, 1, "bfloat16"),
        moe=moe,
        attention_layers=attn_layers,
        window_layers=win_layers if win_tokens else 0,
        window_tokens=win_tokens,
        heads=m.heads / tp,
        kv_heads=max(1, m.kv_heads // tp),
        head_dim=m.head_dim,
        kv_dtype=KV_DTYPE.get(s.kvdtype, s.kvdtype),
        mla=mla_kind,
        mla_gemm_dtype="fp8_block" if s.attention == "fp8-block" else "bfloat16",
        mla_prefill_gemms=mla_pre,
        mla_decode_gemms=mla_dec,
        layers=m.layers,
        tp=tp,
        hidden=m.hidden,
        unsupported=unsupported,
    )
