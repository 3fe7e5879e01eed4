"""kvplan predict from the command line: vLLM's printout and JSON, trtllm-bench's, --out's rules, bad input."""

from __future__ import annotations

import json

from tests.cli.test_cli import run
from tests.sim.test_serve_metrics import VLLM_RESULT_KEYS

LINK = "model=llama-3.1-8b&gpu=h100-sxm&batch=256&chunk=8192"
SMALL = ("--num-prompts", "40", "--random-input-len", "256", "--random-output-len", "32")


def test_text_is_vllms_printout():
    code, out, err = run("predict", LINK, "--max-concurrency", "4", *SMALL)
    assert code == 0, err
    assert "Maximum request concurrency:             4" in out
    for row in ("Successful requests:                     40", "Mean TTFT (ms):", "P99 TPOT (ms):", "Median ITL (ms):"):
        assert row in out
    assert "engine=vllm@0.33" in out and out.rstrip().splitlines()[-1].startswith("note:")


def test_json_is_vllms_result_file():
    code, out, _ = run("predict", LINK, "--request-rate", "8", "--format", "json", *SMALL)
    assert code == 0
    record = json.loads(out)
    assert set(VLLM_RESULT_KEYS) <= set(record) and record["request_rate"] == 8.0
    assert record["completed"] == 40 and len(record["date"]) == len("20261201-120000")


def test_metric_options_choose_the_sections():
    code, out, _ = run("predict", LINK, *SMALL, "--percentile-metrics", "ttft,itl", "--metric-percentiles", "50,99.9")
    assert code == 0
    assert "P99.9 ITL (ms):" in out and "P50 TTFT (ms):" in out and "TPOT" not in out


def test_max_throughput_prints_trtllm_benchs_overview():
    code, out, _ = run("predict", LINK, "--max-throughput", *SMALL)
    assert code == 0
    assert "= PERFORMANCE OVERVIEW" in out and "Per GPU Output Throughput (tps/gpu):" in out
    code, out, _ = run("predict", LINK, "--max-throughput", "--format", "json", *SMALL)
    assert json.loads(out)["request_info"]["num_requests"] == 40


def test_out_follows_the_out_rules(tmp_path):
    target = tmp_path / "run.json"
    code, _, err = run("predict", LINK, *SMALL, "--format", "json", "--out", str(target))
    assert code == 0 and json.loads(target.read_text())["completed"] == 40
    code, _, err = run("predict", LINK, *SMALL, "--out", str(target))
    assert code == 2 and "already exists; add --force" in err
    assert run("predict", LINK, *SMALL, "--out", str(target), "--force")[0] == 0
    assert "Serving Benchmark Result" in target.read_text()
    code, _, err = run("predict", LINK, *SMALL, "--out", str(tmp_path))
    assert code == 2 and "is a folder" in err
    code, _, err = run("predict", LINK, *SMALL, "--out", str(tmp_path / "no" / "x.json"))
    assert code == 2 and "does not exist" in err


def test_bad_options_exit_2_naming_each():
    code, out, err = run("predict", LINK, "--max-concurrency", "0", "--request-rate", "fast", "--num-prompts", "0")
    assert code == 2 and out == ""
    for name in ("--max-concurrency", "--request-rate", "--num-prompts"):
        assert name in err
    assert "Traceback" not in err


def test_a_bundled_trace_on_its_own_clock():
    code, out, _ = run("predict", LINK, "--trace", "azure-code-2023", "--num-prompts", "30")
    assert code == 0 and "Self timing is set" in out and "Successful requests:                     30" in out


def test_every_printout_names_the_basis_of_its_step_times():
    """The time basis (measured kernels or the fitted roofline) in the text header and in both JSONs'
    ``kvplan`` record: the H100's shipped vLLM table, and the MI300X, which has none (the roofline)."""
    for link, basis in (
        (LINK, "measured kernels (vLLM 0.24.0, NVIDIA H100 SXM)"),
        ("model=llama-3.1-8b&gpu=mi300x", "fitted roofline"),
    ):
        code, out, err = run("predict", link, "--max-concurrency", "4", *SMALL)
        assert code == 0, err
        assert f"times: {basis}" in out.splitlines()[2], out
        for extra in ((), ("--max-throughput",)):
            code, out, err = run("predict", link, *extra, "--format", "json", *SMALL)
            assert code == 0, err
            assert json.loads(out)["kvplan"]["time_basis"].startswith(basis)
        code, out, _ = run("predict", link, "--max-throughput", *SMALL)
        assert f"times: {basis}" in out
