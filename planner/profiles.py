"""Edge module: read GPU profiles and model presets from TOML files.

Every file is validated by pydantic.  A malformed file is reported by name and
skipped; it never stops the others from loading.  Nothing is read at import time.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from planner.specs import GPU, GpuProfileFile, ModelSpec

REPO_ROOT = Path(__file__).resolve().parent.parent
HARDWARE_DIR = REPO_ROOT / "hardware_profiles"
MODEL_DIR = REPO_ROOT / "model_presets"
#: calibrated profiles written by ``python -m planner bench`` and committed with their results
MEASURED_DIR = REPO_ROOT / "benchmarks" / "results"

#: Largest profile or preset file we read (a TOML of this kind is ~2 KB).
MAX_FILE_BYTES = 256 * 1024


@dataclass(frozen=True)
class Catalog:
    """GPU profiles and model presets by key, plus the problems met loading them.

    ``gpus``: the datasheet profiles (``hardware_profiles/``) — what comparisons, the
    advisor's GPU switches and fleet sizing range over.  ``measured``: calibrated profiles
    of machines the benchmark measured (``benchmarks/results/*.toml``), selectable as a
    scenario's ``gpu`` (``profile``) but never offered as an alternative.
    """

    gpus: dict[str, GPU]
    models: dict[str, ModelSpec]
    problems: tuple[str, ...] = field(default=())
    measured: dict[str, GPU] = field(default_factory=dict)

    def profile(self, key: str) -> GPU | None:
        """The datasheet or measured profile named ``key``."""
        return self.gpus.get(key) or self.measured.get(key)

    def profile_keys(self) -> list[str]:
        """Every selectable profile: datasheet ones, then measured ones, each sorted."""
        return sorted(self.gpus) + sorted(self.measured)


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


def load_measured(directory: Path, datasheet_keys: set[str]) -> tuple[dict[str, GPU], list[str]]:
    """Calibrated profiles in ``directory`` (a missing folder is no problem: nothing measured yet).
    Each must say ``calibrated = true`` and must not reuse a datasheet profile's key."""
    if not directory.is_dir():
        return {}, []
    found, problems = _read_dir(directory, parse_gpu_toml)
    measured = {}
    for key, gpu in found.items():
        if not gpu.calibrated:
            problems.append(f"{key}.toml: calibrated must be true for a measured profile")
        elif key in datasheet_keys:
            problems.append(f"{key}.toml: the key {key!r} is a datasheet profile's")
        else:
            measured[key] = gpu
    return measured, problems


def load_catalog(hardware_dir: Path = HARDWARE_DIR, model_dir: Path = MODEL_DIR, measured_dir: Path = MEASURED_DIR) -> Catalog:
    gpus, p1 = load_gpus(hardware_dir)
    models, p2 = load_models(model_dir)
    measured, p3 = load_measured(measured_dir, set(gpus))
    return Catalog(gpus=gpus, models=models, problems=tuple(p1 + p2 + p3), measured=measured)
