"""The plan against a real start-up log (planner.logs.check) and the CLI ``kvplan check-log``."""

from __future__ import annotations

import io
import json

import pytest

from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.logs.check import calibrated_scenario, calibration, check_log
from planner.logs.vllm_log import parse_vllm_log
from planner.model.scenario import Scenario
from tests.paths import ROOT

LOGS = ROOT / "tests" / "data" / "vllm_logs"


def log_of(name):
    return parse_vllm_log((LOGS / name).read_text(encoding="utf-8"))


def test_the_plan_runs_at_the_logs_settings_and_matches_it_term_by_term(catalog):
    check = check_log(Scenario(), log_of("llama31_8b_tp1.log"), catalog)
    s = check.scenario
    assert (s.tp, s.mem_util, s.batch, s.chunk, s.prompt + s.output) == (1, 0.95, 1024, 8192, 8192)
    rows = {r.term: r for r in check.rows}
    for term in ("total_memory_gib", "requested_memory_gib", "weights_gib", "activation_gib", "non_torch_gib"):
        assert abs(rows[term].predicted - rows[term].logged) <= 0.01, term
    assert abs(rows["kv_cache_tokens"].error_frac) < 0.001 and abs(rows["concurrency"].error_frac) < 0.001
    assert rows["cuda_graph_gib"].logged == 0.91  # captured after sizing: shown, not subtracted


def test_use_this_logs_figures_reproduces_the_log_to_its_rounding(catalog):
    """With the log's five terms the plan's KV tokens are the log's within the 0.01-GiB rounding of the printed
    figures (Qwen2.5-72B tp 2: a 3 GiB budget, so 0.02 GiB is 0.6 %)."""
    log = log_of("qwen25_72b_tp2.log")
    assert calibration(log) == {
        "cal_total_gib": 79.19,
        "cal_weights_gib": 67.8,
        "cal_act_gib": 2.29,
        "cal_nontorch_gib": 2.09,
        "cal_graph_gib": 1.61,
    }
    m = evaluate(calibrated_scenario(Scenario(model="qwen2.5-72b"), log, catalog), catalog).metrics
    assert m["kv_capacity_tokens"] == pytest.approx(log.kv_cache_tokens, rel=0.01)
    uncalibrated = check_log(Scenario(model="qwen2.5-72b"), log, catalog)
    tokens = next(r for r in uncalibrated.rows if r.term == "kv_cache_tokens")
    assert abs(tokens.error_frac) < 0.05  # the model alone: +2.7 %


def test_a_log_whose_tp_cannot_split_the_plans_model_is_named(catalog):
    """The failed Qwen3-14B log ran tp = 5; the plan's Llama-3.1-8B cannot be split five ways either."""
    with pytest.raises(ScenarioError, match="tp=5: vLLM cannot split Llama-3.1-8B over 5 GPUs"):
        check_log(Scenario(), log_of("qwen3_14b_tp5_failed.log"), catalog)


def test_cli_check_log_text_json_and_bad_input(tmp_path):
    path = str(LOGS / "llama31_8b_tp1.log")
    out, err = io.StringIO(), io.StringIO()
    assert main(["check-log", "", "--log", path, "--calibrate"], out=out, err=err) == 0, err.getvalue()
    text = out.getvalue()
    assert "GPU KV cache size (pool) (tokens)" in text and "476,016.00" in text and "calibrated link: ?v=1" in text
    assert "engine=vllm%400.19" in text  # a 0.19 log: the plan and its calibrated link on vllm@0.19
    out = io.StringIO()
    assert main(["check-log", "", "--log", path, "--format", "json"], out=out, err=err) == 0
    rows = {r["term"]: r for r in json.loads(out.getvalue())["rows"]}
    assert rows["kv_cache_tokens"]["logged"] == 476016
    bad = tmp_path / "bad.log"
    bad.write_text("just some text\n", encoding="utf-8")
    for args in (["--log", str(bad)], ["--log", str(tmp_path / "missing.log")]):
        err = io.StringIO()
        assert main(["check-log", "", *args], out=io.StringIO(), err=err) == 2
        assert err.getvalue().startswith("error: ") and "Traceback" not in err.getvalue()


#: Issue 31 F7: a log claiming 9,999.99 GiB of device memory and 0.0 GiB of weights for an 80 GB H100
#: (each line as vLLM prints it, the numbers edited) gave `cal_total_gib=9999.99&cal_weights_gib=0.0`.
ABSURD_LOG = (
    "DEBUG gpu_worker.py:284] worker init memory snapshot: torch_peak=0.0GiB, free_memory=9998.5GiB, "
    "total_memory=9999.99GiB, cuda_memory=1.49GiB, torch_memory=0.0GiB, non_torch_memory=0.51GiB\n"
    "INFO gpu_model_runner.py:4820] Model loading took 0.0 GiB memory and 14.43 seconds\n"
    "INFO gpu_worker.py:436] Available KV cache memory: 58.11 GiB\n"
)


def test_f7_an_absurd_log_gets_no_calibrated_link(tmp_path):
    path = tmp_path / "absurd.log"
    path.write_text(ABSURD_LOG, encoding="utf-8")
    for fmt in ("text", "json"):
        out, err = io.StringIO(), io.StringIO()
        code = main(["check-log", "gpu=h100-sxm", "--log", str(path), "--calibrate", "--format", fmt], out, err)
        assert code == 2, err.getvalue()
        assert "cal_total_gib" not in out.getvalue() and "calibrated" not in out.getvalue()
        problems = err.getvalue()
        assert "error: not calibrated: the log's total device memory (9999.99 GiB) is more than" in problems
        assert "error: not calibrated: the log's weights are 0 GiB" in problems
        assert "Traceback" not in problems


def test_a_real_logs_figures_are_plausible(catalog):
    from planner.logs.check import calibration_problems

    for name in ("llama31_8b_tp1.log", "qwen25_72b_tp2.log", "gemma2_9b.log"):
        log = log_of(name)
        assert calibration_problems(check_log(Scenario(gpu="h100-sxm"), log, catalog), log) == [], name
