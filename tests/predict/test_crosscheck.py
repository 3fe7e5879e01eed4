"""An imported vllm bench serve result read into the same run's settings (planner.predict.crosscheck)."""

from __future__ import annotations

import json
import math

import pytest

from planner.model.scenario import Scenario
from planner.predict.crosscheck import compare, crosscheck, latency_fields, read_result, run_settings

RESULT = {
    "num_prompts": 50,
    "request_rate": 4.0,
    "burstiness": 1.0,
    "max_concurrency": 8,
    "completed": 50,
    "duration": 20.0,
    "total_input_tokens": 50 * 300,
    "total_output_tokens": 50 * 40,
    "request_throughput": 2.5,
    "output_throughput": 100.0,
    "mean_tpot_ms": 8.0,
    "p90_tpot_ms": 9.0,
    "p99.9_itl_ms": 30.0,
    "median_ttft_ms": 40.0,
}


def test_settings_come_from_the_file():
    s = run_settings(RESULT)
    o = s.options
    assert (o.num_prompts, o.max_concurrency, o.request_rate_per_s) == (50, 8, 4.0)
    assert (o.input_len, o.output_len) == (300, 40) and o.metric_percentiles == (90.0, 99.9)
    assert "means" in s.lengths and s.workload is None
    assert [k for k, _, _ in s.fields] == [
        "completed", "duration", "request_throughput", "output_throughput",
        "median_ttft_ms", "mean_tpot_ms", "p90_tpot_ms", "p99.9_itl_ms",
    ]  # fmt: skip


def test_saved_lengths_are_used_request_by_request():
    detailed = RESULT | {"input_lens": [100, 200, 300], "output_lens": [5, 6, 7], "num_prompts": 3, "completed": 3}
    s = run_settings(detailed)
    assert s.workload is not None and list(s.workload.prompt_tokens) == [100, 200, 300]
    assert s.options.num_prompts == 3


def test_the_prediction_fills_every_compared_field(catalog):
    p, rows = crosscheck(Scenario(batch=256, chunk=8192), catalog, run_settings(RESULT))
    assert all(r.predicted is not None and math.isfinite(r.error_frac) for r in rows)
    assert rows[0].predicted == 50


def test_a_missing_prediction_is_none_not_zero():
    rows = compare(run_settings(RESULT), {"completed": 50})
    assert rows[0].error_frac == 0.0 and rows[1].predicted is None and rows[1].error_frac is None


def test_bad_files_are_named():
    with pytest.raises(ValueError, match="run.json: request_rate"):
        run_settings(RESULT | {"request_rate": "fast"}, "run.json")
    with pytest.raises(ValueError, match="completed"):
        run_settings(RESULT | {"completed": 0}, "run.json")
    with pytest.raises(ValueError, match="NaN is not allowed"):
        read_result(b'{"completed": NaN}', "x.json")
    with pytest.raises(ValueError, match="expected the JSON object"):
        read_result(b"[1, 2]", "x.json")
    lines = (json.dumps(RESULT) + "\n" + json.dumps(RESULT | {"completed": 7}) + "\n").encode()
    assert read_result(lines)["completed"] == 50  # JSON lines: the first run


def test_latency_fields_are_in_vllms_order():
    keys = ["p99_itl_ms", "mean_ttft_ms", "p50_ttft_ms", "median_ttft_ms", "std_ttft_ms", "mean_e2el_ms"]
    assert [label for _, label, _ in latency_fields(keys)] == ["Mean TTFT", "Median TTFT", "P50 TTFT", "P99 ITL",
                                                                  "Mean E2EL"]  # fmt: skip


def test_the_published_rows_read_as_result_files():
    from tests.paths import ROOT

    rows = json.loads((ROOT / "benchmarks" / "data" / "published-bench-serve.json").read_text())["rows"]
    assert len(rows) >= 8
    for row in rows:
        s = run_settings(row["result"], row["id"])
        assert row["source"] and row["quote"] and row["headline"] in s.measured, row["id"]
        assert s.options.max_concurrency in (4, 8)
        Scenario(**row["scenario"])  # the server is a valid scenario
