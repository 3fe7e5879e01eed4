"""Request generation: length distributions, Poisson arrivals, CSV traces."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import TraceError
from planner.model.scenario import Scenario
from planner.serving.workload import (
    MAX_REPORTED_ROWS,
    lengths,
    parse_trace,
    poisson_workload,
    scenario_workload,
    split_round_robin,
)


@pytest.mark.parametrize("dist", ["uniform", "lognormal"])
def test_lengths_have_the_requested_mean_and_spread(dist):
    x = lengths(np.random.default_rng(0), dist, mean=2000, spread=0.4, n=200_000)
    assert x.min() >= 1 and x.dtype == np.int64
    assert x.mean() == pytest.approx(2000, rel=0.01)
    assert x.std() / x.mean() == pytest.approx(0.4, rel=0.02)


def test_fixed_and_zero_spread_are_constant():
    rng = np.random.default_rng(0)
    assert set(lengths(rng, "fixed", 300, 0.9, 50)) == {300}
    assert set(lengths(rng, "lognormal", 300, 0.0, 50)) == {300}


def test_poisson_rate_and_seed():
    w = poisson_workload(4.0, 20_000, "lognormal", 0.5, 1000, 200, 0.3, 512, seed=3)
    assert np.all(np.diff(w.arrival_s) >= 0)
    assert w.rate_per_s == pytest.approx(4.0, rel=0.02)
    assert (w.prefix_hit_tokens > 0).mean() == pytest.approx(0.3, abs=0.01)
    assert np.all(w.prefix_hit_tokens <= w.prompt_tokens)
    again = poisson_workload(4.0, 20_000, "lognormal", 0.5, 1000, 200, 0.3, 512, seed=3)
    assert np.array_equal(w.arrival_s, again.arrival_s) and np.array_equal(w.prompt_tokens, again.prompt_tokens)


def test_another_rate_scales_the_same_arrivals():
    s = Scenario(sim_requests=100)
    a, b = scenario_workload(s), scenario_workload(s, rate_per_s=s.rate / 4)
    assert b.arrival_s == pytest.approx(4 * a.arrival_s)
    assert np.array_equal(a.prompt_tokens, b.prompt_tokens)


GOOD = "arrival_s,prompt_tokens,output_tokens,prefix_id\n0.5,100,20,sys\n0.0,200,10,\n1.0,300,30,sys\n"


def test_trace_parses_sorts_and_marks_prefix_hits():
    w = parse_trace(GOOD.encode(), prefix_tokens=64)
    assert list(w.arrival_s) == [0.0, 0.5, 1.0]
    assert list(w.prompt_tokens) == [200, 100, 300]
    assert list(w.prefix_hit_tokens) == [0, 0, 64]  # the first 'sys' row misses, the second hits
    assert w.source == "trace"


def test_trace_without_prefix_column_and_with_extra_columns():
    w = parse_trace("prompt_tokens,note,arrival_s,output_tokens\n5,x,0,1\n", prefix_tokens=100)
    assert list(w.prompt_tokens) == [5] and list(w.prefix_hit_tokens) == [0]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,0,5\n", "row 2 (line 3): prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n\n1,0,5\n", "row 2 (line 4): prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,10,5\nnan,10,5\n", "row 3 (line 4): arrival_s"),
        ("arrival_s,prompt_tokens,output_tokens\n0,12.5,5\n", "row 1 (line 2): prompt_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n0,10\n", "row 1 (line 2): output_tokens"),
        ("arrival_s,prompt_tokens,output_tokens\n-1,10,5\n", "row 1 (line 2): arrival_s"),
        ("arrival_s,prompt_tokens\n0,10\n", "missing column 'output_tokens'"),
        ("arrival_s,prompt_tokens,output_tokens\n", "no data rows"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_bad_traces_name_the_row_and_field(text, needle):
    with pytest.raises(TraceError) as exc:
        parse_trace(text if isinstance(text, bytes) else text.encode(), prefix_tokens=0)
    assert any(needle in p for p in exc.value.problems), exc.value.problems


def test_many_bad_rows_are_summarised():
    text = "arrival_s,prompt_tokens,output_tokens\n" + "0,x,1\n" * 25
    with pytest.raises(TraceError) as exc:
        parse_trace(text, prefix_tokens=0)
    assert len(exc.value.problems) == MAX_REPORTED_ROWS + 1
    assert "15 more bad rows" in exc.value.problems[-1]


def test_trace_size_and_row_limits():
    with pytest.raises(TraceError, match="limit"):
        parse_trace(GOOD, prefix_tokens=0, max_bytes=10)
    with pytest.raises(TraceError, match="more than 2 rows"):
        parse_trace(GOOD, prefix_tokens=0, max_rows=2)


def test_round_robin_split():
    w = poisson_workload(1.0, 10, "fixed", 0.0, 10, 10, 0.0, 0, seed=0)
    parts = [split_round_robin(w, 3, i) for i in range(3)]
    assert [len(p) for p in parts] == [4, 3, 3]
    assert np.array_equal(np.sort(np.concatenate([p.arrival_s for p in parts])), w.arrival_s)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1e6), st.integers(1, 10**6), st.integers(1, 10**5), st.sampled_from(["", "a", "b"])),
        min_size=1,
        max_size=30,
    )
)
def test_any_valid_trace_round_trips(rows):
    text = "arrival_s,prompt_tokens,output_tokens,prefix_id\n" + "".join(f"{a!r},{p},{o},{i}\n" for a, p, o, i in rows)
    w = parse_trace(text, prefix_tokens=50)
    assert len(w) == len(rows)
    assert np.all(np.diff(w.arrival_s) >= 0)
    assert sorted(w.prompt_tokens.tolist()) == sorted(p for _, p, _, _ in rows)
    assert int((w.prefix_hit_tokens > 0).sum()) == sum(max(0, [i for *_, i in rows].count(k) - 1) for k in ("a", "b"))
