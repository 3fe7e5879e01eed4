"""Usage-log audit: what prompt caching really did, from the API's usage fields.

Input: JSON lines (one object per line, usage fields at the top level or under
``usage``) or CSV with a header.  Fields: ``input_tokens`` and ``output_tokens``
(required), ``cache_creation_input_tokens`` and ``cache_read_input_tokens``
(missing = 0), optional ``timestamp`` (ISO 8601 or epoch seconds) and ``group``
(or ``prefix``): a label for requests meant to share one cached prefix.

Every row is checked against ``UsageRow``; the checks run column-wise with
pandas and the pydantic model words the message of each bad row (line number
and field).  Good rows are still used.  Nothing in the file is evaluated.

With input price p, output price o, write multiplier w (1.25 for 5 m, 2 for
1 h) and read multiplier r = 0.1, summed over rows:
    paid       = Σ input·p + creation·w·p + read·r·p + output·o
    no caching = Σ (input + creation + read)·p + output·o
    ideal      = Σ input·p + output·o + per group: the first request's cacheable
                 tokens (creation + read) at w·p, every later one's at r·p
                 (a lower bound: no expiry, no growth of the prefix)
    hit rate   = Σ read / Σ (read + creation)
A group whose reads stay at 0 while two or more requests write is flagged:
something in its prefix changes between requests.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from planner.model.api_pricing import CACHE_READ_MULTIPLIER
from planner.units import S_PER_HOUR, S_PER_MINUTE, US_PER_S, MiB

MAX_FILE_BYTES = 50 * MiB
MAX_TOKENS = 100_000_000  # per field per request; far above any context window
MAX_LABEL_CHARS = 200
#: Timestamps must fall in [1970-01-01, 2100-01-01) UTC.
MAX_EPOCH_S = 4_102_444_800
#: Rejected rows worded one by one by the row model; further ones are only counted.
MAX_PROBLEMS_KEPT = 1000
#: Bins of the reads-vs-writes series: at most this many (the narrowest BIN_WIDTHS_S that fits).
MAX_BINS = 60
_MINUTE_S = int(S_PER_MINUTE)
_HOUR_S = int(S_PER_HOUR)
_DAY_S = 24 * _HOUR_S
BIN_WIDTHS_S = (_MINUTE_S, 5 * _MINUTE_S, 15 * _MINUTE_S, _HOUR_S, 6 * _HOUR_S, _DAY_S, 7 * _DAY_S)
COUNT_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
REQUIRED_FIELDS = ("input_tokens", "output_tokens")
KNOWN_FIELDS = (*COUNT_FIELDS, "timestamp", "group", "prefix")  # every other key is ignored
#: Lines read at most (50 MiB holds about 320,000 of the records benchmarks/audit_bench.py writes).
MAX_LINES = 1_000_000
#: Columns of a CSV log (the audit reads at most six of them).
MAX_COLUMNS = 1_000
#: Names listed in one message before "and N more".
MAX_NAMED = 10
NO_GROUP = "(no group)"

_WHOLE = re.compile(r"^\s*\d+(?:\.0*)?\s*$")
_DECIMAL = re.compile(r"^\s*\d+(?:\.\d*)?\s*$")


# ---------------------------------------------------------------- cell rules
# Each rule is written once per cell (``*_value``: used by the row model) and once per
# column (``*_column``: the fast path for a column of numbers or of text, falling back
# to the cell rule for mixed columns).  Property tests check that the two agree.


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def is_blank(v: Any) -> bool:
    """An absent cell: None, NaN or blank text (an empty CSV cell)."""
    return v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def count_value(v: Any) -> float | None:
    """A token count: a whole number in [0, MAX_TOKENS], as a number or as text ('12', '12.0')."""
    if isinstance(v, str):
        f = float(v) if _WHOLE.fullmatch(v) else math.nan
    else:
        f = float(v) if _is_number(v) else math.nan
    return f if math.isfinite(f) and 0 <= f <= MAX_TOKENS and f.is_integer() else None


def _iso_seconds(text: pd.Series) -> np.ndarray:
    """Seconds since 1970 of ISO 8601 text (UTC if no offset); NaN where it does not parse."""
    parsed = pd.to_datetime(text, format="ISO8601", utc=True, errors="coerce")
    ok = parsed.notna().to_numpy(dtype=bool)
    out = np.full(len(text), np.nan)
    # microseconds as int64: no overflow for any ISO year, whatever unit pandas picked
    out[ok] = parsed[ok].dt.as_unit("us").astype("int64").to_numpy() / US_PER_S
    return out


def _in_epoch_range(secs: Any) -> Any:
    """Finite seconds in [1970, 2100) (elementwise on an array)."""
    with np.errstate(invalid="ignore"):
        return np.isfinite(secs) & (secs >= 0) & (secs < MAX_EPOCH_S)


def timestamp_value(v: Any) -> float | None:
    """Seconds since 1970: epoch seconds (a number or decimal text) or ISO 8601 text,
    between 1970 and 2100."""
    if isinstance(v, str):
        f = float(v) if _DECIMAL.fullmatch(v) else float(_iso_seconds(pd.Series([v], dtype=object))[0])
    else:
        f = float(v) if _is_number(v) else math.nan
    return f if _in_epoch_range(f) else None


def label_value(v: Any) -> str | None:
    """A group label: text (stripped) or a whole number, 1 to MAX_LABEL_CHARS characters."""
    if isinstance(v, str):
        t = v.strip()
    elif _is_number(v) and math.isfinite(float(v)) and float(v).is_integer():
        t = str(int(v))
    else:
        return None
    return t if 0 < len(t) <= MAX_LABEL_CHARS else None


def _numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _all_text(s: pd.Series) -> bool:
    return pd.api.types.infer_dtype(s, skipna=True) in ("string", "empty")


def _missing(s: pd.Series) -> np.ndarray:
    na = s.isna().to_numpy(dtype=bool)
    if _numeric(s):
        return na
    if _all_text(s):
        return na | s.astype("str").str.strip().eq("").to_numpy(dtype=bool, na_value=False)
    return np.array([is_blank(v) for v in s.tolist()], dtype=bool)


def count_column(s: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, bad, missing) of a token-count column (``count_value`` per cell)."""
    missing = _missing(s)
    if _numeric(s) or _all_text(s):
        if _numeric(s):
            v = s.to_numpy(dtype=float, na_value=np.nan)
        else:
            text = s.astype("str")
            ok = text.str.fullmatch(_WHOLE.pattern).to_numpy(dtype=bool, na_value=False)
            v = np.full(len(s), np.nan)
            v[ok] = text[ok].str.strip().astype(float).to_numpy()
        with np.errstate(invalid="ignore"):
            good = np.isfinite(v) & (v >= 0) & (v <= MAX_TOKENS) & (np.floor(v) == v)
    else:
        cells = [count_value(c) for c in s.tolist()]
        good = np.array([c is not None for c in cells], dtype=bool)
        v = np.array([np.nan if c is None else c for c in cells], dtype=float)
    return np.where(good, v, 0.0), ~missing & ~good, missing


def timestamp_column(s: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(UTC datetimes, bad, missing) of a timestamp column (``timestamp_value`` per cell)."""
    missing = _missing(s)
    if _numeric(s):
        secs = s.to_numpy(dtype=float, na_value=np.nan)
    else:
        values = s.tolist()
        is_text = ~missing & np.array([isinstance(v, str) for v in values], dtype=bool)
        secs = np.array([float(v) if _is_number(v) else np.nan for v in values], dtype=float)
        if is_text.any():
            text = pd.Series(values, dtype=object)[is_text].astype("str")
            dec = text.str.fullmatch(_DECIMAL.pattern).to_numpy(dtype=bool, na_value=False)
            text_secs = np.full(len(text), np.nan)
            text_secs[dec] = text[dec].str.strip().astype(float).to_numpy()
            if (~dec).any():
                text_secs[~dec] = _iso_seconds(text[~dec])
            secs[is_text] = text_secs
    good = _in_epoch_range(secs)
    ts = pd.Series(pd.to_datetime(np.where(good, secs, np.nan), unit="s", utc=True), index=s.index)
    return ts, ~missing & ~good, missing


def label_column(s: pd.Series) -> tuple[pd.Series, np.ndarray, np.ndarray]:
    """(labels, bad, missing) of a group column (``label_value`` per cell); NO_GROUP where absent."""
    missing = _missing(s)
    if _all_text(s):
        text = s.astype("str").str.strip()
        good = text.str.len().between(1, MAX_LABEL_CHARS).to_numpy(dtype=bool, na_value=False)
        return text.astype(object).where(good & ~missing, NO_GROUP), ~missing & ~good, missing
    cells = [label_value(v) for v in s.tolist()]
    good = np.array([c is not None for c in cells], dtype=bool)
    labels = [c if ok and not m else NO_GROUP for c, ok, m in zip(cells, good, missing, strict=True)]
    return pd.Series(labels, index=s.index, dtype=object), ~missing & ~good, missing


# ---------------------------------------------------------------- the row model (messages)


def _rule(value_fn: Callable[[Any], object], what: str) -> BeforeValidator:
    """A pydantic check that words a cell the column rule ``value_fn`` rejects (None) as 'is not ``what``'."""

    def check(v: Any) -> Any:
        if value_fn(v) is None:
            raise ValueError(f"{str(v)[:40]!r} is not {what}")
        return v

    return BeforeValidator(check)


Count = Annotated[Any, _rule(count_value, f"a whole number of tokens in [0, {MAX_TOKENS:,}]")]
Timestamp = Annotated[Any, _rule(timestamp_value, "ISO 8601 or epoch seconds between 1970 and 2100")]
Label = Annotated[Any, _rule(label_value, f"text of 1–{MAX_LABEL_CHARS} characters")]


class UsageRow(BaseModel):
    """One request's usage; blank or null cells count as absent.  Other keys are ignored."""

    model_config = ConfigDict(extra="ignore")

    input_tokens: Count
    cache_creation_input_tokens: Count = 0
    cache_read_input_tokens: Count = 0
    output_tokens: Count
    timestamp: Timestamp = None
    group: Label = None


@dataclass(frozen=True)
class RowProblem:
    line: int  # 1-based line of the file; 0 for the file as a whole
    field: str
    message: str

    def __str__(self) -> str:
        where = "file" if self.line == 0 else f"line {self.line}"
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


def _row_messages(record: dict, line: int) -> list[RowProblem]:
    present = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in record.items() if not is_blank(v)}
    try:
        UsageRow.model_validate(present)
    except ValidationError as exc:
        return [
            RowProblem(line, ".".join(str(p) for p in e["loc"]), e["msg"].removeprefix("Value error, "))
            for e in exc.errors()
        ]
    return [RowProblem(line, "", "rejected")]  # unreachable while the column checks and the model agree


# ---------------------------------------------------------------- parsing


@dataclass(frozen=True)
class ParsedLog:
    rows: pd.DataFrame  # good rows: line, the four counts, timestamp (UTC or NaT), group
    problems: tuple[RowProblem, ...]  # messages for at most MAX_PROBLEMS_KEPT rejected rows
    rows_read: int  # data rows in the file (blank lines not counted)
    rows_rejected: int
    format: str


def _read_jsonl(text: str) -> tuple[pd.DataFrame, list[int], list[RowProblem]]:
    records, lines, problems = [], [], []

    def reject_constant(name: str):
        raise ValueError(f"{name} is not allowed")

    decoder = json.JSONDecoder(parse_constant=reject_constant)
    for n, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            rec = decoder.decode(raw)
        except RecursionError:
            problems.append(RowProblem(n, "", "JSON nested too deeply to read"))
            continue
        except ValueError as exc:
            problems.append(RowProblem(n, "", f"not valid JSON ({str(exc)[:80]})"))
            continue
        if not isinstance(rec, dict):
            problems.append(RowProblem(n, "", "not a JSON object"))
            continue
        usage = rec.get("usage")
        if isinstance(usage, dict):
            rec = {**usage, **rec}
        records.append({k: rec[k] for k in KNOWN_FIELDS if k in rec})
        lines.append(n)
    return pd.DataFrame.from_records(records), lines, problems


def _read_csv(text: str) -> tuple[pd.DataFrame, list[int], list[RowProblem]]:
    reader = csv.reader(io.StringIO(text))
    problems: list[RowProblem] = []
    try:
        header = [h.strip() for h in next(reader)]
    except (StopIteration, csv.Error):
        return pd.DataFrame(), [], [RowProblem(0, "", "no CSV header")]
    if len(header) > MAX_COLUMNS:
        return (
            pd.DataFrame(),
            [],
            [RowProblem(1, "", f"{len(header):,} columns; a usage log has at most {MAX_COLUMNS:,}")],
        )
    dupes = sorted(h for h, n in Counter(header).items() if n > 1)
    if dupes:
        shown = ", ".join(dupes[:MAX_NAMED]) + (f" and {len(dupes) - MAX_NAMED} more" if len(dupes) > MAX_NAMED else "")
        return pd.DataFrame(), [], [RowProblem(1, "", f"column(s) {shown} appear more than once")]
    keep = [i for i, h in enumerate(header) if h in KNOWN_FIELDS]  # only the columns the audit reads
    rows, lines = [], []
    while True:
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append(RowProblem(reader.line_num, "", f"not valid CSV ({exc})"))
            continue
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # a blank line
        if len(row) != len(header):
            problems.append(RowProblem(reader.line_num, "", f"expected {len(header)} fields, found {len(row)}"))
            continue
        rows.append([row[i] for i in keep])
        lines.append(reader.line_num)
    return pd.DataFrame(rows, columns=[header[i] for i in keep], dtype=object), lines, problems


def _detect_format(text: str, name: str) -> str:
    low = name.lower()
    if low.endswith(".csv"):
        return "csv"
    if low.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    return "jsonl" if text.lstrip().startswith("{") else "csv"


def parse_usage_log(data: bytes, name: str = "") -> ParsedLog:
    """Parse and validate a usage log (``name`` picks the format by extension, else the
    content does).  Never raises on bad content: a file-level problem has line 0."""

    def fail(msg: str, fmt: str = "") -> ParsedLog:
        return ParsedLog(_empty_rows(), (RowProblem(0, "", msg),), 0, 0, fmt)

    if len(data) > MAX_FILE_BYTES:
        return fail(f"{len(data) / MiB:.1f} MiB; the limit is {MAX_FILE_BYTES // MiB} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return fail(f"not UTF-8 text (byte {exc.start})")
    lines_in_file = text.count("\n") + 1
    if lines_in_file > MAX_LINES:
        return fail(f"{lines_in_file:,} lines; the limit is {MAX_LINES:,}: split the file")
    fmt = _detect_format(text, name)
    if fmt == "jsonl" and text.lstrip().startswith("["):
        return fail("a JSON array; write one JSON object per line (JSON lines)", fmt)
    frame, lines, problems = _read_jsonl(text) if fmt == "jsonl" else _read_csv(text)
    if any(p.line == 0 for p in problems):
        return ParsedLog(_empty_rows(), tuple(problems), 0, 0, fmt)
    rows_read = len(lines) + len(problems)
    if rows_read == 0:
        return fail("no rows", fmt)
    if "group" not in frame.columns and "prefix" in frame.columns:
        frame = frame.rename(columns={"prefix": "group"})
    absent = [f for f in REQUIRED_FIELDS if f not in frame.columns]
    if absent and len(frame):
        return fail(f"no {' or '.join(absent)} field in any row", fmt)
    rows, row_problems, n_bad = _validate(frame, np.asarray(lines, dtype=np.int64))
    rejected = len(problems) + n_bad
    problems = sorted(problems + row_problems, key=lambda p: p.line)
    return ParsedLog(rows, tuple(problems[:MAX_PROBLEMS_KEPT]), rows_read, rejected, fmt)


def _empty_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "line": pd.Series(dtype=np.int64),
            **{f: pd.Series(dtype=float) for f in COUNT_FIELDS},
            "timestamp": pd.Series(dtype="datetime64[ns, UTC]"),
            "group": pd.Series(dtype=object),
        }
    )


def _validate(frame: pd.DataFrame, lines: np.ndarray) -> tuple[pd.DataFrame, list[RowProblem], int]:
    """Good rows, messages for the first MAX_PROBLEMS_KEPT bad rows, and the number of bad rows."""
    n = len(frame)
    if n == 0:
        return _empty_rows(), [], 0
    frame = frame.reset_index(drop=True)
    bad = np.zeros(n, dtype=bool)
    out: dict[str, Any] = {"line": lines}
    for f in COUNT_FIELDS:
        if f in frame.columns:
            v, b, missing = count_column(frame[f])
            bad |= b | (missing if f in REQUIRED_FIELDS else False)
            out[f] = v
        else:
            out[f] = np.zeros(n)
    if "timestamp" in frame.columns:
        ts, b, _ = timestamp_column(frame["timestamp"])
        bad |= b
        out["timestamp"] = ts
    else:
        out["timestamp"] = pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]")
    if "group" in frame.columns:
        labels, b, _ = label_column(frame["group"])
        bad |= b
        out["group"] = labels
    else:
        out["group"] = pd.Series(NO_GROUP, index=frame.index, dtype=object)
    rows = pd.DataFrame(out)
    fields = [f for f in (*COUNT_FIELDS, "timestamp", "group") if f in frame.columns]
    problems: list[RowProblem] = []
    worded = np.flatnonzero(bad)[:MAX_PROBLEMS_KEPT]
    for i, record in zip(worded, frame.iloc[worded][fields].to_dict("records"), strict=True):
        problems.extend(_row_messages(record, int(lines[i])))
    return rows[~bad].reset_index(drop=True), problems, int(bad.sum())


# ---------------------------------------------------------------- audit


@dataclass(frozen=True)
class AuditReport:
    parsed: ParsedLog
    requests: int
    input_tokens: float
    cache_creation_tokens: float
    cache_read_tokens: float
    output_tokens: float
    cache_hit_rate: float | None  # None: no cached tokens at all
    paid_usd: float
    nocache_usd: float
    ideal_usd: float
    groups: pd.DataFrame
    invalidated_groups: tuple[str, ...]
    series: pd.DataFrame  # bin, requests, input/creation/read tokens
    series_axis: str  # "time" or "request"
    bin_width_s: float | None
    untimed_rows: int


def _costs(df: pd.DataFrame, p_in: float, p_out: float, w: float, r: float) -> tuple[pd.Series, pd.Series, pd.Series]:
    base = df["input_tokens"] * p_in + df["output_tokens"] * p_out
    paid = base + (df["cache_creation_input_tokens"] * w + df["cache_read_input_tokens"] * r) * p_in
    cacheable = df["cache_creation_input_tokens"] + df["cache_read_input_tokens"]
    nocache = base + cacheable * p_in
    # Ideal: first request of each group writes, all later ones read (rows already in time order).
    first = ~df["group"].duplicated()
    ideal = base + cacheable * np.where(first, w, r) * p_in
    return paid, nocache, ideal


def _series(df: pd.DataFrame) -> tuple[pd.DataFrame, str, float | None, int]:
    cols = ["cache_read_input_tokens", "cache_creation_input_tokens", "input_tokens"]
    timed = df[df["timestamp"].notna()]
    if len(timed):
        secs = (timed["timestamp"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy()
        span = secs.max() - secs.min()
        width = next((w for w in BIN_WIDTHS_S if span / w < MAX_BINS - 1), BIN_WIDTHS_S[-1])  # +1 for alignment
        start = math.floor(secs.min() / width) * width
        key = ((secs - start) // width).astype(np.int64)
        agg = timed[cols].groupby(key).sum()
        agg["requests"] = timed.groupby(key).size()
        agg.index = pd.to_datetime(start + agg.index.to_numpy() * width, unit="s", utc=True)
        agg.index.name = "bin_start"
        return agg.reset_index(), "time", float(width), len(df) - len(timed)
    size = max(1, math.ceil(len(df) / MAX_BINS))
    key = np.arange(len(df)) // size
    agg = df[cols].groupby(key).sum()
    agg["requests"] = df.groupby(key).size()
    agg.index = agg.index * size + 1
    agg.index.name = "first_request"
    return agg.reset_index(), "request", None, 0


def audit(
    parsed: ParsedLog,
    price_in_per_token_usd: float,
    price_out_per_token_usd: float,
    write_multiplier: float,
    read_multiplier: float = CACHE_READ_MULTIPLIER,
) -> AuditReport:
    """Measured hit rate, paid vs no-caching vs ideal cost, invalidated groups, reads vs writes
    over time (module doc).  Rows are taken in time order (file order where untimed)."""
    df = parsed.rows.sort_values(["timestamp", "line"], na_position="last", kind="stable").reset_index(drop=True)
    paid, nocache, ideal = _costs(
        df, price_in_per_token_usd, price_out_per_token_usd, write_multiplier, read_multiplier
    )
    df = df.assign(
        paid_usd=paid, ideal_usd=ideal, nocache_usd=nocache, writes=(df["cache_creation_input_tokens"] > 0).astype(int)
    )
    g = df.groupby("group", sort=True).agg(
        requests=("line", "size"),
        input_tokens=("input_tokens", "sum"),
        cache_creation_tokens=("cache_creation_input_tokens", "sum"),
        cache_read_tokens=("cache_read_input_tokens", "sum"),
        output_tokens=("output_tokens", "sum"),
        requests_writing=("writes", "sum"),
        paid_usd=("paid_usd", "sum"),
        nocache_usd=("nocache_usd", "sum"),
        ideal_usd=("ideal_usd", "sum"),
    )
    cached = g["cache_creation_tokens"] + g["cache_read_tokens"]
    g["cache_hit_rate"] = (g["cache_read_tokens"] / cached.where(cached > 0)).astype(float)
    g["invalidated"] = (g["cache_read_tokens"] == 0) & (g["requests_writing"] >= 2)
    g = g.reset_index()
    read = float(df["cache_read_input_tokens"].sum())
    created = float(df["cache_creation_input_tokens"].sum())
    series, axis, width, untimed = _series(df)
    return AuditReport(
        parsed=parsed,
        requests=len(df),
        input_tokens=float(df["input_tokens"].sum()),
        cache_creation_tokens=created,
        cache_read_tokens=read,
        output_tokens=float(df["output_tokens"].sum()),
        cache_hit_rate=read / (read + created) if read + created > 0 else None,
        paid_usd=float(paid.sum()),
        nocache_usd=float(nocache.sum()),
        ideal_usd=float(ideal.sum()),
        groups=g,
        invalidated_groups=tuple(g.loc[g["invalidated"], "group"]),
        series=series,
        series_axis=axis,
        bin_width_s=width,
        untimed_rows=untimed,
    )
