"""A catalog with hostile names, for the injection tests (issue 20): a GPU profile and a model preset
whose names are Markdown, a link, a remote image and a colour directive, and a profile file whose
*name* is an HTML link (rejected by name, so it reaches the page in the "skipped" warning)."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.paths import HARDWARE_DIR, MODEL_DIR

INJECTED = "[Re-login](https://evil.example/login) ![t](https://evil.example/t.png) **BOLD** :red[RED]"
BAD_FILE = '<a href="https:evil.example">x<.toml'
EVIL_GPU, EVIL_MODEL = "evil-gpu", "evil-model"
#: What must never appear in Markdown the page renders (each would be a live link, image, bold or colour).
RAW_MARKERS = ("](https://", "![t]", "**BOLD**", ":red[", "<a href", "https://evil", "<img")


def write_hostile_catalog(root: Path) -> tuple[Path, Path]:
    """(hardware dir, model dir): the shipped files plus the hostile ones."""
    hardware, models = root / "hardware", root / "models"
    shutil.copytree(str(HARDWARE_DIR), hardware)
    shutil.copytree(str(MODEL_DIR), models)
    h100 = (hardware / "h100-sxm.toml").read_text(encoding="utf-8")
    evil = h100.replace('name = "NVIDIA H100 SXM"', f'name = "{INJECTED}"')
    assert evil != h100
    (hardware / f"{EVIL_GPU}.toml").write_text(evil, encoding="utf-8")
    (hardware / BAD_FILE).write_text(h100, encoding="utf-8")
    preset = (models / "llama-3.1-8b.toml").read_text(encoding="utf-8")
    lines = [f'name = "{INJECTED}"' if line.startswith("name = ") else line for line in preset.splitlines()]
    (models / f"{EVIL_MODEL}.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return hardware, models
