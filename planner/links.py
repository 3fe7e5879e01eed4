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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, cast, get_args, get_origin
from urllib.parse import parse_qsl, urlencode, urlsplit

from pydantic import TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from planner.model.custom_model import decode_model
from planner.model.scenario import Scenario, default_prefix
from planner.model.specs import KEY_RULE

LINK_VERSION = "1"
VERSION_KEY = "v"
#: The value that unsets an optional field whose default is set (``slo_ttft_s=none``).
NONE_VALUE = "none"
#: Links before the TPOT target existed held ``slo_tpot_s`` as the ITL target (``planner.sim.slo``).
LEGACY_TPOT, ITL_KEY = "slo_tpot_s", "slo_itl_s"
MAX_VALUE_CHARS = 200
MAX_QUERY_CHARS = 20_000
#: Keys named when a long link is cut (the rest are counted).
MAX_DROPPED_NAMED = 10
_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NOT_FINITE = {"inf", "infinity", "nan"}
FIELDS: dict[str, FieldInfo] = dict(Scenario.model_fields)
DEFAULTS = Scenario()
#: One validator per field, with the field's own bounds (``Annotated[type, FieldInfo]``).
_ADAPTERS: dict[str, TypeAdapter[Any]] = {
    name: TypeAdapter(cast(Any, Annotated[f.annotation, f])) for name, f in FIELDS.items()
}


def _format_value(v: Any) -> str:
    if v is None:
        return NONE_VALUE
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
    """Non-default fields as strings, after the version key.  A TPOT target always travels with
    ``slo_itl_s`` (its value, or ``none``), so the link is not read as an old one (``from_query``)."""
    q = {VERSION_KEY: LINK_VERSION}
    for name in FIELDS:
        v = getattr(s, name)
        default = default_prefix(s.prompt) if name == "prefix" else getattr(DEFAULTS, name)
        if v != default or (name == ITL_KEY and s.slo_tpot_s is not None):
            q[name] = _format_value(v)
    return q


def to_query_string(s: Scenario) -> str:
    return urlencode(to_query(s))


def _show(value: str) -> str:
    return repr(value if len(value) <= 40 else value[:40] + "…")


#: What a text field with its own pattern accepts, in words (the other patterned fields are keys: ``KEY_RULE``).
PATTERN_RULES = {
    "custom": "a shape code: letter codes with integers joined by '-', e.g. "
    "L32-H4096-A32-G8-D128-F14336-V128256-C131072 "
    "(L layers, H hidden, A heads, G KV heads, D head dim, F ffn, V vocab, C context tokens)",
    "custom_name": "a model name of letters, digits, spaces and . _ - / + ( ) (≤ 100 chars)",
    "layout": "a prompt layout code: blocks kind:tokens:variability[:*] joined by '|', e.g. s:4000:s:*|m:300:r "
    "(≤ 2000 chars)",
    "timing": "calibrated efficiency parameters: a letter and a number per parameter joined by '-', as the "
    "Cross-check tab writes them",
    "slo_pct": "mean, or a percentile in [50.0, 99.9]",
}


def allowed_range(name: str) -> str:
    """Human description of what a field accepts, from its pydantic metadata."""
    if name in PATTERN_RULES:
        return PATTERN_RULES[name]
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
    unset = f", or {NONE_VALUE} (unset)" if type(None) in get_args(ann) and getattr(DEFAULTS, name) is not None else ""
    return f"{kind} in {left}{lo}, {hi}{right}{unset}"


def max_value_chars(name: str) -> int:
    """Longest value a link may give field ``name``: its own max_length (a layout, a custom
    shape) or ``MAX_VALUE_CHARS``."""
    lengths = [m.max_length for m in FIELDS[name].metadata if getattr(m, "max_length", None)]
    return max([MAX_VALUE_CHARS, *lengths])


def _kinds(annotation: Any) -> tuple[set[Any], set[str], bool]:
    """(the plain types, the literal strings, whether None is allowed) of a field's annotation."""
    types: set[Any] = set()
    words: set[str] = set()
    optional = False
    for arg in get_args(annotation) or (annotation,):
        if arg is type(None):
            optional = True
        elif get_origin(arg) is Literal:
            words |= {a for a in get_args(arg) if isinstance(a, str)}
        elif get_origin(arg) is Annotated:
            types.add(get_args(arg)[0])
        else:
            types.add(arg)
    if get_origin(annotation) is Literal:
        words, types = {a for a in get_args(annotation) if isinstance(a, str)}, set()
    return types, words, optional


def _coerce(name: str, raw: str) -> Any:
    """Parse one raw query value for field ``name``; raises ValueError with the reason.

    Numbers are plain ASCII (``32``, ``0.5``, ``1e-3``): Python's int() and float() would also
    take other scripts' digits (``１２``) and underscores (``1_000``); a link does not.  ``none`` unsets a
    field that may be unset (an SLO target); a word a number field also takes (``slo_pct=mean``) is itself."""
    info = FIELDS[name]
    types, words, optional = _kinds(info.annotation)
    if raw == "":
        raise ValueError("empty value")
    if len(raw) > max_value_chars(name):
        raise ValueError(f"value longer than {max_value_chars(name)} characters")
    if optional and raw.lower() == NONE_VALUE and str not in types:
        return None
    if raw in words and types:
        return raw
    if bool in types:
        low = raw.lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise ValueError("not a boolean")
    if int in types:
        if not _INT_RE.fullmatch(raw):
            raise ValueError("not an integer (ASCII digits, e.g. 32)")
        return int(raw)
    if float in types:
        if raw.strip().lower().lstrip("+-") in _NOT_FINITE:
            raise ValueError("not a finite number")
        if not _FLOAT_RE.fullmatch(raw):
            raise ValueError("not a number (ASCII digits, e.g. 0.5 or 1e-3)")
        v = float(raw)
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
    return _pairs_within_budget(query)[0]


def _pairs_within_budget(query: str | Mapping[str, str | list[str]]) -> tuple[list[tuple[str, str]], list[str]]:
    """The link's pairs up to ``MAX_QUERY_CHARS`` characters, cut between two parameters (never inside
    one), and the keys of the pairs that did not fit — the same rule for a CLI string and the
    dashboard's mapping."""
    if isinstance(query, Mapping):
        pairs = [(str(k), str(item)) for k, v in query.items() for item in (v if isinstance(v, list) else [v])]
    else:
        text = query.strip()
        if "?" in text or text.startswith(("http://", "https://")):
            text = (
                urlsplit(text[: MAX_QUERY_CHARS * 4]).query if len(text) > MAX_QUERY_CHARS * 4 else urlsplit(text).query
            )
        text = text.lstrip("?")
        if len(text) > MAX_QUERY_CHARS:
            cut = text.rfind("&", 0, MAX_QUERY_CHARS + 1)
            head, tail = (text[:cut], text[cut + 1 : cut + 1 + MAX_QUERY_CHARS]) if cut >= 0 else ("", text)
            dropped = [k for k, _ in parse_qsl(tail, keep_blank_values=True)]
            return parse_qsl(head, keep_blank_values=True), dropped or ["(a value cut in two)"]
        pairs = parse_qsl(text, keep_blank_values=True)
    kept: list[tuple[str, str]] = []
    used = 0
    for i, (k, v) in enumerate(pairs):
        used += len(k) + len(v) + 2  # "k=v&"
        if used > MAX_QUERY_CHARS + 1:
            return kept, [key for key, _ in pairs[i:]]
        kept.append((k, v))
    return kept, []


def _read_pairs(query: str | Mapping[str, str | list[str]]) -> tuple[dict[str, str], list[LinkIssue]]:
    """The link's last value per key (version key removed) and the notices about its shape."""
    notices: list[LinkIssue] = []
    pairs, dropped = _pairs_within_budget(query)
    if dropped:
        dropped = sorted(dict.fromkeys(dropped), key=lambda k: k not in FIELDS)  # scenario keys named first
        names = ", ".join(_show(k) for k in dropped[:MAX_DROPPED_NAMED])
        more = f" and {len(dropped) - MAX_DROPPED_NAMED:,} more" if len(dropped) > MAX_DROPPED_NAMED else ""
        notices.append(
            LinkIssue(
                "",
                f"link: longer than {MAX_QUERY_CHARS:,} characters; it was read up to the last whole parameter "
                f"before that, so these were not read: {names}{more}",
                True,
            )
        )
    values: dict[str, str] = {}
    counts: dict[str, int] = {}
    for key, raw in pairs:
        counts[key] = counts.get(key, 0) + 1
        values[key] = raw
    for key, n in counts.items():
        if n > 1:
            notices.append(LinkIssue(key[:64], f"{_show(key)}: given {n} times; the last value is used", False))
    version = values.pop(VERSION_KEY, LINK_VERSION)
    if version != LINK_VERSION:
        notices.append(
            LinkIssue(VERSION_KEY, f"v={_show(version)}: unknown link version; read as version {LINK_VERSION}", False)
        )
    return values, notices


def _decode_value(key: str, raw: str) -> tuple[Any, LinkIssue | None]:
    """(value, None) when ``raw`` is valid for field ``key``, else (None, the issue)."""
    try:
        value = _coerce(key, raw)
    except ValueError as exc:
        return None, LinkIssue(key, f"{key}={_show(raw)}: {exc}; allowed: {allowed_range(key)}", True)
    reason = _field_ok(key, value)
    if reason is None:
        return value, None
    if reason.startswith("String should match pattern"):
        reason = "contains characters that are not allowed"
    return None, LinkIssue(key, f"{key}={_show(raw)}: {reason.lower()}; allowed: {allowed_range(key)}", True)


def _drop_unknown_names(
    good: dict[str, Any], gpus: set[str] | None, models: set[str] | None, engines: Mapping[str, str] | None
) -> list[LinkIssue]:
    """Remove a GPU, model, draft or engine key the catalog does not have; one issue each.  ``engines``
    maps every spelling the catalog accepts to its canonical NAME@VERSION key (``Catalog.engine_aliases``):
    a known engine is written canonically (``engine=vllm`` → its newest version, named)."""
    issues = []
    if engines is not None and good.get("engine") in engines:
        good["engine"] = engines[good["engine"]]
    named = (
        ("gpu", gpus),
        ("model", None if models is None else models | {"custom"}),
        ("draft", models),
        ("engine", None if engines is None else set(engines.values())),
    )
    for key, known in named:
        if known is not None and key in good and good[key] and good[key] not in known:
            bad = str(good.pop(key))
            issues.append(
                LinkIssue(key, f"{key}={_show(bad)}: unknown; allowed: one of {', '.join(sorted(known))}", True)
            )
    if good.get("model", DEFAULTS.model) == "custom":
        try:
            decode_model(good.get("custom", ""))
        except ValueError as exc:
            issues.append(LinkIssue("custom", f"{exc}; model set to {DEFAULTS.model}", True))
            good.pop("model", None)
            good.pop("custom", None)
    return issues


def _validated(good: dict[str, Any]) -> tuple[Scenario, list[LinkIssue]]:
    """The scenario of the values that passed one by one, after the cross-field rule
    (prefix ≤ prompt: keep the prompt, clamp the prefix)."""
    try:
        return Scenario.model_validate(good), []
    except ValidationError as exc:
        prompt = good.get("prompt", DEFAULTS.prompt)
        msg = (
            f"prefix={good.get('prefix', DEFAULTS.prefix)}: must be ≤ prompt={prompt}; set to {prompt}"
            if "prefix" in str(exc)
            else f"link: {exc.errors()[0]['msg']}"
        )
        issues = [LinkIssue("prefix", msg, True)]
        good["prefix"] = min(good.get("prefix", DEFAULTS.prefix), prompt)
        try:
            return Scenario.model_validate(good), issues
        except ValidationError:
            return DEFAULTS, issues + [LinkIssue("", "link: could not be read; defaults loaded", True)]


def _legacy_tpot(good: dict[str, Any]) -> LinkIssue:
    """A link with ``slo_tpot_s`` and no ``slo_itl_s`` was written before the TPOT target existed: its value
    is the ITL target (the percentile of every inter-token gap), as it was then.  The notice says how to
    ask for a per-request TPOT target instead."""
    value = good.pop(LEGACY_TPOT)
    if value is not None:
        good[ITL_KEY] = value
    return LinkIssue(
        LEGACY_TPOT,
        f"{LEGACY_TPOT}={_format_value(value)} without {ITL_KEY}: read as the inter-token latency target "
        f"({ITL_KEY}), what links before the per-request TPOT target meant; to hold per-request TPOT give "
        f"{ITL_KEY} too ({ITL_KEY}={NONE_VALUE} for no ITL target)",
        False,
    )


def from_query(
    query: str | Mapping[str, str | list[str]],
    gpus: set[str] | None = None,
    models: set[str] | None = None,
    engines: Mapping[str, str] | None = None,
) -> tuple[Scenario, list[LinkIssue]]:
    """Decode a link.  Returns the scenario and one issue per problem; never raises.

    ``gpus``, ``models``: the catalog's keys, ``engines``: its engine spellings → canonical keys
    (``Catalog.engine_aliases``), when known (a value outside them is reported and the default used)."""
    values, issues = _read_pairs(query)
    good: dict[str, Any] = {}
    unknown = [key for key in values if key not in FIELDS]
    for key, raw in values.items():
        if key in FIELDS:
            value, issue = _decode_value(key, raw)
            if issue is None:
                good[key] = value
            else:
                issues.append(issue)
    if LEGACY_TPOT in good and ITL_KEY not in values:
        issues.append(_legacy_tpot(good))
    if unknown:
        names = ", ".join(_show(k) for k in unknown[:MAX_DROPPED_NAMED])
        rest = f" and {len(unknown) - MAX_DROPPED_NAMED:,} more" if len(unknown) > MAX_DROPPED_NAMED else ""
        what = "unknown key, ignored" if len(unknown) == 1 else "unknown keys, ignored"
        issues.append(LinkIssue(unknown[0][:64], f"{names}{rest}: {what}", False))
    issues += _drop_unknown_names(good, gpus, models, engines)
    scenario, cross_field = _validated(good)
    return scenario, issues + cross_field
