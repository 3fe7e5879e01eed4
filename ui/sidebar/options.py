"""The sidebar's choices and bounds: widget stops, field bounds from the Scenario, option lists and labels."""

from __future__ import annotations

from typing import Any

from planner.engine.evaluate import CUSTOM_MODEL
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_usd
from planner.links import DEFAULTS, FIELDS
from planner.model.catalog import Catalog
from planner.model.engine_versions import engine_name, sort_key
from planner.model.hf_import import MAX_CONFIG_BYTES
from planner.model.params import kv_elements_per_token, state_bytes_per_sequence
from planner.model.specs import ModelSpec
from planner.units import DTYPE_BYTES, MEGA, TERA

CHUNK_OPTIONS = tuple(2**k for k in range(4, 21))  # 16 … 1,048,576 tokens


#: The batch slider's stops: about ×1.5 apart from 1 to 4,096 (the number box beside it takes any batch).
BATCH_STOPS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096)


#: Slider keys that mirror a number box (the box holds the link key; each moves the other).
SLIDER_OF = {"batch": "_batch_stops", "chunk": "_chunk_stops"}


CALIBRATION_KEYS = ("cal_total_gib", "cal_weights_gib", "cal_act_gib", "cal_nontorch_gib", "cal_graph_gib")


HF_MESSAGE_KEY = "_hf_message"


#: The config.json uploader's limit, in the MB Streamlit counts (what it prints under the box).
CONFIG_LIMIT_MB = max(1, MAX_CONFIG_BYTES // int(MEGA))


OVERRIDE_LABELS = {
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


#: The longest GPU option the sidebar shows whole at its default width (issue 30: "NVIDIA · Hopper — H100
#: SXM · 74" was cut); the full name, group and memory are in the caption under the box.
MAX_GPU_LABEL_CHARS = 32


def gpu_label(catalog: Catalog, key: str) -> str:
    """ "H200 SXM · 141 GB · Hopper": the name first (the list is in group order, the generation last), short
    enough for the sidebar (``MAX_GPU_LABEL_CHARS``: a long name drops the memory, then is shortened)."""
    gpu = catalog.profile(key)
    if gpu is None:
        return key
    if gpu.calibrated:  # "AMD EPYC (2 cores) (measured, numpy fp32)" → "AMD EPYC · measured, numpy fp32"
        how = gpu.name[gpu.name.rfind("(") + 1 :].rstrip(")") if "(" in gpu.name else "measured"
        label = f"{gpu.name.split(' (')[0]} · {how}"
        return label if len(label) <= MAX_GPU_LABEL_CHARS else label[: MAX_GPU_LABEL_CHARS - 1] + "…"
    name = gpu.name.removeprefix(f"{gpu.vendor} ").removeprefix("GeForce ")
    memory = " ".join((gpu.memory_datasheet or fmt_bytes(gpu.memory_bytes)).split()[:2])
    # a name still too long drops its generation word (the list's group header says it): "RTX PRO 6000 Server Edition"
    short = " ".join(name.replace(gpu.generation, " ").split()) if gpu.generation else name
    for label in (f"{name} · {memory} · {gpu.generation}", f"{name} · {memory}", name, f"{short} · {memory}", short):
        if len(label) <= MAX_GPU_LABEL_CHARS:
            return label
    return short[: MAX_GPU_LABEL_CHARS - 1] + "…"


def engine_options(catalog: Catalog) -> list[str]:
    """Every engine version: the default engine first, then by name; newest version first within each."""
    return sorted(catalog.engines, key=lambda k: (engine_name(k) != DEFAULTS.engine, sort_key(k)))


def engine_label(catalog: Catalog, key: str) -> str:
    """'vLLM 0.19.0 (newest)': the release, and whether a link without a version gets it."""
    engine = catalog.engines.get(key)
    if engine is None:
        return key
    newest = catalog.engine(engine.kind)
    return engine.label + (" (newest)" if newest is not None and newest.key == key and "@" in key else "")


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
        f"{gpu.name} ({gpu.group}): "
        f"{gpu.memory_words} · {fmt_num(gpu.memory_bandwidth_bytes_per_s / TERA)} TB/s · "
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


def closest(options: list[int], target: int) -> int:
    return min(options, key=lambda d: (abs(d - target), -d))
