"""Reading untrusted JSON (uploaded or given on the command line): the one reader's rules.

``json.loads`` accepts what breaks arithmetic later: ``NaN`` and ``Infinity``, and integers of any
length (a 400-digit ``total_input_tokens`` passed validation and then raised OverflowError in a
division, issue 31 F4).  ``loads`` refuses both, naming where they are: a non-finite constant by
name (unless the format may hold them), an integer past ``MAX_JSON_INT`` by its path in the
document (``[3].total_input_tokens``) and its length.  Nesting too deep for the parser is refused too.  Every
refusal is a ``JsonRefused`` (a ValueError), never another exception.
"""

from __future__ import annotations

import json
import math
from typing import Any

#: Largest integer read: 2**53, the last one a float holds exactly (every count kvplan reads is far below).
MAX_JSON_INT = 2**53
#: Places named in one message before "and N more".
MAX_NAMED = 5


class JsonRefused(ValueError):
    """Text that is not JSON kvplan reads (the message says where and why); ``syntax``: not JSON at all
    (a caller may try another reading, e.g. JSON lines), rather than JSON with a refused value."""

    def __init__(self, message: str, syntax: bool = False):
        super().__init__(message)
        self.syntax = syntax


def _reject_constant(name: str) -> Any:
    raise JsonRefused(f"{name} is not allowed (numbers must be finite)")


def _where(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(the top level)"


def huge_integers(value: Any) -> list[str]:
    """Every place in a parsed document holding an integer past ``MAX_JSON_INT``, as 'path (N digits)'."""
    found: list[str] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, v = stack.pop()
        if isinstance(v, dict):
            stack.extend(((*path, str(k)), x) for k, x in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend(((*path, i), x) for i, x in reversed(list(enumerate(v))))
        elif isinstance(v, int) and not isinstance(v, bool) and abs(v) > MAX_JSON_INT:
            found.append(f"{_where(path)} ({math.floor(math.log10(abs(v))) + 1} digits)")
    return found


def check_integers(value: Any, where: str = "") -> None:
    """JsonRefused naming the places of ``value`` that hold an integer past ``MAX_JSON_INT``."""
    found = huge_integers(value)
    if found:
        more = f" and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
        raise JsonRefused(
            f"{where}an integer too large to be a measurement at {', '.join(found[:MAX_NAMED])}{more}; "
            f"integers are at most 2**53 ({MAX_JSON_INT:,})"
        )


def loads(text: str | bytes, where: str = "", constants: bool = False) -> Any:
    """``text`` parsed (module doc); ``where`` prefixes every message (e.g. the file's name and ': ').
    ``constants=True`` reads ``NaN`` and ``Infinity`` as floats (Python's ``json.dump`` writes them for an
    empty statistic, e.g. `vllm bench serve`'s; the caller treats them as missing)."""
    try:
        value = json.loads(text) if constants else json.loads(text, parse_constant=_reject_constant)
    except JsonRefused as exc:
        raise JsonRefused(f"{where}{exc}") from None
    except RecursionError:
        raise JsonRefused(f"{where}JSON nested too deeply to read") from None
    except json.JSONDecodeError as exc:
        raise JsonRefused(f"{where}not valid JSON: {exc}", syntax=True) from None
    except ValueError as exc:  # an integer past Python's 4,300-digit conversion limit
        raise JsonRefused(f"{where}an integer too large to be a measurement ({exc})") from None
    check_integers(value, where)
    return value
