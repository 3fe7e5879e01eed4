"""Prompt layout checker: what each cache breakpoint of an API request really caches.

A request is a list of blocks rendered tools → system → messages.  Each block
has a token count, a variability (``stable`` across all requests, ``per_day``,
``per_user``, ``per_request``) and maybe a cache breakpoint.  The cache key of a
breakpoint is a hash of everything before it, so its prefix is shared only by
requests whose every earlier block matches (Anthropic prompt-caching docs).

Hit rate of a block's sharing class (λ = rpm/60 per second, TTL from the
request's *start*, request duration D; ``prompt_cache.ttl_hit_rate``):
    stable      h = 1 − exp(−λ · max(TTL − D, 0))
    per_day     h_stable · (1 − min(1, 1 / (rpm · 1440)))   (first request of a day misses)
    per_user    same as stable with λ / users
    per_request 0
A prefix is shared like its least-shared block: h(prefix) = min over its blocks.

Expected tokens per request with effective breakpoints (prefix ≥ the minimum)
at prefix lengths L_1 < … < L_k and hit rates h_1 ≥ … ≥ h_k (hits nest: a
request that hits L_j also hits every shorter cached prefix):
    read    = Σ_j (h_j − h_{j+1}) · L_j          (h_{k+1} = 0)
    written = L_k − read                           (cache_creation_input_tokens)
    plain   = P − L_k
    cost    = (read · r + written · w + plain) · p_in + O · p_out
Per token: a token covered first by breakpoint j costs h_j·r + (1−h_j)·w
input prices, which beats 1 only when h_j > h* = (w − 1)/(w − r).

Expected TTFT = Σ_j (h_j − h_{j+1}) · t_prefill(P − L_j after L_j cached)
              + (1 − h_1) · t_prefill(P)              (``roofline.prefill``)

Link encoding (``encode``/``decode``): blocks joined by ``|``, each
``kind:tokens:variability[:*]`` with kind t/s/m (tools/system/messages),
variability s/d/u/r (stable/per_day/per_user/per_request) and ``*`` marking a
breakpoint; optional settings after ``;`` as ``name:value`` joined by ``,``
(rpm, users, dur, auto).  Example: ``t:1500:s|s:4000:s:*|m:300:r;rpm:60``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.engine.evaluate import compute
from planner.engine.inputs import EngineInputs
from planner.engine.prompt_cache import break_even_hit_rate, ttl_hit_rate
from planner.engine.roofline import prefill
from planner.errors import LayoutError
from planner.model.api_pricing import CACHE_WRITE_MULTIPLIER, TTL_SECONDS

Kind = Literal["tools", "system", "messages"]
Variability = Literal["stable", "per_day", "per_user", "per_request"]

KINDS: tuple[str, ...] = ("tools", "system", "messages")
VARIABILITIES: tuple[str, ...] = ("stable", "per_day", "per_user", "per_request")
KIND_CODES = {"tools": "t", "system": "s", "messages": "m"}
VARIABILITY_CODES = {"stable": "s", "per_day": "d", "per_user": "u", "per_request": "r"}
SHARED_BY = {
    "stable": "all requests",
    "per_day": "one day's requests",
    "per_user": "one user's requests",
    "per_request": "no other request",
}
#: The API accepts at most four cache_control breakpoints per request; automatic caching uses one.
MAX_BREAKPOINTS = 4
MAX_BLOCKS = 64
MAX_PROMPT_TOKENS = 10_000_000
MAX_LAYOUT_CHARS = 2000
MINUTES_PER_DAY = 1440.0
#: A month is 30 days for the monthly cost.
MINUTES_PER_MONTH = 30 * MINUTES_PER_DAY

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class Block(BaseModel):
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
    if len(problems) > bad:
        return None
    try:
        return Block(kind=kind, tokens=int(tokens_raw), variability=var, breakpoint=len(fields_) == 4)
    except ValidationError as exc:
        problems.extend(_pydantic_problems(where, exc))
        return None


def _decode_settings(tail: str, problems: list[str]) -> dict:
    values: dict = {}
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
        LayoutSettings(**values)
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
    blocks = [_decode_block(i, part, problems) for i, part in enumerate(parts, 1)]
    settings = _decode_settings(tail, problems) if tail else {}
    if problems:
        raise LayoutError(problems)
    try:
        return Layout(blocks=tuple(blocks), settings=LayoutSettings(**settings))
    except ValidationError as exc:
        raise LayoutError(_pydantic_problems("layout", exc)) from None


EDITOR_COLUMNS = ("kind", "tokens", "variability", "breakpoint")


def layout_frame(layout: Layout) -> pd.DataFrame:
    """The blocks as a table (the dashboard's editor and the CSV), in the order given."""
    return pd.DataFrame([b.model_dump() for b in layout.blocks], columns=list(EDITOR_COLUMNS))


def _blank(v) -> bool:
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
            blocks.append(Block(**data))
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


# ---------------------------------------------------------------- traffic and cost


@dataclass(frozen=True)
class Traffic:
    """What the hit rates depend on besides the TTL: requests/min, users, request duration."""

    rpm: float
    users: int
    request_duration_s: float


def block_hit_rates(variability, traffic: Traffic, ttl: str) -> np.ndarray:
    """Hit rate of a prefix shared like each block (module doc).  Broadcasts over blocks."""
    v = np.asarray(variability)
    rpm = traffic.rpm
    ttl_s = TTL_SECONDS[ttl]
    h_all = ttl_hit_rate(rpm, ttl_s, traffic.request_duration_s)
    first_of_day = min(1.0, 1.0 / (rpm * MINUTES_PER_DAY)) if rpm > 0 else 1.0
    h_user = ttl_hit_rate(rpm / traffic.users, ttl_s, traffic.request_duration_s)
    return np.select(
        [v == "stable", v == "per_day", v == "per_user"],
        [h_all, h_all * (1.0 - first_of_day), h_user],
        default=0.0,
    )


def rendered(blocks) -> tuple[Block, ...]:
    """Blocks in the order the API renders them: tools → system → messages (stable sort)."""
    return tuple(sorted(blocks, key=lambda b: KINDS.index(b.kind)))


@dataclass(frozen=True)
class _Costing:
    """Expected tokens and cost of one layout under one traffic (per request)."""

    read_tokens: float
    written_tokens: float
    cost_usd: float
    positions: np.ndarray  # effective breakpoint prefix lengths, ascending
    hits: np.ndarray  # their hit rates


def _prefix_hit_rates(blocks, traffic: Traffic, ttl: str) -> np.ndarray:
    """Hit rate of the prefix ending at each block: the least-shared block so far."""
    return np.minimum.accumulate(block_hit_rates([b.variability for b in blocks], traffic, ttl))


def _cost(ends: np.ndarray, prefix_h: np.ndarray, bp_blocks, x: EngineInputs, ttl: str) -> _Costing:
    """Cost with breakpoints after the given block indices (0-based, rendered order)."""
    total = float(ends[-1])
    idx = sorted({i for i in bp_blocks if ends[i] >= x.min_cacheable_tokens})
    pos = ends[idx].astype(float)
    h = prefix_h[idx].astype(float)
    h_next = np.append(h[1:], 0.0)
    read = float(np.sum((h - h_next) * pos))
    cached = float(pos[-1]) if len(pos) else 0.0
    written = cached - read
    plain = total - cached
    r = float(x.cache_read_multiplier)
    p_in = float(x.price_in_usd_per_token)
    cost = (read * r + written * CACHE_WRITE_MULTIPLIER[ttl] + plain) * p_in + float(x.output_tokens) * float(
        x.price_out_usd_per_token
    )
    return _Costing(read, written, cost, pos, h)


# ---------------------------------------------------------------- report

#: Switching 5m → 1h must save at least this fraction of the cost to be suggested or flagged;
#: 1h → 5m is suggested whenever 5m costs no more (its writes are cheaper, its risk lower).
TTL_MATERIAL_FRAC = 0.01


def ttl_is_better(candidate: str, candidate_cost: float, current_cost: float) -> bool:
    """Whether ``candidate`` TTL should replace the current one at these costs."""
    if candidate == "5m":
        return candidate_cost <= current_cost
    return candidate_cost < current_cost * (1.0 - TTL_MATERIAL_FRAC)


@dataclass(frozen=True)
class Finding:
    code: str  # too_many_breakpoints, breakpoint_after_varying, below_minimum, below_break_even, ...
    severity: Literal["error", "warning", "info"]
    message: str
    fix: str
    block: int | None = None  # 1-based, rendered order


@dataclass(frozen=True)
class LayoutReport:
    blocks: tuple[Block, ...]  # rendered order
    traffic: Traffic
    auto: bool
    valid: bool  # False: the API rejects the request (too many breakpoints)
    min_cacheable_tokens: int
    total_tokens: int
    blocks_frame: pd.DataFrame
    breakpoints_frame: pd.DataFrame
    findings: tuple[Finding, ...]
    break_even_hit_rate_frac: float
    nocache_cost_per_request_usd: float
    nocache_cost_per_month_usd: float
    ttft_nocache_s: float
    # None when the request is rejected (valid is False)
    read_tokens: float | None = None
    written_tokens: float | None = None
    cost_per_request_usd: float | None = None
    cost_per_month_usd: float | None = None
    ttft_s: float | None = None
    ttft_saved_s: float | None = None
    other_ttl_cost_per_request_usd: float | None = None

    @property
    def saving_frac(self) -> float | None:
        if self.cost_per_request_usd is None or self.nocache_cost_per_request_usd <= 0:
            return None
        return 1.0 - self.cost_per_request_usd / self.nocache_cost_per_request_usd


def request_duration_s(x: EngineInputs, prompt_tokens: float) -> float:
    """Engine estimate of one request's duration for a prompt of ``prompt_tokens``:
    TTFT + output · TPOT (``request_latency_s``)."""
    return float(compute(x.with_(prompt_tokens=float(prompt_tokens)))["request_latency_s"])


def traffic_for(layout: Layout, x: EngineInputs) -> Traffic:
    """Layout settings, falling back to the scenario's requests/min and the engine's latency."""
    st = layout.settings
    rpm = st.rpm if st.rpm is not None else float(x.requests_per_min_per_prefix)
    dur = st.dur_s if st.dur_s is not None else request_duration_s(x, layout.total_tokens)
    return Traffic(rpm=rpm, users=st.users, request_duration_s=dur)


def _breakpoint_slots(blocks, auto: bool) -> list[tuple[int, str]]:
    """(block index, 'explicit'|'auto') per breakpoint; automatic caching marks the last block."""
    slots = [(i, "explicit") for i, b in enumerate(blocks) if b.breakpoint]
    if auto:
        slots.append((len(blocks) - 1, "auto"))
    return slots


def _pct(v: float) -> str:
    return f"{100.0 * v:.1f} %"


def _findings(
    blocks, slots, ends, starts, prefix_h, x, traffic: Traffic, ttl: str, be: float, in_order: bool
) -> list[Finding]:
    out: list[Finding] = []
    min_tok = int(x.min_cacheable_tokens)
    if len(slots) > MAX_BREAKPOINTS:
        auto_note = " (automatic caching uses one)" if any(s == "auto" for _, s in slots) else ""
        out.append(
            Finding(
                "too_many_breakpoints",
                "error",
                f"{len(slots)} breakpoints{auto_note}: the API accepts at most {MAX_BREAKPOINTS} and rejects the request.",
                f"Keep at most {MAX_BREAKPOINTS}: one at the end of each differently shared prefix (see the suggestion).",
            )
        )
    if traffic.rpm <= 0:
        out.append(
            Finding(
                "no_traffic",
                "info",
                "The request rate is 0, so no prefix is ever reused: every cached token is a write.",
                "Set the requests per minute of the workload.",
            )
        )
    if not slots:
        out.append(
            Finding(
                "no_breakpoint",
                "info",
                "No breakpoint and automatic caching off: nothing is cached.",
                "Mark the end of the longest stable prefix (see the suggestion).",
            )
        )
    prev_cached = 0.0
    explicit = {i for i, source in slots if source == "explicit"}
    for i in sorted({i for i, _ in slots}):
        n = i + 1
        where = f"breakpoint on block {n}" if i in explicit else "automatic breakpoint (last block)"
        varying = [j for j in range(i + 1) if blocks[j].variability == "per_request"]
        narrow = [j for j in range(i + 1) if blocks[j].variability in ("per_day", "per_user")]
        if varying:
            j = varying[0]
            out.append(
                Finding(
                    "breakpoint_after_varying",
                    "error",
                    f"The {where} covers block {j + 1} ({blocks[j].kind}, {blocks[j].tokens:,} tokens), which changes on "
                    f"every request: its prefix hash is new each time, so all {int(ends[i]):,} tokens are written at "
                    f"{CACHE_WRITE_MULTIPLIER[ttl]:g}× and never read. "
                    + (
                        f"Only the first {int(starts[j]):,} tokens are reusable."
                        if starts[j]
                        else "No token is reusable."
                    ),
                    f"Move block {j + 1} after the last stable block (e.g. into the user message) and put the breakpoint "
                    f"on the block just before it.",
                    n,
                )
            )
        elif narrow:
            j = narrow[0]
            out.append(
                Finding(
                    "narrow_prefix",
                    "info",
                    f"The {where} covers block {j + 1}, which varies {blocks[j].variability.replace('_', ' ')}: its prefix "
                    f"is shared only by {SHARED_BY[blocks[j].variability]} (hit rate {_pct(prefix_h[i])}).",
                    "Keep blocks shared by all requests first, with their own breakpoint.",
                    n,
                )
            )
        if ends[i] < min_tok:
            out.append(
                Finding(
                    "below_minimum",
                    "warning",
                    f"The {where} caches a {int(ends[i]):,}-token prefix, below the model's minimum of {min_tok:,}: "
                    f"it is silently ignored (no write, no read).",
                    f"Move the breakpoint later so its prefix holds at least {min_tok:,} tokens, or drop it.",
                    n,
                )
            )
            continue
        if not varying and prefix_h[i] < be and ends[i] > prev_cached:
            out.append(
                Finding(
                    "below_break_even",
                    "warning",
                    f"The {where} hits {_pct(prefix_h[i])} of the time, below the break-even {_pct(be)} for a "
                    f"{ttl} TTL: caching these tokens costs more than sending them uncached.",
                    "Drop this breakpoint, share the prefix across more requests, or pick the TTL the traffic supports.",
                    n,
                )
            )
        prev_cached = max(prev_cached, float(ends[i]))
    if not in_order:
        out.append(
            Finding(
                "render_order",
                "info",
                "Blocks are listed out of the API's render order; they are analysed as rendered: tools → system → messages.",
                "List tools first, then system, then messages.",
            )
        )
    return out


def analyse(layout: Layout, x: EngineInputs, ttl: str, traffic: Traffic | None = None) -> LayoutReport:
    """Everything the checker shows for one layout (see module doc for the formulas).

    ``x``: the scenario's engine inputs (prices, minimum cacheable length, the model
    for TTFT); ``ttl``: '5m' or '1h'; ``traffic``: defaults to ``traffic_for``.
    """
    traffic = traffic or traffic_for(layout, x)
    blocks = rendered(layout.blocks)
    tokens = np.array([b.tokens for b in blocks], dtype=float)
    ends = np.cumsum(tokens)
    starts = ends - tokens
    prefix_h = _prefix_hit_rates(blocks, traffic, ttl)
    slots = _breakpoint_slots(blocks, layout.settings.auto)
    valid = len(slots) <= MAX_BREAKPOINTS
    be = float(break_even_hit_rate(CACHE_WRITE_MULTIPLIER[ttl], x.cache_read_multiplier))
    min_tok = int(x.min_cacheable_tokens)
    total = float(ends[-1])
    xp = x.with_(prompt_tokens=total)
    nocache = total * float(x.price_in_usd_per_token) + float(x.output_tokens) * float(x.price_out_usd_per_token)
    ttft_nocache = float(prefill(xp).time_s)
    month = traffic.rpm * MINUTES_PER_MONTH
    findings = _findings(blocks, slots, ends, starts, prefix_h, x, traffic, ttl, be, blocks == layout.blocks)

    first_varying = next((i for i, b in enumerate(blocks) if b.variability == "per_request"), len(blocks))
    reusable_cap = float(starts[first_varying]) if first_varying < len(blocks) else total
    bp_rows = [
        {
            "breakpoint": k,
            "block": i + 1,
            "source": source,
            "prefix_tokens": int(ends[i]),
            "reusable_prefix_tokens": int(min(ends[i], reusable_cap)),
            "shared_by": SHARED_BY[max((b.variability for b in blocks[: i + 1]), key=VARIABILITIES.index)],
            "above_minimum": bool(ends[i] >= min_tok),
            "hit_rate_frac": float(prefix_h[i]),
            "pays": bool(ends[i] >= min_tok and prefix_h[i] > be),
        }
        for k, (i, source) in enumerate(slots, 1)
    ]
    blocks_frame = pd.DataFrame(
        {
            "block": np.arange(1, len(blocks) + 1),
            "kind": [b.kind for b in blocks],
            "tokens": [b.tokens for b in blocks],
            "variability": [b.variability for b in blocks],
            "breakpoint": [b.breakpoint for b in blocks],
            "prefix_end_tokens": ends.astype(int),
            "prefix_hit_rate_frac": prefix_h,
        }
    )
    common = dict(
        blocks=blocks,
        traffic=traffic,
        auto=layout.settings.auto,
        valid=valid,
        min_cacheable_tokens=min_tok,
        total_tokens=int(total),
        blocks_frame=blocks_frame,
        breakpoints_frame=pd.DataFrame(
            bp_rows,
            columns=[
                "breakpoint",
                "block",
                "source",
                "prefix_tokens",
                "reusable_prefix_tokens",
                "shared_by",
                "above_minimum",
                "hit_rate_frac",
                "pays",
            ],
        ),
        break_even_hit_rate_frac=be,
        nocache_cost_per_request_usd=nocache,
        nocache_cost_per_month_usd=nocache * month,
        ttft_nocache_s=ttft_nocache,
    )
    if not valid:
        return LayoutReport(findings=tuple(findings), **common)

    c = _cost(ends, prefix_h, [i for i, _ in slots], x, ttl)
    other = "1h" if ttl == "5m" else "5m"
    c_other = _cost(ends, _prefix_hit_rates(blocks, traffic, other), [i for i, _ in slots], x, other)
    if len(c.positions) and ttl_is_better(other, c_other.cost_usd, c.cost_usd):
        if ttl == "1h":
            why = (
                "the traffic keeps a 5-minute cache warm, so the hour buys no extra reads and each write costs 2× "
                "instead of 1.25×."
            )
        else:
            why = "requests are too sparse for a 5-minute window; the 1-hour TTL turns many writes into reads."
        findings.append(
            Finding(
                "ttl_mismatch",
                "warning",
                f"At {traffic.rpm:g} requests/min this layout costs ${c_other.cost_usd * month:,.2f}/month with a "
                f"{other} TTL against ${c.cost_usd * month:,.2f} with {ttl}: {why}",
                f"Use the {other} TTL.",
            )
        )
    # Expected TTFT: the longest hit decides how much prefill is skipped.
    p_longest = c.hits - np.append(c.hits[1:], 0.0)
    new = np.maximum(total - c.positions, 1.0)
    past = np.minimum(c.positions, total - 1.0)
    t_hit = prefill(xp, tokens=new, past=past).time_s if len(new) else np.zeros(0)
    ttft = float(np.sum(p_longest * t_hit) + (1.0 - (c.hits[0] if len(c.hits) else 0.0)) * ttft_nocache)
    return LayoutReport(
        findings=tuple(findings),
        read_tokens=c.read_tokens,
        written_tokens=c.written_tokens,
        cost_per_request_usd=c.cost_usd,
        cost_per_month_usd=c.cost_usd * month,
        ttft_s=ttft,
        ttft_saved_s=ttft_nocache - ttft,
        other_ttl_cost_per_request_usd=c_other.cost_usd,
        **common,
    )


# ---------------------------------------------------------------- suggestion


@dataclass(frozen=True)
class Suggestion:
    layout: Layout
    ttl: str
    report: LayoutReport
    changes: tuple[str, ...] = field(default=())


def reorder(blocks, block_h: np.ndarray) -> list[tuple[int, Block]]:
    """(original index, block) in the suggested order; the rule:

    * tools stay in tools (a tool definition cannot move), sorted most-shared first;
    * system and messages blocks are sorted together, most-shared first (ties keep
      their order); a system block that lands after a messages block moves into
      the messages (the article's fix: the timestamp goes into the user turn).
    Most-shared = highest hit rate of its own sharing class (``block_hit_rates``).
    """
    order = sorted(range(len(blocks)), key=lambda i: (blocks[i].kind != "tools", -block_h[i], i))
    out: list[tuple[int, Block]] = []
    seen_messages = False
    for i in order:
        b = blocks[i]
        seen_messages |= b.kind == "messages"
        if b.kind == "system" and seen_messages:
            b = b.model_copy(update={"kind": "messages"})
        out.append((i, b))
    return out


def suggest(layout: Layout, x: EngineInputs, ttl: str, traffic: Traffic | None = None) -> Suggestion:
    """The cheapest layout reachable by ``reorder`` plus breakpoints at the ends of the
    runs of equally shared prefix (at most 4 candidates), over every subset of those and
    automatic caching on/off; ties use fewer breakpoints and keep the user's auto setting.
    The TTL changes only as ``ttl_is_better`` says.  No valid layout of the same blocks
    at the same TTL costs less (proof in docs/prompt_caching.md)."""
    traffic = traffic or traffic_for(layout, x)
    blocks = rendered(layout.blocks)
    block_h = block_hit_rates([b.variability for b in blocks], traffic, ttl)
    moved = reorder(blocks, block_h)
    new_blocks = [b.model_copy(update={"breakpoint": False}) for _, b in moved]
    ends = np.cumsum([b.tokens for b in new_blocks]).astype(float)
    last = len(new_blocks) - 1
    best: dict[str, tuple] = {}
    for t in ("5m", "1h"):
        prefix_h = _prefix_hit_rates(new_blocks, traffic, t)
        runs = [i for i in range(last) if prefix_h[i + 1] < prefix_h[i]] + [last]
        for auto in (layout.settings.auto, not layout.settings.auto):
            room = MAX_BREAKPOINTS - int(auto)
            for k in range(0, min(room, len(runs)) + 1):
                for subset in itertools.combinations(runs, k):
                    bps = list(subset) + ([last] if auto else [])
                    cost = _cost(ends, prefix_h, bps, x, t).cost_usd
                    key = (cost, k + int(auto), auto != layout.settings.auto)
                    if t not in best or key < best[t][0]:
                        best[t] = (key, subset, auto, t)
    other = "1h" if ttl == "5m" else "5m"
    chosen = best[other] if ttl_is_better(other, best[other][0][0], best[ttl][0][0]) else best[ttl]
    _, subset, auto, best_ttl = chosen
    final = tuple(b.model_copy(update={"breakpoint": i in subset}) for i, b in enumerate(new_blocks))
    new_layout = Layout(blocks=final, settings=layout.settings.model_copy(update={"auto": auto}))
    changes = _describe(blocks, moved, subset, auto, layout.settings.auto, best_ttl, ttl)
    return Suggestion(new_layout, best_ttl, analyse(new_layout, x, best_ttl, traffic), tuple(changes))


def _describe(blocks, moved, subset, auto, was_auto, ttl, was_ttl) -> list[str]:
    out = []
    order = [old for old, _ in moved]
    if order != sorted(order):
        out.append("New order of the blocks: " + ", ".join(str(old + 1) for old in order) + ".")
    for old, b in moved:
        if b.kind != blocks[old].kind:
            out.append(
                f"Block {old + 1} ({blocks[old].tokens:,} tokens, {b.variability}) moves from system into the "
                "messages (e.g. the start of the user turn)."
            )
    if subset:
        out.append("Breakpoints on block(s) " + ", ".join(str(i + 1) for i in subset) + ".")
    else:
        out.append("No explicit breakpoint.")
    if auto != was_auto:
        out.append("Automatic caching " + ("on." if auto else "off: its breakpoint on the last block only writes."))
    if ttl != was_ttl:
        out.append(f"TTL {ttl}.")
    return out
