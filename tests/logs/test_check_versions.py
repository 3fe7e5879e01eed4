"""check-log across engine versions (issue 27 item 3): the log's version is read from its banner or its format,
the plan runs on that version, terms are compared like with like, and calibration takes only figures the version
subtracts.  Sources: vLLM 0.33.0 v1/worker/gpu_worker.py:641-757 (budget) and :1041-1066 (the summary line),
utils/mem_utils.py:312-321 (0.27.0: consumed + transient peak), v1/core/kv_cache_utils.py:1120-1150 (tokens =
int(concurrency × max_model_len)); SGLang 0.5.23 model_executor/model_runner.py:1373, mem_cache/memory_pool.py:2087,
managers/scheduler.py:1269, mem_cache/kv_cache_configurator.py:2990-3060."""

from __future__ import annotations

import io
import json

import pytest

from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.logs.check import calibrated_scenario, calibration, calibration_notes, check_log
from planner.logs.sglang_log import SglangStartup
from planner.logs.startup import parse_startup_log
from planner.logs.vllm_log import LogError, parse_vllm_log
from planner.model.scenario import Scenario
from tests.paths import ROOT

LOGS = ROOT / "tests" / "data" / "vllm_logs"
V033 = (LOGS / "synthetic_0.33_llama31_8b.log").read_text(encoding="utf-8")
SGL = (LOGS / "synthetic_sglang_0.5.23_llama31_8b.log").read_text(encoding="utf-8")


def test_a_0_33_log_is_read_with_its_own_terms():
    log = parse_vllm_log(V033)
    assert log.release() == (0, 33, 0) and log.one_line_kv_size and log.graphs_in_budget
    assert (log.consumed_gib, log.peak_activation_gib, log.cuda_graph_estimate_gib) == (15.26, 2.73, 0.88)
    assert log.cuda_graph_gib == 0.9  # the capture, not the V2 runner's first "Graph capturing finished" (profiling)
    assert (log.kv_cache_tokens, log.concurrency, log.requested_memory_gib) == (449_408, 54.86, 72.85)
    assert log.non_torch_gib is None and log.activation_gib is None  # 0.27+ prints neither


def test_the_release_comes_from_the_format_when_the_banner_is_missing():
    lines = [line for line in V033.splitlines() if "Initializing a V1 LLM engine" not in line]
    assert parse_vllm_log("\n".join(lines)).release() == (0, 28, 0)  # the one-line KV size: 0.28.0+
    summary = [line for line in lines if "Free memory on device" in line]
    assert parse_vllm_log("\n".join(summary)).release() == (0, 27, 0)  # "consumed memory": 0.27.0+


def test_a_0_33_log_is_checked_on_0_33_like_with_like(catalog):
    check = check_log(Scenario(), parse_vllm_log(V033), catalog)
    assert check.scenario.engine == "vllm@0.33" and check.scenario.mem_util == 0.92
    rows = {r.term: r for r in check.rows}
    assert {"consumed_gib", "peak_activation_gib", "cuda_graph_estimate_gib"} <= set(rows)
    assert "non_torch_gib" not in rows and "activation_gib" not in rows
    m = check.result.metrics
    assert rows["consumed_gib"].predicted == pytest.approx(
        (m["weight_bytes_per_gpu"] + m["non_torch_bytes_per_gpu"]) / 2**30
    )
    assert rows["peak_activation_gib"].predicted == pytest.approx(
        (m["activation_bytes_per_gpu"] + m["cuda_graph_charged_bytes_per_gpu"]) / 2**30
    )
    assert rows["kv_cache_tokens"].label == "GPU KV cache size (concurrency × max_model_len)"
    assert abs(rows["kv_cache_tokens"].error_frac) < 0.02 and abs(rows["concurrency"].error_frac) < 0.02
    assert check.notes[0].startswith("the plan runs on vLLM 0.33.0 (vllm@0.33)")


def test_a_pinned_engine_is_kept_and_the_mismatch_said(catalog):
    check = check_log(Scenario(engine="vllm@0.19"), parse_vllm_log(V033), catalog)
    assert check.scenario.engine == "vllm@0.19"
    assert any("the log is vLLM 0.33.0; the plan uses the vLLM 0.19.0 profile" in n for n in check.notes)
    assert any("the log subtracted its CUDA-graph estimate" in n for n in check.notes)


def test_calibration_takes_only_what_0_33_subtracts_and_reproduces_the_log(catalog):
    """consumed − weights for the non-torch term (no non-torch figure), peak − estimate for the activation, the
    estimate for the graphs; then KV = requested − consumed − peak, the log's own arithmetic."""
    log = parse_vllm_log(V033)
    assert calibration(log) == {
        "cal_total_gib": 79.19,
        "cal_weights_gib": 14.99,
        "cal_nontorch_gib": 0.27,
        "cal_act_gib": 1.85,
        "cal_graph_gib": 0.88,
    }
    m = evaluate(calibrated_scenario(Scenario(), log, catalog), catalog).metrics
    assert m["kv_budget_bytes_per_gpu"] / 2**30 == pytest.approx(54.86, abs=0.011)
    assert abs(m["logged_kv_cache_tokens"] - 449_408) <= 16 * 10  # the 0.01-GiB rounding of four figures
    assert any("prints no non-torch figure" in n for n in calibration_notes(log))


def test_no_estimate_no_calibration_of_the_peak(catalog):
    lines = [
        line
        for line in V033.splitlines()
        if "profiling is enabled" not in line and "CUDA graph pool memory" not in line
    ]
    log = parse_vllm_log("\n".join(lines + ["INFO [gpu_worker.py:787] CUDA graph memory profiling is enabled ..."]))
    cal = calibration(log)
    assert "cal_act_gib" not in cal and "cal_graph_gib" not in cal and cal["cal_nontorch_gib"] == 0.27
    assert any("includes the CUDA-graph estimate" in n for n in calibration_notes(log))
    debug = V033 + (
        "\nDEBUG [utils/mem_utils.py:214] Memory profiling takes 9.10 seconds. Total non KV cache memory: 17.99GiB; "
        "torch peak memory increase: 2.10GiB; total consumed (from mem_get_info): 15.26GiB; weights memory: 14.99GiB."
    )
    d = parse_vllm_log(debug)
    assert d.torch_peak_increase_gib == 2.1 and d.activation_gib is None and calibration(d)["cal_act_gib"] == 1.85
    assert any("not calibrated from 'torch peak memory increase'" in n for n in calibration_notes(d))


def test_a_0_19_log_is_still_checked_on_0_19(catalog):
    log = parse_vllm_log((LOGS / "llama31_8b_tp1.log").read_text(encoding="utf-8"))
    check = check_log(Scenario(), log, catalog)
    assert check.scenario.engine == "vllm@0.19"
    rows = {r.term: r for r in check.rows}
    assert (
        rows["kv_cache_tokens"].label == "GPU KV cache size (pool)" and abs(rows["kv_cache_tokens"].error_frac) < 1e-3
    )


def test_an_sglang_log_is_read_and_checked_on_sglang(catalog):
    log = parse_startup_log(SGL)
    assert isinstance(log, SglangStartup)
    assert (log.weights_gib, log.kv_cache_tokens, log.kv_cache_gib, log.gpu_memory_utilization) == (
        14.99, 440_535, 53.78, 0.874,
    )  # fmt: skip
    assert (log.max_num_seqs, log.max_num_batched_tokens, log.max_model_len, log.block_size) == (32, 2048, 2304, 1)
    check = check_log(Scenario(), log, catalog)
    assert check.scenario.engine == "sglang@0.5.23"
    rows = {r.term: r for r in check.rows}
    assert rows["gpu_memory_utilization"].predicted == 0.874
    assert abs(rows["kv_cache_tokens"].error_frac) < 0.001 and abs(rows["weights_gib"].error_frac) < 0.001
    assert calibration(log) == {"cal_weights_gib": 14.99}
    with pytest.raises(LogError, match="no SGLang start-up memory line"):
        parse_startup_log("[2025] sglang server starting\n")


def test_cli_check_log_of_a_0_33_log(tmp_path):
    path = tmp_path / "v033.log"
    path.write_text(V033, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check-log", "model=llama-3.1-8b", "--log", str(path), "--calibrate"], out=out, err=err) == 0
    text = out.getvalue()
    assert (
        "consumed (weights + non-torch) (GiB)" in text and "calibrated link: ?" in text and "engine=vllm%400.33" in text
    )
    out = io.StringIO()
    assert main(["check-log", "", "--log", str(path), "--format", "json"], out=out, err=err) == 0
    assert json.loads(out.getvalue())["plan"].find("engine=vllm%400.33") >= 0
