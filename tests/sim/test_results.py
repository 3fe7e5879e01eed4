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


@given(st.lists(st.lists(st.floats(0.0, 10.0), max_size=6), min_size=1, max_size=8))
def test_per_request_median_and_max_match_a_plain_sort(per_request):
    parts = [[np.array(v[: len(v) // 2]), np.array(v[len(v) // 2 :])] for v in per_request]
    p50, pmax = per_request_itl_p50_max(parts, len(per_request))
    for i, v in enumerate(per_request):
        if v:
            assert p50[i] == sorted(v)[(len(v) + 1) // 2 - 1] and pmax[i] == max(v)
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
