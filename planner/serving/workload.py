"""Requests for the serving simulator: Poisson arrivals with random lengths, or a CSV trace.

Poisson:  inter-arrival gaps E_i / λ with E_i ~ Exp(1) (the unit draws come first, so
          the same seed at another rate gives the same sequence, time-scaled: sizing
          compares replica counts on one coupled sample path).
Lengths with mean m and coefficient of variation c (``spread``):
  fixed      m
  uniform    U[m·(1 − √3·c), m·(1 + √3·c)]        (sd of U[a, b] is (b − a)/√12)
  lognormal  exp(N(μ, σ²)),  σ² = ln(1 + c²),  μ = ln m − σ²/2
  rounded to whole tokens, at least 1 (a uniform lower end below 1 is clipped, so for
  c > 1/√3 the mean rises slightly).
Prefix reuse: with probability ``hit`` a request's first ``prefix`` tokens are in the
server's prefix cache (vLLM automatic prefix caching).  In a trace, a request hits when
an earlier row has the same ``prefix_id``; the shared prefix is ``prefix`` tokens.

Trace CSV columns: ``arrival_s, prompt_tokens, output_tokens[, prefix_id]`` (header
row required, other columns ignored, rows in any order).  Every row is validated by
pydantic; errors name the row (1 = first data row), its line in the file and the field.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import TraceError
from planner.model.scenario import LengthDist, Scenario
from planner.units import MiB

if TYPE_CHECKING:  # csv.reader's class lives in the private _csv module: for the annotation only
    import _csv

MAX_TRACE_BYTES = 20 * MiB
MAX_TRACE_ROWS = 200_000
MAX_REPORTED_ROWS = 10
REQUIRED_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens")
OPTIONAL_COLUMNS = ("prefix_id",)


@dataclass(frozen=True)
class Workload:
    """Requests sorted by arrival.  ``prefix_hit_tokens``: prompt tokens found in the prefix cache
    (before the simulator rounds them down to whole KV blocks)."""

    arrival_s: np.ndarray  # (n,) float64, non-decreasing
    prompt_tokens: np.ndarray  # (n,) int64 ≥ 1
    output_tokens: np.ndarray  # (n,) int64 ≥ 1
    prefix_hit_tokens: np.ndarray  # (n,) int64 ≥ 0
    source: str  # "poisson" or "trace"

    def __len__(self) -> int:
        return int(self.arrival_s.shape[0])

    def take(self, index: slice | np.ndarray) -> Workload:
        """The requests at ``index`` (a slice, or an index or boolean array), in their order."""
        return Workload(
            self.arrival_s[index],
            self.prompt_tokens[index],
            self.output_tokens[index],
            self.prefix_hit_tokens[index],
            self.source,
        )

    @property
    def rate_per_s(self) -> float:
        """Mean arrival rate: (n − 1) / (last − first arrival); inf when they all arrive at once."""
        span = float(self.arrival_s[-1] - self.arrival_s[0]) if len(self) > 1 else 0.0
        return (len(self) - 1) / span if span > 0 else float("inf")


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
    """``n`` Poisson arrivals at ``rate_per_s`` (first at t = E_1/λ), lengths as in the module doc."""
    rng = np.random.default_rng(seed)
    unit_gaps = rng.exponential(1.0, n)
    prompt = lengths(rng, dist, spread=spread, mean=prompt_mean_tokens, n=n)
    output = lengths(rng, dist, spread=spread, mean=output_mean_tokens, n=n)
    hits = rng.random(n) < cache_hit_rate
    return Workload(
        arrival_s=np.cumsum(unit_gaps) / rate_per_s,
        prompt_tokens=prompt,
        output_tokens=output,
        prefix_hit_tokens=np.where(hits, np.minimum(prefix_tokens, prompt), 0).astype(np.int64),
        source="poisson",
    )


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


class TraceRow(BaseModel):
    """One request of a trace."""

    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)

    arrival_s: float = Field(ge=0.0, le=1e7, allow_inf_nan=False, description="arrival time, seconds")
    prompt_tokens: int = Field(ge=1, le=10_000_000)
    output_tokens: int = Field(ge=1, le=1_000_000)
    prefix_id: str | None = Field(default=None, max_length=128, description="requests sharing an id share a prefix")


def _row_problem(row_number: int, line: int, exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        field = ".".join(str(x) for x in e["loc"]) or "(row)"
        given = e.get("input")
        shown = "" if isinstance(given, dict) else f" (got {str(given)[:40]!r})"
        parts.append(f"{field}: {e['msg']}{shown}")
    return f"row {row_number} (line {line}): " + "; ".join(parts)


def parse_trace(
    data: bytes | str,
    prefix_tokens: int,
    max_bytes: int = MAX_TRACE_BYTES,
    max_rows: int = MAX_TRACE_ROWS,
) -> Workload:
    """Validate a CSV trace (module doc) into a Workload; raises TraceError naming each bad row.

    A request whose ``prefix_id`` appeared on an earlier-arriving row finds
    min(``prefix_tokens``, prompt) tokens cached.
    """
    reader = csv.reader(io.StringIO(_trace_text(data, max_bytes)))
    header = [h.strip() for h in next(reader, [])]
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise TraceError(
            [
                f"trace header: missing column {c!r} (need {', '.join(REQUIRED_COLUMNS)}; optional prefix_id)"
                for c in missing
            ]
        )
    return _trace_workload(_validated_rows(reader, header, max_rows), prefix_tokens)


def _trace_text(data: bytes | str, max_bytes: int) -> str:
    """The trace as text, after the size check (bytes are UTF-8, an optional BOM dropped)."""
    size = len(data.encode("utf-8") if isinstance(data, str) else data)
    if size > max_bytes:
        raise TraceError([f"trace: {size:,} bytes; the limit is {max_bytes:,}"])
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TraceError(["trace: not UTF-8 text"]) from None


def _validated_rows(reader: _csv.Reader, header: list[str], max_rows: int) -> list[TraceRow]:
    """Every non-blank data row validated; TraceError lists the first bad rows, then a count."""
    wanted = [(i, name) for i, name in enumerate(header) if name in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    rows: list[TraceRow] = []
    problems: list[str] = []
    bad_rows = 0
    number = 0
    for cells in reader:
        if not any(c.strip() for c in cells):
            continue  # blank line
        number += 1
        if number > max_rows:
            raise TraceError([f"trace: more than {max_rows:,} rows"])
        record = {name: cells[i] for i, name in wanted if i < len(cells) and cells[i].strip() != ""}
        try:
            rows.append(TraceRow.model_validate(record))
        except ValidationError as exc:
            bad_rows += 1
            if bad_rows <= MAX_REPORTED_ROWS:
                problems.append(_row_problem(number, reader.line_num, exc))
    if bad_rows > MAX_REPORTED_ROWS:
        problems.append(f"… and {bad_rows - MAX_REPORTED_ROWS} more bad rows")
    if problems:
        raise TraceError(problems)
    if not rows:
        raise TraceError(["trace: no data rows"])
    return rows


def _trace_workload(rows: list[TraceRow], prefix_tokens: int) -> Workload:
    """The rows sorted by arrival (stable); a row hits the prefix cache when an earlier one shares its prefix_id."""
    arrival = np.array([r.arrival_s for r in rows], dtype=float)
    order = np.argsort(arrival, kind="stable")
    prompt = np.array([r.prompt_tokens for r in rows], dtype=np.int64)[order]
    seen: set[str] = set()
    hit = np.zeros(len(rows), dtype=bool)
    for k, i in enumerate(order):
        pid = rows[i].prefix_id
        if pid is not None:
            hit[k] = pid in seen
            seen.add(pid)
    return Workload(
        arrival_s=arrival[order],
        prompt_tokens=prompt,
        output_tokens=np.array([r.output_tokens for r in rows], dtype=np.int64)[order],
        prefix_hit_tokens=np.where(hit, np.minimum(prefix_tokens, prompt), 0).astype(np.int64),
        source="trace",
    )


def read_trace_file(path: str, prefix_tokens: int, max_bytes: int = MAX_TRACE_BYTES) -> Workload:
    """``parse_trace`` of a file (edge function: the only file I/O here); size checked before reading."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise TraceError([f"trace {path}: {exc.strerror or exc}"]) from None
    if len(data) > max_bytes:
        raise TraceError([f"trace {path}: larger than the {max_bytes:,}-byte limit"])
    return parse_trace(data, prefix_tokens, max_bytes=max_bytes)


def split_round_robin(w: Workload, replicas: int, index: int = 0) -> Workload:
    """The requests replica ``index`` of ``replicas`` receives from a round-robin balancer."""
    return w.take(slice(index, None, replicas))
