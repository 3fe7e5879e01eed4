"""Request traces read into a ``Workload``: four formats, detected from the first line; gzip accepted.

  kvplan     CSV with a header holding ``arrival_s, prompt_tokens, output_tokens`` and an
             optional ``prefix_id`` (seconds; rows sharing an id share their first
             min(prefix, prompt) tokens)
  azure      the Azure LLM inference traces, 2023 and 2024 (Patel et al., "Splitwise",
             ISCA 2024): ``TIMESTAMP, ContextTokens, GeneratedTokens``, date-times (no zone
             = UTC); arrivals are seconds after the earliest row
  burstgpt   BurstGPT (Wang et al., 2024): ``Timestamp, Model, Request tokens, Response
             tokens, Total tokens, Log Type``, seconds
  mooncake   JSON lines (Mooncake, Qin et al., FAST 2025): ``timestamp`` (ms),
             ``input_length``, ``output_length`` and optional ``hash_ids``, the prompt's
             512-token blocks (equal ids = a shared prefix block)

Every row is validated by pydantic; an error names the row (1 = first data row), its line in
the file and the field, e.g. ``row 2 (line 3): prompt_tokens: Input should be greater than
or equal to 1 (got '0')``; the first ten bad rows are listed, then a count.  Rows the
publishers mark as failed requests are skipped and counted (``Trace.skipped_rows``):
BurstGPT and Azure rows with 0 response/generated tokens (the BurstGPT README: "failure
that Response tokens are 0s") or 0 request tokens.  Limits: ``MAX_TRACE_BYTES`` after
decompression, ``MAX_TRACE_ROWS`` rows.  Rows may come in any order (stably sorted by arrival).

Bundled traces (``planner/data/traces``, with their licences): ``BUNDLED``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import zlib
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from planner.errors import TraceError
from planner.model.scenario import Scenario
from planner.sim.workload import (
    PREFIX_BLOCK_TOKENS,
    Workload,
    chain_keys,
    prefix_block_ends,
    shared_prefix,
    time_scaled,
    time_window,
    with_prefix_blocks,
)
from planner.units import MS_PER_S, MiB

MAX_TRACE_BYTES = 20 * MiB
MAX_TRACE_ROWS = 200_000
MAX_REPORTED_ROWS = 10
GZIP_MAGIC = b"\x1f\x8b"
TRACES_DIR = "traces"  # in the planner.data package

#: Bundled traces: name → (file in planner/data/traces, what it is).
BUNDLED: dict[str, tuple[str, str]] = {
    "azure-code-2023": ("azure-llm-2023-code.csv.gz", "Azure LLM inference, code, 2023-11-16 (8,819 requests, 1 h)"),
    "azure-conv-2023": (
        "azure-llm-2023-conv.csv.gz",
        "Azure LLM inference, conversation, 2023-11-16 (19,366 requests, 1 h)",
    ),
    "mooncake-conversation": (
        "mooncake-conversation.jsonl.gz",
        "Mooncake conversation, with prefix blocks (12,031 requests, 59 min)",
    ),
    "mooncake-synthetic": (
        "mooncake-synthetic.jsonl.gz",
        "Mooncake synthetic, with prefix blocks (3,993 requests, 17 min)",
    ),
}


@dataclass(frozen=True)
class Trace:
    """A validated trace: its requests, its format and the rows skipped as failed requests."""

    workload: Workload
    format: str  # kvplan | azure | burstgpt | mooncake
    skipped_rows: int = 0
    skipped_reason: str = ""


# ------------------------------------------------------------------ row models


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True)


class KvplanRow(_Row):
    arrival_s: float = Field(ge=0.0, le=1e7, allow_inf_nan=False, description="arrival time, seconds")
    prompt_tokens: int = Field(ge=1, le=10_000_000)
    output_tokens: int = Field(ge=1, le=1_000_000)
    prefix_id: str | None = Field(default=None, max_length=128, description="requests sharing an id share a prefix")


class AzureRow(_Row):
    TIMESTAMP: datetime
    ContextTokens: int = Field(ge=0, le=10_000_000)
    GeneratedTokens: int = Field(ge=0, le=1_000_000)

    @field_validator("TIMESTAMP", mode="after")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        return v if v.tzinfo is not None else v.replace(tzinfo=UTC)


class BurstRow(_Row):
    model_config = ConfigDict(frozen=True, extra="ignore", str_strip_whitespace=True, populate_by_name=True)
    timestamp_s: float = Field(alias="Timestamp", ge=0.0, le=1e9, allow_inf_nan=False)
    request_tokens: int = Field(alias="Request tokens", ge=0, le=10_000_000)
    response_tokens: int = Field(alias="Response tokens", ge=0, le=1_000_000)


class MooncakeRow(_Row):
    timestamp: float = Field(ge=0.0, le=1e10, allow_inf_nan=False, description="milliseconds")
    input_length: int = Field(ge=1, le=10_000_000)
    output_length: int = Field(ge=1, le=1_000_000)
    hash_ids: list[int] = Field(default_factory=list, max_length=100_000)


CSV_FORMATS: dict[str, tuple[tuple[str, ...], type[_Row]]] = {
    "kvplan": (("arrival_s", "prompt_tokens", "output_tokens"), KvplanRow),
    "azure": (("TIMESTAMP", "ContextTokens", "GeneratedTokens"), AzureRow),
    "burstgpt": (("Timestamp", "Request tokens", "Response tokens"), BurstRow),
}


# ------------------------------------------------------------------ reading


def trace_text(data: bytes | str, max_bytes: int = MAX_TRACE_BYTES) -> str:
    """The trace as text: gunzipped when it starts with the gzip magic, size-checked, UTF-8 (BOM dropped)."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if raw[:2] == GZIP_MAGIC:
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
                raw = fh.read(max_bytes + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise TraceError([f"trace: not a readable gzip file ({exc})"]) from None
    if len(raw) > max_bytes:
        raise TraceError([f"trace: more than {max_bytes:,} bytes (uncompressed); the limit is {max_bytes:,}"])
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TraceError(["trace: not UTF-8 text"]) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # Windows and old-Mac line ends read as one


def detect_format(text: str) -> str:
    """kvplan | azure | burstgpt | mooncake, from the first non-blank line; TraceError naming the known headers."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if not first:
        raise TraceError(["trace: empty"])
    if first.startswith("{"):
        return "mooncake"
    header = [h.strip() for h in next(csv.reader([first]))]
    for name, (required, _) in CSV_FORMATS.items():
        if all(c in header for c in required):
            return name
    known = "; ".join(f"{name}: {', '.join(cols)}" for name, (cols, _) in CSV_FORMATS.items())
    raise TraceError(
        [
            f"trace header {first[:80]!r}: not a known format. CSV headers must hold the columns of one of "
            f"{known}; or JSON lines with timestamp, input_length, output_length (Mooncake)"
        ]
    )


def _row_problem(row_number: int, line: int, exc: ValidationError, names: dict[str, str]) -> str:
    parts = []
    for e in exc.errors():
        field = ".".join(names.get(str(x), str(x)) for x in e["loc"]) or "(row)"
        given = e.get("input")
        shown = "" if isinstance(given, dict) else f" (got {str(given)[:40]!r})"
        parts.append(f"{field}: {e['msg']}{shown}")
    return f"row {row_number} (line {line}): " + "; ".join(parts)


def _validate(
    records: Iterable[tuple[int, dict[str, Any] | str]], model: type[_Row], max_rows: int, names: dict[str, str]
) -> list[Any]:
    """Each (line, record) validated; TraceError lists the first bad rows, then a count.

    A record that is a string is a problem already (e.g. a line that is not JSON)."""
    rows: list[Any] = []
    problems: list[str] = []
    bad = 0
    for number, (line, record) in enumerate(records, start=1):
        if number > max_rows:
            raise TraceError([f"trace: more than {max_rows:,} rows"])
        try:
            if isinstance(record, str):
                raise ValueError(record)
            rows.append(model.model_validate(record))
            continue
        except ValidationError as exc:
            message = _row_problem(number, line, exc, names)
        except ValueError as exc:
            message = f"row {number} (line {line}): {exc}"
        bad += 1
        if bad <= MAX_REPORTED_ROWS:
            problems.append(message)
    if bad > MAX_REPORTED_ROWS:
        problems.append(f"… and {bad - MAX_REPORTED_ROWS} more bad rows")
    if problems:
        raise TraceError(problems)
    if not rows:
        raise TraceError(["trace: no data rows"])
    return rows


def _csv_records(text: str, wanted: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any] | str]]:
    """(line, the wanted cells) per data row; a row the csv module cannot read is a problem string
    (a cell over its 128 KiB field limit, a stray quote), not an exception."""
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader, [])]
    except csv.Error as exc:
        yield 1, f"header is not valid CSV ({exc})"
        return
    columns = [(i, name) for i, name in enumerate(header) if name in wanted]
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield reader.line_num, f"not valid CSV ({exc})"
            continue
        if not any(c.strip() for c in cells):
            continue  # blank line
        yield reader.line_num, {name: cells[i] for i, name in columns if i < len(cells) and cells[i].strip() != ""}


def _json_records(text: str) -> Iterator[tuple[int, dict[str, Any] | str]]:
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except RecursionError:
            yield line, "JSON nested too deeply to read"
            continue
        except ValueError as exc:
            yield line, f"not a JSON object ({exc.args[0][:60]})"
            continue
        yield line, value if isinstance(value, dict) else "not a JSON object"


def _sorted(
    arrival_s: np.ndarray, prompt: np.ndarray, output: np.ndarray, fmt: str, name: str
) -> tuple[Workload, np.ndarray]:
    order = np.argsort(arrival_s, kind="stable")
    return Workload(arrival_s[order], prompt[order], output[order], fmt, name=name), order


def _kvplan(rows: list[KvplanRow], prefix_tokens: int, name: str) -> Trace:
    w, order = _sorted(
        np.array([r.arrival_s for r in rows], dtype=float),
        np.array([r.prompt_tokens for r in rows], dtype=np.int64),
        np.array([r.output_tokens for r in rows], dtype=np.int64),
        "kvplan",
        name,
    )
    ids = [rows[i].prefix_id for i in order.tolist()]
    shares = np.array([pid is not None for pid in ids])
    w = shared_prefix(w, shares, np.minimum(prefix_tokens, w.prompt_tokens), [pid or "" for pid in ids])
    return Trace(w, "kvplan")


def _without_failures(ok: np.ndarray, fmt: str, what: str) -> tuple[int, str]:
    skipped = int((~ok).sum())
    return skipped, (f"{skipped:,} rows with 0 {what} tokens (failed requests) skipped" if skipped else "")


def _azure(rows: list[AzureRow], name: str) -> Trace:
    stamps = np.array([r.TIMESTAMP.timestamp() for r in rows], dtype=float)
    prompt = np.array([r.ContextTokens for r in rows], dtype=np.int64)
    output = np.array([r.GeneratedTokens for r in rows], dtype=np.int64)
    return _token_trace(stamps, prompt, output, "azure", name, "context or generated")


def _burstgpt(rows: list[BurstRow], name: str) -> Trace:
    stamps = np.array([r.timestamp_s for r in rows], dtype=float)
    prompt = np.array([r.request_tokens for r in rows], dtype=np.int64)
    output = np.array([r.response_tokens for r in rows], dtype=np.int64)
    return _token_trace(stamps, prompt, output, "burstgpt", name, "request or response")


def _token_trace(stamps: np.ndarray, prompt: np.ndarray, output: np.ndarray, kind: str, name: str, what: str) -> Trace:
    """A trace of (arrival stamp, prompt, output) columns: the rows with both token counts ≥ 1, arrivals from
    the first one; ``what`` names the two columns in the messages ("context or generated")."""
    ok = (prompt >= 1) & (output >= 1)
    if not ok.any():
        raise TraceError([f"trace: every row has 0 {what} tokens"])
    skipped, why = _without_failures(ok, kind, what)
    w, _ = _sorted(stamps[ok] - stamps[ok].min(), prompt[ok], output[ok], kind, name)
    return Trace(w, kind, skipped, why)


def _mooncake(rows: list[MooncakeRow], name: str) -> Trace:
    problems = [
        f"row {k + 1}: hash_ids: {len(r.hash_ids)} blocks cannot cover {r.input_length} tokens "
        f"(at most ⌈input_length / {PREFIX_BLOCK_TOKENS}⌉ = {-(-r.input_length // PREFIX_BLOCK_TOKENS)})"
        for k, r in enumerate(rows)
        if len(r.hash_ids) > -(-r.input_length // PREFIX_BLOCK_TOKENS)
    ]
    if problems:
        raise TraceError(
            problems[:MAX_REPORTED_ROWS] + ([f"… and {len(problems) - 10} more"] if len(problems) > 10 else [])
        )
    w, order = _sorted(
        np.array([r.timestamp for r in rows], dtype=float) / MS_PER_S,
        np.array([r.input_length for r in rows], dtype=np.int64),
        np.array([r.output_length for r in rows], dtype=np.int64),
        "mooncake",
        name,
    )
    blocks: list[list[Hashable]] = []
    ends: list[list[int]] = []
    for i in order.tolist():
        r = rows[i]
        stops = [min(e, r.input_length) for e in prefix_block_ends(r.input_length)][: len(r.hash_ids)]
        blocks.append(list(r.hash_ids))
        ends.append(stops)
    counts, keys = chain_keys(blocks, ends)
    flat_ends = np.array([e for stops in ends for e in stops], dtype=np.int64)
    return Trace(with_prefix_blocks(w, counts, keys, flat_ends, PREFIX_BLOCK_TOKENS), "mooncake")


#: The CSV column names as pydantic reports them (aliases) → as the file has them.
_NAMES = {"timestamp_s": "Timestamp", "request_tokens": "Request tokens", "response_tokens": "Response tokens"}


def parse_trace(
    data: bytes | str,
    prefix_tokens: int = 0,
    name: str = "",
    max_bytes: int = MAX_TRACE_BYTES,
    max_rows: int = MAX_TRACE_ROWS,
) -> Trace:
    """Validate a trace in any known format (module doc); raises TraceError naming each bad row.

    ``prefix_tokens``: the shared prefix of kvplan rows sharing a ``prefix_id``."""
    text = trace_text(data, max_bytes)
    fmt = detect_format(text)
    if fmt == "mooncake":
        return _mooncake(_validate(_json_records(text), MooncakeRow, max_rows, {}), name)
    columns, model = CSV_FORMATS[fmt]
    wanted = columns + (("prefix_id",) if fmt == "kvplan" else ())
    rows = _validate(_csv_records(text, wanted), model, max_rows, _NAMES)
    readers: dict[str, Callable[[list[Any]], Trace]] = {
        "kvplan": lambda rs: _kvplan(rs, prefix_tokens, name),
        "azure": lambda rs: _azure(rs, name),
        "burstgpt": lambda rs: _burstgpt(rs, name),
    }
    return readers[fmt](rows)


def read_trace_file(path: str, prefix_tokens: int = 0, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """``parse_trace`` of a file, or of a bundled trace by name (edge function: the only file I/O here)."""
    if path in BUNDLED:
        return bundled_trace(path, prefix_tokens)
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        names = ", ".join(BUNDLED)
        raise TraceError([f"trace {path}: {exc.strerror or exc} (bundled traces: {names})"]) from None
    if len(data) > max_bytes:
        raise TraceError([f"trace {path}: larger than the {max_bytes:,}-byte limit"])
    return parse_trace(data, prefix_tokens, name=path, max_bytes=max_bytes)


@lru_cache(maxsize=8)
def bundled_trace(name: str, prefix_tokens: int = 0) -> Trace:
    """A bundled trace by name (read once per process through importlib.resources)."""
    if name not in BUNDLED:
        raise TraceError([f"trace {name!r}: not a bundled trace (one of {', '.join(BUNDLED)})"])
    data = resources.files("planner.data").joinpath(TRACES_DIR, BUNDLED[name][0]).read_bytes()
    return parse_trace(data, prefix_tokens, name=name)


def replay(trace: Trace, scale: float = 1.0, start_s: float = 0.0, duration_s: float | None = None) -> Workload:
    """The trace's requests in the window [start, start + duration) of its own clock, at ``scale`` × its rate."""
    if start_s < 0 or (duration_s is not None and not duration_s > 0):
        raise TraceError([f"window {start_s:g}:{duration_s}: the start must be ≥ 0 s and the duration > 0 s"])
    return time_scaled(time_window(trace.workload, start_s, duration_s), scale)


def parse_window(text: str) -> tuple[float, float | None]:
    """``START:DURATION`` in seconds (``START:`` = to the end) → (start_s, duration_s); TraceError if malformed."""
    start, sep, duration = text.partition(":")
    try:
        start_s = float(start) if start.strip() else 0.0
        duration_s = float(duration) if duration.strip() else None
    except ValueError:
        start_s, duration_s = float("nan"), None
    if not sep or not np.isfinite(start_s) or start_s < 0 or (duration_s is not None and not duration_s > 0):
        raise TraceError(
            [f"--window {text!r}: expected START:DURATION in seconds, e.g. 600:300 (START ≥ 0, DURATION > 0)"]
        )
    return start_s, duration_s


def scenario_traffic(s: Scenario, trace: Trace | None = None) -> Workload | None:
    """The traffic the scenario asks for: ``trace`` (an upload or a file) or its bundled ``trace``, replayed at
    ``trace_scale`` × its rate in the window ``trace_start_s`` + ``trace_duration_s`` (0 = to the end);
    None when neither is given (Poisson arrivals, ``workload.scenario_workload``)."""
    if trace is None and not s.trace:
        return None
    source = trace if trace is not None else bundled_trace(s.trace, s.prefix)
    return replay(source, s.trace_scale, s.trace_start_s, s.trace_duration_s or None)
