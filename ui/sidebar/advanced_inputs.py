"""The sidebar's prompt-cache and advanced sections (efficiency overrides, calibration, prices)."""

from __future__ import annotations

from typing import Any

from planner.format import fmt_count, fmt_num, fmt_usd
from planner.links import DEFAULTS
from planner.model.catalog import Catalog
from planner.model.specs import ModelSpec
from ui.format import md_escape
from ui.sidebar.options import (
    CALIBRATION_KEYS,
)
from ui.sidebar.rules import (
    profile_fracs,
)
from ui.sidebar.widgets import float_input, int_input, slider
from ui.slo_inputs import stat_input, target_inputs


def prompt_cache_section(st: Any, base: ModelSpec | None) -> None:
    ss = st.session_state
    st.header("Prompt caching")
    slider(
        st,
        "hit",
        "Cache hit rate",
        "Share of requests whose prefix is already cached; fraction 0–1 (unused while requests/min is set).",
        disabled=ss.get("rpm", 0) > 0,
    )
    c1, c2 = st.columns(2)
    with c1:
        int_input(
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
        float_input(
            st,
            "rpm",
            "Requests/min per prefix",
            "Traffic sharing one prefix; > 0 derives the hit rate from the TTL; requests per minute.",
            step=1.0,
        )
    with c2:
        minimum = (base.min_cacheable_prompt_tokens or 1024) if base is not None else 1024
        int_input(
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
                float_input(
                    st,
                    "response_s",
                    "API response time",
                    "How long the API takes to answer before the follow-up is sent; seconds.",
                    step=1.0,
                )
    c1, c2 = st.columns(2)
    with c1:
        float_input(st, "price_in", "Input price", "API price of input tokens; USD per million tokens.", step=0.5)
    with c2:
        float_input(st, "price_out", "Output price", "API price of output tokens; USD per million tokens.", step=0.5)


def advanced_section(st: Any, catalog: Catalog) -> None:
    ss = st.session_state
    with st.expander("Advanced"):
        fracs = profile_fracs(catalog, ss)
        c1, c2 = st.columns(2)
        with c1:
            float_input(
                st,
                "mfu",
                "MFU",
                "Large-matmul FLOP/s ÷ dense peak; fraction; blank = the engine profile's fitted value.",
                step=0.01,
                value=None,
                placeholder=f"profile: {fmt_num(fracs[0])}" if fracs else "profile",
            )
        with c2:
            float_input(
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
        engine = catalog.engine(ss.get("engine", DEFAULTS.engine))
        c1, c2 = st.columns(2)
        with c1:
            float_input(
                st,
                "mem_util",
                "Memory utilisation",
                "Share of GPU memory the server may use (vLLM gpu_memory_utilization, SGLang mem_fraction_static); "
                "fraction; blank = the engine version's own default (vLLM 0.33: 0.92; SGLang: its rule by GPU memory).",
                step=0.01,
                value=None,
                placeholder=_engine_default(engine, "mem_util"),
            )
        with c2:
            int_input(
                st,
                "block",
                "KV block size",
                "Paged-attention block (SGLang: page) size; tokens per block; blank = what the engine version picks "
                "(vLLM 0.33: its attention backend's, 16 for most models; SGLang: 1, or 64 on B200-class GPUs).",
                step=16,
                value=None,
                placeholder=_engine_default(engine, "block"),
            )
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
            st.button("Clear the log's figures", key="_cal_clear", on_click=clear_calibration, args=(st,))
        gpu = catalog.profile(ss.get("gpu", ""))
        float_input(
            st,
            "gpu_price",
            "GPU price",
            "Rental price; USD per GPU-hour; blank = the profile's.",
            step=0.1,
            value=None,
            placeholder=f"profile: {fmt_usd(gpu.price_per_gpu_hour_usd)}" if gpu else "profile",
        )
        power_inputs(st, gpu)
        stat_input(st, "slo_pct", ss.get("slo_pct", DEFAULTS.slo_pct))
        target_inputs(st, "")


def _engine_default(engine: Any, key: str) -> str:
    """The blank box's hint: whose default applies (the value itself is in the Explain tab and the CSV)."""
    label = engine.label if engine is not None else "engine"
    if key == "mem_util" and engine is not None and engine.memory.static_fraction is None:
        return f"{label}: {fmt_num(engine.memory.default_mem_util)}"
    if key == "block" and engine is not None and engine.memory.block_rule == "fixed":
        return f"{label}: {engine.memory.default_block_tokens}"
    return f"{label}'s own"


def power_inputs(st: Any, gpu: Any) -> None:
    """Power and energy (planner/engine/power.py): a board power cap, the electricity price, PUE and a rack or
    site power limit the sizing search holds."""
    tdp = getattr(gpu, "tdp_w", None)
    c1, c2 = st.columns(2)
    with c1:
        float_input(
            st,
            "gpu_power_w",
            "GPU board power",
            "Board power limit (a power cap); W; blank = the profile's TDP.",
            step=10.0,
            floor=1.0,
            value=None,
            placeholder=f"profile: {fmt_num(tdp)} W" if tdp else "not published",
        )
    with c2:
        float_input(st, "electricity_usd_per_kwh", "Electricity price", "Energy price; USD per kWh.", step=0.01)
    c1, c2 = st.columns(2)
    with c1:
        float_input(st, "pue", "PUE", "Power usage effectiveness: site power ÷ IT power; 1 = IT only.", step=0.05)
    with c2:
        float_input(
            st,
            "power_limit_kw",
            "Power limit",
            "Rack or site IT power the fleet must stay within; kW; 0 = none (the Sizing search holds it).",
            step=10.0,
        )


def clear_calibration(st: Any) -> None:
    for key in CALIBRATION_KEYS:
        st.session_state[key] = None
