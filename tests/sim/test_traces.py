"""Trace readers: the four formats, detection, gzip, per-row errors, bundled traces, windows and scaling."""

from __future__ import annotations

import gzip
import json
from importlib import resources

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import TraceError
from planner.model.scenario import Scenario, TraceName
from planner.sim.traces import (
    BUNDLED,
    MAX_REPORTED_ROWS,
    bundled_trace,
    detect_format,
    parse_trace,
    parse_window,
    read_trace_file,
    replay,
    scenario_traffic,
)
from tests.paths import ROOT

GOOD = "arrival_s,prompt_tokens,output_tokens,prefix_id\n0.5,100,20,sys\n0.0,200,10,\n1.0,300,30,sys\n"
AZURE = (
    "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    "2023-11-16 18:15:46.6805900,374,44\n"
    "2023-11-16 18:15:50.9951690,396,109\n"
    "2023-11-16 18:15:47.0000000,20,0\n"
)
BURST = (
    "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    "5,ChatGPT,472,18,490,Conversation log\n"
    "45,ChatGPT,1087,230,1317,Conversation log\n"
    "120,GPT-4,300,0,300,API log\n"
)
MOONCAKE = "\n".join(
    json.dumps(r)
    for r in (
        {"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [0, 1, 2]},
        {"timestamp": 1500, "input_length": 1030, "output_length": 7, "hash_ids": [0, 1, 3]},
        {"timestamp": 700, "input_length": 40, "output_length": 2, "hash_ids": [9]},
    )
)


def test_kvplan_csv_sorts_and_marks_shared_prefixes():
    t = parse_trace(GOOD.encode(), prefix_tokens=64)
    w = t.workload
    assert t.format == "kvplan" and list(w.arrival_s) == [0.0, 0.5, 1.0]
    assert list(w.prompt_tokens) == [200, 100, 300]
    assert np.diff(w.offsets).tolist() == [0, 1, 1]  # the two 'sys' rows carry one 64-token block
    assert w.prefix_blocks(1)[0].tolist() == w.prefix_blocks(2)[0].tolist()
    assert list(w.reusable_prefix_tokens()) == [0, 0, 64]  # the first 'sys' row misses, the second can hit


def test_kvplan_csv_without_prefix_column_and_with_extra_columns():
    w = parse_trace("prompt_tokens,note,arrival_s,output_tokens\n5,x,0,1\n", prefix_tokens=100).workload
    assert list(w.prompt_tokens) == [5] and not w.has_prefixes


def test_azure_rows_are_seconds_after_the_earliest_and_zero_outputs_are_skipped():
    t = parse_trace(AZURE)
    assert t.format == "azure" and t.skipped_rows == 1 and "failed requests" in t.skipped_reason
    assert t.workload.arrival_s == pytest.approx([0.0, 4.314579])
    assert t.workload.prompt_tokens.tolist() == [374, 396]


def test_burstgpt_skips_failed_requests():
    t = parse_trace(BURST)
    assert t.format == "burstgpt" and t.skipped_rows == 1
    assert t.workload.arrival_s.tolist() == [0.0, 40.0] and t.workload.output_tokens.tolist() == [18, 230]


def test_mooncake_keeps_hash_ids_as_chained_prefix_blocks():
    t = parse_trace(MOONCAKE)
    w = t.workload
    assert t.format == "mooncake" and w.arrival_s.tolist() == [0.0, 0.7, 1.5]
    first, _, second = (w.prefix_blocks(i) for i in range(3))
    assert first[1].tolist() == [512, 1024, 1100] and second[1].tolist() == [512, 1024, 1030]
    assert first[0][:2].tolist() == second[0][:2].tolist() and first[0][2] != second[0][2]
    assert w.reusable_prefix_tokens().tolist() == [0, 0, 1024]


def test_gzip_is_read_transparently():
    for text in (GOOD, AZURE, MOONCAKE):
        plain, packed = parse_trace(text), parse_trace(gzip.compress(text.encode()))
        assert np.array_equal(plain.workload.arrival_s, packed.workload.arrival_s)
    with pytest.raises(TraceError, match="gzip"):
        parse_trace(b"\x1f\x8b" + b"garbage")


def test_unknown_headers_name_every_known_format():
    with pytest.raises(TraceError) as exc:
        detect_format("time,tokens\n1,2\n")
    message = exc.value.problems[0]
    assert all(name in message for name in ("kvplan", "azure", "burstgpt", "Mooncake"))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,0,5\n", "row 2 (line 3): prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n\n1,0,5\n", "row 2 (line 4): prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,5\nnan,10,5\n", "row 3 (line 4): arrival_s"),
        ("arrival_s,prompt_tokens,output_tokens\n0,12.5,5\n", "row 1 (line 2): prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10\n", "row 1 (line 2): output_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n-1,10,5\n", "row 1 (line 2): arrival_s"),
        ("arrival_s,prompt_tokens\n0,10\n", "not a known format"),
        ("arrival_s,prompt_tokens,output_tokens\n", "no data rows"),
        ("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,10,5\n", "row 1 (line 2): TIMESTAMP"),
        ("Timestamp,Model,Request tokens,Response tokens\n1,m,-3,4\n", "row 1 (line 2): Request tokens"),
        ('{"timestamp": 0, "input_length": 10}\n', "row 1 (line 1): output_length"),
        ('{"timestamp": 0, "input_length": 10, "output_length": 2}\n{oops\n', "row 2 (line 2): not a JSON object"),
        ('{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1, 2]}\n', "hash_ids"),
        (b"\xff\xfe", "not UTF-8"),
        ("", "empty"),
    ],
)
def test_bad_traces_name_the_row_and_field(text, needle):
    with pytest.raises(TraceError) as exc:
        parse_trace(text if isinstance(text, bytes) else text.encode())
    assert any(needle in p for p in exc.value.problems), exc.value.problems


def test_many_bad_rows_are_summarised():
    text = "arrival_s,prompt_tokens,output_tokens\n" + "0,x,1\n" * 25
    with pytest.raises(TraceError) as exc:
        parse_trace(text)
    assert len(exc.value.problems) == MAX_REPORTED_ROWS + 1
    assert "15 more bad rows" in exc.value.problems[-1]


def test_size_and_row_limits_hold_after_decompression():
    with pytest.raises(TraceError, match="limit"):
        parse_trace(GOOD, max_bytes=10)
    with pytest.raises(TraceError, match="limit"):
        parse_trace(gzip.compress(("x" * 200).encode()), max_bytes=100)
    with pytest.raises(TraceError, match="more than 2 rows"):
        parse_trace(GOOD, max_rows=2)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1e6), st.integers(1, 10**6), st.integers(1, 10**5), st.sampled_from(["", "a", "b"])),
        min_size=1,
        max_size=30,
    )
)
def test_any_valid_kvplan_trace_round_trips(rows):
    text = "arrival_s,prompt_tokens,output_tokens,prefix_id\n" + "".join(f"{a!r},{p},{o},{i}\n" for a, p, o, i in rows)
    w = parse_trace(text, prefix_tokens=50).workload
    assert len(w) == len(rows)
    assert np.all(np.diff(w.arrival_s) >= 0)
    assert sorted(w.prompt_tokens.tolist()) == sorted(p for _, p, _, _ in rows)
    # a row can reuse the prefix of an earlier row with its id and the same prefix length
    assert np.all(w.reusable_prefix_tokens() <= np.minimum(50, w.prompt_tokens - 1))


def test_bundled_traces_are_the_shared_files_with_their_licences():
    assert set(BUNDLED) == set(TraceName.__args__) - {""}
    counts = {
        "azure-code-2023": 8819,
        "azure-conv-2023": 19366,
        "mooncake-conversation": 12031,
        "mooncake-synthetic": 3993,
    }
    for name, n in counts.items():
        t = bundled_trace(name)
        assert len(t.workload) == n and t.skipped_rows == 0
    assert bundled_trace("mooncake-conversation").workload.has_prefixes
    folder = resources.files("planner.data").joinpath("traces")
    names = {p.name for p in folder.iterdir()}
    assert {"LICENSE-azure-CC-BY-4.0.txt", "LICENSE-mooncake-Apache-2.0.txt", "README.md"} <= names
    assert "traces/*" in (ROOT / "pyproject.toml").read_text()


def test_a_file_path_or_a_bundled_name(tmp_path):
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(BURST.encode()))
    assert read_trace_file(str(path)).format == "burstgpt"
    assert read_trace_file("azure-code-2023").format == "azure"
    with pytest.raises(TraceError, match="bundled traces"):
        read_trace_file(str(tmp_path / "missing.csv"))


def test_replay_windows_then_scales():
    t = parse_trace(BURST)
    assert replay(t, scale=2.0).arrival_s.tolist() == [0.0, 20.0]
    assert replay(t, start_s=10.0).arrival_s.tolist() == [30.0]
    assert parse_window("600:300") == (600.0, 300.0) and parse_window("600:") == (600.0, None)
    for bad in ("600", "x:1", "-1:5", "5:0"):
        with pytest.raises(TraceError, match="START:DURATION"):
            parse_window(bad)


def test_the_scenario_names_a_bundled_trace_and_its_replay():
    assert scenario_traffic(Scenario()) is None
    w = scenario_traffic(Scenario(trace="azure-code-2023", trace_scale=3.0, trace_start_s=600.0, trace_duration_s=60.0))
    assert w is not None and w.arrival_s.max() < 60.0 / 3.0
    full = bundled_trace("azure-code-2023").workload
    rel = full.arrival_s - full.arrival_s[0]
    assert len(w) == int(((rel >= 600.0) & (rel < 660.0)).sum())


def test_azure_2024_timestamps_with_a_zone_and_without_one_are_both_utc():
    text = (
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2024-05-10 00:00:00.0096020+00:00,100,10\n"
        "2024-05-10 02:00:01.0096020+02:00,100,10\n"  # 00:00:01 UTC
        "2024-05-10 00:00:02.0096020,100,10\n"
    )
    assert parse_trace(text).workload.arrival_s == pytest.approx([0.0, 1.0, 2.0])


def test_old_mac_line_endings_read_like_any_others():
    from planner.sim.traces import parse_trace

    trace = parse_trace(b"arrival_s,prompt_tokens,output_tokens\r0,10,5\r1,20,5\r")
    assert len(trace.workload) == 2


def test_a_cell_over_the_csv_field_limit_is_a_row_problem():
    import pytest

    from planner.errors import TraceError
    from planner.sim.traces import parse_trace

    with pytest.raises(TraceError, match=r"row 1 \(line 2\): not valid CSV \(field larger than field limit"):
        parse_trace(b"arrival_s,prompt_tokens,output_tokens\n0," + b"9" * 200_000 + b",5\n1,20,5\n")


def test_deeply_nested_json_line_is_a_row_problem():
    import pytest

    from planner.errors import TraceError
    from planner.sim.traces import parse_trace

    with pytest.raises(TraceError, match="JSON nested too deeply to read"):
        parse_trace(b'{"timestamp": ' + b"[" * 100_000 + b"\n")
