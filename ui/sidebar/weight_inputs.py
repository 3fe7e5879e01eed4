"""The sidebar's weights and KV section: the published checkpoint, one format for every layer or one per component,
the KV cache and the attention math (``planner.model.weight_plan`` says which wins)."""

from __future__ import annotations

from typing import Any

from planner.links import DEFAULTS
from planner.model.dtypes import MATRIX_NAMES
from planner.model.quantization import SCHEMES, compatible_quants, scheme_for
from planner.model.specs import ModelSpec
from planner.model.weight_plan import resolve_weights
from planner.units import KV_DTYPES, WEIGHT_DTYPES
from ui.format import md_escape
from ui.sidebar.widgets import int_input

#: Every stored layout a component may take ('' = the checkpoint's).
COMPONENT_QUANTS = ("", *SCHEMES)
ATTENTION_DTYPES = ("", "bf16", "fp8")


def _checkpoint_label(base: ModelSpec | None, key: str) -> str:
    if base is None:
        return key or "—"
    c = base.checkpoint(key)
    if c is None:
        return key or "16-bit weights (no published checkpoint listed)"
    return f"{'published default: ' if not key else ''}{c.key} — {c.repo}"


def weights_section(st: Any, base: ModelSpec | None) -> None:
    """Checkpoint, weight dtype, KV dtype, the layout and the per-component formats (in an expander)."""
    ss = st.session_state
    if base is not None and base.checkpoints:
        keys = ["", *(c.key for c in base.checkpoints[1:])]  # '' = the default, the first
        if ss.get("ckpt") not in keys:
            ss["ckpt"] = ""
        st.selectbox(
            "Checkpoint",
            keys,
            key="ckpt",
            format_func=lambda k: _checkpoint_label(base, k),
            help="The published checkpoint the plan serves: its formats per component, its KV dtype and its "
            "repository in the launch command (model_presets/*.toml [[checkpoints]], with sources).",
        )
    c1, c2 = st.columns(2)
    c1.selectbox(
        "Weight dtype",
        ("", *WEIGHT_DTYPES),
        key="wdtype",
        format_func=lambda k: k or "the checkpoint's",
        help="One dtype for every linear layer (bytes per parameter; int4 adds group scales); blank = the "
        "checkpoint's own formats, per component.",
    )
    c2.selectbox(
        "KV dtype",
        ("", *KV_DTYPES),
        key="kvdtype",
        format_func=lambda k: k or "the checkpoint's",
        help="Storage type of the KV cache: bytes per cached element (per-token-head: an inline fp32 scale per "
        "token and head, vLLM ≥ 0.23); blank = what the checkpoint ships (FP8 for NVIDIA's NVFP4/FP8 ones), else bf16.",
    )
    _layout(st)
    with st.expander("Per-component formats"):
        c1, c2, c3 = st.columns(3)
        for col, key, label in (
            (c1, "quant_attn", "Attention"),
            (c2, "quant_mlp", "Dense MLP"),
            (c3, "quant_experts", "Experts"),
        ):
            col.selectbox(
                label,
                COMPONENT_QUANTS,
                key=key,
                format_func=lambda k: k or "checkpoint's",
                help=f"Layout of the {label.lower()} weights; blank = the checkpoint's (planner/model/quant_support.py "
                "says which engine runs which on this GPU).",
            )
        kept = [n for n in (ss.get("quant_keep") or "").split(",") if n]
        if ss.get("_quant_keep") != kept:
            ss["_quant_keep"] = kept
        st.multiselect(
            "Matrices kept in 16 bit",
            MATRIX_NAMES,
            key="_quant_keep",
            on_change=_keep_changed,
            args=(st,),
            help="A checkpoint's modules_to_not_convert / exclude_modules (NVIDIA's DeepSeek NVFP4 keeps the MLA q/kv "
            "projections in bf16); none = the checkpoint's.",
        )
        st.selectbox(
            "Attention math",
            ATTENTION_DTYPES,
            key="attn_dtype",
            format_func=lambda k: k or "bf16 (default)",
            help="fp8: FlashAttention 3 (Hopper) / FlashInfer (Blackwell) with an fp8 KV cache quantise the "
            "queries too and run attention at the FP8 rate.",
        )
    if base is not None:
        from ui.sidebar.rules import scenario_from_state

        scenario, _ = scenario_from_state(ss, base)
        if scenario is not None:
            st.caption(md_escape(resolve_weights(base, scenario).describe()))


def _keep_changed(st: Any) -> None:
    st.session_state["quant_keep"] = ",".join(st.session_state.get("_quant_keep") or [])


def _layout(st: Any) -> None:
    """The layout of one weight dtype (``planner.model.quantization``): scales, and what stays 16 bit."""
    ss = st.session_state
    wdtype = ss.get("wdtype", DEFAULTS.wdtype)
    if not wdtype:
        return
    options = ["", *compatible_quants(wdtype)]
    if len(options) <= 2 and options[-1] == "none":
        return
    c1, c2 = st.columns(2)
    c1.selectbox(
        "Quantisation layout",
        options,
        key="quant",
        format_func=lambda k: k or f"usual ({scheme_for(wdtype).key})",
        help="How the checkpoint stores the weights (scales per tensor, channel, block or group; NVFP4/MXFP4); "
        "embeddings and the LM head stay 16 bit (docs/model.md §2).",
    )
    scheme = scheme_for(wdtype, ss.get("quant") or "")
    if scheme.scale in ("group", "group_zero", "w4a8"):
        with c2:
            int_input(
                st, "qgroup", "Group size", "Weights per scale group (GPTQ/AWQ/W4A16/W4A8); 0 = per channel.", step=32
            )
