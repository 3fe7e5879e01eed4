"""Weight quantisation as vLLM stores it: which weights are quantised, and the bytes of their scales.

A checkpoint quantises the **linear layers of the transformer blocks** only: the embedding and
the LM head stay in 16 bit under FP8, INT8, GPTQ/AWQ, compressed-tensors and NVFP4 (vLLM 0.19:
``Fp8Config.get_quant_method`` quantises ``LinearBase``/``FusedMoE`` only, ``fp8.py:174-204``;
GPTQ/AWQ ``lm_head_quantized`` defaults to false, ``gptq_marlin.py:199``, ``awq_marlin.py:218``).
MXFP4 (gpt-oss) quantises the routed experts only.  Norms and the MoE router stay 16 bit and are
replicated on every tensor-parallel rank.

Per quantised matrix of ``in × out`` elements (vLLM 0.19 parameter layouts):

  scheme        element      scales (bytes per matrix)                          source
  none          2 B          0                                                  —
  fp8           1 B          4 per logical matrix (fp32 per tensor)             fp8.py, PerTensorScaleParameter
  fp8-channel   1 B          4 · out  (fp32 per output channel)                 compressed-tensors FP8-dynamic
  fp8-block     1 B          4 · ⌈out/128⌉ · ⌈in/128⌉  (fp32 per 128×128)       fp8_utils.py:1510-1521
  w8a8          1 B          4 · out  (int8, fp32 per output channel)           compressed-tensors W8A8
  gptq          0.5 B        (2 + 0.5) · out · ⌈in/g⌉  (fp16 scale, packed zero) gptq_marlin.py:355-440
  awq           0.5 B        (2 + 0.5) · out · ⌈in/g⌉                           awq.py:200-245
  w4a16         0.5 B        2 · out · ⌈in/g⌉  (symmetric: no zero points)      compressed-tensors pack-quantized
  nvfp4         0.5 B        1 · out · ⌈in/16⌉ (E4M3) + 8 (two fp32 per tensor) modelopt.py:1100-1150
  mxfp4         0.5 B        1 · out · ⌈in/32⌉ (E8M0), experts only             mxfp4.py:140-200

``g`` is the group size (``qgroup``; 0 = one group per output channel).  Formulas and the
published checks: docs/model.md §1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from planner.model.params import moe_layers, param_counts
from planner.model.specs import ModelSpec

QuantKey = Literal["", "none", "fp8", "fp8-channel", "fp8-block", "w8a8", "gptq", "awq", "w4a16", "nvfp4", "mxfp4"]

#: vLLM pads the vocabulary of ``VocabParallelEmbedding``/``ParallelLMHead`` to a multiple of 64
#: (``pad_vocab_size``, ``vocab_parallel_embedding.py:28``) before splitting it over tp.
VOCAB_PADDING = 64
#: Bytes of a 16-bit weight (embedding, LM head, norms, the RoPE cache, unquantised layers).
WEIGHT_16BIT_BYTES = 2.0
FP8_BLOCK = 128
NVFP4_GROUP = 16
MXFP4_GROUP = 32


@dataclass(frozen=True)
class Scheme:
    """One quantisation layout (see the module table)."""

    key: str
    wdtype: str  # the weight dtype it stores (the scenario's ``wdtype``)
    label: str
    element_bytes: float
    scale: Literal["none", "tensor", "channel", "block", "group", "group_zero", "nvfp4", "mxfp4"]
    experts_only: bool = False
    vllm_flag: str | None = None  # ``--quantization`` when the weights are quantised at load time
    note: str = ""

    def scale_bytes(self, fan_in: float, fan_out: float, group: int) -> float:
        """Bytes of the scales (and zero points) of one ``fan_in × fan_out`` matrix."""
        if self.scale == "tensor":
            return 4.0
        if self.scale == "channel":
            return 4.0 * fan_out
        if self.scale == "block":
            return 4.0 * math.ceil(fan_out / FP8_BLOCK) * math.ceil(fan_in / FP8_BLOCK)
        if self.scale in ("group", "group_zero"):
            groups = math.ceil(fan_in / group) if group > 0 else 1
            return (2.5 if self.scale == "group_zero" else 2.0) * fan_out * groups
        if self.scale == "nvfp4":
            return fan_out * math.ceil(fan_in / NVFP4_GROUP) + 8.0
        if self.scale == "mxfp4":
            return fan_out * math.ceil(fan_in / MXFP4_GROUP)
        return 0.0


SCHEMES: dict[str, Scheme] = {
    s.key: s
    for s in (
        Scheme("none", "bf16", "16-bit weights", 2.0, "none"),
        Scheme("fp8", "fp8", "FP8, one scale per tensor", 1.0, "tensor", vllm_flag="fp8"),
        Scheme(
            "fp8-channel", "fp8", "FP8, one scale per output channel (compressed-tensors FP8-dynamic)", 1.0, "channel"
        ),
        Scheme("fp8-block", "fp8", "FP8, one scale per 128×128 block (DeepSeek-style)", 1.0, "block"),
        Scheme("w8a8", "int8", "INT8 W8A8, one scale per output channel (compressed-tensors)", 1.0, "channel"),
        Scheme("gptq", "int4", "GPTQ INT4, fp16 scale + packed zero per group", 0.5, "group_zero"),
        Scheme("awq", "int4", "AWQ INT4, fp16 scale + packed zero per group", 0.5, "group_zero"),
        Scheme("w4a16", "int4", "INT4 W4A16 symmetric (compressed-tensors), fp16 scale per group", 0.5, "group"),
        Scheme("nvfp4", "fp4", "NVFP4: E4M3 scale per 16 weights + fp32 per tensor (ModelOpt)", 0.5, "nvfp4"),
        Scheme("mxfp4", "fp4", "MXFP4: E8M0 scale per 32 weights, routed experts only", 0.5, "mxfp4", True),
    )
}
#: The scheme a weight dtype means when ``quant`` is not given.
DEFAULT_SCHEME: dict[str, str] = {
    "bf16": "none",
    "fp16": "none",
    "fp8": "fp8",
    "int8": "w8a8",
    "int4": "gptq",
    "fp4": "nvfp4",
}


def scheme_for(wdtype: str, quant: str = "") -> Scheme:
    """The layout of ``wdtype`` weights (``quant`` = '' or 'none' on 16-bit weights: the default)."""
    key = quant if quant and quant != "none" else DEFAULT_SCHEME[wdtype]
    return SCHEMES[key]


def compatible_quants(wdtype: str) -> list[str]:
    """The ``quant`` values that store ``wdtype`` weights."""
    if wdtype in ("bf16", "fp16"):
        return ["none"]
    return [k for k, s in SCHEMES.items() if s.wdtype == wdtype]


@dataclass(frozen=True)
class Matrix:
    """``count`` linear matrices of ``fan_in × fan_out`` elements (whole model, before tp)."""

    fan_in: float
    fan_out: float
    count: float
    expert: bool = False


def _attention_matrices(m: ModelSpec) -> list[Matrix]:
    d, h, L = m.hidden, m.heads, m.layers
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = [Matrix(d, m.q_lora_rank, L), Matrix(m.q_lora_rank, h * qk, L)] if m.q_lora_rank else [Matrix(d, h * qk, L)]
        return q + [
            Matrix(d, m.kv_lora_rank + m.qk_rope_head_dim, L),
            Matrix(m.kv_lora_rank, h * (m.qk_nope_head_dim + m.v_head_dim), L),
            Matrix(h * m.v_head_dim, d, L),
        ]
    k, g = m.head_dim, m.kv_heads
    return [Matrix(d, (h + 2 * g) * k, L), Matrix(h * k, d, L)]


def linear_matrices(m: ModelSpec) -> list[Matrix]:
    """Every linear matrix of the transformer blocks (attention, MLP, experts): what a checkpoint quantises."""
    d = m.hidden
    mats = _attention_matrices(m)
    n_moe = moe_layers(m)
    n_dense = m.layers - n_moe
    up = 2 if m.gated_mlp else 1
    if n_dense:
        mats += [Matrix(d, up * m.ffn, n_dense), Matrix(m.ffn, d, n_dense)]
    if n_moe:
        routed = n_moe * m.experts
        mats += [Matrix(d, 2 * m.moe_ffn, routed, True), Matrix(m.moe_ffn, d, routed, True)]
        if m.shared_experts:
            shared = n_moe * m.shared_experts
            mats += [Matrix(d, 2 * m.moe_ffn, shared), Matrix(m.moe_ffn, d, shared)]
    return mats


@dataclass(frozen=True)
class WeightLayout:
    """What the weights of one model are as vLLM allocates them (whole model, before tp).

    quantized_params       elements stored in the scheme's format
    quantized_bytes        those elements' bytes plus their scales
    embedding_stored_params  embedding (+ untied LM head) rows padded to a multiple of 64 · hidden
    replicated_params      norms and MoE routers: 16 bit, a full copy on every rank
    rope_cache_elements    the RoPE cos/sin cache, max_position × rotary_dim, model dtype, on every rank
    other_params           every other weight (biases, unquantised linears): 16 bit, split over tp
    """

    scheme: Scheme
    quantized_params: float
    quantized_bytes: float
    embedding_stored_params: float
    replicated_params: float
    rope_cache_elements: float
    other_params: float

    @property
    def bytes_per_quantized_param(self) -> float:
        return self.quantized_bytes / self.quantized_params if self.quantized_params else self.scheme.element_bytes


def weight_layout(m: ModelSpec, scheme: Scheme, group: int = 128) -> WeightLayout:
    """The layout of ``m`` stored with ``scheme`` (group size ``group`` for GPTQ/AWQ/W4A16)."""
    pc = param_counts(m)
    mats = linear_matrices(m)
    if scheme.key == "none":
        chosen: list[Matrix] = []
    elif scheme.experts_only:
        chosen = [x for x in mats if x.expert]
    else:
        chosen = mats
    q = sum(x.fan_in * x.fan_out * x.count for x in chosen)
    q_bytes = sum(
        (x.fan_in * x.fan_out * scheme.element_bytes + scheme.scale_bytes(x.fan_in, x.fan_out, group)) * x.count
        for x in chosen
    )
    padded = math.ceil(m.vocab / VOCAB_PADDING) * VOCAB_PADDING
    embedding_stored = padded * m.hidden * (1 if m.tied_embeddings else 2)
    router = moe_layers(m) * m.experts * m.hidden
    replicated = (2 * m.layers + 1) * m.hidden + router
    rotary = m.qk_rope_head_dim if m.is_mla else m.head_dim
    other = pc.total - q - pc.embedding - pc.lm_head - replicated
    return WeightLayout(
        scheme=scheme,
        quantized_params=float(q),
        quantized_bytes=float(q_bytes),
        embedding_stored_params=float(embedding_stored),
        replicated_params=float(replicated),
        rope_cache_elements=float(m.context_window_tokens * rotary),
        other_params=float(max(other, 0.0)),
    )


def weight_bytes_of_layout(layout: WeightLayout, tp: float = 1.0) -> float:
    """Bytes one tensor-parallel rank holds: quantised and other weights and the padded
    embedding/head split 1/tp; norms, routers and the RoPE cache on every rank."""
    b16 = WEIGHT_16BIT_BYTES
    split = layout.quantized_bytes + (layout.other_params + layout.embedding_stored_params) * b16
    return split / tp + (layout.replicated_params + layout.rope_cache_elements) * b16
