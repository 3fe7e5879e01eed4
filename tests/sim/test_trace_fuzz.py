"""Fuzzing the trace parser with huge-but-valid and hostile rows in every format (kvplan CSV, Azure CSV,
BurstGPT CSV, Mooncake JSONL), plain and gzipped: ``parse_trace`` accepts the trace or raises
``TraceError`` (the ProblemsError family) whose problems name the bad field — never another exception."""

from __future__ import annotations

import gzip
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import ProblemsError, TraceError
from planner.sim.traces import CSV_FORMATS, parse_trace

#: Values a cell may hold: in range, at the bounds, far beyond them, not numbers, huge text.
NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10_000_000),
    st.sampled_from([0, 1, 999_999, 1_000_000, 1_000_001, 10_000_000, 10_000_001, 10**30, -1, 2**63]),
    st.floats(allow_nan=True, allow_infinity=True),
)
CELLS = st.one_of(
    NUMBERS.map(str),
    st.sampled_from(["", "nan", "inf", "-inf", "1e400", "１２", "1_000", "0x10", "\0", "=1+1", '"', "9" * 5000]),
    st.text(max_size=40),
)
TIMESTAMPS = st.one_of(
    st.datetimes().map(lambda d: d.isoformat()),
    st.sampled_from(["2023-11-16 18:15:46.6805900", "0001-01-01", "9999-12-31T23:59:59", "yesterday"]),
    CELLS,
)


def _csv(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    def cell(c: str) -> str:
        return '"' + c.replace('"', '""') + '"' if any(x in c for x in ',"\n\r') else c

    return "\n".join([",".join(header), *(",".join(cell(c) for c in r) for r in rows)]) + "\n"


@st.composite
def csv_traces(draw) -> tuple[str, str]:
    fmt = draw(st.sampled_from(sorted(CSV_FORMATS)))
    header = CSV_FORMATS[fmt][0]
    first = TIMESTAMPS if fmt == "azure" else CELLS
    rows = draw(st.lists(st.tuples(first, CELLS, CELLS), min_size=1, max_size=30))
    return fmt, _csv(header, rows)


MOONCAKE_VALUES = st.one_of(NUMBERS, st.text(max_size=20), st.none(), st.lists(st.integers(), max_size=5))


@st.composite
def mooncake_traces(draw) -> tuple[str, str]:
    lines = []
    for _ in range(draw(st.integers(min_value=1, max_value=20))):
        record = {
            "timestamp": draw(MOONCAKE_VALUES),
            "input_length": draw(MOONCAKE_VALUES),
            "output_length": draw(MOONCAKE_VALUES),
            "hash_ids": draw(st.one_of(st.lists(st.integers(-(2**70), 2**70), max_size=50), MOONCAKE_VALUES)),
        }
        lines.append(json.dumps({k: v for k, v in record.items() if draw(st.booleans()) or k != "hash_ids"}))
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["[" * 5000, "{", "null", "[]", "1"])))
    return "mooncake", "\n".join(lines) + "\n"


def check(fmt: str, text: str | bytes) -> None:
    try:
        trace = parse_trace(text, prefix_tokens=64)
    except TraceError as exc:
        assert isinstance(exc, ProblemsError) and exc.problems
        assert all(isinstance(p, str) and p for p in exc.problems)
        return
    assert trace.format == fmt
    assert len(trace.workload.prompt_tokens) >= 1


@settings(max_examples=40)
@given(csv_traces(), st.booleans())
def test_a_csv_trace_in_any_format_is_read_or_its_rows_named(case, zipped):
    fmt, text = case
    check(fmt, gzip.compress(text.encode(), mtime=0) if zipped else text)


@settings(max_examples=30)
@given(mooncake_traces())
def test_a_mooncake_trace_is_read_or_its_rows_named(case):
    check(*case)


@settings(max_examples=20)
@given(st.sampled_from(sorted(CSV_FORMATS)), st.integers(min_value=0, max_value=2), CELLS)
def test_a_bad_cell_is_named_by_its_column(fmt, column, bad):
    """One bad cell in an otherwise valid row: accepted, or refused naming that column."""
    header = CSV_FORMATS[fmt][0]
    good = ["2023-11-16 18:15:46" if fmt == "azure" else "1.5", "100", "10"]
    good[column] = bad
    try:
        parse_trace(_csv(header, [tuple(good)]))
    except TraceError as exc:
        text = " ".join(exc.problems)
        assert header[column] in text or "not valid CSV" in text or "no data rows" in text, exc.problems


def test_huge_but_valid_rows_are_read():
    """Rows at every bound of every format (the 10,000,000-token prompt, the 1,000,000-token output)."""
    for fmt, (header, _) in CSV_FORMATS.items():
        first = "2023-11-16 18:15:46" if fmt == "azure" else "1000"
        trace = parse_trace(_csv(header, [(first, "10000000", "1000000")] * 3))
        assert int(trace.workload.prompt_tokens.max()) == 10_000_000
    line = json.dumps(
        {"timestamp": 1e10, "input_length": 10_000_000, "output_length": 1_000_000, "hash_ids": [1] * 1000}
    )
    assert parse_trace(line + "\n").format == "mooncake"
