"""How fast a serving engine's kernels and scheduler run: the ``[timing]`` part of an engine profile.

The efficiency model (docs/model.md §4–6) has two kinds of parameter:

* **engine-wide** (the engine's scheduler and kernels, on any GPU): a fixed cost per step
  and per layer (prefill steps launch eagerly, decode-only steps replay CUDA graphs), the
  matmul "half-saturation" token count, the attention kernels' shares of the peaks and
  how much of a GQA group's KV its decode kernel loads again per query head, the
  per-all-reduce software overhead and the all-reduce bus efficiency over NVLink-class and
  PCIe links;
* **per GPU family** (``hopper``, ``ampere``, ``ada``, ``blackwell``, ``cdna3``, ``other``):
  the plateau share of the dense matmul peak (16-bit and 8-bit) and the share of the HBM
  bandwidth the weight-streaming GEMMs reach.

Every efficiency is in (0, 1] and every overhead ≥ 0 (pydantic bounds, so a fitted or
user-made profile cannot leave them).  ``resolve_timing`` picks the GPU's family and
returns the values in SI units; ``parse_overrides`` reads the compact link form a
calibration writes (``timing=s35-l4.2-b0.81``, letter → field in ``OVERRIDE_LETTERS``).
An engine profile without a ``[timing]`` section is the plain roofline at the old
constants MFU 0.5 / MBU 0.7 (no overheads, no small-GEMM penalty).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from planner.model.specs import GPU
from planner.units import GB, US_PER_S

Family = Literal["hopper", "ampere", "ada", "blackwell", "cdna3", "other"]
FAMILIES: tuple[Family, ...] = ("hopper", "ampere", "ada", "blackwell", "cdna3", "other")
LinkKind = Literal["nvlink", "pcie"]

#: Shipped GPU profile key → family; other profiles are placed by name (``gpu_family``).
FAMILY_OF_KEY: dict[str, Family] = {
    "h100-sxm": "hopper",
    "h100-pcie": "hopper",
    "h200": "hopper",
    "a100-80gb-sxm": "ampere",
    "a100-40gb-sxm": "ampere",
    "l40s": "ada",
    "l4": "ada",
    "b200": "blackwell",
    "b300": "blackwell",
    "gb200": "blackwell",
    "mi300x": "cdna3",
    "mi325x": "cdna3",
    "mi355x": "cdna3",  # CDNA 4: no published serving rows to fit; CDNA 3's values, the nearest architecture
}
_FAMILY_BY_NAME: tuple[tuple[re.Pattern[str], Family], ...] = (
    (re.compile(r"\bGH200\b|\bH(100|200|800|20)\b"), "hopper"),
    (re.compile(r"\bA(100|800|10|30|40)\b"), "ampere"),
    (re.compile(r"\bL(40S?|4|20)\b|RTX (6000|4090)"), "ada"),
    (re.compile(r"\bG?B(100|200|300)\b"), "blackwell"),
    (re.compile(r"\bMI3\d\d"), "cdna3"),
)
#: One-way links at or below this are PCIe-class (PCIe Gen6 x16: 128 GB/s one way).
PCIE_MAX_BYTES_PER_S = 128 * GB

#: The previous fixed constants, used where a profile has no fitted value for a family.
LEGACY_MATMUL_FRAC = 0.5  # PaLM: 46 % MFU (Chowdhery et al. 2022); docs/model.md §4
LEGACY_BANDWIDTH_FRAC = 0.7  # Databricks, "LLM Inference Performance Engineering" (2023)

_FRAC = dict(gt=0.0, le=1.0)


class FamilyTiming(BaseModel):
    """What one GPU family's GEMMs reach under this engine (shares of the datasheet peaks)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    matmul_frac: float = Field(
        default=LEGACY_MATMUL_FRAC, gt=0.0, le=1.0, description="large-GEMM FLOP/s ÷ dense peak, 16-bit compute"
    )
    matmul_frac_8bit: float = Field(
        default=LEGACY_MATMUL_FRAC, gt=0.0, le=1.0, description="large-GEMM FLOP/s ÷ dense peak, fp8/int8/fp4 compute"
    )
    bandwidth_frac: float = Field(
        default=LEGACY_BANDWIDTH_FRAC, gt=0.0, le=1.0, description="weight-streaming bytes/s ÷ datasheet HBM bandwidth"
    )
    moe_matmul_frac: float = Field(
        default=1.0, gt=0.0, le=1.0, description="grouped expert GEMMs' share of the dense rate"
    )
    source: str = Field(default="", max_length=2000)


class EngineTiming(BaseModel):
    """The engine's fitted efficiency parameters (``[timing]`` of ``engine_profiles/*.toml``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(default="", max_length=4000, description="the fit that produced these values")
    fitted_rows: int = Field(default=0, ge=0, le=100_000, description="published measurements fitted")
    step_overhead_us: float = Field(
        default=0.0, ge=0.0, le=1e5, description="fixed cost of every step: scheduling, sampling, launch"
    )
    layer_overhead_us: float = Field(
        default=0.0, ge=0.0, le=1e4, description="fixed cost per layer of a step with prefill tokens (eager launches)"
    )
    decode_layer_overhead_us: float = Field(
        default=0.0, ge=0.0, le=1e4, description="fixed cost per layer of a decode-only step (CUDA-graph replay)"
    )
    matmul_half_tokens: float = Field(
        default=0.0, ge=0.0, le=1e5, description="tokens per step at which a GEMM runs at half its plateau FLOP/s"
    )
    attention_compute_frac: float = Field(
        default=LEGACY_MATMUL_FRAC, gt=0.0, le=1.0, description="attention FLOP/s ÷ the 16-bit dense peak"
    )
    attention_bandwidth_frac: float = Field(
        default=LEGACY_BANDWIDTH_FRAC, gt=0.0, le=1.0, description="attention KV bytes/s ÷ the datasheet bandwidth"
    )
    gqa_reread_frac: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="decode attention: share of the h/g query heads of a KV group that load the group's KV again "
        "(0: a grouped kernel loads it once; 1: once per query head)",
    )
    allreduce_overhead_us: float = Field(
        default=0.0, ge=0.0, le=1e4, description="software cost per all-reduce beyond the link's latency"
    )
    nvlink_bus_frac: float = Field(
        default=1.0, gt=0.0, le=1.0, description="all-reduce bus bandwidth ÷ NVLink-class link"
    )
    pcie_bus_frac: float = Field(default=1.0, gt=0.0, le=1.0, description="all-reduce bus bandwidth ÷ PCIe link")
    families: dict[Family, FamilyTiming] = Field(default_factory=dict)

    def family(self, name: Family) -> FamilyTiming:
        """The family's values, else the profile's ``other``, else the legacy constants."""
        return self.families.get(name) or self.families.get("other") or FamilyTiming()


def gpu_family(gpu: GPU) -> Family:
    """The GPU's family: the shipped key table, else its name, else ``other``."""
    if gpu.key in FAMILY_OF_KEY:
        return FAMILY_OF_KEY[gpu.key]
    for pattern, fam in _FAMILY_BY_NAME:
        if pattern.search(gpu.name):
            return fam
    return "other"


def link_kind(gpu: GPU) -> LinkKind:
    return "pcie" if gpu.interconnect_bytes_per_s <= PCIE_MAX_BYTES_PER_S else "nvlink"


@dataclass(frozen=True)
class ResolvedTiming:
    """One engine × GPU's efficiency parameters in SI units (what ``inputs.from_specs`` reads)."""

    family: str
    link: str
    step_overhead_s: float
    layer_overhead_s: float
    decode_layer_overhead_s: float
    matmul_half_tokens: float
    matmul_frac: float
    matmul_frac_8bit: float
    bandwidth_frac: float
    moe_matmul_frac: float
    attention_compute_frac: float
    attention_bandwidth_frac: float
    gqa_reread_frac: float
    allreduce_overhead_s: float
    bus_frac: float


#: Letter of the link form → the parameter it sets, and its unit scale to SI.
OVERRIDE_LETTERS: dict[str, tuple[str, float]] = {
    "s": ("step_overhead_s", 1 / US_PER_S),
    "l": ("layer_overhead_s", 1 / US_PER_S),
    "d": ("decode_layer_overhead_s", 1 / US_PER_S),
    "h": ("matmul_half_tokens", 1.0),
    "c": ("matmul_frac", 1.0),
    "q": ("matmul_frac_8bit", 1.0),
    "b": ("bandwidth_frac", 1.0),
    "e": ("moe_matmul_frac", 1.0),
    "a": ("attention_compute_frac", 1.0),
    "k": ("attention_bandwidth_frac", 1.0),
    "g": ("gqa_reread_frac", 1.0),
    "r": ("allreduce_overhead_s", 1 / US_PER_S),
    "n": ("bus_frac", 1.0),
}
#: The fractions among them: in (0, 1]; the rest are ≥ 0.
FRACTION_FIELDS = frozenset(
    {
        "matmul_frac",
        "matmul_frac_8bit",
        "bandwidth_frac",
        "moe_matmul_frac",
        "attention_compute_frac",
        "attention_bandwidth_frac",
        "bus_frac",
    }
)
OVERRIDE_PATTERN = r"^$|^[a-z][0-9.]+(-[a-z][0-9.]+)*$"
_OVERRIDE_RE = re.compile(OVERRIDE_PATTERN)
_LETTERS = re.compile(r"^[a-z]|-[a-z]")
_ITEM = re.compile(r"([a-z])([0-9.]+)")
#: Upper bounds of the non-fraction overrides (SI), as in ``EngineTiming``.
_MAX = {
    "step_overhead_s": 0.1,
    "layer_overhead_s": 0.01,
    "decode_layer_overhead_s": 0.01,
    "matmul_half_tokens": 1e5,
    "allreduce_overhead_s": 0.01,
    "gqa_reread_frac": 1.0,
}


_SCALE = {name: scale for name, scale in OVERRIDE_LETTERS.values()}


def override_problem(name: str, value: float) -> str | None:
    """Why ``value`` (SI) is outside what parameter ``name`` may be — fractions in (0, 1], the rest in
    [0, ``_MAX``] — in the link form's units; None when it is inside (the one rule for both)."""
    if name in FRACTION_FIELDS:
        return None if 0.0 < value <= 1.0 else f"{name} must be in (0, 1]"
    scale = _SCALE[name]
    if 0.0 <= value <= _MAX[name]:
        return None
    return f"{name} must be in [0, {_MAX[name] / scale:g}] ({'µs' if scale < 1 else 'tokens'})"


def parse_overrides(text: str) -> dict[str, float]:
    """``"s35-l4.2-b0.81"`` → {step_overhead_s: 3.5e-5, layer_overhead_s: 4.2e-6, bandwidth_frac: 0.81}.

    Raises ValueError naming each bad item (unknown letter, not a number, out of bounds)."""
    if not text:
        return {}
    if not _OVERRIDE_RE.fullmatch(text):
        raise ValueError("expected letter-number items joined by '-', e.g. s35-l4.2-b0.81")
    out: dict[str, float] = {}
    problems = []
    for item in text.split("-"):
        m = _ITEM.fullmatch(item)
        letter, raw = (m.group(1), m.group(2)) if m else (item[:1], item[1:])
        if letter not in OVERRIDE_LETTERS:
            problems.append(f"{item!r}: unknown letter {letter!r}; allowed: {', '.join(OVERRIDE_LETTERS)}")
            continue
        name, scale = OVERRIDE_LETTERS[letter]
        try:
            v = float(raw) * scale
        except ValueError:
            problems.append(f"{item!r}: not a number")
            continue
        problem = override_problem(name, v)
        if problem:
            problems.append(f"{item!r}: {problem}")
        else:
            out[name] = v
    if problems:
        raise ValueError("; ".join(problems))
    return out


def format_overrides(values: dict[str, float]) -> str:
    """The link form of ``values`` (SI), four significant digits per item, in letter order, never an exponent
    (``1.234e-06`` is written ``0.000001234``).  ValueError naming a value that is not a finite number."""
    bad = [name for name, v in values.items() if not math.isfinite(v)]
    if bad:
        raise ValueError(f"{', '.join(bad)}: not a finite number, which the link form cannot hold")
    parts = []
    for letter, (name, scale) in OVERRIDE_LETTERS.items():
        if name in values:
            parts.append(
                letter + np.format_float_positional(values[name] / scale, precision=4, fractional=False, trim="-")
            )
    return "-".join(parts)


def resolve_timing(timing: EngineTiming, gpu: GPU, overrides: str = "") -> ResolvedTiming:
    """The engine's parameters for ``gpu`` (its family and link kind), with link overrides applied."""
    fam = gpu_family(gpu)
    link = link_kind(gpu)
    f = timing.family(fam)
    values = dict(
        step_overhead_s=timing.step_overhead_us / US_PER_S,
        layer_overhead_s=timing.layer_overhead_us / US_PER_S,
        decode_layer_overhead_s=timing.decode_layer_overhead_us / US_PER_S,
        matmul_half_tokens=timing.matmul_half_tokens,
        matmul_frac=f.matmul_frac,
        matmul_frac_8bit=f.matmul_frac_8bit,
        bandwidth_frac=f.bandwidth_frac,
        moe_matmul_frac=f.moe_matmul_frac,
        attention_compute_frac=timing.attention_compute_frac,
        attention_bandwidth_frac=timing.attention_bandwidth_frac,
        gqa_reread_frac=timing.gqa_reread_frac,
        allreduce_overhead_s=timing.allreduce_overhead_us / US_PER_S,
        bus_frac=timing.pcie_bus_frac if link == "pcie" else timing.nvlink_bus_frac,
    )
    values.update(parse_overrides(overrides))
    return ResolvedTiming(family=fam, link=link, **values)


def neutral_timing() -> ResolvedTiming:
    """The plain roofline: no overheads, no small-GEMM penalty, every share 1 (a measured profile)."""
    return ResolvedTiming(
        family="measured",
        link="measured",
        step_overhead_s=0.0,
        layer_overhead_s=0.0,
        decode_layer_overhead_s=0.0,
        matmul_half_tokens=0.0,
        matmul_frac=1.0,
        matmul_frac_8bit=1.0,
        bandwidth_frac=1.0,
        moe_matmul_frac=1.0,
        attention_compute_frac=1.0,
        attention_bandwidth_frac=1.0,
        gqa_reread_frac=0.0,
        allreduce_overhead_s=0.0,
        bus_frac=1.0,
    )
