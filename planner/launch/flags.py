"""A launch command against its engine version's flag table (``planner.model.engine_flags``).  Pure.

``flag_problems(argv, table)`` names every flag the version's parser would not take as written: a flag it
does not have, a hidden or deprecated spelling, a switch given a value or a flag missing one, a value of the
wrong type (int, float, JSON), outside the parser's ``choices`` or the list the engine checks it against,
or one the engine deprecated.  ``kvplan launch`` writes only commands with none (tests/launch).
"""

from __future__ import annotations

import json

from planner.model.engine_flags import FlagSpec, FlagTable

#: Placeholders kvplan writes for what it cannot know (a node's address); any string type takes them.
PLACEHOLDER_PREFIX = "<"


def _value_problem(flag: str, spec: FlagSpec, value: str) -> str | None:
    """Why ``value`` is not a value ``flag`` takes, or None."""
    kind = spec.type
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        elif kind == "json":
            json.loads(value)
    except ValueError:
        return f"{flag} {value}: not a valid {kind}"
    allowed = spec.choices if spec.choices is not None else spec.validated_values
    if allowed is not None and value not in [str(a) for a in allowed] and not value.startswith(PLACEHOLDER_PREFIX):
        return f"{flag} {value}: not one of the values it takes ({', '.join(map(str, allowed))})"
    if value in spec.deprecated_values:
        return f"{flag} {value}: a deprecated value"
    return None


def _flag_problems(flag: str, table: FlagTable, value: str | None) -> list[str]:
    found = table.find(flag)
    if found is None:
        return [f"{flag}: {table.engine} {table.version} has no such flag"]
    key, spec, hidden = found
    out = []
    if hidden:
        out.append(f"{flag}: a hidden spelling of {key} in {table.engine} {table.version}")
    if spec.deprecated:
        out.append(f"{flag}: deprecated in {table.engine} {table.version}")
    if spec.switch and value is not None:
        out.append(f"{flag} is a switch and takes no value ({value!r} given)")
    elif not spec.switch and value is None:
        out.append(f"{flag} needs a value")
    elif value is not None:
        problem = _value_problem(flag, spec, value)
        if problem:
            out.append(problem)
    return out


def flag_problems(argv: tuple[str, ...] | list[str], table: FlagTable) -> list[str]:
    """Every problem of the flags in ``argv`` (module doc); the words before the first flag (``vllm serve
    MODEL``) are the program, not checked."""
    out: list[str] = []
    i = next((k for k, a in enumerate(argv) if a.startswith("--")), len(argv))
    while i < len(argv):
        flag = argv[i]
        if not flag.startswith("--"):
            out.append(f"{flag}: a value without a flag")
            i += 1
            continue
        found = table.find(flag)
        switch = found is not None and found[1].switch
        takes = not switch and i + 1 < len(argv) and not argv[i + 1].startswith("--")
        given = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else None
        out += _flag_problems(flag, table, argv[i + 1] if takes else (given if switch else None))
        i += 2 if takes or (switch and given is not None) else 1
    return out
