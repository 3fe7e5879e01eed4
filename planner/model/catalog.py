"""Edge module: read GPU profiles, model presets and engine profiles from TOML files.

Where they live (``data_dirs``): the folders a user edits by hand sit at the top of the
checkout — ``hardware_profiles/``, ``model_presets/``, ``engine_profiles/`` — and a TOML
dropped there is in the lists on the next start.  The wheel carries a copy of each inside
the package (``planner/data/<folder>``, copied at build time by ``setup.py``), read through
``importlib.resources`` so an installed ``kvplan`` works from any directory.  A folder named
by the ``KVPLAN_DATA_DIR`` environment variable may hold the same sub-folders: its files are
read after the shipped ones, and one with a shipped file's name replaces it (an installed
user's own GPU, or a corrected price).  Measured (calibrated) profiles are read from the
source checkout's ``benchmarks/results/`` when it exists: they describe the machine the
benchmark ran on, so they are not shipped.

Every file is validated by pydantic.  A malformed file is reported by name and
skipped; it never stops the others from loading.  Nothing is read at import time.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from planner.errors import format_validation_error
from planner.model.engine_profile import EngineProfile, EngineProfileFile
from planner.model.engine_versions import VERSION_RE, VERSION_RULE, aliases, resolve_engine
from planner.model.specs import GPU, KEY_RE, KEY_RULE, GpuProfileFile, ModelSpec
from planner.units import KiB

DATA: Traversable = files("planner.data")
#: The hand-edited folders, by what they hold (module doc).
HARDWARE_PROFILES, MODEL_PRESETS, ENGINE_PROFILES = "hardware_profiles", "model_presets", "engine_profiles"
USER_FOLDERS = (HARDWARE_PROFILES, MODEL_PRESETS, ENGINE_PROFILES)
#: The checkout's root (``planner/`` sits in it); in an installed package it is site-packages.
CHECKOUT = Path(__file__).resolve().parents[2]
#: An extra folder with the same sub-folders, read after the shipped ones (module doc).
DATA_DIR_ENV = "KVPLAN_DATA_DIR"
#: The engine profile a scenario uses unless its ``engine`` key says otherwise.
DEFAULT_ENGINE = "vllm"
#: calibrated profiles written by ``python -m planner bench`` and committed with their results
#: (``planner/`` sits in the checkout's root; in an installed package this folder does not exist)
MEASURED_DIR = CHECKOUT / "benchmarks" / "results"

T = TypeVar("T")

#: Largest profile or preset file we read (a TOML of this kind is ~2 KB).
MAX_FILE_BYTES = 256 * KiB


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
    engines: dict[str, EngineProfile] = field(default_factory=dict)

    def profile(self, key: str) -> GPU | None:
        """The datasheet or measured profile named ``key``."""
        return self.gpus.get(key) or self.measured.get(key)

    def profile_keys(self) -> list[str]:
        """Every selectable profile: datasheet ones, then measured ones, each sorted."""
        return sorted(self.gpus) + sorted(self.measured)

    def engine(self, key: str) -> EngineProfile | None:
        """The engine profile ``key`` selects: ``vllm`` its newest version, ``vllm@0.19`` that one
        (``engine_versions.resolve_engine``)."""
        return resolve_engine(self.engines, key)

    def engine_aliases(self) -> dict[str, str]:
        """Every engine spelling a link may use → its canonical key (``engine_versions.aliases``)."""
        return aliases(self.engines)


M = TypeVar("M", bound=BaseModel)


def shipped_dir(folder: str) -> Traversable:
    """``folder`` of ``USER_FOLDERS``: the checkout's top-level copy where kvplan runs from a checkout,
    else the one the wheel carries in ``planner/data/``."""
    here = CHECKOUT / folder
    return here if here.is_dir() else DATA / folder


def data_dirs(folder: str) -> list[Traversable]:
    """Where ``folder``'s files are read, in order: the shipped folder, then ``$KVPLAN_DATA_DIR/folder``."""
    dirs = [shipped_dir(folder)]
    extra = os.environ.get(DATA_DIR_ENV, "").strip()
    if extra:
        dirs.append(Path(extra).expanduser() / folder)
    return dirs


def _validated_toml(text: str, schema: type[M]) -> M:
    """``text`` parsed as TOML and validated by ``schema``; ValueError naming the bad fields."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def parse_gpu_toml(text: str, key: str) -> GPU:
    """Validate one GPU profile's TOML text; raises ValueError naming the bad fields."""
    return _validated_toml(text, GpuProfileFile).to_gpu(key)


def parse_engine_toml(text: str, key: str) -> EngineProfile:
    """Validate one engine profile's TOML text; raises ValueError naming the bad fields."""
    return _validated_toml(text, EngineProfileFile).to_profile(key)


def parse_model_toml(text: str) -> ModelSpec:
    """Validate one model preset's TOML text; raises ValueError naming the bad fields."""
    return _validated_toml(text, ModelSpec)


def _read_dirs(
    directories: Traversable | Sequence[Traversable], read: Callable[[Traversable], tuple[dict[str, T], list[str]]]
) -> tuple[dict[str, T], list[str]]:
    """``read`` (one folder → items, problems) over each folder in turn: a later folder's file replaces an
    earlier one of the same key.  Only the first folder must exist (the shipped one); an extra folder may lack
    any of the sub-folders (``load_catalog`` names an extra folder that does not exist at all)."""
    dirs = [directories] if isinstance(directories, Traversable) else list(directories)
    items: dict[str, T] = {}
    problems: list[str] = []
    for k, directory in enumerate(dirs):
        if not directory.is_dir():
            if k == 0:
                problems.append(f"{directory}: folder not found")
            continue
        found, trouble = read(directory)
        items.update(found)
        problems += trouble if k == 0 else [f"{directory}/{p}" for p in trouble]
    return items, problems


def _read_dir(
    directory: Traversable,
    parse: Callable[[str, str], T],
    stem_re: re.Pattern[str] = KEY_RE,
    stem_rule: str = f"a link key: {KEY_RULE}",
    where: str = "",
) -> tuple[dict[str, T], list[str]]:
    """Every ``*.toml`` in ``directory`` parsed by ``parse(text, stem)``; problems name the file
    (``where`` + its name).

    The file stem is the profile's link key (or, in an engine's folder, its version), so it must match
    ``stem_re``; a file of another name is skipped."""
    items: dict[str, T] = {}
    problems: list[str] = []
    for entry in sorted((e for e in directory.iterdir() if e.name.endswith(".toml")), key=lambda e: e.name):
        key = entry.name.removesuffix(".toml")
        try:
            if not stem_re.fullmatch(key):
                raise ValueError(f"the file name must be {stem_rule}")
            with entry.open("rb") as fh:
                data = fh.read(MAX_FILE_BYTES + 1)
            if len(data) > MAX_FILE_BYTES:
                raise ValueError(f"file larger than {MAX_FILE_BYTES} bytes")
            items[key] = parse(data.decode("utf-8"), key)
        except RecursionError:
            problems.append(f"{where}{entry.name}: nested too deeply to read")
        except (ValueError, OSError, UnicodeDecodeError) as exc:
            problems.append(f"{where}{entry.name}: {exc}")
    return items, problems


def _parse_version_toml(engine: str, text: str, version: str) -> EngineProfile:
    return parse_engine_toml(text, f"{engine}@{version}")


def _read_engine_dir(directory: Traversable) -> tuple[dict[str, EngineProfile], list[str]]:
    """The engine profiles of one folder (``engine_versions`` module doc): ``NAME/VERSION.toml`` is
    ``NAME@VERSION``; a plain ``NAME.toml`` is ``NAME``, unless a folder ``NAME/`` exists (then it is named
    as a problem: a version belongs in the folder)."""
    items, problems = _read_dir(directory, parse_engine_toml)
    for sub in sorted((e for e in directory.iterdir() if e.is_dir()), key=lambda e: e.name):
        name = sub.name
        if not KEY_RE.fullmatch(name):
            problems.append(f"{name}/: an engine folder's name must be a link key: {KEY_RULE}")
            continue
        if name in items:
            del items[name]
            problems.append(f"{name}.toml: skipped, a folder {name}/ holds this engine's versions (put it there)")
        found, trouble = _read_dir(
            sub,
            partial(_parse_version_toml, name),
            VERSION_RE,
            f"a version: {VERSION_RULE}",
            where=f"{name}/",
        )
        items.update({f"{name}@{v}": profile for v, profile in found.items()})
        problems += trouble
    return items, problems


Dirs = Traversable | Sequence[Traversable]


def load_gpus(directory: Dirs | None = None) -> tuple[dict[str, GPU], list[str]]:
    """The datasheet GPU profiles in key order (``data_dirs(HARDWARE_PROFILES)`` unless given), and the problems met.
    Key order, not file-name order: ``rtx-pro-6000-blackwell`` before ``rtx-pro-6000-blackwell-server``."""
    gpus, problems = _read_dirs(directory or data_dirs(HARDWARE_PROFILES), lambda d: _read_dir(d, parse_gpu_toml))
    return dict(sorted(_with_known_ceilings(gpus, problems).items())), problems


def _with_known_ceilings(gpus: dict[str, GPU], problems: list[str]) -> dict[str, GPU]:
    """``gpus`` with each ``kernel_ceiling`` checked: one that names no other profile is a problem and dropped
    (its GPU keeps its own tables, unbounded); a known one gets its slack, the ceiling's memory bandwidth ÷ this
    GPU's where that is more than 1 (``kernels.store.bounded``)."""
    out = dict(gpus)
    for key, gpu in gpus.items():
        c = gpu.kernel_ceiling
        if c and (c == key or c not in gpus):
            known = ", ".join(k for k in sorted(gpus) if k != key)
            problems.append(f"{key}.toml: kernel_ceiling {c!r} is not another GPU profile (known: {known})")
            out[key] = gpu.model_copy(update={"kernel_ceiling": "", "kernel_ceiling_source": ""})
        elif c:
            slack = max(1.0, gpus[c].memory_bandwidth_bytes_per_s / gpu.memory_bandwidth_bytes_per_s)
            out[key] = gpu.model_copy(update={"kernel_ceiling_slack": slack})
    return out


def load_models(directory: Dirs | None = None) -> tuple[dict[str, ModelSpec], list[str]]:
    """The model presets by key (``data_dirs(MODEL_PRESETS)`` unless given), and the problems met."""
    return _read_dirs(
        directory or data_dirs(MODEL_PRESETS), lambda d: _read_dir(d, lambda text, _key: parse_model_toml(text))
    )


def load_engines(directory: Dirs | None = None) -> tuple[dict[str, EngineProfile], list[str]]:
    """The serving-engine profiles by key (``vllm@0.19``, ``sglang@0.5.23``, …; ``data_dirs(ENGINE_PROFILES)``
    unless given), and the problems met."""
    return _read_dirs(directory or data_dirs(ENGINE_PROFILES), _read_engine_dir)


def load_measured(directory: Traversable, datasheet_keys: set[str]) -> tuple[dict[str, GPU], list[str]]:
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


def load_catalog(
    hardware_dir: Dirs | None = None,
    model_dir: Dirs | None = None,
    measured_dir: Traversable = MEASURED_DIR,
    engine_dir: Dirs | None = None,
) -> Catalog:
    """Everything the planner can pick from; a bad file is a line in ``problems``, never an exception."""
    gpus, p1 = load_gpus(hardware_dir)
    models, p2 = load_models(model_dir)
    measured, p3 = load_measured(measured_dir, set(gpus))
    engines, p4 = load_engines(engine_dir)
    problems = p1 + p2 + p3 + p4
    extra = os.environ.get(DATA_DIR_ENV, "").strip()
    if extra and not Path(extra).expanduser().is_dir():
        problems.append(f"{DATA_DIR_ENV}={extra}: folder not found")
    if resolve_engine(engines, DEFAULT_ENGINE) is None:
        problems.append(f"{DEFAULT_ENGINE}/: the default engine's profiles are missing")
    return Catalog(gpus=gpus, models=models, problems=tuple(problems), measured=measured, engines=engines)
