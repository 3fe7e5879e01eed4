"""Issue 31's calibration findings, each from its own input through ``kvplan calibrate``:

F3  a results file of 60,000 runs (18.8 MB, under the 32 MiB file limit) ran > 120 s and took 3.4 GiB;
F4  a 400-digit JSON integer in ``total_input_tokens`` raised OverflowError (a traceback, exit 1);
F7  an absurd fit (median error 11,485,759 %) was accepted and its link handed out;
F8  a diverging fit printed numpy RuntimeWarnings and then a raw Python dict.
Each is refused with a worded reason naming the field or the rule, exit 2, no traceback, no warning."""

from __future__ import annotations

import io
import json
import time
import warnings

import pytest

from planner.calibration.calibrate import MAX_FIT_ERROR_FRAC, CalibrationError, calibrate
from planner.calibration.serving_results import MAX_RUNS, MIN_LATENCY_S, parse_serving_results
from planner.cli.main import main
from planner.format import fmt_pct
from planner.model.scenario import Scenario
from tests.calibration.test_calibration import _as_vllm, _synthetic_runs, vllm_result

LINK = "gpu=h100-sxm&model=llama-3.1-8b&engine=vllm"


def _calibrate(tmp_path, *docs, name="run.json") -> tuple[int, str, str]:
    paths = []
    for k, doc in enumerate(docs):
        path = tmp_path / (name if len(docs) == 1 else f"{k}-{name}")
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
        paths.append(str(path))
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["calibrate", *paths, "--link", LINK], out=out, err=err)
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


def test_f4_a_400_digit_integer_is_refused_by_name(tmp_path):
    doc = json.dumps(vllm_result(16, 4.0, 50.0, 12.0, 3600.0)).replace("1000000", "1" + "0" * 399)
    assert '"total_input_tokens": 1' + "0" * 399 in doc
    code, _, err = _calibrate(tmp_path, doc)
    assert code == 2, err
    assert "run.json: an integer too large to be a measurement at total_input_tokens (400 digits)" in err


def test_f4_anywhere_in_the_file_and_past_pythons_digit_limit(tmp_path):
    nested = {**vllm_result(16, 4.0, 50.0, 12.0, 3600.0), "itls": [[0.01, 10**400]]}
    code, _, err = _calibrate(tmp_path, nested)
    assert code == 2 and "at itls[0][1] (401 digits)" in err, err
    code, _, err = _calibrate(tmp_path, json.dumps(vllm_result(1, 1.0, 10, 5, 100))[:-1] + ', "x": ' + "9" * 5000 + "}")
    assert code == 2 and "an integer too large to be a measurement" in err, err


def _short_run(i: int) -> dict:
    """The fields a calibration reads (the issue's 60,000-run file: 18.8 MB, ~310 bytes a run)."""
    keys = ("model_id", "completed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput")
    full = vllm_result(1 + i % 64, 4.0 + i % 7, 50.0 + i % 13, 12.0, 3600.0)
    return {k: full[k] for k in (*keys, "median_ttft_ms", "median_tpot_ms", "mean_e2el_ms", "max_concurrency")}


def test_f3_a_file_of_60000_runs_is_refused_before_the_fit_with_its_estimate(tmp_path):
    runs = [_short_run(i) for i in range(60_000)]
    assert 15e6 < len(json.dumps(runs)) < 32 * 2**20
    t0 = time.perf_counter()
    code, _, err = _calibrate(tmp_path, runs)
    assert time.perf_counter() - t0 < 20  # refused after reading, before the fit (was > 120 s)
    assert code == 2
    assert f"run.json: 60,000 runs (≈ 180 s of fitting); a calibration takes at most {MAX_RUNS:,} runs" in err, err


def test_f3_the_limit_counts_every_file(tmp_path):
    half = [_short_run(i) for i in range(MAX_RUNS // 2 + 1)]
    code, _, err = _calibrate(tmp_path, half, half)
    assert code == 2 and f"{MAX_RUNS + 2:,} runs" in err, err


def test_latencies_outside_what_a_gpu_does_are_refused_by_field():
    doc = {**vllm_result(16, 4.0, 50.0, 12.0, 3600.0), "median_tpot_ms": 1e-12, "mean_tpot_ms": 1e-12}
    with pytest.raises(ValueError, match="median_tpot_s") as exc:
        parse_serving_results(json.dumps(doc).encode(), "x.json")
    assert str(exc.value).startswith("x.json")
    assert MIN_LATENCY_S <= 1e-3


def test_f7_a_fit_that_does_not_describe_the_runs_is_refused(tmp_path):
    """TPOT of 0.2 ms at 16 concurrent requests of an 8B model on an H100 (the weights alone take ~5 ms to read)."""
    code, out, err = _calibrate(tmp_path, vllm_result(16, 4.0, 50.0, 0.2, 3600.0))
    assert code == 2 and out == ""
    assert "not calibrated:" in err and "link" not in out
    assert f"at most {fmt_pct(MAX_FIT_ERROR_FRAC)}" in err or "outside" in err, err


def test_f8_a_diverging_fit_is_worded_without_warnings_or_dicts(tmp_path):
    """An hour per output token (the largest latency read) drives the decode overhead to ~90 s."""
    hour_ms = 3_600_000.0
    code, _, err = _calibrate(tmp_path, {**vllm_result(16, 4.0, 50.0, hour_ms, 3600.0), "mean_tpot_ms": hour_ms})
    assert code == 2, err
    assert "{" not in err and "not calibrated:" in err
    assert "must be in" in err or f"at most {fmt_pct(MAX_FIT_ERROR_FRAC)}" in err, err


def test_a_good_calibration_still_passes(catalog):
    runs, _ = _synthetic_runs(catalog)
    cal = calibrate(runs, Scenario(gpu="h100-sxm", model="llama-3.1-8b"), catalog)
    assert cal.median_abs_error_after < 0.01
    assert _as_vllm(runs[0])["model_id"]


def test_the_fit_refusal_is_a_problems_error(catalog):
    runs = parse_serving_results(json.dumps(vllm_result(16, 4.0, 50.0, 0.2, 3600.0)).encode(), "x.json")
    with pytest.raises(CalibrationError) as exc:
        calibrate(runs, Scenario(gpu="h100-sxm", model="llama-3.1-8b"), catalog)
    assert all(p.startswith("not calibrated:") for p in exc.value.problems)
