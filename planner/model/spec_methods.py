"""Speculative-decoding methods: what proposes the draft tokens, its weights and KV, its engine names, and the
acceptance each method has been published with, by workload (data with sources).

  method       proposer                                              memory (per GPU, at the target's tp)
  draft_model  a smaller model of the same tokenizer (``draft=``)    its weights (16 bit) and its layers' KV pages
  eagle        EAGLE-1/2 head: one decoder layer of the target's     fc 2d → d + one layer; embedding and LM head
               width fed the target's last hidden state              shared with the target (vLLM deletes its copies)
  eagle3       EAGLE-3 head: one layer whose q/k/v read              q/k/v 2d wide, o, MLP, fc 3d → d, its own LM head
               [embedding, fused hidden] (2d), fed three target       over the draft vocabulary (32,000); embedding
               layers' hidden states (fc 3d → d)                      shared
  mtp          the checkpoint's own multi-token-prediction layers     each: eh_proj 2d → d, norms, one decoder layer of
               (DeepSeek-V3/R1 ``num_nextn_predict_layers``, Qwen3-    the target (MLA + MoE for DeepSeek) in the
               Next): no extra checkpoint                             checkpoint's format; embedding and head shared
  ngram        prompt lookup: the tokens that followed the last n-   none
               gram's earlier occurrence (CPU)
  (blank)      before this key: a draft preset when ``draft`` is given, else the cost ratio ``draft_ratio``
               (launched as n-gram) — what such links always meant

Parameter counts, checked against what is published: EAGLE-1 heads of Llama-3-8B / 70B 0.25 B / 0.99 B (vLLM
docs/features/spec_decode/README.md table); the EAGLE-3 head of Llama-3.1-8B 424.7 M weights, 849 MB in bf16
(config of yuhuili/EAGLE3-LLaMA3.1-Instruct-8B: hidden 4096, ffn 14336, 32/8 heads, draft_vocab_size 32000; "~811MB"
quoted for the file); DeepSeek-V3's MTP module 14 B with its own embedding and head ("685B, which includes 671B of
the Main Model weights and 14B of the Multi-Token Prediction (MTP) Module weights", README).

Acceptance: ``ACCEPTANCE`` holds, per method and workload, the per-token acceptance α of the i.i.d. model (E(α, γ)
= (1 − α^(γ+1))/(1 − α)) each published figure implies, with the figure and its source.  A mean acceptance length τ
at K draft tokens is turned into α by solving E(α, K) = τ.  Where nothing is published for a method × workload
the scenario's own α stands, and the page says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.model.params import moe_layers
from planner.model.specs import ModelSpec

SpecMethod = Literal["", "draft_model", "eagle", "eagle3", "ngram", "mtp"]
SPEC_METHODS: tuple[str, ...] = ("", "draft_model", "eagle", "eagle3", "ngram", "mtp")
Workload = Literal["chat", "code", "math", "summarization"]
WORKLOADS: tuple[str, ...] = ("chat", "code", "math", "summarization")
#: EAGLE-3 heads predict over a reduced vocabulary (``draft_vocab_size`` of the published heads).
EAGLE3_DRAFT_VOCAB = 32_000
#: vLLM's ``--speculative-config`` method names (vllm/config/speculative.py) and SGLang's ``--speculative-algorithm``
#: (docs/advanced_features/speculative_decoding.md: NEXTN is an alias of EAGLE; MTP models run as EAGLE).
VLLM_METHOD = {"draft_model": "draft_model", "eagle": "eagle", "eagle3": "eagle3", "ngram": "ngram", "mtp": "mtp"}
SGLANG_ALGORITHM = {"draft_model": "STANDALONE", "eagle": "EAGLE", "eagle3": "EAGLE3", "ngram": "NGRAM", "mtp": "EAGLE"}
LABELS = {
    "": "draft preset or cost ratio",
    "draft_model": "draft model",
    "eagle": "EAGLE head",
    "eagle3": "EAGLE-3 head",
    "ngram": "n-gram prompt lookup",
    "mtp": "the model's MTP layers",
}


@dataclass(frozen=True)
class Acceptance:
    """A published acceptance: α's range over the figures, the draft length it was measured at, the figures."""

    low: float
    high: float
    gamma: int
    figures: str
    source: str

    @property
    def alpha(self) -> float:
        """The default: the middle of the published range."""
        return round((self.low + self.high) / 2, 4)


_NEBIUS = (
    "HF card nebius/EAGLE3-Llama-3.3-70B-Instruct (mirror fast.hugflare.com): mean acceptance length at temperature 1 "
    "with K = 7 — yuhuili/EAGLE3-LLaMA3.1-Instruct-8B {a}, RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3 {b}"
)
ACCEPTANCE: dict[str, dict[str, Acceptance]] = {
    "eagle3": {
        "chat": Acceptance(0.6506, 0.6663, 7, "τ 2.77 / 2.88 on MT-bench", _NEBIUS.format(a="2.77", b="2.88")),
        "code": Acceptance(0.7389, 0.7520, 7, "τ 3.49 / 3.62 on HumanEval", _NEBIUS.format(a="3.49", b="3.62")),
        "math": Acceptance(0.7174, 0.7229, 7, "τ 3.34 / 3.29 on GSM8K", _NEBIUS.format(a="3.34", b="3.29")),
    },
    "eagle": {
        "chat": Acceptance(
            0.5416,
            0.5677,
            4,
            "acceptance length 1.89 at k = 2, 2.08 at k = 4 on MT-bench",
            "vLLM PR #16035 (V1 EAGLE model loading; lmsys/sglang-EAGLE-LLaMA3-Instruct-8B on MT-bench, "
            "'k=2 … Accpt Len: 1.89', 'k=4 … Accpt Len: 2.08')",
        ),
    },
    "mtp": {
        workload: Acceptance(
            0.85,
            0.90,
            1,
            "second-token acceptance 85–90 %",
            "DeepSeek-V3 Technical Report (arXiv:2412.19437) §5.4.3: 'the acceptance rate of the second token "
            "prediction ranges between 85% and 90% across various generation topics … 1.8 times TPS'",
        )
        for workload in WORKLOADS
    },
    "ngram": {
        "code": Acceptance(
            0.81,
            0.8915,
            5,
            "code editing: acceptance length 4.59 at k = 5; first position 81 %",
            "vLLM PR #24344 (method ngram, --num_spec_tokens 5 --prompt_lookup_max 5 on vdaita/edit_5k_char: "
            "'mean acceptance length: 4.59', 'acceptance at token 0: 0.81')",
        ),
    },
}


def published_acceptance(method: str, workload: str) -> Acceptance | None:
    """The published acceptance of ``method`` on ``workload``, or None (none published: the scenario's α)."""
    return ACCEPTANCE.get(method, {}).get(workload)


#: Published heads / drafts to launch with, by target preset (the ``model`` of vLLM's speculative config).
HEADS: dict[tuple[str, str], tuple[str, str]] = {
    ("eagle3", "llama-3.1-8b"): ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "nebius card table (above)"),
    ("eagle3", "llama-3.3-70b"): ("RedHatAI/Llama-3.3-70B-Instruct-speculator.eagle3", "nebius card table (above)"),
    ("eagle3", "qwen3-8b"): (
        "RedHatAI/Qwen3-8B-speculator.eagle3",
        'vLLM blog 2025-12-13-speculators-v030: --speculative-config \'{"model": '
        '"RedHatAI/Qwen3-8B-speculator.eagle3", "num_speculative_tokens": 5, "method": "eagle3"}\'',
    ),
    ("eagle", "llama-3.1-8b"): ("yuhuili/EAGLE-LLaMA3-Instruct-8B", "vLLM docs/features/spec_decode/README.md"),
    ("eagle", "llama-3.1-70b"): ("yuhuili/EAGLE-LLaMA3-Instruct-70B", "vLLM docs/features/spec_decode/README.md"),
}
HEAD_PLACEHOLDER = "<{method}-head-for-this-model>"


@dataclass(frozen=True)
class DraftShape:
    """What the proposer costs the engine (``engine.inputs`` reads it): its weights as read per draft step and as
    held in memory, its layers' KV, and its arithmetic per token."""

    read_params: float  # weights one draft step reads (a shared LM head included)
    matmul_params: float  # weights a token multiplies through (LM head included)
    lm_head_params: float
    layers: float
    hidden: float
    heads: float
    kv_heads: float
    kv_elements_per_token_per_layer: float
    kv_sharded: float  # 1: the KV heads split over tp (0: MLA's latent, replicated)
    attention_dim: float  # decode attention width per head
    activation_elements_per_token_per_layer: float
    vocab: float
    held_split_params: float  # weights it holds beyond the target's, split over tp
    held_replicated_params: float  # its norms (and RoPE cache), every rank
    held_bytes_per_param: float  # 2 (bf16 heads and drafts) or the checkpoint's bytes (MTP layers)
    moe_layers: float = 0.0
    experts: float = 0.0
    experts_per_token: float = 0.0
    expert_params: float = 0.0


def _layer_attention(m: ModelSpec, q_in: float) -> float:
    """One attention block's weights with its q/k/v reading ``q_in`` features (2d for EAGLE-3)."""
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = q_in * m.q_lora_rank + m.q_lora_rank * m.heads * qk if m.q_lora_rank else q_in * m.heads * qk
        kv = q_in * (m.kv_lora_rank + m.qk_rope_head_dim) + m.kv_lora_rank * m.heads * (
            m.qk_nope_head_dim + m.v_head_dim
        )
        return float(q + kv + m.heads * m.v_head_dim * m.hidden)
    return float(q_in * (m.heads + 2 * m.kv_heads) * m.head_dim + m.heads * m.head_dim * m.hidden)


def _dense_mlp(m: ModelSpec) -> float:
    return float((3 if m.gated_mlp else 2) * m.hidden * m.ffn)


def eagle_head(m: ModelSpec) -> DraftShape:
    """EAGLE-1/2: fc 2d → d and one decoder layer of the target's shape (a dense MLP of the target's ffn, or of the
    routed experts' width k·f_e for an MoE target); the target's embedding and LM head (module doc)."""
    d = m.hidden
    ffn = m.ffn if not m.is_moe else m.experts_per_token * m.moe_ffn
    mlp = (3 if m.gated_mlp else 2) * d * ffn
    own = 2 * d * d + _layer_attention(m, d) + mlp
    head = float(m.vocab * d)
    return _head_shape(m, own, head, vocab=m.vocab, shared_head=True)


def eagle3_head(m: ModelSpec) -> DraftShape:
    """EAGLE-3: q/k/v over [embedding, fused hidden] (2d), o, a dense MLP, fc 3d → d, its own LM head over the draft
    vocabulary (module doc)."""
    d = m.hidden
    ffn = m.ffn if not m.is_moe else m.experts_per_token * m.moe_ffn
    mlp = (3 if m.gated_mlp else 2) * d * ffn
    head = float(EAGLE3_DRAFT_VOCAB * d)
    own = _layer_attention(m, 2 * d) + mlp + 3 * d * d + head
    return _head_shape(m, own, head, vocab=EAGLE3_DRAFT_VOCAB, shared_head=False)


def _head_shape(m: ModelSpec, own: float, head: float, vocab: float, shared_head: bool) -> DraftShape:
    from planner.model.params import (
        activation_elements_per_token_per_layer,
        attention_dims,
        kv_elements_per_token_per_layer,
    )

    read = own + (head if shared_head else 0.0)
    return DraftShape(
        read_params=read,
        matmul_params=read,
        lm_head_params=head,
        layers=1.0,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        kv_elements_per_token_per_layer=kv_elements_per_token_per_layer(m),
        kv_sharded=0.0 if m.is_mla else 1.0,
        attention_dim=attention_dims(m)[1],
        activation_elements_per_token_per_layer=activation_elements_per_token_per_layer(m),
        vocab=vocab,
        held_split_params=own,
        held_replicated_params=4.0 * m.hidden,
        held_bytes_per_param=2.0,
    )


def mtp_layers_shape(m: ModelSpec, bytes_per_param: float) -> DraftShape:
    """The checkpoint's MTP layers: each eh_proj 2d → d, two norms and one decoder layer of the target (an MoE layer
    when the target's later layers are), run once per draft token (vLLM reuses them for γ > layers); the target's
    embedding and LM head (module doc)."""
    from planner.model.params import (
        activation_elements_per_token_per_layer,
        attention_dims,
        kv_elements_per_token_per_layer,
    )

    d, n = m.hidden, max(m.mtp_layers, 1)
    moe = moe_layers(m) > 0
    if moe:
        from planner.model.params import expert_params, shared_expert_params

        mlp_total = m.experts * expert_params(m) + m.shared_experts * shared_expert_params(m) + d * m.experts
        mlp_active = m.experts_per_token * expert_params(m) + m.shared_experts * shared_expert_params(m) + d * m.experts
    else:
        mlp_total = mlp_active = _dense_mlp(m)
    layer = _layer_attention(m, d) + 2 * d * d
    head = float(m.vocab * d)
    return DraftShape(
        read_params=layer + mlp_total + head,
        matmul_params=layer + mlp_active + head,
        lm_head_params=head,
        layers=1.0,  # one layer a draft step
        hidden=d,
        heads=m.heads,
        kv_heads=m.kv_heads,
        kv_elements_per_token_per_layer=kv_elements_per_token_per_layer(m),
        kv_sharded=0.0 if m.is_mla else 1.0,
        attention_dim=attention_dims(m)[1],
        activation_elements_per_token_per_layer=activation_elements_per_token_per_layer(m),
        vocab=m.vocab,
        held_split_params=n * (layer + mlp_total),
        held_replicated_params=n * 4.0 * d,
        held_bytes_per_param=bytes_per_param,
        moe_layers=1.0 if moe else 0.0,
        experts=m.experts if moe else 0.0,
        experts_per_token=m.experts_per_token if moe else 0.0,
        expert_params=float(expert_params(m)) if moe else 0.0,
    )


def mtp_module_params(m: ModelSpec) -> float:
    """The MTP module's weights as the checkpoint stores them: its layers plus its own embedding and head copies
    (what DeepSeek's README counts as 14 B)."""
    shape = mtp_layers_shape(m, 1.0)
    tables = (1 if m.tied_embeddings else 2) * m.vocab * m.hidden
    return shape.held_split_params + shape.held_replicated_params + m.mtp_layers * tables
