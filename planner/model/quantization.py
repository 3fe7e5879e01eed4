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
  w4a8          0.5 B        1 · out · ⌈in/g⌉ (fp8 group scales) + 4 · out (fp32  CutlassW4A8LinearKernel
                             per channel), as vLLM holds them after loading      (convert_bf16_scales_to_fp8)

Per component (``WeightFormat``): a checkpoint may store each group of linear matrices in its own format —
the attention projections, the dense MLPs (with the shared experts) and the routed experts — and leave named
matrices in 16 bit (its ``modules_to_not_convert`` / ModelOpt ``exclude_modules``): gpt-oss keeps attention in
bf16 and MXFP4 experts; NVIDIA's DeepSeek NVFP4 checkpoints keep the MLA q/kv projections in bf16.

``g`` is the group size (``qgroup``; 0 = one group per output channel).  Formulas and the
published checks: docs/model.md §1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from planner.model.dtypes import QuantKey  # noqa: F401  (the layouts' keys, re-exported)
from planner.model.params import mlp_layers, moe_layers, param_counts, shared_expert_ffn
from planner.model.specs import ModelSpec
from planner.units import DTYPE_BYTES

#: The groups of linear matrices a checkpoint may store in formats of their own.
Component = Literal["attention", "mlp", "experts"]
COMPONENTS: tuple[Component, ...] = ("attention", "mlp", "experts")

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
    scale: Literal["none", "tensor", "channel", "block", "group", "group_zero", "nvfp4", "mxfp4", "w4a8"]
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
        if self.scale == "w4a8":
            groups = math.ceil(fan_in / group) if group > 0 else 1
            return fan_out * groups + 4.0 * fan_out
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
        Scheme("w4a8", "int4", "INT4 weights with FP8 activations (W4A8), fp8 scale per group", 0.5, "w4a8"),
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
    """``count`` linear matrices of ``fan_in × fan_out`` elements (whole model, before tp): one kind of
    projection (``name``, as the checkpoint's module names end: ``q_a_proj``, ``o_proj``, ``gate_up_proj`` …)
    of one ``component``."""

    fan_in: float
    fan_out: float
    count: float
    component: Component = "attention"
    name: str = ""

    @property
    def expert(self) -> bool:
        """A routed expert's matrix (split over the expert-parallel grid)."""
        return self.component == "experts"


def _attention_matrices(m: ModelSpec) -> list[Matrix]:
    d, h, L = m.hidden, m.heads, m.attention_layers
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = (
            [Matrix(d, m.q_lora_rank, L, name="q_a_proj"), Matrix(m.q_lora_rank, h * qk, L, name="q_b_proj")]
            if m.q_lora_rank
            else [Matrix(d, h * qk, L, name="q_proj")]
        )
        return q + [
            Matrix(d, m.kv_lora_rank + m.qk_rope_head_dim, L, name="kv_a_proj_with_mqa"),
            Matrix(m.kv_lora_rank, h * (m.qk_nope_head_dim + m.v_head_dim), L, name="kv_b_proj"),
            Matrix(h * m.v_head_dim, d, L, name="o_proj"),
        ]
    k, g = m.head_dim, m.kv_heads
    return [Matrix(d, (h + 2 * g) * k, L, name="qkv_proj"), Matrix(h * k, d, L, name="o_proj")]


def linear_matrices(m: ModelSpec) -> list[Matrix]:
    """Every linear matrix of the transformer blocks (attention, MLP, experts): what a checkpoint quantises."""
    d = m.hidden
    mats = _attention_matrices(m)
    n_moe = moe_layers(m)
    n_dense = mlp_layers(m) - n_moe
    up = 2 if m.gated_mlp else 1
    if n_dense:
        mats += [Matrix(d, up * m.ffn, n_dense, "mlp", "gate_up_proj"), Matrix(m.ffn, d, n_dense, "mlp", "down_proj")]
    if n_moe:
        routed = n_moe * m.experts
        mats += [
            Matrix(d, up * m.moe_ffn, routed, "experts", "experts.gate_up_proj"),
            Matrix(m.moe_ffn, d, routed, "experts", "experts.down_proj"),
        ]
        if m.shared_experts:
            shared, f_s = n_moe * m.shared_experts, shared_expert_ffn(m)
            mats += [
                Matrix(d, up * f_s, shared, "mlp", "shared_experts.gate_up_proj"),
                Matrix(f_s, d, shared, "mlp", "shared_experts.down_proj"),
            ]
    return mats


NONE = SCHEMES["none"]


@dataclass(frozen=True)
class WeightFormat:
    """The format of each component's linear matrices (module doc): a scheme per component, the matrices a
    checkpoint leaves in 16 bit by name (``keep_16bit``, e.g. MLA's ``q_a_proj``), the GPTQ/AWQ/W4A16/W4A8
    group size."""

    attention: Scheme = NONE
    mlp: Scheme = NONE
    experts: Scheme = NONE
    keep_16bit: frozenset[str] = field(default_factory=frozenset)
    group: int = 128
    #: MXFP4 experts as the engine allocates them: (hidden multiple, per-rank expert-width multiple, ranks the expert
    #: width is split over) — ``planner.model.quant_support.mxfp4_padding``; (1, 1, 1) = as in the checkpoint
    expert_padding: tuple[int, int, int] = (1, 1, 1)

    @classmethod
    def uniform(cls, scheme: Scheme, group: int = 128) -> WeightFormat:
        """Every linear matrix in ``scheme`` (an experts-only scheme, MXFP4: the routed experts only)."""
        other = NONE if scheme.experts_only else scheme
        return cls(attention=other, mlp=other, experts=scheme, group=group)

    def stored_matrix(self, x: Matrix) -> Matrix:
        """``x`` with the dimensions the engine allocates (MXFP4 experts padded, ``expert_padding``)."""
        hidden_mult, width_mult, ranks = self.expert_padding
        if not x.expert or self.experts.key != "mxfp4" or (hidden_mult, width_mult) == (1, 1):
            return x

        def width(w: float) -> float:
            return math.ceil(w / ranks / width_mult) * width_mult * ranks

        def hidden(h: float) -> float:
            return math.ceil(h / hidden_mult) * hidden_mult

        if x.name == "experts.gate_up_proj":  # hidden → 2 · width
            return Matrix(hidden(x.fan_in), 2 * width(x.fan_out / 2), x.count, x.component, x.name)
        return Matrix(width(x.fan_in), hidden(x.fan_out), x.count, x.component, x.name)  # down: width → hidden

    def scheme_of(self, x: Matrix) -> Scheme:
        """The scheme ``x`` is stored in: its component's, or 16 bit when the checkpoint keeps it so."""
        if x.name in self.keep_16bit:
            return NONE
        return {"attention": self.attention, "mlp": self.mlp, "experts": self.experts}[x.component]

    @property
    def schemes(self) -> tuple[Scheme, Scheme, Scheme]:
        return self.attention, self.mlp, self.experts

    @property
    def is_uniform(self) -> bool:
        """One scheme for every linear matrix and no exclusion: the single-format model the efficiency
        profiles were fitted with (``engine.inputs``)."""
        one = self.attention.key == self.mlp.key == self.experts.key
        return one and not self.keep_16bit and not self.experts.experts_only

    @property
    def quantised(self) -> bool:
        return any(s.key != "none" for s in self.schemes)

    @property
    def block(self) -> int:
        """FP8 block quantisation's block where any component uses it (128; 0: none)."""
        return FP8_BLOCK if any(s.scale == "block" for s in self.schemes) else 0

    @property
    def grouped(self) -> bool:
        return any(s.scale in ("group", "group_zero", "w4a8") for s in self.schemes)

    def label(self, experts: bool = True) -> str:
        """'fp8-block' for one format; 'attention bf16 · MLP nvfp4 · experts nvfp4 (q_a_proj … bf16)' (without the
        experts' part for a model that has none: ``experts=False``)."""
        if self.is_uniform or (not experts and self.attention == self.mlp and not self.keep_16bit):
            return self.attention.key if self.attention.key != "none" else "bf16"

        def key(s: Scheme) -> str:
            return "bf16" if s.key == "none" else s.key

        parts = [f"attention {key(self.attention)}", f"MLP {key(self.mlp)}"]
        parts += [f"experts {key(self.experts)}"] if experts else []
        kept = f" (16-bit: {', '.join(sorted(self.keep_16bit))})" if self.keep_16bit else ""
        return " · ".join(parts) + kept


def matrix_bytes(x: Matrix, scheme: Scheme, group: int, fmt: WeightFormat | None = None) -> float:
    """Bytes of the ``x.count`` matrices of ``x`` stored in ``scheme`` (16 bit: 2 B a weight), at the dimensions
    ``fmt`` allocates them with."""
    if fmt is not None:
        x = fmt.stored_matrix(x)
    if scheme.key == "none":
        return x.fan_in * x.fan_out * WEIGHT_16BIT_BYTES * x.count
    per = x.fan_in * x.fan_out * scheme.element_bytes + scheme.scale_bytes(x.fan_in, x.fan_out, group)
    return per * x.count


@dataclass(frozen=True)
class WeightLayout:
    """What the weights of one model are as vLLM allocates them (whole model, before tp).

    quantized_params       elements stored in a quantised format
    quantized_bytes        those elements' bytes plus their scales
    embedding_stored_params  embedding (+ untied LM head) rows padded to a multiple of 64 · hidden
    replicated_params      norms and MoE routers: 16 bit, a full copy on every rank
    rope_cache_elements    the RoPE cos/sin cache, max_position × rotary_dim, model dtype, on every rank
    other_params           every other weight (biases, unquantised linears): 16 bit, split over tp
    expert_params / expert_bytes  the routed experts' weights and their bytes as stored (in the above)
    """

    scheme: Scheme
    quantized_params: float
    quantized_bytes: float
    embedding_stored_params: float
    replicated_params: float
    rope_cache_elements: float
    other_params: float
    expert_params: float = 0.0
    expert_bytes: float = 0.0

    @property
    def bytes_per_quantized_param(self) -> float:
        return self.quantized_bytes / self.quantized_params if self.quantized_params else self.scheme.element_bytes


def as_format(fmt: Scheme | WeightFormat, group: int = 128) -> WeightFormat:
    return fmt if isinstance(fmt, WeightFormat) else WeightFormat.uniform(fmt, group)


def weight_layout(m: ModelSpec, fmt: Scheme | WeightFormat, group: int = 128) -> WeightLayout:
    """The layout of ``m`` stored in ``fmt`` (a scheme for every linear matrix, or a per-component format;
    group size ``group`` for GPTQ/AWQ/W4A16/W4A8 when a scheme is given)."""
    f = as_format(fmt, group)
    pc = param_counts(m)
    q = q_bytes = experts = expert_bytes = 0.0
    for x in linear_matrices(m):
        scheme = f.scheme_of(x)
        stored = matrix_bytes(x, scheme, f.group, f)
        if x.expert:
            experts += x.fan_in * x.fan_out * x.count
            expert_bytes += stored
        if scheme.key != "none":
            q += x.fan_in * x.fan_out * x.count
            q_bytes += stored
    padded = math.ceil(m.vocab / VOCAB_PADDING) * VOCAB_PADDING
    embedding_stored = padded * m.hidden * (1 if m.tied_embeddings else 2)
    router = moe_layers(m) * m.experts * m.hidden
    replicated = (2 * m.layers + 1) * m.hidden + router
    rotary = m.qk_rope_head_dim if m.is_mla else m.head_dim
    other = pc.total - q - pc.embedding - pc.lm_head - replicated
    main = next((s for s in (f.experts, f.mlp, f.attention) if s.key != "none"), NONE)
    return WeightLayout(
        scheme=main,
        quantized_params=float(q),
        quantized_bytes=float(q_bytes),
        embedding_stored_params=float(embedding_stored),
        replicated_params=float(replicated),
        rope_cache_elements=float(m.context_window_tokens * rotary),
        other_params=float(max(other, 0.0)),
        expert_params=float(experts),
        expert_bytes=float(expert_bytes),
    )


def weight_bytes_of_layout(layout: WeightLayout, tp: float = 1.0) -> float:
    """Bytes one tensor-parallel rank holds: quantised and other weights and the padded
    embedding/head split 1/tp; norms, routers and the RoPE cache on every rank."""
    b16 = WEIGHT_16BIT_BYTES
    split = layout.quantized_bytes + (layout.other_params + layout.embedding_stored_params) * b16
    return split / tp + (layout.replicated_params + layout.rope_cache_elements) * b16


#: vLLM's per-token-head KV (``int8_per_token_head``, ``fp8_per_token_head``; PR #38378): each token's K and V
#: vectors of one head carry one fp32 scale each, inline — 8 bytes per token and head beside the 2 · head_dim values
#: (vLLM 0.33.0 v1/attention/backends/triton_attn.py:306-318 customize_spec: content = (hk + hv) · 1 + 2 · 4; the
#: engine profile's ``int8_kv_scale_bytes``, what vLLM's own page size holds: a 4-head × 256 model's 2,080 B per token
#: and layer against 2,048 B of values).
PER_TOKEN_HEAD_SCALE_BYTES = 8.0


def kv_bytes_per_element(kvdtype: str, head_dim: float) -> float:
    """Bytes per cached K/V element: the dtype's size, plus a per-token-head format's inline scales spread over the
    head's 2 · head_dim K and V elements: (2 · head_dim · 1 B + 8 B) / (2 · head_dim)."""
    if kvdtype.endswith("_per_token_head"):
        return 1.0 + PER_TOKEN_HEAD_SCALE_BYTES / (2.0 * head_dim)
    return DTYPE_BYTES[kvdtype]
