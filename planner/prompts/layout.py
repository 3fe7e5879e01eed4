"""Prompt layout: the blocks of an API request, their link form and their editor table.

A request is a list of blocks rendered tools → system → messages.  Each block
has a token count, a variability (``stable`` across all requests, ``per_day``,
``per_user``, ``per_request``) and maybe a cache breakpoint.  What a layout
costs and caches is ``planner.prompts.layout_report``.

Link encoding (``encode``/``decode``): blocks joined by ``|``, each
``kind:tokens:variability[:*]`` with kind t/s/m (tools/system/messages),
variability s/d/u/r (stable/per_day/per_user/per_request) and ``*`` marking a
breakpoint; optional settings after ``;`` as ``name:value`` joined by ``,``
(rpm, users, dur, auto).  Example: ``t:1500:s|s:4000:s:*|m:300:r;rpm:60``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.errors import LayoutError

Kind = Literal["tools", "system", "messages"]
Variability = Literal["stable", "per_day", "per_user", "per_request"]

KINDS: tuple[str, ...] = ("tools", "system", "messages")
VARIABILITIES: tuple[str, ...] = ("stable", "per_day", "per_user", "per_request")
KIND_CODES = {"tools": "t", "system": "s", "messages": "m"}
VARIABILITY_CODES = {"stable": "s", "per_day": "d", "per_user": "u", "per_request": "r"}
#: The API accepts at most four cache_control breakpoints per request; automatic caching uses one.
MAX_BREAKPOINTS = 4
MAX_BLOCKS = 64
MAX_PROMPT_TOKENS = 10_000_000
MAX_LAYOUT_CHARS = 2000

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Block(BaseModel):
    """One part of the request: ``tokens`` of one ``kind``, shared as ``variability`` says,
    with a cache breakpoint after it or not."""

    model_config = _FROZEN

    kind: Kind
    tokens: int = Field(ge=1, le=MAX_PROMPT_TOKENS)
    variability: Variability
    breakpoint: bool = False


class LayoutSettings(BaseModel):
    """Traffic settings of a layout.  ``rpm`` None: the scenario's requests/min is used;
    ``dur_s`` None: the engine's request latency (TTFT + output · TPOT) is used."""

    model_config = _FROZEN

    rpm: float | None = Field(default=None, ge=0.0, le=1e6, description="requests/min of the whole workload")
    users: int = Field(default=1, ge=1, le=1_000_000_000, description="distinct users (or conversations)")
    dur_s: float | None = Field(default=None, gt=0.0, le=86_400.0, description="request duration, s")
    auto: bool = Field(default=False, description="automatic caching on (uses one breakpoint)")


class Layout(BaseModel):
    """The blocks in the order the user gave them, and the traffic settings."""

    model_config = _FROZEN

    blocks: tuple[Block, ...] = Field(min_length=1, max_length=MAX_BLOCKS)
    settings: LayoutSettings = LayoutSettings()

    @model_validator(mode="after")
    def _total_bounded(self) -> Layout:
        total = sum(b.tokens for b in self.blocks)
        if total > MAX_PROMPT_TOKENS:
            raise ValueError(f"total tokens {total:,} exceed {MAX_PROMPT_TOKENS:,}")
        return self

    @property
    def total_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    @property
    def breakpoint_count(self) -> int:
        """Breakpoint slots used: explicit markers plus one for automatic caching."""
        return sum(b.breakpoint for b in self.blocks) + int(self.settings.auto)


# ---------------------------------------------------------------- encoding

_KIND_BY_CODE = {**{v: k for k, v in KIND_CODES.items()}, **{k: k for k in KINDS}}
_VAR_BY_CODE = {**{v: k for k, v in VARIABILITY_CODES.items()}, **{k: k for k in VARIABILITIES}}
_SETTING_NAMES = {"rpm": "rpm", "users": "users", "dur": "dur_s", "auto": "auto"}


def _number(v: float) -> str:
    """A setting's value in the link: an integer without ``.0``, else ``repr`` (round-trips exactly)."""
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def encode(layout: Layout) -> str:
    """The compact link form (see module doc); settings only where not default."""
    parts = []
    for b in layout.blocks:
        s = f"{KIND_CODES[b.kind]}:{b.tokens}:{VARIABILITY_CODES[b.variability]}"
        parts.append(s + ":*" if b.breakpoint else s)
    st = layout.settings
    opts = []
    if st.rpm is not None:
        opts.append(f"rpm:{_number(st.rpm)}")
    if st.users != 1:
        opts.append(f"users:{st.users}")
    if st.dur_s is not None:
        opts.append(f"dur:{_number(st.dur_s)}")
    if st.auto:
        opts.append("auto:1")
    text = "|".join(parts)
    return text + ";" + ",".join(opts) if opts else text


def _pydantic_problems(where: str, exc: ValidationError) -> list[str]:
    return [f"{where}: {'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg'].lower()}" for e in exc.errors()]


def _decode_block(i: int, part: str, problems: list[str]) -> Block | None:
    where = f"block {i} ({part[:30]!r})"
    fields_ = part.split(":")
    if len(fields_) not in (3, 4):
        problems.append(f"{where}: expected kind:tokens:variability[:*], found {len(fields_)} field(s)")
        return None
    kind_raw, tokens_raw, var_raw = fields_[:3]
    bad = len(problems)
    kind = _KIND_BY_CODE.get(kind_raw)
    if kind is None:
        problems.append(f"{where}: kind {kind_raw!r} is not one of t (tools), s (system), m (messages)")
    var = _VAR_BY_CODE.get(var_raw)
    if var is None:
        problems.append(
            f"{where}: variability {var_raw!r} is not one of s (stable), d (per_day), u (per_user), r (per_request)"
        )
    if not tokens_raw.isdigit():
        problems.append(f"{where}: tokens {tokens_raw[:20]!r} is not a whole number")
    if len(fields_) == 4 and fields_[3] != "*":
        problems.append(f"{where}: breakpoint field {fields_[3][:20]!r} must be '*' or absent")
    if kind is None or var is None or len(problems) > bad:
        return None
    try:
        return Block.model_validate(
            {"kind": kind, "tokens": int(tokens_raw), "variability": var, "breakpoint": len(fields_) == 4}
        )
    except ValidationError as exc:
        problems.extend(_pydantic_problems(where, exc))
        return None


def _decode_settings(tail: str, problems: list[str]) -> dict[str, Any]:
    """The ``name:value`` settings after ``;``, as LayoutSettings fields; a problem per bad one."""
    values: dict[str, Any] = {}
    for item in tail.split(","):
        name, sep, raw = item.partition(":")
        key = _SETTING_NAMES.get(name)
        if not sep or key is None:
            problems.append(f"setting {item[:30]!r}: expected name:value with name one of {', '.join(_SETTING_NAMES)}")
            continue
        if key in values:
            problems.append(f"setting {name!r}: given twice")
            continue
        if key == "auto":
            if raw not in ("0", "1"):
                problems.append(f"setting 'auto': {raw[:20]!r} must be 0 or 1")
                continue
            values[key] = raw == "1"
            continue
        try:
            v = float(raw)
        except ValueError:
            problems.append(f"setting {name!r}: {raw[:20]!r} is not a number")
            continue
        if not math.isfinite(v) or (key == "users" and not v.is_integer()):
            problems.append(f"setting {name!r}: {raw[:20]!r} is not a {'whole' if key == 'users' else 'finite'} number")
            continue
        values[key] = int(v) if key == "users" else v
    try:
        LayoutSettings.model_validate(values)
    except ValidationError as exc:
        for e in exc.errors():
            key = str(e["loc"][0])
            name = next(n for n, k in _SETTING_NAMES.items() if k == key)
            problems.append(f"setting {name!r}: {e['msg'].lower()}")
    return values


def decode(text: str) -> Layout:
    """Parse the link form.  Raises LayoutError naming each bad block (1-based) or setting."""
    if len(text) > MAX_LAYOUT_CHARS:
        raise LayoutError([f"layout: longer than {MAX_LAYOUT_CHARS} characters"])
    body, _, tail = text.partition(";")
    if not body:
        raise LayoutError(["layout: no blocks"])
    problems: list[str] = []
    parts = body.split("|")
    if len(parts) > MAX_BLOCKS:
        raise LayoutError([f"layout: {len(parts)} blocks; at most {MAX_BLOCKS}"])
    decoded = [_decode_block(i, part, problems) for i, part in enumerate(parts, 1)]
    settings = _decode_settings(tail, problems) if tail else {}
    if problems:
        raise LayoutError(problems)
    blocks = tuple(b for b in decoded if b is not None)  # all of them: no problem was found
    try:
        return Layout(blocks=blocks, settings=LayoutSettings.model_validate(settings))
    except ValidationError as exc:
        raise LayoutError(_pydantic_problems("layout", exc)) from None


EDITOR_COLUMNS = ("kind", "tokens", "variability", "breakpoint")


def layout_frame(layout: Layout) -> pd.DataFrame:
    """The blocks as a table (the dashboard's editor and the CSV), in the order given."""
    return pd.DataFrame([b.model_dump() for b in layout.blocks], columns=list(EDITOR_COLUMNS))


def _blank(v: Any) -> bool:
    """An empty editor cell: None, NaN, NA or NaT."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT


def layout_from_frame(frame: pd.DataFrame, settings: LayoutSettings) -> Layout:
    """Inverse of ``layout_frame``; LayoutError names the row (1-based) and column of each bad cell."""
    problems: list[str] = []
    blocks: list[Block] = []
    if len(frame) == 0:
        raise LayoutError(["layout: no blocks"])
    if len(frame) > MAX_BLOCKS:
        raise LayoutError([f"layout: {len(frame)} blocks; at most {MAX_BLOCKS}"])
    for i, rec in enumerate(frame.to_dict("records"), 1):
        data = {c: rec.get(c) for c in EDITOR_COLUMNS}
        missing = [c for c in ("kind", "tokens", "variability") if _blank(data[c])]
        if missing:
            problems.append(f"block {i}: {', '.join(missing)} missing")
            continue
        data["breakpoint"] = False if _blank(data["breakpoint"]) else bool(data["breakpoint"])
        tokens = data["tokens"]
        if isinstance(tokens, np.integer) or (isinstance(tokens, float) and tokens.is_integer()):
            data["tokens"] = int(tokens)
        try:
            blocks.append(Block.model_validate(data))
        except ValidationError as exc:
            problems.extend(_pydantic_problems(f"block {i}", exc))
    if problems:
        raise LayoutError(problems)
    try:
        return Layout(blocks=tuple(blocks), settings=settings)
    except ValidationError as exc:
        raise LayoutError(_pydantic_problems("layout", exc)) from None


#: The layout the tab starts from: the classic mistake of a timestamp in the system
#: prompt with the breakpoint after it.
DEFAULT_LAYOUT = "t:1500:s|s:4000:s|s:20:r:*|m:300:r;rpm:20"


def rendered(blocks: Iterable[Block]) -> tuple[Block, ...]:
    """Blocks in the order the API renders them: tools → system → messages (stable sort)."""
    return tuple(sorted(blocks, key=lambda b: KINDS.index(b.kind)))
