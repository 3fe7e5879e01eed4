"""An engine version's flag table: what its own argument parser accepts (committed data, one file per version).

``engine_profiles/<engine>/<version>-flags.json`` beside the profile it belongs to (``vllm/0.33-flags.json``
for ``vllm@0.33``), written by ``tools/extract_engine_flags.py`` from the engine's parser where the engine is
installed, and naming the release it was read from.  Per flag: its type (``int``, ``float``, ``str``,
``bool`` for a switch, ``json``), argparse ``choices``, the values the engine checks outside argparse
(``validated_values``, ``deprecated_values``), its aliases (``hidden_aliases``: accepted, but not documented),
``deprecated`` and ``nargs``.  ``planner.launch.flags`` checks a command against it.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import format_validation_error
from planner.model.catalog import ENGINE_PROFILES, data_dirs
from planner.model.engine_versions import split_key
from planner.units import MiB

MAX_TABLE_BYTES = 2 * MiB
#: The suffix of a version's flag table beside its ``<version>.toml``.
FLAGS_SUFFIX = "-flags.json"


class FlagSpec(BaseModel):
    """One option of the engine's parser."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str = Field(max_length=80)
    choices: list[Any] | None = None
    default: Any = None
    deprecated: bool = False
    aliases: list[str] = Field(default_factory=list)
    hidden_aliases: list[str] = Field(default_factory=list)
    nargs: int | str | None = None
    validated_values: list[str] | None = None
    deprecated_values: list[str] = Field(default_factory=list)

    @property
    def switch(self) -> bool:
        """A flag that takes no value (``--enable-eplb``)."""
        return self.nargs == 0


class FlagTable(BaseModel):
    """Every flag of one engine release."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: str = Field(min_length=1, max_length=40)
    version: str = Field(min_length=1, max_length=40)
    extracted_with: str = Field(default="", max_length=2000)
    flags: dict[str, FlagSpec]

    def find(self, flag: str) -> tuple[str, FlagSpec, bool] | None:
        """(the flag's key, its spec, whether ``flag`` is a hidden spelling), or None: the parser has no such flag."""
        if flag in self.flags:
            return flag, self.flags[flag], False
        for key, spec in self.flags.items():
            if flag in spec.aliases:
                return key, spec, False
            if flag in spec.hidden_aliases:
                return key, spec, True
        return None


def parse_flag_table(text: str) -> FlagTable:
    """``text`` as a flag table; ValueError naming the bad field."""
    if len(text) > MAX_TABLE_BYTES:
        raise ValueError(f"larger than {MAX_TABLE_BYTES:,} bytes")
    try:
        return FlagTable.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} (line {exc.lineno})") from None
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def load_flag_table(engine_key: str) -> FlagTable | None:
    """The flag table of the engine version ``engine_key`` (``vllm@0.33``), the last data folder's where several
    hold one; None where no folder has it (a calibrated profile, TensorRT-LLM).  Read once per file."""
    name, version = split_key(engine_key)
    found = None
    for folder in data_dirs(ENGINE_PROFILES):
        entry = folder / name / f"{version}{FLAGS_SUFFIX}"
        if version and entry.is_file():
            found = _read_table(str(entry), entry.read_bytes())
    return found


@lru_cache(maxsize=16)
def _read_table(where: str, data: bytes) -> FlagTable:
    try:
        return parse_flag_table(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{where}: {exc}") from None
