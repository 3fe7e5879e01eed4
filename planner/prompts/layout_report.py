"""Prompt layout checker: what each cache breakpoint of an API request really caches.

The cache key of a breakpoint is a hash of everything before it, so its prefix
is shared only by requests whose every earlier block matches (Anthropic
prompt-caching docs).  Blocks are analysed in render order
(``layout.rendered``).

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

``analyse`` reports one layout; ``layout_suggest.suggest`` finds the cheapest
reordering and breakpoints (docs/prompt_caching.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from planner.engine.evaluate import compute
from planner.engine.inputs import EngineInputs
from planner.engine.prompt_cache import break_even_hit_rate, ttl_hit_rate
from planner.engine.roofline import prefill
from planner.format import fmt_count, fmt_num, fmt_pct, fmt_usd
from planner.model.api_pricing import CACHE_WRITE_MULTIPLIER, TTL_SECONDS
from planner.prompts.layout import MAX_BREAKPOINTS, VARIABILITIES, Block, Layout, rendered
from planner.units import S_PER_HOUR, S_PER_MINUTE

HOURS_PER_DAY = 24
MINUTES_PER_DAY = HOURS_PER_DAY * S_PER_HOUR / S_PER_MINUTE
#: A month is 30 days for the monthly cost.
MINUTES_PER_MONTH = 30 * MINUTES_PER_DAY
SHARED_BY = {
    "stable": "all requests",
    "per_day": "one day's requests",
    "per_user": "one user's requests",
    "per_request": "no other request",
}
#: Switching 5m → 1h must save at least this fraction of the cost to be suggested or flagged;
#: 1h → 5m is suggested whenever 5m costs no more (its writes are cheaper, its risk lower).
TTL_MATERIAL_FRAC = 0.01

# ---------------------------------------------------------------- traffic and cost


@dataclass(frozen=True)
class Traffic:
    """What the hit rates depend on besides the TTL: requests/min, users, request duration."""

    rpm: float
    users: int
    request_duration_s: float


def block_hit_rates(variability: Sequence[str] | np.ndarray, traffic: Traffic, ttl: str) -> np.ndarray:
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


def prefix_hit_rates(blocks: Sequence[Block], traffic: Traffic, ttl: str) -> np.ndarray:
    """Hit rate of the prefix ending at each block: the least-shared block so far."""
    return np.minimum.accumulate(block_hit_rates([b.variability for b in blocks], traffic, ttl))


@dataclass(frozen=True)
class Costing:
    """Expected tokens and cost of one layout under one traffic (per request)."""

    read_tokens: float
    written_tokens: float
    cost_usd: float
    positions: np.ndarray  # effective breakpoint prefix lengths, ascending
    hits: np.ndarray  # their hit rates


def expected_cost(
    ends: np.ndarray, prefix_h: np.ndarray, bp_blocks: Sequence[int], x: EngineInputs, ttl: str
) -> Costing:
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
    p_in = float(x.price_in_per_token_usd)
    cost = (read * r + written * CACHE_WRITE_MULTIPLIER[ttl] + plain) * p_in + float(x.output_tokens) * float(
        x.price_out_per_token_usd
    )
    return Costing(read, written, cost, pos, h)


def other_ttl(ttl: str) -> str:
    """The TTL that is not ``ttl``."""
    return "1h" if ttl == "5m" else "5m"


def ttl_is_better(candidate: str, candidate_cost: float, current_cost: float) -> bool:
    """Whether ``candidate`` TTL should replace the current one at these costs."""
    if candidate == "5m":
        return candidate_cost <= current_cost
    return candidate_cost < current_cost * (1.0 - TTL_MATERIAL_FRAC)


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


# ---------------------------------------------------------------- report


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


@dataclass(frozen=True)
class _Prefixes:
    """The rendered blocks' prefixes under one traffic and TTL (arrays indexed by block, 0-based)."""

    blocks: tuple[Block, ...]
    ends: np.ndarray  # tokens up to and including each block
    starts: np.ndarray  # tokens before each block
    hit_rates: np.ndarray  # hit rate of the prefix ending at each block

    @classmethod
    def of(cls, blocks: tuple[Block, ...], traffic: Traffic, ttl: str) -> _Prefixes:
        tokens = np.array([b.tokens for b in blocks], dtype=float)
        ends = np.cumsum(tokens)
        return cls(blocks, ends, ends - tokens, prefix_hit_rates(blocks, traffic, ttl))

    @property
    def total_tokens(self) -> float:
        return float(self.ends[-1])

    def first(self, variabilities: tuple[str, ...], upto: int) -> int | None:
        """The first block at index <= ``upto`` whose variability is one of ``variabilities``."""
        return next((j for j in range(upto + 1) if self.blocks[j].variability in variabilities), None)


@dataclass(frozen=True)
class _Rules:
    """What a breakpoint is judged against: the model's minimum prefix and the TTL's break-even hit rate."""

    min_tokens: int
    break_even_frac: float
    ttl: str


def _breakpoint_slots(blocks: Sequence[Block], auto: bool) -> list[tuple[int, str]]:
    """(block index, 'explicit'|'auto') per breakpoint; automatic caching marks the last block."""
    slots = [(i, "explicit") for i, b in enumerate(blocks) if b.breakpoint]
    if auto:
        slots.append((len(blocks) - 1, "auto"))
    return slots


# ---------------------------------------------------------------- findings


def _request_findings(slots: list[tuple[int, str]], traffic: Traffic) -> list[Finding]:
    """Findings about the request as a whole: too many breakpoints, no traffic, no breakpoint."""
    out: list[Finding] = []
    if len(slots) > MAX_BREAKPOINTS:
        auto_note = " (automatic caching uses one)" if any(s == "auto" for _, s in slots) else ""
        out.append(
            Finding(
                "too_many_breakpoints",
                "error",
                f"{len(slots)} breakpoints{auto_note}: the API accepts at most {MAX_BREAKPOINTS} "
                "and rejects the request.",
                f"Keep at most {MAX_BREAKPOINTS}: one at the end of each differently shared prefix "
                "(see the suggestion).",
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
    return out


def _after_varying(p: _Prefixes, i: int, j: int, where: str, ttl: str) -> Finding:
    """Breakpoint ``i`` covers block ``j``, which changes on every request."""
    block = p.blocks[j]
    reusable = (
        f"Only the first {fmt_count(p.starts[j])} tokens are reusable." if p.starts[j] else "No token is reusable."
    )
    return Finding(
        "breakpoint_after_varying",
        "error",
        f"The {where} covers block {j + 1} ({block.kind}, {fmt_count(block.tokens, 'token')}), which changes on "
        f"every request: its prefix hash is new each time, so all {fmt_count(p.ends[i])} tokens are written at "
        f"{fmt_num(CACHE_WRITE_MULTIPLIER[ttl])}× and never read. " + reusable,
        f"Move block {j + 1} after the last stable block (e.g. into the user message) and put the breakpoint "
        f"on the block just before it.",
        i + 1,
    )


def _narrow(p: _Prefixes, i: int, j: int, where: str) -> Finding:
    """Breakpoint ``i`` covers block ``j``, shared by one day's or one user's requests only."""
    variability = p.blocks[j].variability
    return Finding(
        "narrow_prefix",
        "info",
        f"The {where} covers block {j + 1}, which varies {variability.replace('_', ' ')}: its prefix "
        f"is shared only by {SHARED_BY[variability]} (hit rate {fmt_pct(p.hit_rates[i])}).",
        "Keep blocks shared by all requests first, with their own breakpoint.",
        i + 1,
    )


def _below_minimum(p: _Prefixes, i: int, where: str, min_tokens: int) -> Finding:
    return Finding(
        "below_minimum",
        "warning",
        f"The {where} caches a {fmt_count(p.ends[i])}-token prefix, below the model's minimum of "
        f"{fmt_count(min_tokens)}: it is silently ignored (no write, no read).",
        f"Move the breakpoint later so its prefix holds at least {fmt_count(min_tokens)} tokens, or drop it.",
        i + 1,
    )


def _below_break_even(p: _Prefixes, i: int, where: str, rules: _Rules) -> Finding:
    return Finding(
        "below_break_even",
        "warning",
        f"The {where} hits {fmt_pct(p.hit_rates[i])} of the time, below the break-even "
        f"{fmt_pct(rules.break_even_frac)} for a {rules.ttl} TTL: caching these tokens costs more than sending "
        "them uncached.",
        "Drop this breakpoint, share the prefix across more requests, or pick the TTL the traffic supports.",
        i + 1,
    )


def _breakpoint_findings(p: _Prefixes, slots: list[tuple[int, str]], rules: _Rules) -> list[Finding]:
    """Per breakpoint, in prefix order: what it covers, whether it is effective, whether it pays.

    A breakpoint that adds no tokens to the longest prefix cached so far is not judged on break-even."""
    out: list[Finding] = []
    prev_cached = 0.0
    explicit = {i for i, source in slots if source == "explicit"}
    for i in sorted({i for i, _ in slots}):
        where = f"breakpoint on block {i + 1}" if i in explicit else "automatic breakpoint (last block)"
        varying = p.first(("per_request",), i)
        narrow = p.first(("per_day", "per_user"), i)
        if varying is not None:
            out.append(_after_varying(p, i, varying, where, rules.ttl))
        elif narrow is not None:
            out.append(_narrow(p, i, narrow, where))
        if p.ends[i] < rules.min_tokens:
            out.append(_below_minimum(p, i, where, rules.min_tokens))
            continue
        if varying is None and p.hit_rates[i] < rules.break_even_frac and p.ends[i] > prev_cached:
            out.append(_below_break_even(p, i, where, rules))
        prev_cached = max(prev_cached, float(p.ends[i]))
    return out


RENDER_ORDER = Finding(
    "render_order",
    "info",
    "Blocks are listed out of the API's render order; they are analysed as rendered: tools → system → messages.",
    "List tools first, then system, then messages.",
)


def _findings(
    p: _Prefixes, slots: list[tuple[int, str]], traffic: Traffic, rules: _Rules, in_order: bool
) -> list[Finding]:
    """Every finding about the request's structure (the TTL finding needs the costs: ``_ttl_mismatch``)."""
    out = _request_findings(slots, traffic) + _breakpoint_findings(p, slots, rules)
    return out if in_order else [*out, RENDER_ORDER]


def _ttl_mismatch(current: Costing, other: Costing, ttl: str, traffic: Traffic) -> Finding | None:
    """A warning when the other TTL is better (``ttl_is_better``) for a layout that caches anything."""
    alternative = other_ttl(ttl)
    if not (len(current.positions) and ttl_is_better(alternative, other.cost_usd, current.cost_usd)):
        return None
    if ttl == "1h":
        why = (
            "the traffic keeps a 5-minute cache warm, so the hour buys no extra reads and each write costs "
            f"{fmt_num(CACHE_WRITE_MULTIPLIER['1h'])}× instead of {fmt_num(CACHE_WRITE_MULTIPLIER['5m'])}×."
        )
    else:
        why = "requests are too sparse for a 5-minute window; the 1-hour TTL turns many writes into reads."
    month = traffic.rpm * MINUTES_PER_MONTH
    return Finding(
        "ttl_mismatch",
        "warning",
        f"At {fmt_num(traffic.rpm)} requests/min this layout costs {fmt_usd(other.cost_usd * month)}/month with a "
        f"{alternative} TTL against {fmt_usd(current.cost_usd * month)} with {ttl}: {why}",
        f"Use the {alternative} TTL.",
    )


# ---------------------------------------------------------------- analyse

BREAKPOINT_COLUMNS = (
    "breakpoint",
    "block",
    "source",
    "prefix_tokens",
    "reusable_prefix_tokens",
    "shared_by",
    "above_minimum",
    "cache_hit_rate",
    "pays",
)


def _breakpoints_frame(p: _Prefixes, slots: list[tuple[int, str]], rules: _Rules) -> pd.DataFrame:
    """One row per breakpoint slot: its prefix, the reusable part (up to the first per-request block), its hit rate."""
    first_varying = p.first(("per_request",), len(p.blocks) - 1)
    reusable_cap = float(p.starts[first_varying]) if first_varying is not None else p.total_tokens
    rows = [
        {
            "breakpoint": k,
            "block": i + 1,
            "source": source,
            "prefix_tokens": int(p.ends[i]),
            "reusable_prefix_tokens": int(min(p.ends[i], reusable_cap)),
            "shared_by": SHARED_BY[max((b.variability for b in p.blocks[: i + 1]), key=VARIABILITIES.index)],
            "above_minimum": bool(p.ends[i] >= rules.min_tokens),
            "cache_hit_rate": float(p.hit_rates[i]),
            "pays": bool(p.ends[i] >= rules.min_tokens and p.hit_rates[i] > rules.break_even_frac),
        }
        for k, (i, source) in enumerate(slots, 1)
    ]
    return pd.DataFrame(rows, columns=list(BREAKPOINT_COLUMNS))


def _blocks_frame(p: _Prefixes) -> pd.DataFrame:
    """One row per block in render order, with the prefix it ends and that prefix's hit rate."""
    return pd.DataFrame(
        {
            "block": np.arange(1, len(p.blocks) + 1),
            "kind": [b.kind for b in p.blocks],
            "tokens": [b.tokens for b in p.blocks],
            "variability": [b.variability for b in p.blocks],
            "breakpoint": [b.breakpoint for b in p.blocks],
            "prefix_end_tokens": p.ends.astype(int),
            "prefix_cache_hit_rate": p.hit_rates,
        }
    )


def _expected_ttft_s(x: EngineInputs, costing: Costing, total: float, ttft_nocache_s: float) -> float:
    """Expected TTFT (module doc): the longest hit decides how much prefill is skipped."""
    p_longest = costing.hits - np.append(costing.hits[1:], 0.0)
    new = np.maximum(total - costing.positions, 1.0)
    past = np.minimum(costing.positions, total - 1.0)
    xp = x.with_(prompt_tokens=total)
    t_hit = prefill(xp, tokens=new, past=past).time_s if len(new) else np.zeros(0)
    hit_any = costing.hits[0] if len(costing.hits) else 0.0
    return float(np.sum(p_longest * t_hit) + (1.0 - hit_any) * ttft_nocache_s)


def _priced(
    report: LayoutReport, p: _Prefixes, slots: list[tuple[int, str]], x: EngineInputs, ttl: str
) -> LayoutReport:
    """``report`` with the expected tokens, costs and TTFT of a valid request (and the TTL finding)."""
    traffic = report.traffic
    breakpoints = [i for i, _ in slots]
    current = expected_cost(p.ends, p.hit_rates, breakpoints, x, ttl)
    alternative = other_ttl(ttl)
    other = expected_cost(p.ends, prefix_hit_rates(p.blocks, traffic, alternative), breakpoints, x, alternative)
    mismatch = _ttl_mismatch(current, other, ttl, traffic)
    ttft = _expected_ttft_s(x, current, p.total_tokens, report.ttft_nocache_s)
    return replace(
        report,
        findings=report.findings + ((mismatch,) if mismatch is not None else ()),
        read_tokens=current.read_tokens,
        written_tokens=current.written_tokens,
        cost_per_request_usd=current.cost_usd,
        cost_per_month_usd=current.cost_usd * (traffic.rpm * MINUTES_PER_MONTH),
        ttft_s=ttft,
        ttft_saved_s=report.ttft_nocache_s - ttft,
        other_ttl_cost_per_request_usd=other.cost_usd,
    )


def analyse(layout: Layout, x: EngineInputs, ttl: str, traffic: Traffic | None = None) -> LayoutReport:
    """Everything the checker shows for one layout (see module doc for the formulas).

    ``x``: the scenario's engine inputs (prices, minimum cacheable length, the model
    for TTFT); ``ttl``: '5m' or '1h'; ``traffic``: defaults to ``traffic_for``.
    """
    traffic = traffic if traffic is not None else traffic_for(layout, x)
    p = _Prefixes.of(rendered(layout.blocks), traffic, ttl)
    slots = _breakpoint_slots(p.blocks, layout.settings.auto)
    rules = _Rules(
        min_tokens=int(x.min_cacheable_tokens),
        break_even_frac=float(break_even_hit_rate(CACHE_WRITE_MULTIPLIER[ttl], x.cache_read_multiplier)),
        ttl=ttl,
    )
    total = p.total_tokens
    nocache = total * float(x.price_in_per_token_usd) + float(x.output_tokens) * float(x.price_out_per_token_usd)
    report = LayoutReport(
        blocks=p.blocks,
        traffic=traffic,
        auto=layout.settings.auto,
        valid=len(slots) <= MAX_BREAKPOINTS,
        min_cacheable_tokens=rules.min_tokens,
        total_tokens=int(total),
        blocks_frame=_blocks_frame(p),
        breakpoints_frame=_breakpoints_frame(p, slots, rules),
        findings=tuple(_findings(p, slots, traffic, rules, p.blocks == layout.blocks)),
        break_even_hit_rate_frac=rules.break_even_frac,
        nocache_cost_per_request_usd=nocache,
        nocache_cost_per_month_usd=nocache * (traffic.rpm * MINUTES_PER_MONTH),
        ttft_nocache_s=float(prefill(x.with_(prompt_tokens=total)).time_s),
    )
    return _priced(report, p, slots, x, ttl) if report.valid else report
