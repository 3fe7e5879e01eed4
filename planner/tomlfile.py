"""The one TOML writer of the project: every TOML file kvplan writes (a measured hardware profile from
``kvplan bench``, a calibrated engine profile from ``kvplan calibrate`` and the Cross-check tab) comes from
``dumps``.

Built on ``tomli-w`` (the writer of the ``tomllib`` / ``tomli`` family, made to emit what ``tomllib`` reads):
it escapes every control character, DEL and quote in a string and writes characters outside the Basic
Multilingual Plane as themselves in UTF-8, so any string a profile may hold — a GPU named ``H100 🚀 lab``, a
file name with DEL or a newline — reads back unchanged.  Hand-written writers got this wrong (a JSON
string writes 🚀 as a surrogate pair that ``tomllib`` refuses).  What this module adds: ``None`` values are
left out (TOML has no null; the schemas' defaults stand for them), a non-finite number is refused naming
its key (no profile is valid with one), and an optional comment heads the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import tomli_w

#: Characters a TOML comment may not hold (control characters other than tab, and DEL; TOML 1.0 §Comment).
_COMMENT_FORBIDDEN = {c: f"\\u{c:04x}" for c in [*range(0x00, 0x09), *range(0x0A, 0x20), 0x7F]}


def _clean(value: Any, where: str) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _clean(v, f"{where}.{k}" if where else str(k)) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_clean(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{where}: {value} is not a finite number; a TOML profile cannot hold it")
    return value


def comment_lines(text: str) -> str:
    """``text`` as TOML comment lines ('# …' each), its control characters written as \\uXXXX."""
    return "".join(f"# {line.translate(_COMMENT_FORBIDDEN)}\n" for line in text.splitlines())


def dumps(data: Mapping[str, Any], comment: str = "") -> str:
    """``data`` as a TOML document (module doc); ``tomllib.loads`` of the result equals ``data`` without
    its ``None`` values."""
    body = tomli_w.dumps(_clean(data, ""))
    return comment_lines(comment) + body
