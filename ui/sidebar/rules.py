"""The sidebar's state rules: the base model, the scenario from the widget state, cross-field rules, the
profile in force (pure functions of the session state; tests call them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from planner.engine.evaluate import CUSTOM_MODEL
from planner.engine.inputs import compute_dtype
from planner.errors import format_validation_error
from planner.format import fmt_num, fmt_seconds
from planner.kernels.store import table_set
from planner.links import DEFAULTS, FIELDS
from planner.model.catalog import Catalog
from planner.model.custom_model import decode_model
from planner.model.engine_timing import resolve_timing
from planner.model.quantization import compatible_quants
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec
from planner.model.weight_plan import resolve_weights
from planner.units import US_PER_S
from ui.sidebar.options import (
    closest,
    divisors,
)


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


def enforce_cross_field_rules(ss: Any, base: ModelSpec | None) -> list[str]:
    """Fix session values that violate a rule spanning two widgets; one line per fix.

    Runs before the widgets exist, so the fixed values are what they show.
    """
    notes = []
    quant, wdtype = ss.get("quant") or "", ss.get("wdtype", DEFAULTS.wdtype)
    if quant and wdtype and quant not in compatible_quants(wdtype):
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


def profile_in_force(catalog: Catalog, state: Mapping[str, Any]) -> str:
    """One line naming the engine profile and the GPU family whose fitted efficiencies are in force."""
    engine = catalog.engine(state.get("engine", DEFAULTS.engine))
    gpu = catalog.profile(state.get("gpu", DEFAULTS.gpu))
    if engine is None or gpu is None:
        return ""
    if gpu.calibrated:
        return f"{engine.name}: the measured machine runs at its measured rates (no engine efficiencies)."
    k = engine.kernels
    measured = k.enabled and table_set(gpu.key, k.engine, k.version) is not None
    if measured and state.get("mfu") is None and state.get("mbu") is None and not state.get("timing"):
        return (
            f"In force: {engine.label} profile (engine={engine.key}) on measured kernels ({k.engine} {k.version} "
            f"tables for this GPU) — {fmt_seconds(k.step_overhead_us / US_PER_S)} per step + "
            f"{fmt_seconds(k.layer_overhead_us / US_PER_S)} per layer (decode "
            f"{fmt_seconds(k.decode_layer_overhead_us / US_PER_S)}); an MFU or MBU set here switches to the fitted "
            "roofline."
        )
    t = resolve_timing(engine.timing, gpu, "")
    line = (
        f"In force: {engine.label} profile (engine={engine.key}), {t.family} family — MFU {fmt_num(t.matmul_frac)} "
        f"(8-bit {fmt_num(t.matmul_frac_8bit)}), MBU {fmt_num(t.bandwidth_frac)}, "
        f"{fmt_seconds(t.step_overhead_s)} per step + {fmt_seconds(t.layer_overhead_s)} per layer "
        f"(decode {fmt_seconds(t.decode_layer_overhead_s)})"
    )
    if state.get("timing"):
        line += f"; calibrated from your benchmark: timing={state['timing']}"
    return line + "."


def profile_fracs(catalog: Catalog, state: Mapping[str, Any]) -> tuple[float, float] | None:
    """(MFU, MBU) the engine profile gives the scenario's GPU and weight dtype, or None."""
    engine = catalog.engine(state.get("engine", DEFAULTS.engine))
    gpu = catalog.profile(state.get("gpu", DEFAULTS.gpu))
    if engine is None or gpu is None or gpu.calibrated:
        return None
    t = resolve_timing(engine.timing, gpu, state.get("timing") or "")
    wdtype = state.get("wdtype", DEFAULTS.wdtype) or (_checkpoint_wdtype(catalog, state) or "bf16")
    eight = compute_dtype(wdtype, gpu) != "bf16"
    return (t.matmul_frac_8bit if eight else t.matmul_frac), t.bandwidth_frac


def _checkpoint_wdtype(catalog: Catalog, state: Mapping[str, Any]) -> str | None:
    """The weight dtype of the preset's checkpoint in force (``weight_plan``), None for a custom shape."""
    model = catalog.models.get(state.get("model", ""))
    if model is None:
        return None
    scenario, _ = scenario_from_state(state, model)
    return resolve_weights(model, scenario).wdtype if scenario is not None else None
