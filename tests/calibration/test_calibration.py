"""Calibration from the user's own serving benchmarks: the vLLM and SGLang result formats, the
fit, the calibrated profile, the CLI and the Cross-check tab."""

from __future__ import annotations

import io
import json
from dataclasses import asdict

import numpy as np
import pytest

from planner.calibration.calibrate import calibrate, calibrated_profile_toml, run_points
from planner.calibration.points import PARAMS, Point, PointSet
from planner.calibration.serving_results import ServingRun, parse_serving_results
from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.engine.inputs import timing_for
from planner.model.catalog import parse_engine_toml
from planner.model.scenario import Scenario
from tests.paths import ROOT

BASE = Scenario(gpu="h100-sxm", model="llama-3.1-8b")


def vllm_result(concurrency: int, throughput: float, ttft_ms: float, tpot_ms: float, e2e_ms: float) -> dict:
    """A `vllm bench serve --save-result` file (vllm/benchmarks/serve.py: result_json keys)."""
    return dict(
        date="20260101-000000",
        endpoint_type="openai",
        label=None,
        model_id="meta-llama/Llama-3.1-8B-Instruct",
        tokenizer_id="meta-llama/Llama-3.1-8B-Instruct",
        num_prompts=500,
        request_rate="inf",
        burstiness=1.0,
        max_concurrency=concurrency,
        duration=500 / throughput,
        completed=500,
        failed=0,
        total_input_tokens=500 * 2000,
        total_output_tokens=500 * 300,
        request_throughput=throughput,
        request_goodput=None,
        output_throughput=throughput * 300,
        total_token_throughput=throughput * 2300,
        mean_ttft_ms=ttft_ms,
        median_ttft_ms=ttft_ms,
        std_ttft_ms=1.0,
        p99_ttft_ms=2 * ttft_ms,
        mean_tpot_ms=tpot_ms,
        median_tpot_ms=tpot_ms,
        std_tpot_ms=0.1,
        p99_tpot_ms=tpot_ms,
        mean_itl_ms=tpot_ms,
        median_itl_ms=tpot_ms,
        mean_e2el_ms=e2e_ms,
        median_e2el_ms=e2e_ms,
        max_output_tokens_per_s=throughput * 400,
        max_concurrent_requests=concurrency,
    )


SGLANG_LINES = "\n".join(
    json.dumps(
        dict(
            backend="sglang",
            dataset_name="random",
            request_rate=rate,
            max_concurrency=None,
            duration=100.0,
            completed=200,
            total_input_tokens=200 * 1000,
            total_output_tokens=200 * 200,
            total_output_tokens_retokenized=200 * 200,
            request_throughput=2.0,
            input_throughput=2000.0,
            output_throughput=400.0,
            mean_e2e_latency_ms=1500.0,
            median_e2e_latency_ms=1400.0,
            median_ttft_ms=30.0 + i,
            median_tpot_ms=7.0,
            median_itl_ms=6.9,
            concurrency=3.0,
        )
    )
    for i, rate in enumerate((2.0, 4.0))
)


def test_vllm_result_file_reads_as_one_load_point():
    (run,) = parse_serving_results(json.dumps(vllm_result(16, 4.0, 50.0, 12.0, 3600.0)).encode(), "c16.json")
    assert run.tool == "vllm" and run.label == "c16.json"
    assert run.median_ttft_s == pytest.approx(0.05) and run.median_tpot_s == pytest.approx(0.012)
    assert run.mean_prompt_tokens == 2000 and run.mean_output_tokens == 300
    assert run.concurrency == pytest.approx(4.0 * 3.6)  # Little's law: throughput × mean E2E
    assert run.request_rate_per_s is None  # "inf": all at once


def test_sglang_jsonl_reads_one_point_per_line():
    runs = parse_serving_results(SGLANG_LINES.encode(), "sweep.jsonl")
    assert [r.tool for r in runs] == ["sglang", "sglang"] and runs[1].label == "sweep.jsonl run 2"
    assert runs[0].request_rate_per_s == 2.0 and runs[1].median_ttft_s == pytest.approx(0.031)


@pytest.mark.parametrize(
    "data,why",
    [
        (b"not json", "neither JSON nor JSON lines"),
        (b"{}", "neither a `vllm bench serve` result"),
        (json.dumps({**vllm_result(1, 1.0, 10, 5, 100), "completed": 0}).encode(), "completed"),
        (json.dumps({k: v for k, v in vllm_result(1, 1.0, 10, 5, 100).items() if k != "median_ttft_ms"}), None),
        (b"\xff\xfe", "not UTF-8"),
        (b"[]", "no runs"),
    ],
)
def test_bad_result_files_are_named(data, why):
    data = data if isinstance(data, bytes) else data.encode()
    if why is None:  # the mean stands in for a missing median
        (run,) = parse_serving_results(data, "x.json")
        assert run.median_ttft_s == pytest.approx(0.01)
        return
    with pytest.raises(ValueError, match=why):
        parse_serving_results(data, "x.json")


def test_points_predict_what_the_engine_reports(catalog):
    # the roofline's profile (a calibration fits the roofline; trtllm@1.x runs on measured kernels)
    s = Scenario(
        model="llama-3.1-70b", gpu="h200", tp=4, batch=64, prompt=512, output=300, prefix=0, engine="trtllm@0.9"
    )
    m = evaluate(s, catalog).metrics
    ps = PointSet([Point(s, k, 1.0, k) for k in ("ttft", "tpot", "throughput", "e2e_latency")], catalog)
    r = evaluate(s, catalog).resolved
    t = asdict(timing_for(r.gpu, s, r.engine.timing))
    got = ps.predict({n: t[n] for n in PARAMS})
    want = [
        m["ttft_s"],
        m["plain_tpot_s"],
        m["static_batch_output_tokens_per_s_per_gpu"],
        m["static_batch_latency_s"],
    ]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _synthetic_runs(catalog) -> tuple[list[ServingRun], dict]:
    """Runs whose medians are the engine's own predictions at other parameters."""
    shape = [(1, 0.3), (8, 2.0), (32, 6.0), (96, 12.0)]
    runs = [
        ServingRun(
            tool="vllm",
            label=f"c{c}",
            completed=500,
            duration_s=500 / x,
            total_input_tokens=500 * 2000,
            total_output_tokens=500 * 300,
            request_throughput_per_s=x,
            median_ttft_s=1.0,
            median_tpot_s=1.0,
            mean_e2e_s=c / x,
        )
        for c, x in shape
    ]
    ps = PointSet(run_points(runs, BASE), catalog)
    t = asdict(timing_for(catalog.gpus["h100-sxm"], BASE, catalog.engine("vllm").timing))
    true = {**t, "matmul_frac": 0.6, "bandwidth_frac": 0.8, "step_overhead_s": 2e-4}
    measured = ps.predict({n: true[n] for n in PARAMS}).reshape(-1, 2)
    runs = [
        r.model_copy(update=dict(median_ttft_s=float(a), median_tpot_s=float(b)))
        for r, (a, b) in zip(runs, measured, strict=True)
    ]
    return runs, true


def _as_vllm(r: ServingRun) -> dict:
    ms = 1e3
    return vllm_result(1, r.request_throughput_per_s, r.median_ttft_s * ms, r.median_tpot_s * ms, r.mean_e2e_s * ms)


def test_calibration_fits_the_users_runs(catalog):
    runs, _ = _synthetic_runs(catalog)
    cal = calibrate(runs, BASE, catalog)
    assert cal.median_abs_error_before > 0.05 and cal.median_abs_error_after < 0.01
    for name, v in cal.values.items():  # fitted values stay physical
        assert v > 0 and (v <= 1 or name.endswith("_s")), name
    # the link form reproduces the calibrated predictions through the ordinary engine
    s = BASE.with_changes(timing=cal.overrides, prompt=2000, output=300, batch=1, prefix=0)
    assert float(evaluate(s, catalog).inputs.mbu) == pytest.approx(cal.values["bandwidth_frac"], rel=1e-3)


def test_calibrated_profile_is_a_loadable_engine_profile(catalog):
    runs, _ = _synthetic_runs(catalog)
    cal = calibrate(runs, BASE, catalog)
    text = calibrated_profile_toml(catalog.engine("vllm"), catalog.gpus["h100-sxm"], cal, "c1…c96")
    profile = parse_engine_toml(text, "vllm-mine")
    hopper = profile.timing.families["hopper"]
    assert hopper.bandwidth_frac == pytest.approx(cal.values["bandwidth_frac"])
    assert profile.timing.step_overhead_us == pytest.approx(cal.values["step_overhead_s"] * 1e6)
    assert profile.timing.families["ampere"] == catalog.engine("vllm").timing.families["ampere"]


def test_cli_calibrate(catalog, tmp_path):
    runs, _ = _synthetic_runs(catalog)
    files = []
    for r in runs:
        path = tmp_path / f"{r.label}.json"
        path.write_text(json.dumps(_as_vllm(r)), encoding="utf-8")
        files.append(str(path))
    out, err = io.StringIO(), io.StringIO()
    profile = tmp_path / "mine.toml"
    code = main(["calibrate", *files, "--link", "gpu=h100-sxm", "--format", "json", "--out", str(profile)], out, err)
    assert code == 0, err.getvalue()
    record = json.loads(out.getvalue())
    assert record["link"].startswith("v=1&timing=") and len(record["points"]) == 8
    assert max(abs(p["calibrated_error_frac"]) for p in record["points"]) < 0.02
    assert parse_engine_toml(profile.read_text(encoding="utf-8"), "mine").timing.fitted_rows > 0
    bad = tmp_path / "bad.json"
    bad.write_text("{}", encoding="utf-8")
    err = io.StringIO()
    assert main(["calibrate", str(bad)], io.StringIO(), err) == 2
    assert "error: bad.json: neither a `vllm bench serve` result" in err.getvalue()


def test_crosscheck_tab_calibrates_a_serving_benchmark(catalog, monkeypatch):
    from streamlit.testing.v1 import AppTest

    import ui.tabs.crosscheck as tab

    runs, _ = _synthetic_runs(catalog)
    files = [(f"{r.label}.json", json.dumps(_as_vllm(r)).encode()) for r in runs]
    monkeypatch.setattr(tab, "_serving_uploads", lambda st: files)
    at = AppTest.from_file(str(ROOT / "ui" / "app.py"), default_timeout=60)
    at.session_state["_tab"] = "Cross-check"
    at.run()
    at.radio(key="xc_mode").set_value(tab.SERVING).run()
    assert not at.exception, [e.message for e in at.exception]
    labels = {m.label: m.value for m in at.metric}
    assert labels["Runs"] == "4"
    at.button(key="xc_serving_apply").click().run()
    assert not at.exception
    assert at.query_params["timing"].startswith("s")
    assert any("runs with these calibrated" in s.value for s in at.success)
    monkeypatch.setattr(tab, "_serving_uploads", lambda st: [("broken.json", b"{}")])
    at.run()
    assert any("cannot be used" in e.value for e in at.error)
