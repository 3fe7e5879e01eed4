"""Engine versions as a first-class axis: the link key ``engine=NAME@VERSION``.

Data (``engine_profiles/``): a folder per engine holds one profile per version it models —
``engine_profiles/vllm/0.19.toml`` is ``vllm@0.19`` — each file naming the exact release its
constants come from (``version = "0.19.0"``) and their sources.  A plain file
``engine_profiles/NAME.toml`` (a calibrated profile, a user's own) is an engine with one version:
its key is ``NAME``.

Resolution (``resolve_engine``), what every entry point uses:
  ``NAME``             the newest version of NAME kvplan has (``vllm`` today means its newest);
  ``NAME@V``           the version whose key is V, or whose release is V (``vllm@0.19.0``), or the
                       newest whose key starts with V's components (``trtllm@1`` → the newest 1.x);
  anything else        refused, naming the versions known (``known_text``).
Versions order by their numeric components (0.33 after 0.19, 0.5.23 after 0.5.14).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol, TypeVar

#: An engine key as a link holds it: a name, optionally @ a version of numeric components.
ENGINE_KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}(@[0-9]+(\.[0-9]+){0,3})?$"
VERSION_PATTERN = r"^[0-9]+(\.[0-9]+){0,3}$"
VERSION_RE = re.compile(VERSION_PATTERN)
_DOT = re.compile(r"[.]")
VERSION_RULE = "numeric components separated by '.' (0.19, 0.5.23)"


class Versioned(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def version(self) -> str: ...


P = TypeVar("P", bound=Versioned)


def split_key(key: str) -> tuple[str, str]:
    """('vllm', '0.19') of 'vllm@0.19'; ('vllm', '') of a plain name."""
    name, _, version = key.partition("@")
    return name, version


def engine_name(key: str) -> str:
    """The engine a key names, without its version ('sglang@0.5.23' → 'sglang')."""
    return split_key(key)[0]


def version_tuple(version: str) -> tuple[int, ...]:
    """(0, 19) of '0.19': the order of versions.  Non-numeric parts (a release like '0.19.0rc1') sort as 0."""
    return tuple(int(p) if p.isdigit() else 0 for p in _DOT.split(version) if p)


def _newest(profiles: list[P]) -> P | None:
    return max(profiles, key=lambda p: version_tuple(split_key(p.key)[1] or p.version), default=None)


def resolve_engine(engines: Mapping[str, P], key: str) -> P | None:
    """The profile ``key`` selects (module doc), or None when none matches."""
    if key in engines:
        return engines[key]
    name, wanted = split_key(key)
    same = [p for k, p in engines.items() if split_key(k)[0] == name]
    if not wanted:
        return _newest(same)
    parts = version_tuple(wanted)
    matches = [p for p in same if p.version == wanted or version_tuple(split_key(p.key)[1])[: len(parts)] == parts]
    return _newest(matches)


def aliases(engines: Mapping[str, Versioned]) -> dict[str, str]:
    """Every spelling a link may use → the canonical key it resolves to: each key, each
    ``NAME@release`` and each plain ``NAME`` (→ its newest)."""
    out: dict[str, str] = {}
    for key, profile in engines.items():
        name, version = split_key(key)
        out[key] = key
        if version:
            out[f"{name}@{profile.version}"] = key
    for name in {split_key(k)[0] for k in engines}:
        newest = resolve_engine(engines, name)
        if newest is not None:
            out[name] = newest.key
    return out


def known_text(engines: Mapping[str, Versioned]) -> str:
    """'sglang@0.5.23, trtllm@0.9, vllm@0.19 (a plain name means its newest)'."""
    return ", ".join(sorted(engines, key=sort_key)) + " (a name without @version means its newest)"


def sort_key(key: str) -> tuple[str, tuple[int, ...]]:
    """Engines by name, then newest version first."""
    name, version = split_key(key)
    return name, tuple(-v for v in version_tuple(version))
