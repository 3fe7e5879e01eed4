"""Edge module: read GPU profiles and model presets from TOML files.

Every file is validated by pydantic.  A malformed file is reported by name and
skipped; it never stops the others from loading.  Nothing is read at import time.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from .specs import GPU, GpuProfileFile, ModelSpec

REPO_ROOT = Path(__file__).resolve().parent.parent
HARDWARE_DIR = REPO_ROOT / "hardware_profiles"
MODEL_DIR = REPO_ROOT / "model_presets"

#: Largest profile or preset file we read (a TOML of this kind is ~2 KB).
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Catalog:
    """GPU profiles and model presets by key, plus the problems met loading them."""

    gpus: dict[str, GPU]
    models: dict[str, ModelSpec]
    problems: tuple[str, ...] = field(default=())


def format_validation_error(err: ValidationError) -> str:
    """One line per failing field: ``field: message``."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(file)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)


def parse_gpu_toml(text: str, key: str) -> GPU:
    """Validate one profile's TOML text; raises ValueError naming the bad fields."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    try:
        return GpuProfileFile.model_validate(data).to_gpu(key)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def parse_model_toml(text: str) -> ModelSpec:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def _read_dir(directory: Path, parse) -> tuple[dict, list[str]]:
    items: dict = {}
    problems: list[str] = []
    if not directory.is_dir():
        return items, [f"{directory}: folder not found"]
    for path in sorted(directory.glob("*.toml")):
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise ValueError(f"file larger than {MAX_FILE_BYTES} bytes")
            items[path.stem] = parse(path.read_text(encoding="utf-8"), path.stem)
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            problems.append(f"{path.name}: {exc}")
    return items, problems


def load_gpus(directory: Path = HARDWARE_DIR) -> tuple[dict[str, GPU], list[str]]:
    return _read_dir(directory, parse_gpu_toml)


def load_models(directory: Path = MODEL_DIR) -> tuple[dict[str, ModelSpec], list[str]]:
    return _read_dir(directory, lambda text, _key: parse_model_toml(text))


def load_catalog(hardware_dir: Path = HARDWARE_DIR, model_dir: Path = MODEL_DIR) -> Catalog:
    gpus, p1 = load_gpus(hardware_dir)
    models, p2 = load_models(model_dir)
    return Catalog(gpus=gpus, models=models, problems=tuple(p1 + p2))
