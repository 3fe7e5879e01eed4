"""The loop plan → deploy → measure → calibrate: the benchmark job's result file, as `vllm bench serve
--save-result` writes it, is read by `kvplan calibrate`, and a run against a fleet of r replicas is fitted as
one replica at a share 1 / r of the load (planner/calibration/calibrate.py)."""

from __future__ import annotations

import json

import pytest

from planner.calibration.calibrate import calibrate, run_points
from planner.calibration.serving_results import parse_serving_results
from planner.deploy.bundle import deploy_bundle
from planner.errors import ScenarioError
from tests.deploy.plans import plan


def vllm_result(rate: float, throughput: float, e2el_ms: float) -> dict:
    """The keys `vllm bench serve --save-result` writes (vllm/benchmarks/serve.py 0.19.0, result_json)."""
    return {
        "date": "20261201-120000", "endpoint_type": "vllm", "backend": "vllm", "label": None,
        "model_id": "meta-llama/Llama-3.1-8B", "tokenizer_id": "meta-llama/Llama-3.1-8B", "num_prompts": 3000,
        "request_rate": rate, "burstiness": 1.0, "max_concurrency": None, "duration": 3000 / throughput,
        "completed": 3000, "total_input_tokens": 3000 * 1500, "total_output_tokens": 3000 * 300,
        "request_throughput": throughput, "median_ttft_ms": 80.0, "median_tpot_ms": 12.0, "mean_e2el_ms": e2el_ms,
    }  # fmt: skip


def test_a_fleet_run_is_fitted_per_replica(catalog):
    s = plan("colocated-h100")  # 3 replicas at 12 req/s
    bundle = deploy_bundle(s, catalog, "kubernetes")
    name = next(n for n in bundle.files if n.endswith("-bench.yaml"))
    assert "--result-filename kvplan-llama-3-1-8b-bench.json" in bundle.files[name]
    (run,) = parse_serving_results(json.dumps(vllm_result(s.rate, 11.9, 4000.0)).encode(), "bench.json")
    fleet_points = run_points([run], s)
    one = run_points([run], s.with_changes(replicas=1))
    assert fleet_points[0].scenario.batch == round(run.concurrency / 3) and one[0].scenario.batch == round(
        run.concurrency
    )
    assert fleet_points[0].request_rate_per_s == pytest.approx(11.9 / 3) and one[0].request_rate_per_s == pytest.approx(
        11.9
    )


def test_calibration_refuses_a_disaggregated_fleet(catalog):
    (run,) = parse_serving_results(json.dumps(vllm_result(6.0, 5.9, 9000.0)).encode(), "bench.json")
    with pytest.raises(ScenarioError, match="prefill_replicas=1: calibration fits one colocated replica"):
        calibrate([run], plan("disaggregated"), catalog)
