"""Results of a simulation: percentiles, per-request ITLs, the timeline, the frames and the text."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.model.scenario import Scenario
from planner.sim.results import (
    MAX_TIMELINE_POINTS,
    cdf_frame,
    downsample_timeline,
    itl_by_request,
    itl_sample,
    per_request_itl_p50_max,
    percentiles,
    summary_text,
    time_mean,
    timeline_frame,
)
from planner.sim.simulate import simulate_scenario


@pytest.fixture(scope="module")
def result(catalog):
    return simulate_scenario(Scenario(rate=6.0, sim_requests=400, spec=True), catalog)


def test_percentiles_are_the_inverse_cdf():
    values = np.array([4.0, 1.0, 3.0, 2.0])
    assert percentiles(values, (25, 50, 51, 100)) == [1.0, 2.0, 3.0, 4.0]
    # weights count as repeated samples
    assert percentiles(np.array([1.0, 2.0]), (50, 75, 76), np.array([3.0, 1.0])) == [1.0, 1.0, 2.0]
    assert all(np.isnan(percentiles(np.zeros(0))))


@given(
    st.integers(1, 40),
    st.lists(st.tuples(st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**31 - 1)), max_size=30),
)
def test_itl_grouped_by_tag_is_each_request_s_rows_in_booking_order(requests, bookings):
    """``itl_by_request`` (each value tagged with its request, one stable sort) gives every request the rows
    booked for it, in booking order — what appending each booking's row r to request decoding[r]'s list gives;
    the per-request median and max are a plain sort's."""
    booked, rows_of = [], [[] for _ in range(requests)]
    for members, steps, seed in bookings:
        rng = np.random.default_rng(seed)
        decoding = rng.choice(requests, min(members, requests), replace=False).tolist()
        accepted = rng.integers(1, 5, (len(decoding), steps))
        itl = rng.uniform(0.0, 10.0, (len(decoding), steps)).round(1) / accepted  # ties between requests too
        booked.append((decoding, itl, accepted))
        for r, i in enumerate(decoding):
            rows_of[i].append((itl[r], accepted[r]))
    values, weights, starts = itl_by_request(booked, requests)
    p50, pmax = per_request_itl_p50_max(values, starts, requests)
    for i, rows in enumerate(rows_of):
        got, got_weights = values[starts[i] : starts[i + 1]], weights[starts[i] : starts[i + 1]]
        want = np.concatenate([v for v, _ in rows]) if rows else np.zeros(0)
        assert np.array_equal(got, want)
        assert np.array_equal(got_weights, np.concatenate([w for _, w in rows]) if rows else np.zeros(0))
        if rows:
            assert p50[i] == sorted(want)[(want.size + 1) // 2 - 1] and pmax[i] == want.max()
        else:
            assert np.isnan(p50[i]) and np.isnan(pmax[i])


def test_itl_sample_expands_shared_weights():
    values, weights = itl_sample([(np.array([0.1, 0.2]), 3), (np.array([0.5]), 1)])
    assert values.tolist() == [0.1, 0.2, 0.5] and weights.tolist() == [3.0, 3.0, 1.0]
    values, weights = itl_sample([(np.array([0.1]), 2), (np.array([0.2, 0.3]), np.array([1, 4]))])
    assert values.tolist() == [0.1, 0.2, 0.3] and weights.tolist() == [2.0, 1.0, 4.0]
    empty_values, empty_weights = itl_sample([])
    assert empty_values.size == 0 and empty_weights.size == 0


def test_time_mean_weights_each_value_by_how_long_it_holds():
    assert time_mean(np.array([0.0, 1.0, 4.0]), np.array([1.0, 0.0, 7.0])) == pytest.approx(0.25)
    assert time_mean(np.array([2.0]), np.array([0.5])) == 0.5
    assert time_mean(np.zeros(0), np.zeros(0)) == 0.0


def test_downsampling_keeps_the_first_time_and_the_peak_of_each_run():
    t = np.arange(10 * MAX_TIMELINE_POINTS, dtype=float)
    spikes = np.zeros_like(t)
    spikes[12345] = 9.0
    t_ds, s_ds = downsample_timeline(t, spikes)
    assert t_ds.size == MAX_TIMELINE_POINTS and t_ds[0] == 0.0 and s_ds.max() == 9.0
    short = np.arange(5.0)
    assert downsample_timeline(short, short)[1] is short


def test_cdf_and_timeline_frames(result):
    frame = cdf_frame(result)
    assert set(frame["metric"]) == {"ttft", "tpot", "itl"} and frame["share"].between(0, 1).all()
    assert frame.groupby("metric")["value_s"].apply(lambda v: v.is_monotonic_increasing).all()
    timeline = timeline_frame(result)
    assert timeline["time_s"].is_monotonic_increasing and (timeline["kv_used_frac"] <= 1).all()


def test_summary_text_reads_through_planner_format(result):
    text = summary_text(result)
    lines = text.splitlines()
    assert lines[0].startswith("requests") and "400 served of 400" in lines[0]
    assert lines[1].startswith("TTFT") and " ms" in lines[1] and "p99" in lines[1]
    assert "tok/s output" in text and "TTFT ≤ 2.00 s and TPOT ≤ 50.0 ms" in text
    assert all(len(line) > 26 for line in lines)
