"""Parameter counts of a decoder-only transformer, from its config shape.

Per layer (d = hidden, h = heads, g = kv_heads, k = head_dim, f = ffn):
  attention (MHA/GQA/MQA)  d·h·k (Q) + 2·d·g·k (K, V) + h·k·d (O)  [+ (h+2g)·k biases] [+ h sinks]
                           [+ d·h·k output gate]
  attention (MLA)          d·r_q + r_q·h·(k_nope+k_rope)  (or d·h·(k_nope+k_rope) without q-LoRA)
                           + d·(r_kv + k_rope) + r_kv·h·(k_nope + k_v) + h·k_v·d
  state mixer              state_params_per_layer (linear attention / Mamba; the importer's formula)
  dense MLP                3·d·f if gated (SwiGLU/GeGLU) else 2·d·f
  MoE MLP                  E·3·d·f_e + S·3·d·f_s + d·E (router), f_s = shared_expert_ffn or f_e
                           (2 for 3 when the MLPs are not gated)
  norms                    2·d
Attention sits on the attention layers (layers − state − attention-free), the state mixer
on the state layers, an MLP on every layer but the MLP-free ones: ``dense_layers`` of those
dense, the rest MoE.  Plus the embedding v·d, an untied LM head v·d, and the final norm d.
Active parameters count only the k routed + S shared experts of each MoE layer.
Biases outside Q/K/V and positional tables are ignored (< 0.2 % for the presets).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from planner.model.specs import ModelSpec


def _attention_params(m: ModelSpec) -> float:
    d, h = m.hidden, m.heads
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q = (d * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * h * qk) if m.q_lora_rank else d * h * qk
        kv = (
            d * (m.kv_lora_rank + m.qk_rope_head_dim)
            + m.kv_lora_rank
            + m.kv_lora_rank * h * (m.qk_nope_head_dim + m.v_head_dim)
        )
        return float(q + kv + h * m.v_head_dim * d)
    k, g = m.head_dim, m.kv_heads
    bias = (h + 2 * g) * k if m.qkv_bias else 0
    sinks = h if m.attention_sinks else 0
    gate = d * h * k if m.attention_output_gate else 0
    return float(d * h * k + 2 * d * g * k + h * k * d + bias + sinks + gate)


def _mlp_matrices(m: ModelSpec) -> int:
    return 3 if m.gated_mlp else 2


def expert_params(m: ModelSpec) -> float:
    """Parameters of one routed expert: 3·d·f_e (2·d·f_e when the MLPs are not gated, Nemotron-H)."""
    return float(_mlp_matrices(m) * m.hidden * m.moe_ffn) if m.is_moe else 0.0


def shared_expert_ffn(m: ModelSpec) -> int:
    """Width of one shared expert: ``shared_expert_ffn``, else the routed expert's ``moe_ffn``."""
    return m.shared_expert_ffn or m.moe_ffn


def shared_expert_params(m: ModelSpec) -> float:
    """Parameters of one shared expert: 3·d·f_s (2·d·f_s when not gated)."""
    return float(_mlp_matrices(m) * m.hidden * shared_expert_ffn(m)) if m.is_moe else 0.0


def mlp_layers(m: ModelSpec) -> int:
    """Layers with an MLP (dense or MoE)."""
    return m.layers - m.mlp_free_layers


def moe_layers(m: ModelSpec) -> int:
    return mlp_layers(m) - m.dense_layers if m.is_moe else 0


@dataclass(frozen=True)
class ParamCounts:
    total: float
    active: float
    embedding: float
    lm_head: float

    @property
    def matmul_active(self) -> float:
        """Parameters a token multiplies through: active minus the embedding lookup.

        A tied embedding is still used as the LM head, so it stays in.
        """
        return self.active - (self.embedding if self.lm_head else 0.0)


def param_counts(m: ModelSpec) -> ParamCounts:
    d = m.hidden
    attn = _attention_params(m)
    norms = 2 * d
    dense_mlp = _mlp_matrices(m) * d * m.ffn
    n_moe = moe_layers(m)
    n_dense = mlp_layers(m) - n_moe
    e = expert_params(m)
    shared = m.shared_experts * shared_expert_params(m)
    moe_total = m.experts * e + shared + d * m.experts
    moe_active = m.experts_per_token * e + shared + d * m.experts
    embedding = float(m.vocab * d)
    lm_head = 0.0 if m.tied_embeddings else float(m.vocab * d)
    mixers = m.attention_layers * attn + m.state_layers * m.state_params_per_layer
    common = mixers + m.layers * norms + n_dense * dense_mlp + embedding + lm_head + d
    return ParamCounts(
        total=float(common + n_moe * moe_total),
        active=float(common + n_moe * moe_active),
        embedding=embedding,
        lm_head=lm_head,
    )


def attention_dims(m: ModelSpec) -> tuple[float, float]:
    """(prefill, decode) attention width per head: d_qk + d_v.

    Attention FLOPs for n query tokens over c keys per layer = 2·h·(d_qk + d_v)·n·c.
    MLA prefill uses the expanded heads (k_nope + k_rope + k_v); MLA decode uses
    the absorbed form over the latent (r_kv + k_rope + r_kv), as vLLM and SGLang do.
    """
    if m.is_mla:
        prefill = m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim
        decode = 2 * m.kv_lora_rank + m.qk_rope_head_dim
        return float(prefill), float(decode)
    return float(2 * m.head_dim), float(2 * m.head_dim)


def kv_elements_per_token_per_layer(m: ModelSpec, kv_heads: int | None = None) -> float:
    """Cached elements per token per layer: 2·g·k (K and V), or r_kv + k_rope for MLA."""
    if m.is_mla:
        return float(m.kv_lora_rank + m.qk_rope_head_dim)
    g = m.kv_heads if kv_heads is None else kv_heads
    return float(2 * g * m.head_dim)


def activation_elements_per_token_per_layer(m: ModelSpec) -> float:
    """Elements each matmul reads as input and writes as output, per token per layer.

    QKV: d in, (h+2g)·k out; O: h·k in, d out; MLP: d in, (2 if gated else 1)·f out,
    f in, d out (MoE: f = k_routed·f_e + shared·f_s).  Used only for memory traffic.
    """
    d, h = m.hidden, m.heads
    k = m.v_head_dim if m.is_mla else m.head_dim
    g = m.heads if m.is_mla else m.kv_heads
    f = m.experts_per_token * m.moe_ffn + m.shared_experts * shared_expert_ffn(m) if m.is_moe else m.ffn
    up = 2 if m.gated_mlp else 1
    return float(d + (h + 2 * g) * k + h * k + d + d + up * f + f + d)


def kv_elements_per_token(m: ModelSpec) -> float:
    """Cached elements one token adds across the model: attention layers · per-layer elements.

    State layers (linear attention, Mamba) and attention-free layers cache nothing per token;
    sliding and chunked layers count here too (their cap is a per-sequence limit, not a
    per-token one)."""
    return m.attention_layers * kv_elements_per_token_per_layer(m)


def state_bytes_per_sequence(m: ModelSpec) -> float:
    """Fixed recurrent state one sequence holds, whatever its length: state layers · bytes per layer."""
    return float(m.state_layers * m.state_bytes_per_layer)


def smaller_models(models: Mapping[str, ModelSpec], target: ModelSpec) -> list[str]:
    """The keys of ``models`` with fewer parameters than ``target`` (``param_counts(…).total``), in their
    order: the drafts worth offering.  A draft pays only when its step costs a fraction of the target's; one
    as large or larger (Llama-3.1-405B drafting for a 70B) makes every step slower, whatever α."""
    limit = param_counts(target).total
    return [k for k, m in models.items() if param_counts(m).total < limit]
