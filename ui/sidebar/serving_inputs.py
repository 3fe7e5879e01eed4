"""The sidebar's hardware, multi-GPU layout, engine, workload and speculative-decoding sections."""

from __future__ import annotations

from typing import Any

from planner.model.catalog import Catalog
from planner.model.params import smaller_models
from planner.model.spec_methods import LABELS, SPEC_METHODS, WORKLOADS
from ui.format import md_escape
from ui.sidebar.options import (
    BATCH_STOPS,
    CHUNK_OPTIONS,
    engine_label,
    engine_options,
    field_bounds,
    gpu_facts,
    gpu_label,
    gpu_options,
    model_label,
    model_options,
)
from ui.sidebar.rules import (
    profile_in_force,
)
from ui.sidebar.widgets import boxed_slider, int_input, slider


def hardware_section(st: Any, catalog: Catalog) -> None:
    st.header("Hardware")
    st.selectbox(
        "GPU profile",
        gpu_options(catalog),
        key="gpu",
        format_func=lambda k: gpu_label(catalog, k),
        help="Accelerator datasheet profile (hardware_profiles/*.toml): memory, bandwidth, FLOP/s, $/GPU-hour; "
        "grouped by vendor and generation, oldest first. "
        "Last in the list: machines measured by `python -m planner bench` (benchmarks/results/*.toml; "
        "their rates are achieved ones, so MFU and MBU do not derate them).",
    )
    chosen = catalog.profile(st.session_state.get("gpu", ""))
    if chosen is not None:
        st.caption(md_escape(gpu_facts(chosen)))
    int_input(st, "tp", "GPUs per replica (tp)", "Tensor-parallel degree: GPUs one model replica is split over; count.")
    layout_section(st)
    engine_section(st, catalog)


def layout_section(st: Any) -> None:
    """Pipeline stages, data-parallel attention ranks and expert parallelism (docs/model.md "Parallelism")."""
    ss = st.session_state
    opened = any(ss.get(k, 1) != 1 for k in ("pp", "dp", "ep"))
    with st.expander("Multi-GPU layout (pp, dp, ep)", expanded=opened):
        int_input(
            st,
            "pp",
            "Pipeline stages (pp)",
            "Layers split over pp stages of tp GPUs each (vLLM --pipeline-parallel-size); an instance runs on "
            "tp × dp × pp GPUs, across nodes of the profile's gpus_per_node.",
        )
        int_input(
            st,
            "dp",
            "Data-parallel attention ranks (dp)",
            "MoE models: dp ranks of tp GPUs each hold their own sequences and KV cache and share the expert layers "
            "(vLLM --data-parallel-size, SGLang --enable-dp-attention). Dense models: 1 (use replicas).",
        )
        int_input(
            st,
            "ep",
            "Expert-parallel degree (ep)",
            "MoE models: whole experts spread over ep of a stage's tp × dp GPUs (vLLM: 1 or tp × dp, "
            "--enable-expert-parallel). The errors name the values the engine accepts.",
        )
        st.checkbox(
            "Expert load balancer (EPLB)",
            key="eplb",
            help="On: the busiest EP rank gets 1.11 × the mean routed tokens (TensorRT-LLM's measurement with "
            "EPLB), experts must split evenly; off: 2.56 ×. Link key ep_imbalance sets your own figure.",
        )


def engine_section(st: Any, catalog: Catalog) -> None:
    ss = st.session_state
    aliases = catalog.engine_aliases()
    if ss.get("engine") in aliases:  # a name alone (an old link, the default) is its newest version
        ss["engine"] = aliases[ss["engine"]]
    st.selectbox(
        "Serving engine",
        engine_options(catalog),
        key="engine",
        format_func=lambda k: engine_label(catalog, k),
        help="Engine and version (engine_profiles/<engine>/<version>.toml; link key engine=NAME@VERSION, a name "
        "alone means its newest): the memory rules and the efficiency parameters of that release — per-step and "
        "per-layer costs, matmul and bandwidth shares per GPU family.",
    )
    line = profile_in_force(catalog, st.session_state)
    if line:
        st.caption(md_escape(line))


def workload_section(st: Any) -> None:
    st.header("Workload")
    boxed_slider(
        st,
        "batch",
        "Batch (concurrent sequences)",
        "Sequences decoding together in each step; count. Type any value, or drag over 1 … 4,096 in ×1.5 steps.",
        BATCH_STOPS,
        step=1,
    )
    c1, c2 = st.columns(2)
    with c1:
        int_input(st, "prompt", "Prompt tokens", "Input tokens per request; tokens.", step=256)
    with c2:
        int_input(st, "output", "Output tokens", "Generated tokens per request; tokens.", step=64)
    boxed_slider(
        st,
        "chunk",
        "Prefill chunk",
        "Chunked-prefill token budget per scheduler step (vLLM max_num_batched_tokens); tokens. Type any value, "
        "or drag over the powers of two.",
        CHUNK_OPTIONS,
        step=256,
    )


def draft_options(catalog: Catalog, model: str, draft: str) -> tuple[list[str], str]:
    """The drafts offered for the target ``model``: the presets with fewer parameters
    (``planner.model.params.smaller_models``), in the model list's order, and why in words; the current
    ``draft`` is kept (a link may name a larger one) and named as not smaller."""
    ordered = model_options(catalog)[:-1]
    target = catalog.models.get(model)
    if target is None:  # a custom shape: its size is known only once built; every preset is offered
        return [""] + ordered, "Any preset can draft for a custom shape; a draft pays only when it is much smaller."
    smaller = set(smaller_models(catalog.models, target))
    options = [""] + [k for k in ordered if k in smaller]
    why = (
        f"Only models smaller than {target.name} (fewer parameters) are listed: a draft pays only when its "
        "step costs a fraction of the target's."
    )
    if draft and draft not in smaller:
        options.append(draft)
        why += f" {catalog.models[draft].name if draft in catalog.models else draft} is not smaller than the target."
    return options, why


def speculative_section(st: Any, catalog: Catalog) -> None:
    ss = st.session_state
    st.header("Speculative decoding")
    st.toggle(
        "Speculative decoding",
        key="spec",
        help="A draft proposes γ tokens; the target verifies them in one pass (on/off).",
    )
    c1, c2 = st.columns(2)
    c1.selectbox(
        "Method",
        SPEC_METHODS,
        key="spec_method",
        format_func=lambda k: LABELS[k] if k else "draft preset / cost ratio",
        help="What proposes the draft tokens: a draft model, an EAGLE / EAGLE-3 head, the model's own MTP layers "
        "(DeepSeek-V3/R1, Qwen3-Next) or n-gram prompt lookup — each with its weights, KV and cost "
        "(planner/model/spec_methods.py).",
    )
    c2.selectbox(
        "Workload",
        WORKLOADS,
        key="spec_workload",
        help="Sets α to the method's published acceptance on this kind of text when α is left at its default.",
    )
    method = ss.get("spec_method") or ""
    if method in ("", "draft_model"):
        options, why = draft_options(catalog, ss.get("model", ""), ss.get("draft", ""))
        st.selectbox(
            "Draft",
            options,
            key="draft",
            format_func=lambda k: "Cost ratio (no draft model)" if not k else model_label(catalog, k),
            help="Draft model preset run on the same GPUs, or none to give its step cost as a ratio. " + md_escape(why),
        )
        st.caption(md_escape(why))
    if method == "" and not ss.get("draft"):
        slider(
            st,
            "draft_ratio",
            "Draft cost ratio",
            "Draft step time / target step time; fraction 0–1.",
            step=0.005,
            fmt="%.3f",
        )
    c1, c2 = st.columns(2)
    with c1:
        lo, hi, _ = field_bounds("gamma")
        st.slider(
            "γ (draft tokens)",
            min_value=int(lo),
            max_value=int(hi),
            key="gamma",
            help="Tokens the draft proposes per step; count.",
        )
    with c2:
        slider(st, "alpha", "α (acceptance)", "Probability each draft token is accepted; fraction 0–1.")
