"""Scenario ⇄ flat URL query string (the shareable link).  Pure.

Format (version 1): ``v=1`` plus one ``key=value`` per field whose value differs
from the default; keys are the Scenario's field names.  Floats use ``repr`` so
they round-trip exactly; booleans are ``1``/``0``.

Decoding never raises on user input: unknown keys are ignored with a warning,
a repeated key uses its last value (with a warning), and each bad value is
reported with its key, the value and the allowed range while the rest loads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, get_args
from urllib.parse import parse_qsl, urlencode, urlsplit

from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from planner.model.custom_model import decode_model
from planner.model.scenario import Scenario
from planner.model.specs import KEY_RULE

LINK_VERSION = "1"
VERSION_KEY = "v"
MAX_VALUE_CHARS = 200
MAX_QUERY_CHARS = 20_000
FIELDS: dict[str, FieldInfo] = dict(Scenario.model_fields)
DEFAULTS = Scenario()
_ADAPTERS = {name: TypeAdapter(Annotated[f.annotation, f]) for name, f in FIELDS.items()}


def _format_value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return repr(v)
    return str(v)


@dataclass(frozen=True)
class LinkIssue:
    """One problem met decoding a link.  ``fatal``: a value was rejected (the default
    was used); otherwise a notice (unknown or repeated key, old version)."""

    key: str
    message: str
    fatal: bool

    def __str__(self) -> str:
        return self.message


def to_query(s: Scenario) -> dict[str, str]:
    """Non-default fields as strings, after the version key."""
    q = {VERSION_KEY: LINK_VERSION}
    for name in FIELDS:
        v = getattr(s, name)
        if v != getattr(DEFAULTS, name):
            q[name] = _format_value(v)
    return q


def to_query_string(s: Scenario) -> str:
    return urlencode(to_query(s))


def _show(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


def allowed_range(name: str) -> str:
    """Human description of what a field accepts, from its pydantic metadata."""
    info = FIELDS[name]
    ann = info.annotation
    choices = [a for a in get_args(ann) if isinstance(a, str)]
    if not choices:
        for arg in get_args(ann):
            choices += [a for a in get_args(arg) if isinstance(a, str)]
    if choices:
        return "one of " + ", ".join(choices)
    lo = hi = None
    lo_strict = hi_strict = False
    for m in info.metadata:
        for attr, strict in (("ge", False), ("gt", True)):
            if getattr(m, attr, None) is not None:
                lo, lo_strict = getattr(m, attr), strict
        for attr, strict in (("le", False), ("lt", True)):
            if getattr(m, attr, None) is not None:
                hi, hi_strict = getattr(m, attr), strict
        if getattr(m, "pattern", None):
            return KEY_RULE
    types = {a for a in (get_args(ann) or (ann,)) if a is not type(None)}
    kind = "an integer" if int in types else "a number" if float in types else "0 or 1" if bool in types else "text"
    if lo is None and hi is None:
        return kind
    left = "(" if lo_strict else "["
    right = ")" if hi_strict else "]"
    return f"{kind} in {left}{lo}, {hi}{right}"


def _coerce(name: str, raw: str) -> Any:
    """Parse one raw query value for field ``name``; raises ValueError with the reason."""
    info = FIELDS[name]
    types = {a for a in (get_args(info.annotation) or (info.annotation,)) if a is not type(None)}
    if raw == "":
        raise ValueError("empty value")
    if len(raw) > MAX_VALUE_CHARS:
        raise ValueError(f"value longer than {MAX_VALUE_CHARS} characters")
    if bool in types:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError("not a boolean")
    if int in types:
        try:
            return int(raw)
        except ValueError:
            raise ValueError("not an integer") from None
    if float in types:
        try:
            v = float(raw)
        except ValueError:
            raise ValueError("not a number") from None
        if not math.isfinite(v):
            raise ValueError("not a finite number")
        return v
    return raw


def _field_ok(name: str, value: Any) -> str | None:
    """None if ``value`` is valid for field ``name`` on its own, else pydantic's reason."""
    try:
        _ADAPTERS[name].validate_python(value)
    except ValidationError as exc:
        return exc.errors()[0]["msg"]
    return None


def parse_query(query: str | Mapping[str, str | list[str]]) -> list[tuple[str, str]]:
    """(key, value) pairs from a query string, a full link, or a mapping (lists allowed)."""
    if isinstance(query, Mapping):
        pairs: list[tuple[str, str]] = []
        for k, v in query.items():
            for item in v if isinstance(v, list) else [v]:
                pairs.append((str(k), str(item)))
        return pairs
    text = query.strip()[:MAX_QUERY_CHARS]
    if "?" in text or text.startswith(("http://", "https://")):
        text = urlsplit(text).query
    return parse_qsl(text.lstrip("?"), keep_blank_values=True)


def from_query(
    query: str | Mapping[str, str | list[str]],
    gpus: set[str] | None = None,
    models: set[str] | None = None,
) -> tuple[Scenario, list[LinkIssue]]:
    """Decode a link.  Returns the scenario and one issue per problem; never raises."""
    warnings: list[LinkIssue] = []
    if isinstance(query, str) and len(query.strip()) > MAX_QUERY_CHARS:
        warnings.append(
            LinkIssue("", f"link: longer than {MAX_QUERY_CHARS:,} characters; only the start was read", False)
        )
    values: dict[str, str] = {}
    counts: dict[str, int] = {}
    for key, raw in parse_query(query):
        counts[key] = counts.get(key, 0) + 1
        values[key] = raw
    for key, n in counts.items():
        if n > 1:
            warnings.append(LinkIssue(key[:64], f"{_show(key)}: given {n} times; the last value is used", False))
    version = values.pop(VERSION_KEY, LINK_VERSION)
    if version != LINK_VERSION:
        warnings.append(
            LinkIssue(VERSION_KEY, f"v={_show(version)}: unknown link version; read as version {LINK_VERSION}", False)
        )
    good: dict[str, Any] = {}
    for key, raw in values.items():
        if key not in FIELDS:
            warnings.append(LinkIssue(key[:64], f"{_show(key)}: unknown key, ignored", False))
            continue
        try:
            value = _coerce(key, raw)
        except ValueError as exc:
            warnings.append(LinkIssue(key, f"{key}={_show(raw)}: {exc}; allowed: {allowed_range(key)}", True))
            continue
        reason = _field_ok(key, value)
        if reason is not None and reason.startswith("String should match pattern"):
            reason = "contains characters that are not allowed"
        if reason is not None:
            warnings.append(
                LinkIssue(key, f"{key}={_show(raw)}: {reason.lower()}; allowed: {allowed_range(key)}", True)
            )
            continue
        good[key] = value
    for key, known in (("gpu", gpus), ("model", None if models is None else models | {"custom"}), ("draft", models)):
        if known is not None and key in good and good[key] and good[key] not in known:
            bad = str(good.pop(key))
            warnings.append(
                LinkIssue(key, f"{key}={_show(bad)}: unknown; allowed: one of {', '.join(sorted(known))}", True)
            )
    if good.get("model", DEFAULTS.model) == "custom":
        try:
            decode_model(good.get("custom", ""))
        except ValueError as exc:
            warnings.append(LinkIssue("custom", f"{exc}; model set to {DEFAULTS.model}", True))
            good.pop("model", None)
            good.pop("custom", None)
    try:
        return Scenario.model_validate(good), warnings
    except ValidationError as exc:
        # The only cross-field rule: prefix ≤ prompt.  Keep the prompt, clamp the prefix.
        prompt = good.get("prompt", DEFAULTS.prompt)
        msg = (
            f"prefix={good.get('prefix', DEFAULTS.prefix)}: must be ≤ prompt={prompt}; set to {prompt}"
            if "prefix" in str(exc)
            else f"link: {exc.errors()[0]['msg']}"
        )
        warnings.append(LinkIssue("prefix", msg, True))
        good["prefix"] = min(good.get("prefix", DEFAULTS.prefix), prompt)
        try:
            return Scenario.model_validate(good), warnings
        except ValidationError:
            return DEFAULTS, warnings + [LinkIssue("", "link: could not be read; defaults loaded", True)]
