"""Adversarial lines for regular expressions: a backtracking pattern that is quadratic (or worse) on
untrusted text shows it on a line that repeats the text leading up to one of its unbounded repeats.

For every unbounded repeat in a pattern (``*``, ``+``, ``{n,}``, or a bound over ``WIDE_REPEAT``), at any
nesting depth, ``triggers`` yields (head, unit): a string that matches everything before the repeat and
one string the repeat's body matches.  ``adversarial_lines`` turns each into three lines of about
``LINE_CHARS`` characters — (head + unit) repeated, head then unit repeated, head repeated — the shapes
of issue 31's F1 reproducers (``"Memory profiling results: total_gpu_memory=1GiB"`` × 20,000 on one
line).  A linear pattern scans each in milliseconds; a quadratic one takes minutes.

``python -m tests.regex_probe MODULE…`` times every module-level compiled pattern of those modules on
every adversarial line (``finditer`` to the end: search and every later match) and prints one JSON line
per pattern, after a ``start`` line naming it (so a caller that has to kill a hung probe knows which
pattern hung).  Used by tests/test_linear_regex.py in a subprocess with a timeout: a regression fails
the test instead of hanging the suite (the ``re`` engine cannot be interrupted).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import time
from collections.abc import Iterator
from re import _constants as c  # type: ignore[attr-defined]  # the parser's own opcodes (stdlib, private)
from re import _parser as sre  # type: ignore[attr-defined]
from typing import Any

LINE_CHARS = 1_000_000
#: A bounded repeat wider than this is treated as unbounded (``{0,20000}`` is as bad as ``*``).
WIDE_REPEAT = 100
_REPEATS = {c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}
_CANDIDATES = "a0 A_.,:=/-'\"{}()[]x\tZ!;|#@%&*+<>?^$~`\\é"
_CATEGORY = {
    c.CATEGORY_DIGIT: lambda ch: ch.isdigit(),
    c.CATEGORY_NOT_DIGIT: lambda ch: not ch.isdigit(),
    c.CATEGORY_SPACE: lambda ch: ch.isspace(),
    c.CATEGORY_NOT_SPACE: lambda ch: not ch.isspace(),
    c.CATEGORY_WORD: lambda ch: ch.isalnum() or ch == "_",
    c.CATEGORY_NOT_WORD: lambda ch: not (ch.isalnum() or ch == "_"),
    c.CATEGORY_LINEBREAK: lambda ch: ch == "\n",
    c.CATEGORY_NOT_LINEBREAK: lambda ch: ch != "\n",
}


def _in_set(ch: str, items: list[tuple[Any, Any]]) -> bool:
    negate, hit = False, False
    for op, av in items:
        if op is c.NEGATE:
            negate = True
        elif op is c.LITERAL:
            hit |= ord(ch) == av
        elif op is c.NOT_LITERAL:
            hit |= ord(ch) != av
        elif op is c.RANGE:
            hit |= av[0] <= ord(ch) <= av[1]
        elif op is c.CATEGORY:
            hit |= _CATEGORY[av](ch)
    return hit != negate


def _char(test: Any) -> str:
    return next((ch for ch in _CANDIDATES if test(ch)), "a")


def sample(seq: Any) -> str:
    """One string that the parsed sequence ``seq`` matches (lookarounds and anchors: empty)."""
    out = []
    for op, av in seq:
        if op is c.LITERAL:
            out.append(chr(av))
        elif op is c.NOT_LITERAL:
            out.append(_char(lambda ch, av=av: ord(ch) != av))
        elif op is c.ANY:
            out.append("a")
        elif op is c.IN:
            out.append(_char(lambda ch, av=av: _in_set(ch, av)))
        elif op is c.SUBPATTERN:
            out.append(sample(av[3]))
        elif op is c.BRANCH:
            out.append(sample(av[1][0]))
        elif op in _REPEATS:
            lo, hi, body = av
            out.append(sample(body) * (min(max(lo, 1), hi) if hi else 0))
        elif op is getattr(c, "ATOMIC_GROUP", None):
            out.append(sample(av))
    return "".join(out)


def triggers(seq: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(head, unit) for every unbounded repeat in ``seq`` (module doc)."""
    head = prefix
    for op, av in seq:
        if op in _REPEATS:
            lo, hi, body = av
            if hi is c.MAXREPEAT or hi > WIDE_REPEAT:
                yield head, sample(body)
            yield from triggers(body, head)
        elif op is c.SUBPATTERN:
            yield from triggers(av[3], head)
        elif op is getattr(c, "ATOMIC_GROUP", None):
            yield from triggers(av, head)
        elif op is c.BRANCH:
            for alternative in av[1]:
                yield from triggers(alternative, head)
        head += sample([(op, av)])


def adversarial_lines(pattern: re.Pattern[str], chars: int = LINE_CHARS) -> list[str]:
    """The module doc's three lines per unbounded repeat of ``pattern``, each about ``chars`` long."""
    whole = sample(sre.parse(pattern.pattern, pattern.flags)) or "a"
    lines: dict[str, None] = {whole * (chars // len(whole)): None}  # the pattern's own text, repeated
    if len(whole) > 1:
        lines[whole[:-1] * (chars // (len(whole) - 1))] = None  # …and all but its last character
    for head, unit in triggers(sre.parse(pattern.pattern, pattern.flags)):
        unit = unit or "a"
        lines[(head + unit) * (chars // len(head + unit))] = None
        lines[head + unit * max((chars - len(head)) // len(unit), 1)] = None
        if head:
            lines[head * (chars // len(head))] = None
    return list(lines)


def module_patterns(module: Any) -> dict[str, re.Pattern[str]]:
    """Every compiled pattern among the module's globals, also inside tuples, lists and dicts (one level)."""
    found: dict[str, re.Pattern[str]] = {}
    for name, value in vars(module).items():
        items: Any = ()
        if isinstance(value, dict):
            items = value.items()
        elif isinstance(value, tuple | list):
            items = enumerate(value)
        if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
            found[name] = value
        for k, v in items:
            inner = v if isinstance(v, tuple | list) else (v,)
            for j, p in enumerate(inner):
                if isinstance(p, re.Pattern) and isinstance(p.pattern, str):
                    found[f"{name}[{k!r}][{j}]"] = p
                for part in ("head", "tail"):  # a head-then-tail searcher (planner.logs.vllm_log.OnOneLine)
                    q = getattr(p, part, None)
                    if isinstance(q, re.Pattern):
                        found[f"{name}[{k!r}][{j}].{part}"] = q
        for part in ("head", "tail"):
            q = getattr(value, part, None)
            if isinstance(q, re.Pattern):
                found[f"{name}.{part}"] = q
    return found


def probe(pattern: re.Pattern[str]) -> float:
    """The slowest full scan (``finditer`` to the end) of ``pattern`` over its adversarial lines, seconds."""
    worst = 0.0
    for line in adversarial_lines(pattern):
        t0 = time.perf_counter()
        for _ in pattern.finditer(line):
            pass
        worst = max(worst, time.perf_counter() - t0)
    return worst


def main(modules: list[str]) -> None:
    for name in modules:
        for label, pattern in module_patterns(importlib.import_module(name)).items():
            where = f"{name}.{label}"
            print(json.dumps({"start": where, "pattern": pattern.pattern}), flush=True)
            print(json.dumps({"done": where, "pattern": pattern.pattern, "worst_s": probe(pattern)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
