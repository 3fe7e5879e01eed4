"""Usage-log audit: parsing, per-row validation, costs, invalidated groups, time series."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from planner.prompts import usage_audit
from planner.prompts.usage_audit import (
    COUNT_FIELDS,
    MAX_TOKENS,
    UsageRow,
    audit,
    parse_usage_log,
)
from tests.paths import DATA

EXAMPLE = DATA / "examples" / "usage_log_example.jsonl"
P_IN, P_OUT, W, R = 5e-6, 25e-6, 1.25, 0.1


def jsonl(*records) -> bytes:
    return ("\n".join(json.dumps(r) for r in records) + "\n").encode()


# ---------------------------------------------------------------- the committed example, end to end


def test_example_log_end_to_end():
    """Every number recomputed here from the raw file with plain Python."""
    parsed = parse_usage_log(EXAMPLE.read_bytes(), EXAMPLE.name)
    raw = EXAMPLE.read_text().splitlines()
    good, bad_lines = [], []
    for n, line in enumerate(raw, 1):
        try:
            rec = json.loads(line)
        except ValueError:
            bad_lines.append(n)
            continue
        good.append({**rec.pop("usage", {}), **rec})
    assert bad_lines == [114]
    assert [p.line for p in parsed.problems] == [114] and "not valid JSON" in parsed.problems[0].message
    assert (parsed.rows_read, parsed.rows_rejected, parsed.format) == (len(raw), 1, "jsonl")

    rep = audit(parsed, P_IN, P_OUT, W, R)
    assert rep.requests == len(good)
    read = sum(r["cache_read_input_tokens"] for r in good)
    created = sum(r["cache_creation_input_tokens"] for r in good)
    assert rep.cache_hit_rate == pytest.approx(read / (read + created))
    paid = sum(
        r["input_tokens"] * P_IN
        + r["cache_creation_input_tokens"] * W * P_IN
        + r["cache_read_input_tokens"] * R * P_IN
        + r["output_tokens"] * P_OUT
        for r in good
    )
    nocache = sum(
        (r["input_tokens"] + r["cache_creation_input_tokens"] + r["cache_read_input_tokens"]) * P_IN
        + r["output_tokens"] * P_OUT
        for r in good
    )
    ideal, seen = 0.0, set()
    for r in sorted(good, key=lambda r: r["timestamp"]):
        cacheable = r["cache_creation_input_tokens"] + r["cache_read_input_tokens"]
        ideal += r["input_tokens"] * P_IN + r["output_tokens"] * P_OUT
        ideal += cacheable * (R if r["group"] in seen else W) * P_IN
        seen.add(r["group"])
    assert (rep.paid_usd, rep.nocache_usd, rep.ideal_usd) == (
        pytest.approx(paid),
        pytest.approx(nocache),
        pytest.approx(ideal),
    )
    # the summariser's timestamp sits before its breakpoint: writes every time, never a read
    assert rep.invalidated_groups == ("doc-summariser",)
    groups = rep.groups.set_index("group")
    assert groups.loc["doc-summariser", "cache_read_tokens"] == 0
    assert groups.loc["doc-summariser", "requests_writing"] == groups.loc["doc-summariser", "requests"]
    assert math.isnan(groups.loc["code-review", "cache_hit_rate"])  # below the minimum: nothing cached
    assert groups.loc["support-bot", "cache_hit_rate"] > 0.9
    # the time series holds every token of the log
    assert rep.series_axis == "time" and rep.bin_width_s == 300  # two hours in 5-minute bins
    assert rep.series["cache_read_input_tokens"].sum() == read
    assert rep.series["cache_creation_input_tokens"].sum() == created
    assert rep.series["requests"].sum() == rep.requests
    assert len(rep.series) <= usage_audit.MAX_BINS


# ---------------------------------------------------------------- formats and bad rows


def test_csv_bad_rows_reported_by_line_and_field_good_rows_used():
    data = (
        b"input_tokens,output_tokens,cache_read_input_tokens,timestamp,prefix\n"
        b"10,5,,1700000000,a\n"
        b"-1,5,3,yesterday,b\n"
        b"1,2,3\n"
        b"\n"
        b"7,8,9,2024-01-01T00:00:00+02:00,\n"
        b"1.5,2,true,1e3,a\n"
        b"12.0, 4 ,0,1700000060.5,a\n"
    )
    parsed = parse_usage_log(data, "log.csv")
    got = [(p.line, p.field) for p in parsed.problems]
    assert got == [
        (3, "input_tokens"),
        (3, "timestamp"),
        (4, ""),
        (7, "input_tokens"),
        (7, "cache_read_input_tokens"),
        (7, "timestamp"),
    ]
    assert "expected 5 fields, found 3" in str(parsed.problems[2])
    assert (parsed.rows_read, parsed.rows_rejected) == (6, 3)
    rows = parsed.rows
    assert rows["line"].tolist() == [2, 6, 8]
    assert rows["input_tokens"].tolist() == [10, 7, 12]
    assert rows["cache_read_input_tokens"].tolist() == [0, 9, 0]  # blank cell = 0
    assert rows["group"].tolist() == ["a", usage_audit.NO_GROUP, "a"]
    assert rows["timestamp"].iloc[1] == pd.Timestamp("2023-12-31T22:00:00Z")
    assert rows["timestamp"].iloc[0] == pd.Timestamp(1_700_000_000, unit="s", tz="UTC")


def test_nested_usage_objects_as_logged_from_the_api():
    rec = {"id": "msg_1", "usage": {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 100}}
    parsed = parse_usage_log(jsonl(rec, {**rec, "input_tokens": 6}))
    assert parsed.rows["input_tokens"].tolist() == [5, 6]  # a top-level field wins
    assert parsed.rows["cache_read_input_tokens"].tolist() == [100, 100]


@pytest.mark.parametrize(
    ("data", "name", "message"),
    [
        (b'[{"input_tokens": 1}]', "x.json", "a JSON array"),
        (b"\xff\xfe\x00", "x.jsonl", "not UTF-8"),
        (b'{"output_tokens": 1}\n', "x.jsonl", "no input_tokens field in any row"),
        (b"", "x.jsonl", "no rows"),
        (b"a,b\n", "x.csv", "no rows"),
        (b"input_tokens,input_tokens\n1,2\n", "x.csv", "appear more than once"),
    ],
)
def test_file_level_problems(data, name, message):
    parsed = parse_usage_log(data, name)
    assert parsed.rows.empty
    assert message in str(parsed.problems[0])


def test_size_limit(monkeypatch):
    monkeypatch.setattr(usage_audit, "MAX_FILE_BYTES", 100)
    parsed = parse_usage_log(jsonl(*[{"input_tokens": 1, "output_tokens": 1}] * 10))
    assert parsed.rows.empty and "the limit is" in str(parsed.problems[0])


def test_json_lines_errors_and_constants():
    data = (
        b'{"input_tokens": 1, "output_tokens": 2}\n{"input_tokens": NaN, "output_tokens": 2}\n[1]\n{"input_tokens": 3'
    )
    parsed = parse_usage_log(data, "x.jsonl")
    assert [p.line for p in parsed.problems] == [2, 3, 4]
    assert "NaN is not allowed" in parsed.problems[0].message
    assert parsed.problems[1].message == "not a JSON object"
    assert len(parsed.rows) == 1


def test_missing_required_field_in_one_row():
    parsed = parse_usage_log(jsonl({"input_tokens": 1, "output_tokens": 2}, {"input_tokens": 1}))
    assert [(p.line, p.field, p.message) for p in parsed.problems] == [(2, "output_tokens", "Field required")]


def test_format_detection_without_a_name():
    assert parse_usage_log(jsonl({"input_tokens": 1, "output_tokens": 2})).format == "jsonl"
    assert parse_usage_log(b"input_tokens,output_tokens\n1,2\n").format == "csv"


# ---------------------------------------------------------------- column checks agree with the row model

cells = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 3 * MAX_TOKENS),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-10, max_value=1e9),
    st.sampled_from(["", " ", "12", " 7 ", "3.0", "3.5", "1e3", "-4", "abc", "2024-05-01T10:00:00Z", "1700000000"]),
    st.lists(st.integers(0, 3), max_size=2),
)
records = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": cells,
        "output_tokens": cells,
        "cache_creation_input_tokens": cells,
        "cache_read_input_tokens": cells,
        "timestamp": cells,
        "group": cells,
    },
)


def _model_accepts(rec: dict) -> bool:
    present = {k: v for k, v in rec.items() if not usage_audit.is_blank(v)}
    try:
        UsageRow.model_validate(present)
    except ValidationError:
        return False
    return True


@settings(max_examples=200, deadline=None)
@given(st.lists(records, min_size=1, max_size=6))
def test_vectorised_checks_agree_with_the_row_model(recs):
    recs = [{"input_tokens": 1, "output_tokens": 1, **r} if i == 0 else r for i, r in enumerate(recs)]
    parsed = parse_usage_log(jsonl(*recs), "x.jsonl")
    kept = set(parsed.rows["line"].tolist())
    for n, rec in enumerate(recs, 1):
        assert (n in kept) == _model_accepts(rec), rec
    assert {p.line for p in parsed.problems} == set(range(1, len(recs) + 1)) - kept
    assert all(p.field for p in parsed.problems)  # every rejected row names its field


# ---------------------------------------------------------------- audit rules


def rows_for(group, reads, writes, start=0):
    return [
        {
            "timestamp": 1_700_000_000 + start + 30 * i,
            "group": group,
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": r,
            "cache_creation_input_tokens": w,
        }
        for i, (r, w) in enumerate(zip(reads, writes, strict=True))
    ]


def test_groups_reading_nothing_while_writing_are_flagged():
    log = (
        rows_for("broken", [0, 0, 0], [900, 900, 900])
        + rows_for("fine", [0, 900, 900], [900, 0, 0])
        + rows_for("once", [0], [900])
        + rows_for("uncached", [0, 0], [0, 0])
    )
    rep = audit(parse_usage_log(jsonl(*log)), P_IN, P_OUT, W)
    assert rep.invalidated_groups == ("broken",)


def test_ideal_writes_once_per_group():
    log = rows_for("a", [0, 0, 0], [1000, 1000, 1000])
    rep = audit(parse_usage_log(jsonl(*log)), P_IN, P_OUT, W, R)
    base = 3 * (10 * P_IN + 5 * P_OUT)
    assert rep.ideal_usd == pytest.approx(base + (1000 * W + 2000 * R) * P_IN)
    assert rep.paid_usd == pytest.approx(base + 3000 * W * P_IN)
    assert rep.nocache_usd == pytest.approx(base + 3000 * P_IN)
    assert rep.cache_hit_rate == 0.0


def test_no_cached_tokens_gives_no_hit_rate():
    rep = audit(parse_usage_log(jsonl({"input_tokens": 5, "output_tokens": 1})), P_IN, P_OUT, W)
    assert rep.cache_hit_rate is None
    assert rep.series_axis == "request" and rep.series["requests"].sum() == 1


def test_untimed_rows_leave_the_time_series_but_not_the_totals():
    log = rows_for("a", [5, 5], [0, 0]) + [{"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 7}]
    rep = audit(parse_usage_log(jsonl(*log)), P_IN, P_OUT, W)
    assert rep.untimed_rows == 1
    assert rep.cache_read_tokens == 17 and rep.series["cache_read_input_tokens"].sum() == 10


@pytest.mark.parametrize(
    ("span_s", "width_s"), [(59, 60), (3500, 60), (3 * 3600, 300), (12 * 3600, 900), (20 * 86_400, 86_400)]
)
def test_bin_width_keeps_at_most_max_bins(span_s, width_s):
    log = [{"timestamp": 1_700_000_000 + t, "input_tokens": 1, "output_tokens": 1} for t in (0, span_s)]
    rep = audit(parse_usage_log(jsonl(*log)), P_IN, P_OUT, W)
    assert rep.bin_width_s == width_s
    assert len(rep.series) <= usage_audit.MAX_BINS


def test_counts_are_whole_and_bounded():
    assert set(COUNT_FIELDS) <= set(UsageRow.model_fields)
    ok = parse_usage_log(jsonl({"input_tokens": MAX_TOKENS, "output_tokens": 0}))
    over = parse_usage_log(jsonl({"input_tokens": MAX_TOKENS + 1, "output_tokens": 0}))
    assert len(ok.rows) == 1 and len(over.rows) == 0


csv_cells = st.sampled_from(
    [
        "",
        " ",
        "0",
        "12",
        " 7 ",
        "3.0",
        "3.5",
        "1e3",
        "-4",
        "abc",
        "true",
        "2024-05-01T10:00:00Z",
        "2024-13-01",
        "1700000000",
        "1700000000.25",
        "x" * 201,
    ]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(csv_cells, min_size=6, max_size=6), min_size=1, max_size=6))
def test_csv_checks_agree_with_the_row_model(rows):
    header = [
        "input_tokens",
        "output_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "timestamp",
        "group",
    ]
    text = "\n".join([",".join(header)] + [",".join(r) for r in rows]) + "\n"
    parsed = parse_usage_log(text.encode(), "x.csv")
    kept = set(parsed.rows["line"].tolist())
    for n, row in enumerate(rows, 2):
        assert (n in kept) == _model_accepts(dict(zip(header, row, strict=True))), row


def test_line_limit(monkeypatch):
    monkeypatch.setattr(usage_audit, "MAX_LINES", 3)
    parsed = parse_usage_log(jsonl(*[{"input_tokens": 1, "output_tokens": 1}] * 5))
    assert parsed.rows.empty and "the limit is 3" in str(parsed.problems[0])


def test_unknown_keys_are_ignored():
    parsed = parse_usage_log(jsonl({"input_tokens": 1, "output_tokens": 1, "model": "x", "extra": [1, 2]}))
    assert parsed.rows_rejected == 0
    assert set(parsed.rows.columns) == {"line", *COUNT_FIELDS, "timestamp", "group"}


def test_deeply_nested_json_line_is_a_row_problem():
    nested = b'{"a":' * 50_000 + b"1" + b"}" * 50_000
    parsed = parse_usage_log(nested + b'\n{"input_tokens": 5, "output_tokens": 3}\n', "deep.jsonl")
    assert [str(p) for p in parsed.problems] == ["line 1: JSON nested too deeply to read"]


def test_a_wide_csv_header_is_refused_at_once():
    """The duplicate-column check was quadratic (50,000 columns: 30 s)."""
    header = ",".join(f"c{i}" for i in range(50_000))
    parsed = parse_usage_log((header + "\n" + ",".join("1" for _ in range(50_000)) + "\n").encode(), "wide.csv")
    assert [str(p) for p in parsed.problems] == ["line 1: 50,000 columns; a usage log has at most 1,000"]


def test_duplicate_columns_are_named_at_most_ten_times():
    header = ",".join(["input_tokens", "output_tokens"] + [f"d{i}" for i in range(20)] * 2)
    parsed = parse_usage_log((header + "\n").encode(), "dupes.csv")
    (problem,) = parsed.problems
    assert "appear more than once" in str(problem) and "and 10 more" in str(problem)
