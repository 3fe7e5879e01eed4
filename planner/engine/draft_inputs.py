"""The speculative proposer's fields of the engine inputs (``inputs.from_specs``): the scenario's γ, α and draft
cost ratio, and the proposer's shape and held weights — a draft preset, or the head a method adds
(``planner.model.spec_methods``: EAGLE / EAGLE-3 heads in 16 bit, the checkpoint's own MTP layers in its format;
n-gram proposes with no weights)."""

from __future__ import annotations

from planner.model.params import (
    activation_elements_per_token_per_layer,
    attention_dims,
    kv_elements_per_token_per_layer,
    param_counts,
)
from planner.model.quantization import WEIGHT_16BIT_BYTES, WeightLayout, scheme_for, weight_layout
from planner.model.scenario import Scenario
from planner.model.spec_methods import DraftShape, eagle3_head, eagle_head, mtp_layers_shape
from planner.model.specs import ModelSpec
from planner.model.weight_plan import resolve_weights


def draft_weight_fields(
    model: ModelSpec, draft: ModelSpec | None, s: Scenario, layout: WeightLayout
) -> dict[str, float]:
    b16 = WEIGHT_16BIT_BYTES
    if s.spec_method in ("eagle", "eagle3", "mtp"):
        stored = (layout.quantized_bytes + (layout.other_params + layout.embedding_stored_params) * b16) / max(
            layout.quantized_params + layout.other_params + layout.embedding_stored_params, 1.0
        )
        head = method_head(s, model, stored)
        if head is None:
            return dict(draft_weight_bytes_split=0.0, draft_weight_bytes_replicated=0.0)
        return dict(
            draft_weight_bytes_split=head.held_split_params * head.held_bytes_per_param,
            draft_weight_bytes_replicated=head.held_replicated_params * b16,
        )
    if draft is None or s.spec_method not in ("", "draft_model"):
        return dict(draft_weight_bytes_split=0.0, draft_weight_bytes_replicated=0.0)
    d = weight_layout(draft, scheme_for("bf16"))
    return dict(
        draft_weight_bytes_split=(d.other_params + d.embedding_stored_params) * b16,
        draft_weight_bytes_replicated=(d.replicated_params + d.rope_cache_elements) * b16,
    )


def speculation_fields(s: Scenario, model: ModelSpec, draft: ModelSpec | None) -> dict[str, float]:
    """Speculative decoding's inputs: the scenario's γ, α and cost ratio, and the proposer's shape
    (``engine.speculative``): a draft preset, or the head a method adds (``planner.model.spec_methods``): EAGLE /
    EAGLE-3 heads (16 bit), the checkpoint's MTP layers (its own format); n-gram proposes with no weights."""
    common = dict(spec_on=1.0 if s.spec else 0.0, gamma=s.gamma, alpha=s.alpha, draft_ratio=s.draft_ratio)
    head = method_head(s, model, WEIGHT_16BIT_BYTES)  # (its bytes held: draft_weight_fields)
    if head is not None:
        return common | dict(
            has_draft_model=1.0,
            draft_total_params=head.read_params,
            draft_matmul_params=head.matmul_params,
            draft_lm_head_params=head.lm_head_params,
            draft_lookup_params=0.0,  # the target's embedding: a lookup
            draft_layers=head.layers,
            draft_hidden=head.hidden,
            draft_heads=head.heads,
            draft_kv_elements_per_token_per_layer=head.kv_elements_per_token_per_layer,
            draft_attention_dim=head.attention_dim,
            draft_activation_elements_per_token_per_layer=head.activation_elements_per_token_per_layer,
            draft_kv_sharded=head.kv_sharded,
            draft_moe_layers=head.moe_layers,
            draft_experts=head.experts,
            draft_experts_per_token=head.experts_per_token,
            draft_expert_params=head.expert_params,
            draft_kv_heads=head.kv_heads,
            draft_vocab=head.vocab,
        )
    d = draft if draft is not None and s.spec_method in ("", "draft_model") else model
    dpc = param_counts(d)
    return common | dict(
        has_draft_model=1.0 if d is draft else 0.0,
        draft_total_params=dpc.total,
        draft_matmul_params=dpc.matmul_active,
        draft_lm_head_params=float(d.vocab * d.hidden),
        draft_lookup_params=0.0 if d.tied_embeddings else float(d.vocab * d.hidden),
        draft_layers=d.layers,
        draft_hidden=d.hidden,
        draft_heads=d.heads,
        draft_kv_elements_per_token_per_layer=kv_elements_per_token_per_layer(d),
        draft_attention_dim=attention_dims(d)[1],
        draft_activation_elements_per_token_per_layer=activation_elements_per_token_per_layer(d),
        draft_kv_sharded=1.0,  # a draft preset runs at the target's tp, its K/V heads split like the target's
        draft_moe_layers=0.0,
        draft_experts=0.0,
        draft_experts_per_token=0.0,
        draft_expert_params=0.0,
        draft_kv_heads=d.kv_heads,
        draft_vocab=d.vocab,
        draft_ratio=0.0 if s.spec_method == "ngram" else s.draft_ratio,  # prompt lookup: no model runs
    )


def method_head(s: Scenario, model: ModelSpec, stored_bytes_per_param: float) -> DraftShape | None:
    if s.spec_method == "eagle":
        return eagle_head(model)
    if s.spec_method == "eagle3":
        return eagle3_head(model)
    if s.spec_method == "mtp" and model.mtp_layers:
        ckpt = resolve_weights(model, s).checkpoint
        held = 2.0 if ckpt is not None and ckpt.mtp_bf16 else stored_bytes_per_param
        return mtp_layers_shape(model, held)
    return None
