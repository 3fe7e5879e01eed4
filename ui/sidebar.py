"""The sidebar: one widget per Scenario field, keyed by the field's name (= its link key).

Bounds come from the Scenario's pydantic field constraints, so the widgets can
only produce values the Scenario accepts; the few cross-field rules (prefix ≤
prompt, kv_heads divides heads, no kv_heads/head_dim for MLA) are enforced on
the session state before the widgets are drawn.  ``render`` returns the
validated Scenario plus one line per value it had to adjust.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from planner.engine.evaluate import CUSTOM_MODEL, SHAPE_KEYS, resolve
from planner.engine.inputs import compute_dtype
from planner.errors import ScenarioError, format_validation_error
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_seconds, fmt_usd
from planner.links import DEFAULTS, FIELDS
from planner.model.catalog import Catalog
from planner.model.custom_model import decode_model, encode_model
from planner.model.engine_timing import resolve_timing
from planner.model.hf_import import MAX_CONFIG_BYTES, model_and_quantization_from_hf_config
from planner.model.hf_import.reader import parse_config
from planner.model.params import kv_elements_per_token, state_bytes_per_sequence
from planner.model.quantization import compatible_quants, scheme_for
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec
from planner.units import DTYPE_BYTES, KV_DTYPES, MEGA, TERA, WEIGHT_DTYPES
from ui.format import md_escape
from ui.state import SCENARIO_KEY

CHUNK_OPTIONS = tuple(2**k for k in range(4, 21))  # 16 … 1,048,576 tokens
#: The batch slider's stops: about ×1.5 apart from 1 to 4,096 (the number box beside it takes any batch).
BATCH_STOPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)
#: Slider keys that mirror a number box (the box holds the link key; each moves the other).
SLIDER_OF = {"batch": "_batch_stops", "chunk": "_chunk_stops"}
CALIBRATION_KEYS = ("cal_total_gib", "cal_weights_gib", "cal_act_gib", "cal_nontorch_gib", "cal_graph_gib")
HF_MESSAGE_KEY = "_hf_message"
#: The config.json uploader's limit, in the MB Streamlit counts (what it prints under the box).
CONFIG_LIMIT_MB = max(1, MAX_CONFIG_BYTES // int(MEGA))
_OVERRIDE_LABELS = {
    "layers": ("Layers", "Transformer blocks; blank = the preset's value."),
    "hidden": ("Hidden size", "Model width d_model, elements; blank = the preset's value."),
    "heads": ("Attention heads", "Query heads per layer; blank = the preset's value."),
    "head_dim": ("Head dim", "Elements per attention head; blank = the preset's value."),
    "ffn": ("FFN size", "Dense MLP intermediate size, elements; blank = the preset's value."),
    "vocab": ("Vocabulary", "Vocabulary size, tokens; blank = the preset's value."),
}


def field_bounds(name: str) -> tuple[float | None, float | None, bool]:
    """(low, high, low_is_strict) of a numeric Scenario field, from its pydantic metadata."""
    lo = hi = None
    strict = False
    for m in FIELDS[name].metadata:
        if getattr(m, "ge", None) is not None:
            lo, strict = m.ge, False
        if getattr(m, "gt", None) is not None:
            lo, strict = m.gt, True
        if getattr(m, "le", None) is not None:
            hi = m.le
    return lo, hi, strict


def gpu_options(catalog: Catalog) -> list[str]:
    """Every selectable profile, grouped: vendor, generation oldest first, then measured ones."""
    profiles = {**catalog.gpus, **catalog.measured}
    return sorted(profiles, key=lambda k: profiles[k].group_order)


def gpu_label(catalog: Catalog, key: str) -> str:
    """ "NVIDIA · Hopper — H200 SXM · 131 GiB": the group first, so the list reads grouped."""
    gpu = catalog.profile(key)
    if gpu is None:
        return key
    name = gpu.name.removeprefix(f"{gpu.vendor} ") if not gpu.calibrated else gpu.name  # the group names the vendor
    return f"{gpu.group} — {name} · {fmt_bytes(gpu.memory_bytes)}"


def model_options(catalog: Catalog) -> list[str]:
    """Every preset grouped by family (in ``MODEL_FAMILIES`` order), then the custom shape."""
    models = catalog.models
    return sorted(models, key=lambda k: (models[k].family_order, models[k].family, models[k].name)) + [CUSTOM_MODEL]


def model_label(catalog: Catalog, key: str) -> str:
    """ "Qwen (Alibaba) — Qwen3-8B": the family first, so the list reads grouped (a custom shape's own name
    is in the caption under the box and in the header)."""
    if key == CUSTOM_MODEL:
        return "Custom shape (config.json or code)"
    m = catalog.models.get(key)
    return key if m is None else f"{m.family} — {m.name}"


def gpu_facts(gpu: Any) -> str:
    """The chosen profile's key facts, one line."""
    price = "not priced" if gpu.price_per_gpu_hour_usd <= 0 else f"{fmt_usd(gpu.price_per_gpu_hour_usd)}/GPU-h"
    return (
        f"{fmt_bytes(gpu.memory_bytes)} · {fmt_num(gpu.memory_bandwidth_bytes_per_s / TERA)} TB/s · "
        f"{fmt_num(gpu.peak_flop_per_s['bf16'] / TERA)} TFLOP/s bf16 · {price}"
    )


def model_facts(m: ModelSpec, named: bool = False) -> str:
    """The chosen shape's key facts, one line: layers by kind, attention, KV per token, context (led by the
    model's name when ``named``: a custom shape's)."""
    kv = fmt_bytes(kv_elements_per_token(m) * DTYPE_BYTES["bf16"])
    state = f" + {fmt_bytes(state_bytes_per_sequence(m))} state per sequence" if m.is_hybrid else ""
    return (f"{m.name}: " if named else "") + (
        f"{m.layers} layers ({m.layer_summary}) · {m.attention_kind} · KV {kv}/token (bf16){state} · "
        f"{fmt_count(m.context_window_tokens)}-token context"
    )


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def attention_kind(kv_heads: int, heads: int) -> str:
    return "MHA" if kv_heads == heads else "MQA" if kv_heads == 1 else "GQA"


def base_model(state: Mapping[str, Any], catalog: Catalog) -> tuple[ModelSpec | None, str | None]:
    """The preset (or decoded custom shape) before overrides; (None, reason) if unreadable."""
    if state.get("model") == CUSTOM_MODEL:
        try:
            return decode_model(state.get("custom") or "", name=state.get("custom_name") or "Custom model"), None
        except ValueError as exc:
            return None, str(exc)
    return catalog.models.get(state.get("model", "")), None


def scenario_from_state(state: Mapping[str, Any], base: ModelSpec | None) -> tuple[Scenario | None, list[str]]:
    """The Scenario the widget values describe (pure).

    kv_heads equal to the preset's, and any kv_heads/head_dim on an MLA model,
    become None (the preset's own value) so the link stays minimal; a custom
    shape code is dropped unless model=custom.
    """
    data = {k: state.get(k, getattr(DEFAULTS, k)) for k in FIELDS}
    if data["model"] != CUSTOM_MODEL:
        data["custom"] = ""
        data["custom_name"] = ""
    if base is None or base.is_mla:
        data["kv_heads"] = None
        if base is not None:
            data["head_dim"] = None
    elif data["kv_heads"] == base.kv_heads:
        data["kv_heads"] = None
    try:
        return Scenario.model_validate(data), []
    except ValidationError as exc:
        return None, [format_validation_error(exc)]


def closest(options: list[int], target: int) -> int:
    return min(options, key=lambda d: (abs(d - target), -d))


def enforce_cross_field_rules(ss: Any, base: ModelSpec | None) -> list[str]:
    """Fix session values that violate a rule spanning two widgets; one line per fix.

    Runs before the widgets exist, so the fixed values are what they show.
    """
    notes = []
    quant, wdtype = ss.get("quant") or "", ss.get("wdtype", DEFAULTS.wdtype)
    if quant and quant not in compatible_quants(wdtype):
        notes.append(f"quant={quant}: does not store {wdtype} weights; using the usual layout")
        ss["quant"] = ""
    if base is not None and base.is_mla:
        for key in ("kv_heads", "head_dim"):
            if ss.get(key) is not None:
                notes.append(f"{key}={ss[key]}: not applicable to an MLA model ({base.name}); ignored")
                ss[key] = None
    elif base is not None:
        heads = ss.get("heads") or base.heads
        options = divisors(heads)
        current = ss.get("kv_heads")
        if current not in options:
            chosen = closest(options, current if current is not None else base.kv_heads)
            if current is not None:
                notes.append(f"kv_heads={current}: must divide heads={heads}; using {chosen}")
            ss["kv_heads"] = chosen
    if ss.get("prefix", 0) > ss.get("prompt", DEFAULTS.prompt):
        ss["prefix"] = ss["prompt"]
    return notes


# --- widget helpers -----------------------------------------------------------------------


def _int_input(st: Any, key: str, label: str, help: str, step: int = 1, max_value: int | None = None, **kw: Any) -> Any:
    lo, hi, _ = field_bounds(key)
    return st.number_input(
        label,
        min_value=int(lo),
        max_value=int(hi if max_value is None else max_value),
        step=step,
        key=key,
        help=help,
        **kw,
    )


def _float_input(st: Any, key: str, label: str, help: str, step: float, floor: float | None = None, **kw: Any) -> Any:
    """A float number input; a strict lower bound (> 0) uses ``floor`` or the current value if smaller."""
    lo, hi, strict = field_bounds(key)
    if strict:
        current = st.session_state.get(key)
        lo = min(floor, current) if current is not None else floor
    return st.number_input(
        label, min_value=float(lo), max_value=float(hi), step=step, format="%g", key=key, help=help, **kw
    )


def _slider(st: Any, key: str, label: str, help: str, step: float = 0.01, fmt: str = "%.2f", **kw: Any) -> Any:
    lo, hi, _ = field_bounds(key)
    return st.slider(label, min_value=float(lo), max_value=float(hi), step=step, format=fmt, key=key, help=help, **kw)


# --- callbacks (run before the next script run, so they may set widget state) ---------------


def _on_model_change(st: Any, catalog: Catalog) -> None:
    """A new model starts from its own shape: overrides cleared; switching to custom starts
    from the shape that was on screen."""
    ss = st.session_state
    previous = ss.get(SCENARIO_KEY)
    for key in SHAPE_KEYS:
        ss[key] = None
    if ss.get("model") == CUSTOM_MODEL and not ss.get("custom") and previous is not None:
        with contextlib.suppress(ScenarioError):  # an unresolvable scenario leaves the code empty
            ss["custom"] = encode_model(resolve(previous, catalog).model)


def custom_name_from(name_or_path: object, file_name: str | None) -> str:
    """The custom model's display name: config.json's ``_name_or_path``, else the uploaded file's name
    (unless it is plain ``config.json``); characters outside ``CUSTOM_NAME_PATTERN`` become '-', ≤ 100."""
    text = name_or_path.strip() if isinstance(name_or_path, str) else ""
    if not text and file_name:
        stem = file_name.rsplit("/", 1)[-1].removesuffix(".json")
        text = "" if stem.lower() == "config" else stem
    clean = re.sub(r"[^A-Za-z0-9 ._/+()-]", "-", text).strip()
    return clean[:100]


def _on_import_config(st: Any, source: str) -> None:
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


# --- sections ---------------------------------------------------------------------------------


def _hardware(st: Any, catalog: Catalog) -> None:
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
    _int_input(
        st, "tp", "GPUs per replica (tp)", "Tensor-parallel degree: GPUs one model replica is split over; count."
    )
    _layout(st)
    _engine(st, catalog)


def _layout(st: Any) -> None:
    """Pipeline stages, data-parallel attention ranks and expert parallelism (docs/model.md "Parallelism")."""
    ss = st.session_state
    opened = any(ss.get(k, 1) != 1 for k in ("pp", "dp", "ep"))
    with st.expander("Multi-GPU layout (pp, dp, ep)", expanded=opened):
        _int_input(
            st,
            "pp",
            "Pipeline stages (pp)",
            "Layers split over pp stages of tp GPUs each (vLLM --pipeline-parallel-size); an instance runs on "
            "tp × dp × pp GPUs, across nodes of the profile's gpus_per_node.",
        )
        _int_input(
            st,
            "dp",
            "Data-parallel attention ranks (dp)",
            "MoE models: dp ranks of tp GPUs each hold their own sequences and KV cache and share the expert layers "
            "(vLLM --data-parallel-size, SGLang --enable-dp-attention). Dense models: 1 (use replicas).",
        )
        _int_input(
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


def profile_in_force(catalog: Catalog, state: Mapping[str, Any]) -> str:
    """One line naming the engine profile and the GPU family whose fitted efficiencies are in force."""
    engine = catalog.engines.get(state.get("engine", DEFAULTS.engine))
    gpu = catalog.profile(state.get("gpu", DEFAULTS.gpu))
    if engine is None or gpu is None:
        return ""
    if gpu.calibrated:
        return f"{engine.name}: the measured machine runs at its measured rates (no engine efficiencies)."
    t = resolve_timing(engine.timing, gpu, "")
    line = (
        f"In force: {engine.name} {engine.version} profile, {t.family} family — MFU {fmt_num(t.matmul_frac)} "
        f"(8-bit {fmt_num(t.matmul_frac_8bit)}), MBU {fmt_num(t.bandwidth_frac)}, "
        f"{fmt_seconds(t.step_overhead_s)} per step + {fmt_seconds(t.layer_overhead_s)} per layer "
        f"(decode {fmt_seconds(t.decode_layer_overhead_s)})"
    )
    if state.get("timing"):
        line += f"; calibrated from your benchmark: timing={state['timing']}"
    return line + "."


def _engine(st: Any, catalog: Catalog) -> None:
    keys = sorted(catalog.engines, key=lambda k: (k != DEFAULTS.engine, k))
    st.selectbox(
        "Serving engine",
        keys,
        key="engine",
        format_func=lambda k: f"{catalog.engines[k].name} {catalog.engines[k].version}",
        help="Engine profile (planner/data/engines/*.toml): the efficiency parameters fitted to published "
        "measurements of that engine — per-step and per-layer costs, matmul and bandwidth shares per GPU family.",
    )
    line = profile_in_force(catalog, st.session_state)
    if line:
        st.caption(md_escape(line))


def _model(st: Any, catalog: Catalog, base: ModelSpec | None, base_problem: str | None) -> None:
    ss = st.session_state
    st.header("Model")
    st.selectbox(
        "Model preset",
        model_options(catalog),
        key="model",
        format_func=lambda k: model_label(catalog, k),
        on_change=_on_model_change,
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
    c1, c2 = st.columns(2)
    c1.selectbox(
        "Weight dtype",
        WEIGHT_DTYPES,
        key="wdtype",
        help="Storage type of the weights: bytes per parameter (int4 adds group scales).",
    )
    c2.selectbox("KV dtype", KV_DTYPES, key="kvdtype", help="Storage type of the KV cache: bytes per cached element.")
    _quantisation(st)
    with st.expander("Shape overrides"):
        for key, (label, help) in _OVERRIDE_LABELS.items():
            preset = getattr(base, key, None) if base is not None else None
            _int_input(
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
            on_change=_on_import_config,
            args=(st, "file"),
            max_upload_size=CONFIG_LIMIT_MB,
            help=f"The model's config.json (≤ {CONFIG_LIMIT_MB} MB), read as JSON only; loads on upload.",
        )
        st.text_area("…or paste its text", key="_hf_text", height=120, help="The JSON text of a config.json (≤ 1 MB).")
        st.button("Use pasted config", key="_hf_go", on_click=_on_import_config, args=(st, "text"))
        message = import_message(ss)
        if message:
            getattr(st, message[0])(md_escape(message[1]))


def _quantisation(st: Any) -> None:
    """The layout of quantised weights (``planner.model.quantization``): scales, and what stays 16 bit."""
    ss = st.session_state
    options = [""] + compatible_quants(ss.get("wdtype", DEFAULTS.wdtype))
    if len(options) <= 2 and options[-1] == "none":
        return
    c1, c2 = st.columns(2)
    c1.selectbox(
        "Quantisation layout",
        options,
        key="quant",
        format_func=lambda k: k or f"usual ({scheme_for(ss.get('wdtype', DEFAULTS.wdtype)).key})",
        help="How the checkpoint stores the weights (scales per tensor, channel, block or group; NVFP4/MXFP4); "
        "embeddings and the LM head stay 16 bit (docs/model.md §2).",
    )
    scheme = scheme_for(ss.get("wdtype", DEFAULTS.wdtype), ss.get("quant") or "")
    if scheme.scale in ("group", "group_zero"):
        with c2:
            _int_input(
                st, "qgroup", "Group size", "Weights per scale group (GPTQ/AWQ/W4A16); 0 = per channel.", step=32
            )


def _sync_slider(st: Any, key: str) -> None:
    """The stepped slider follows its number box (a callback: runs before the next script run)."""
    st.session_state[key] = st.session_state[SLIDER_OF[key]]


def _boxed_slider(st: Any, key: str, label: str, help: str, stops: tuple[int, ...], step: int) -> None:
    """A number box (the link key: any value in range) and under it a slider over ``stops`` (and the
    current value) that sets the box — one key press moves a stop, not one unit."""
    ss = st.session_state
    current = int(ss.get(key, getattr(DEFAULTS, key)))
    ss[SLIDER_OF[key]] = current
    _int_input(st, key, label, help, step=step)
    st.select_slider(
        f"{label} (stepped)",
        options=sorted(set(stops) | {current}),
        key=SLIDER_OF[key],
        format_func=fmt_count,
        on_change=_sync_slider,
        args=(st, key),
        label_visibility="collapsed",
        help=help,
    )


def _workload(st: Any) -> None:
    st.header("Workload")
    _boxed_slider(
        st,
        "batch",
        "Batch (concurrent sequences)",
        "Sequences decoding together in each step; count. Type any value, or drag over 1 … 4,096 in ×1.5 steps.",
        BATCH_STOPS,
        step=1,
    )
    c1, c2 = st.columns(2)
    with c1:
        _int_input(st, "prompt", "Prompt tokens", "Input tokens per request; tokens.", step=256)
    with c2:
        _int_input(st, "output", "Output tokens", "Generated tokens per request; tokens.", step=64)
    _boxed_slider(
        st,
        "chunk",
        "Prefill chunk",
        "Chunked-prefill token budget per scheduler step (vLLM max_num_batched_tokens); tokens. Type any value, "
        "or drag over the powers of two.",
        CHUNK_OPTIONS,
        step=256,
    )


def _prompt_cache(st: Any, base: ModelSpec | None) -> None:
    ss = st.session_state
    st.header("Prompt caching")
    _slider(
        st,
        "hit",
        "Cache hit rate",
        "Share of requests whose prefix is already cached; fraction 0–1 (unused while requests/min is set).",
        disabled=ss.get("rpm", 0) > 0,
    )
    c1, c2 = st.columns(2)
    with c1:
        _int_input(
            st,
            "prefix",
            "Cacheable prefix",
            "Shared prompt prefix that can be cached, ≤ prompt; tokens.",
            step=256,
            max_value=int(ss.get("prompt", DEFAULTS.prompt)),
        )
    with c2:
        st.radio(
            "Cache TTL",
            ("5m", "1h"),
            key="ttl",
            horizontal=True,
            help="Cache lifetime: 5 minutes (write 1.25× input price) or 1 hour (write 2×).",
        )
    c1, c2 = st.columns(2)
    with c1:
        _float_input(
            st,
            "rpm",
            "Requests/min per prefix",
            "Traffic sharing one prefix; > 0 derives the hit rate from the TTL; requests per minute.",
            step=1.0,
        )
    with c2:
        minimum = (base.min_cacheable_prompt_tokens or 1024) if base is not None else 1024
        _int_input(
            st,
            "min_prefix",
            "Minimum cacheable",
            "Shortest prefix the provider caches; tokens; blank = the model's.",
            step=256,
            value=None,
            placeholder=f"model: {fmt_count(minimum)}",
        )
    if ss.get("rpm", 0) > 0:
        c1, c2 = st.columns(2)
        with c1:
            st.radio(
                "Requests on a prefix",
                ("arrivals", "followups"),
                key="cache_traffic",
                format_func=lambda k: "arrive independently" if k == "arrivals" else "follow a response",
                help="Independent arrivals (Poisson; every request refreshes the TTL): hit rate 1 − exp(−λ·TTL). "
                "Follow-ups sent after the previous response ends: the API's response time eats the window.",
            )
        if ss.get("cache_traffic") == "followups":
            with c2:
                _float_input(
                    st,
                    "response_s",
                    "API response time",
                    "How long the API takes to answer before the follow-up is sent; seconds.",
                    step=1.0,
                )
    c1, c2 = st.columns(2)
    with c1:
        _float_input(st, "price_in", "Input price", "API price of input tokens; USD per million tokens.", step=0.5)
    with c2:
        _float_input(st, "price_out", "Output price", "API price of output tokens; USD per million tokens.", step=0.5)


def _speculative(st: Any, catalog: Catalog) -> None:
    ss = st.session_state
    st.header("Speculative decoding")
    st.toggle(
        "Speculative decoding",
        key="spec",
        help="A draft proposes γ tokens; the target verifies them in one pass (on/off).",
    )
    st.selectbox(
        "Draft",
        [""] + model_options(catalog)[:-1],
        key="draft",
        format_func=lambda k: "Cost ratio (no draft model)" if not k else model_label(catalog, k),
        help="Draft model preset run on the same GPUs, or none to give its step cost as a ratio.",
    )
    if not ss.get("draft"):
        _slider(
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
        _slider(st, "alpha", "α (acceptance)", "Probability each draft token is accepted; fraction 0–1.")


def _profile_fracs(catalog: Catalog, state: Mapping[str, Any]) -> tuple[float, float] | None:
    """(MFU, MBU) the engine profile gives the scenario's GPU and weight dtype, or None."""
    engine = catalog.engines.get(state.get("engine", DEFAULTS.engine))
    gpu = catalog.profile(state.get("gpu", DEFAULTS.gpu))
    if engine is None or gpu is None or gpu.calibrated:
        return None
    t = resolve_timing(engine.timing, gpu, state.get("timing") or "")
    eight = compute_dtype(state.get("wdtype", DEFAULTS.wdtype), gpu) != "bf16"
    return (t.matmul_frac_8bit if eight else t.matmul_frac), t.bandwidth_frac


def _advanced(st: Any, catalog: Catalog) -> None:
    ss = st.session_state
    with st.expander("Advanced"):
        fracs = _profile_fracs(catalog, ss)
        c1, c2 = st.columns(2)
        with c1:
            _float_input(
                st,
                "mfu",
                "MFU",
                "Large-matmul FLOP/s ÷ dense peak; fraction; blank = the engine profile's fitted value.",
                step=0.01,
                value=None,
                placeholder=f"profile: {fmt_num(fracs[0])}" if fracs else "profile",
            )
        with c2:
            _float_input(
                st,
                "mbu",
                "MBU",
                "Weight-streaming bytes/s ÷ peak bandwidth; fraction; blank = the engine profile's fitted value.",
                step=0.01,
                value=None,
                placeholder=f"profile: {fmt_num(fracs[1])}" if fracs else "profile",
            )
        chosen = catalog.profile(ss.get("gpu", ""))
        if chosen is not None and chosen.calibrated:
            st.caption(
                "The selected profile was measured (its rates are achieved ones), so it runs at MFU = MBU = 1; "
                "these two apply to the datasheet GPUs it is compared with."
            )
        _slider(
            st,
            "mem_util",
            "Memory utilisation",
            "Share of GPU memory the server may use (vLLM gpu_memory_utilization); fraction.",
        )
        _int_input(st, "block", "KV block size", "Paged-attention block size; tokens per block.", step=16)
        st.toggle(
            "Hybrid KV-cache manager",
            key="hybrid_kv",
            help="vLLM's hybrid manager (on by default) keeps only the window of sliding-window layers; off "
            "(--disable-hybrid-kv-cache-manager) they are allocated like full ones.",
        )
        calibrated = {k: ss.get(k) for k in CALIBRATION_KEYS if ss.get(k) is not None}
        if calibrated:
            st.caption(
                md_escape("Memory terms from a start-up log: " + ", ".join(f"{k}={v}" for k, v in calibrated.items()))
            )
            st.button("Clear the log's figures", key="_cal_clear", on_click=_clear_calibration, args=(st,))
        gpu = catalog.profile(ss.get("gpu", ""))
        _float_input(
            st,
            "gpu_price",
            "GPU price",
            "Rental price; USD per GPU-hour; blank = the profile's.",
            step=0.1,
            value=None,
            placeholder=f"profile: {fmt_usd(gpu.price_per_gpu_hour_usd)}" if gpu else "profile",
        )
        c1, c2 = st.columns(2)
        with c1:
            _float_input(st, "slo_ttft_s", "TTFT target", "Time-to-first-token SLO; seconds.", step=0.1, floor=0.001)
        with c2:
            _float_input(
                st, "slo_tpot_s", "TPOT target", "Time-per-output-token SLO; seconds.", step=0.005, floor=0.0001
            )


def _clear_calibration(st: Any) -> None:
    for key in CALIBRATION_KEYS:
        st.session_state[key] = None


def render(st: Any, catalog: Catalog) -> tuple[Scenario, list[str]]:
    """Draw the sidebar (inside ``with st.sidebar``); returns the Scenario and adjustment notes."""
    ss = st.session_state
    if catalog.profile(ss.get("gpu", "")) is None and catalog.gpus:
        ss["gpu"] = DEFAULTS.gpu if DEFAULTS.gpu in catalog.gpus else sorted(catalog.gpus)[0]
    base, base_problem = base_model(ss, catalog)
    notes = enforce_cross_field_rules(ss, base)
    _hardware(st, catalog)
    _model(st, catalog, base, base_problem)
    _workload(st)
    _prompt_cache(st, base)
    _speculative(st, catalog)
    _advanced(st, catalog)
    scenario, problems = scenario_from_state(ss, base)
    if scenario is None:
        notes += [f"{p}; showing the last valid scenario" for p in problems]
        scenario = ss.get(SCENARIO_KEY, DEFAULTS)
    return scenario, notes
