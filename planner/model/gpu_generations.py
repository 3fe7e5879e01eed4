"""What a GPU profile file may leave out, by file stem or generation: its generation and its compute
architecture (``specs.GpuProfileFile``; the architecture picks quantisation kernels, planner/model/quant_support.py)."""

from __future__ import annotations

#: Generation of the shipped profiles whose files carry no ``generation`` line (by file stem).
KNOWN_GENERATIONS = {
    "a100-40gb-sxm": "Ampere",
    "a100-80gb-sxm": "Ampere",
    "h100-sxm": "Hopper",
    "h100-pcie": "Hopper",
    "h200": "Hopper",
    "b200": "Blackwell",
    "l4": "Ada Lovelace",
    "l40s": "Ada Lovelace",
    "mi300x": "CDNA 3",
    "mi325x": "CDNA 3",
}

#: Compute architecture of the shipped profiles whose files carry no ``arch`` line (by file stem), and of a
#: generation (a user's file that names only its generation).
KNOWN_ARCHS = {"a10g": "sm_86", "rtx-5090": "sm_120", "rtx-pro-6000-blackwell": "sm_120"}
GENERATION_ARCHS = {
    "Ampere": "sm_80",
    "Ada Lovelace": "sm_89",
    "Hopper": "sm_90",
    "Blackwell": "sm_100",
    "Blackwell Ultra": "sm_103",
    "CDNA 3": "gfx942",
    "CDNA 4": "gfx950",
}
ARCH_PATTERN = r"^(sm_[0-9]{2,3}|gfx[0-9a-f]{3,4})$"
