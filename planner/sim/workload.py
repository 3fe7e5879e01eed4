"""Requests for the serving simulator: Poisson arrivals with random lengths, or a trace.

Poisson:  inter-arrival gaps E_i / λ with E_i ~ Exp(1) (the unit draws come first, so
          the same seed at another rate gives the same sequence, time-scaled: sizing
          compares replica counts on one coupled sample path).
Lengths with mean m and coefficient of variation c (``spread``):
  fixed      m
  uniform    U[m·(1 − √3·c), m·(1 + √3·c)]        (sd of U[a, b] is (b − a)/√12)
  lognormal  exp(N(μ, σ²)),  σ² = ln(1 + c²),  μ = ln m − σ²/2
  rounded to whole tokens, at least 1 (a uniform lower end below 1 is clipped, so for
  c > 1/√3 the mean rises slightly).

Shared prefixes.  A request's prompt may begin with *prefix blocks* that other requests
share: block j ends at token ``prefix_ends[j]`` and is named by a chain key, equal in two
requests exactly when the blocks and everything before them are equal (vLLM hashes each
KV block together with its parent's hash; Mooncake's ``hash_ids`` are such a chain of
512-token blocks).  Whether a shared block is *found* is decided by the simulator's prefix
cache, not here: a Poisson request carries, with probability ``hit``, the scenario's shared
``prefix``-token system prompt (blocks of ``PREFIX_BLOCK_TOKENS``, the last one shorter);
a trace carries its own ids.  ``reusable_prefix_tokens`` is the ceiling an unbounded cache
would reach: the tokens of blocks whose key appeared in an earlier request.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from planner.errors import TraceError
from planner.model.scenario import LengthDist, Scenario

#: Tokens per prefix block where the workload chooses (Poisson, prefix_id traces): Mooncake's block.
PREFIX_BLOCK_TOKENS = 512
_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Workload:
    """Requests sorted by arrival, and the shared prefix blocks of each prompt.

    Request i's prefix blocks are ``prefix_keys[prefix_offsets[i]:prefix_offsets[i + 1]]``
    (chain keys, ints) ending at the token positions ``prefix_ends[…]`` (increasing, ≤ prompt)."""

    arrival_s: np.ndarray  # (n,) float64, non-decreasing
    prompt_tokens: np.ndarray  # (n,) int64 ≥ 1
    output_tokens: np.ndarray  # (n,) int64 ≥ 1
    source: str = "trace"  # "poisson", or the trace format
    prefix_keys: np.ndarray = field(default_factory=lambda: _EMPTY)
    prefix_ends: np.ndarray = field(default_factory=lambda: _EMPTY)
    prefix_offsets: np.ndarray | None = None  # (n + 1,); None = no shared blocks
    prefix_block_tokens: int = PREFIX_BLOCK_TOKENS
    name: str = ""

    def __post_init__(self) -> None:
        if self.prefix_offsets is None:
            object.__setattr__(self, "prefix_offsets", np.zeros(len(self) + 1, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    @property
    def offsets(self) -> np.ndarray:
        assert self.prefix_offsets is not None  # set in __post_init__
        return self.prefix_offsets

    def prefix_blocks(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """(chain keys, end tokens) of request i's shared prefix blocks."""
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.prefix_keys[a:b], self.prefix_ends[a:b]

    @property
    def has_prefixes(self) -> bool:
        return self.prefix_keys.size > 0

    def take(self, index: slice | np.ndarray) -> Workload:
        """The requests at ``index`` (a slice, or an index or boolean array), in their order."""
        rows = np.arange(len(self))[index]
        starts, stops = self.offsets[rows], self.offsets[rows + 1]
        counts = stops - starts
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        flat = np.repeat(starts - offsets[:-1], counts) + np.arange(int(offsets[-1]))
        return Workload(
            self.arrival_s[rows],
            self.prompt_tokens[rows],
            self.output_tokens[rows],
            self.source,
            self.prefix_keys[flat],
            self.prefix_ends[flat],
            offsets,
            self.prefix_block_tokens,
            self.name,
        )

    def with_arrivals(self, arrival_s: np.ndarray) -> Workload:
        return Workload(
            arrival_s,
            self.prompt_tokens,
            self.output_tokens,
            self.source,
            self.prefix_keys,
            self.prefix_ends,
            self.prefix_offsets,
            self.prefix_block_tokens,
            self.name,
        )

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate: (n − 1) / (last − first arrival); inf when they all arrive at once."""
        span = float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) > 1 else 0.0
        return (len(self) - 1) / span if span > 0 else float("inf")

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) else 0.0

    def reusable_prefix_tokens(self) -> np.ndarray:
        """Per request: tokens of its leading prefix blocks whose key appeared in an earlier request
        (what an unbounded prefix cache could serve), at most prompt − 1 (vLLM recomputes the last token)."""
        out = np.zeros(len(self), dtype=np.int64)
        if not self.has_prefixes:
            return out
        owner = np.repeat(np.arange(len(self)), np.diff(self.offsets))  # the request of each block
        _, first, inverse = np.unique(self.prefix_keys, return_index=True, return_inverse=True)
        usable = (owner[first][inverse] < owner) & (self.prefix_ends <= self.prompt_tokens[owner] - 1)
        # the leading run of usable blocks of each request: up to its first unusable one
        position = np.arange(owner.size) - self.offsets[owner]
        stop = np.full(len(self), np.iinfo(np.int64).max)
        np.minimum.at(stop, owner[~usable], position[~usable])
        lead = usable & (position < stop[owner])
        np.maximum.at(out, owner[lead], self.prefix_ends[lead])
        return out


def chain_keys(blocks: Sequence[Sequence[Hashable]], ends: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Chain keys of each request's blocks: block j of two requests gets the same int key exactly when
    their ids and end tokens agree for blocks 0 … j (vLLM's parent-hash chain).  Returns (counts, keys)."""
    table: dict[tuple[int, Hashable, int], int] = {}
    keys: list[int] = []
    counts = np.zeros(len(blocks), dtype=np.int64)
    for i, (ids, stops) in enumerate(zip(blocks, ends, strict=True)):
        parent = -1
        for raw, end in zip(ids, stops, strict=True):
            parent = table.setdefault((parent, raw, end), len(table))
            keys.append(parent)
        counts[i] = len(ids)
    return counts, np.array(keys, dtype=np.int64)


def with_prefix_blocks(
    w: Workload, counts: np.ndarray, keys: np.ndarray, ends: np.ndarray, block_tokens: int = PREFIX_BLOCK_TOKENS
) -> Workload:
    """``w`` with prefix blocks (per-request ``counts`` of the flat ``keys`` / ``ends``)."""
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Workload(
        w.arrival_s,
        w.prompt_tokens,
        w.output_tokens,
        w.source,
        keys.astype(np.int64),
        ends.astype(np.int64),
        offsets,
        block_tokens,
        w.name,
    )


def prefix_block_ends(prefix_tokens: int, block_tokens: int = PREFIX_BLOCK_TOKENS) -> list[int]:
    """End tokens of a ``prefix_tokens``-token prefix cut into blocks (the last one shorter)."""
    ends = list(range(block_tokens, prefix_tokens, block_tokens))
    return ends + [prefix_tokens] if prefix_tokens > 0 else []


def shared_prefix(w: Workload, shares: np.ndarray, prefix_tokens: np.ndarray, group: Sequence[Hashable]) -> Workload:
    """``w`` where request i (``shares[i]``) begins with the prefix of ``group[i]``, ``prefix_tokens[i]`` long."""
    blocks: list[list[Hashable]] = []
    ends: list[list[int]] = []
    for share, tokens, name in zip(shares.tolist(), prefix_tokens.tolist(), group, strict=True):
        stops = prefix_block_ends(int(tokens)) if share else []
        blocks.append([name] + list(range(1, len(stops))) if stops else [])
        ends.append(stops)
    counts, keys = chain_keys(blocks, ends)
    flat_ends = np.array([e for stops in ends for e in stops], dtype=np.int64)
    return with_prefix_blocks(w, counts, keys, flat_ends)


def one_shared_prefix(w: Workload, prefix_tokens: np.ndarray, block_tokens: int = PREFIX_BLOCK_TOKENS) -> Workload:
    """``w`` where request i's prompt begins with the first ``prefix_tokens[i]`` tokens (0 = none) of one
    shared prefix: ``shared_prefix`` with one group, vectorised.  Full blocks j are key j; a shorter last
    block ending at token P gets a key of its own per P (the same classes as ``chain_keys``)."""
    counts = -(-prefix_tokens // block_tokens)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    owner = np.repeat(np.arange(len(w)), counts)
    j = np.arange(int(offsets[-1])) - offsets[owner]
    ends = np.minimum((j + 1) * block_tokens, prefix_tokens[owner])
    partial = ends % block_tokens != 0
    keys = j.copy()
    full = int(counts.max()) if len(w) else 0
    _, rank = np.unique(ends[partial], return_inverse=True)
    keys[partial] = full + rank
    return with_prefix_blocks(w, counts, keys, ends, block_tokens)


def lengths(rng: np.random.Generator, dist: LengthDist, mean: float, spread: float, n: int) -> np.ndarray:
    """``n`` token counts with mean ``mean`` and coefficient of variation ``spread`` (module doc)."""
    if dist == "fixed" or spread == 0.0:
        raw = np.full(n, float(mean))
    elif dist == "uniform":
        half = np.sqrt(3.0) * spread * mean
        raw = rng.uniform(mean - half, mean + half, n)
    elif dist == "lognormal":
        sigma2 = np.log1p(spread**2)
        raw = rng.lognormal(np.log(mean) - sigma2 / 2.0, np.sqrt(sigma2), n)
    else:
        raise ValueError(f"dist={dist!r}: one of fixed, uniform, lognormal")
    return np.maximum(np.rint(raw), 1.0).astype(np.int64)


def poisson_workload(
    rate_per_s: float,
    n: int,
    dist: LengthDist,
    spread: float,
    prompt_mean_tokens: float,
    output_mean_tokens: float,
    cache_hit_rate: float,
    prefix_tokens: int,
    seed: int,
) -> Workload:
    """``n`` Poisson arrivals at ``rate_per_s`` (first at t = E_1/λ), lengths as in the module doc;
    with probability ``cache_hit_rate`` a prompt begins with the shared ``prefix_tokens``-token prefix."""
    rng = np.random.default_rng(seed)
    unit_gaps = rng.exponential(1.0, n)
    prompt = lengths(rng, dist, spread=spread, mean=prompt_mean_tokens, n=n)
    output = lengths(rng, dist, spread=spread, mean=output_mean_tokens, n=n)
    shares = rng.random(n) < cache_hit_rate
    w = Workload(np.cumsum(unit_gaps) / rate_per_s, prompt, output, "poisson")
    return one_shared_prefix(w, np.where(shares, np.minimum(prefix_tokens, prompt), 0))


def scenario_workload(s: Scenario, rate_per_s: float | None = None, n: int | None = None) -> Workload:
    """The scenario's Poisson workload (``rate``, ``dist``, ``spread``, ``prompt``, ``output``,
    ``hit``, ``prefix``, ``sim_requests``, ``seed``), optionally at another rate or size."""
    return poisson_workload(
        s.rate if rate_per_s is None else rate_per_s,
        s.sim_requests if n is None else n,
        s.dist,
        s.spread,
        s.prompt,
        s.output,
        s.hit,
        s.prefix,
        s.seed,
    )


def time_window(w: Workload, start_s: float, duration_s: float | None) -> Workload:
    """The requests arriving in [first + start, first + start + duration), re-timed to start at 0."""
    if len(w) == 0:
        return w
    first = float(w.arrival_s[0])
    rel = w.arrival_s - first
    keep = rel >= start_s
    if duration_s is not None:
        keep &= rel < start_s + duration_s
    if not keep.any():
        span = f"{w.duration_s:,.1f}"
        until = "the end" if duration_s is None else f"{start_s + duration_s:,.1f} s"
        raise TraceError([f"window {start_s:,.1f} s to {until}: no requests (the trace spans 0 to {span} s)"])
    out = w.take(keep)
    return out.with_arrivals(out.arrival_s - first - start_s)


def time_scaled(w: Workload, factor: float) -> Workload:
    """The same requests at ``factor`` × the recorded rate (arrival times divided by ``factor``)."""
    if not (factor > 0 and np.isfinite(factor)):
        raise TraceError([f"scale: {factor!r} is not a positive number (1 = the recorded rate, 3 = 3× as fast)"])
    return w if factor == 1 else w.with_arrivals(w.arrival_s / factor)


def split_round_robin(w: Workload, replicas: int, index: int = 0) -> Workload:
    """The requests replica ``index`` of ``replicas`` receives from a round-robin balancer."""
    return w.take(slice(index, None, replicas))
