"""The sidebar's model section: the preset, a config.json import (named), the shape overrides, quantisation."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from planner.engine.evaluate import CUSTOM_MODEL, SHAPE_KEYS, resolve
from planner.errors import ScenarioError
from planner.format import fmt_count
from planner.model.catalog import Catalog
from planner.model.custom_model import encode_model
from planner.model.hf_import import MAX_CONFIG_BYTES, model_and_quantization_from_hf_config
from planner.model.hf_import.reader import parse_config
from planner.model.specs import ModelSpec
from ui.format import md_escape
from ui.sidebar.options import (
    CONFIG_LIMIT_MB,
    HF_MESSAGE_KEY,
    OVERRIDE_LABELS,
    attention_kind,
    divisors,
    model_facts,
    model_label,
    model_options,
)
from ui.sidebar.weight_inputs import weights_section
from ui.sidebar.widgets import int_input
from ui.state import SCENARIO_KEY


def on_model_change(st: Any, catalog: Catalog) -> None:
    """A new model starts from its own shape: overrides cleared; switching to custom starts
    from the shape that was on screen."""
    ss = st.session_state
    previous = ss.get(SCENARIO_KEY)
    for key in SHAPE_KEYS:
        ss[key] = None
    if ss.get("model") == CUSTOM_MODEL and not ss.get("custom") and previous is not None:
        with contextlib.suppress(ScenarioError):  # an unresolvable scenario leaves the code empty
            ss["custom"] = encode_model(resolve(previous, catalog).model)


#: Characters a custom model's display name may not hold (``CUSTOM_NAME_PATTERN``'s complement).
_NAME_OUTSIDE = re.compile(r"[^A-Za-z0-9 ._/+()-]")


def custom_name_from(name_or_path: object, file_name: str | None) -> str:
    """The custom model's display name: config.json's ``_name_or_path``, else the uploaded file's name
    (unless it is plain ``config.json``); characters outside ``CUSTOM_NAME_PATTERN`` become '-', ≤ 100."""
    text = name_or_path.strip() if isinstance(name_or_path, str) else ""
    if not text and file_name:
        stem = file_name.rsplit("/", 1)[-1].removesuffix(".json")
        text = "" if stem.lower() == "config" else stem
    clean = _NAME_OUTSIDE.sub("-", text).strip()
    return clean[:100]


def on_import_config(st: Any, source: str) -> None:
    """Read the uploaded (``source="file"``) or pasted (``"text"``) config.json into
    model=custom; the link then carries the shape and the model's name (``custom_name``)."""
    ss = st.session_state
    file_name = None
    if source == "file":
        upload = ss.get("_hf_file")
        if upload is None:  # the file was removed
            return
        if upload.size > MAX_CONFIG_BYTES:
            ss[HF_MESSAGE_KEY] = ("error", f"config.json larger than {fmt_count(MAX_CONFIG_BYTES)} bytes", "")
            return
        text, file_name = upload.getvalue(), upload.name
    else:
        text = ss.get("_hf_text", "")
        if not text.strip():
            ss[HF_MESSAGE_KEY] = ("error", "paste the text of a config.json first", "")
            return
    try:
        data = parse_config(text)
        name = custom_name_from(data.get("_name_or_path") if isinstance(data, dict) else None, file_name)
        spec, quant = model_and_quantization_from_hf_config(data, name or None)
    except ValueError as exc:
        ss[HF_MESSAGE_KEY] = ("error", str(exc), "")
        return
    ss["model"] = CUSTOM_MODEL
    ss["custom"] = encode_model(spec)
    ss["custom_name"] = custom_name_from(spec.name, None)
    for key in SHAPE_KEYS:
        ss[key] = None
    if quant is not None:  # a quantised checkpoint is sized as it is stored
        ss.update(quant.changes())
    ss[HF_MESSAGE_KEY] = (
        "success",
        f"loaded {spec.name}: {spec.layers} layers ({spec.layer_summary}), {spec.attention_kind}, "
        f"{spec.heads} heads / {spec.kv_heads} KV heads, {fmt_count(spec.context_window_tokens)}-token window"
        + (f"; weights {quant.label}" if quant is not None else ""),
        ss["custom"],
    )


def import_message(state: Mapping[str, Any]) -> tuple[str, str] | None:
    """The last import's (level, text) while it still describes the page: an error until the next
    import; a success while the model is still the imported shape."""
    message = state.get(HF_MESSAGE_KEY)
    if not message:
        return None
    level, text, code = message
    if level == "success" and (state.get("model") != CUSTOM_MODEL or state.get("custom") != code):
        return None
    return level, text


def model_section(st: Any, catalog: Catalog, base: ModelSpec | None, base_problem: str | None) -> None:
    ss = st.session_state
    st.header("Model")
    st.selectbox(
        "Model preset",
        model_options(catalog),
        key="model",
        format_func=lambda k: model_label(catalog, k),
        on_change=on_model_change,
        args=(st, catalog),
        help="Published model shape (model_presets/*.toml), grouped by family, or 'custom' for an imported "
        "config.json.",
    )
    if base is not None:
        st.caption(md_escape(model_facts(base, named=ss.get("model") == CUSTOM_MODEL)))
    if ss.get("model") == CUSTOM_MODEL:
        st.text_input(
            "Custom shape code",
            key="custom",
            max_chars=600,
            help="Compact shape: L layers, H hidden, A heads, G KV heads, D head dim, F ffn, V vocab, "
            "C context tokens (e.g. L32-H4096-A32-G8-D128-F14336-V128256-C131072).",
        )
        st.text_input(
            "Model name",
            key="custom_name",
            max_chars=100,
            placeholder="Custom model",
            help="Shown in the header and carried in the link; letters, digits, spaces and . _ - / + ( ).",
        )
        if base_problem:
            st.error(md_escape(base_problem))
    if base is not None and not base.is_mla:
        heads = ss.get("heads") or base.heads
        st.select_slider(
            "KV heads (MHA … GQA … MQA)",
            options=divisors(heads),
            key="kv_heads",
            format_func=lambda g: f"{g} {attention_kind(g, heads)}",
            help=f"K/V heads per layer, a divisor of the {heads} query heads: {heads} = MHA, 1 = MQA, "
            "between = GQA; count.",
        )
    elif base is not None:
        st.caption(
            md_escape(f"{base.name} uses MLA: its KV cache is a compressed latent, so there is no KV-heads choice.")
        )
    weights_section(st, base)
    with st.expander("Shape overrides"):
        for key, (label, help) in OVERRIDE_LABELS.items():
            preset = getattr(base, key, None) if base is not None else None
            int_input(
                st,
                key,
                label,
                help,
                value=None,
                placeholder=f"preset: {fmt_count(preset)}" if preset else "preset",
                disabled=base is not None and base.is_mla and key == "head_dim",
            )
    with st.expander("Import a Hugging Face config.json"):
        st.file_uploader(
            "config.json",
            type=["json"],
            key="_hf_file",
            on_change=on_import_config,
            args=(st, "file"),
            max_upload_size=CONFIG_LIMIT_MB,
            help=f"The model's config.json (≤ {CONFIG_LIMIT_MB} MB), read as JSON only; loads on upload.",
        )
        st.text_area("…or paste its text", key="_hf_text", height=120, help="The JSON text of a config.json (≤ 1 MB).")
        st.button("Use pasted config", key="_hf_go", on_click=on_import_config, args=(st, "text"))
        message = import_message(ss)
        if message:
            getattr(st, message[0])(md_escape(message[1]))
