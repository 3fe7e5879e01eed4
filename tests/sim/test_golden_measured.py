"""Golden results on the measured-kernel step time (``kernel_step_time.MeasuredStep``): the path the
scenario defaults and the benchmarks take (``test_golden``'s cases pin vLLM 0.19, timed by the roofline).

Speed-ups of the simulator must reproduce these bit for bit: each case is a seeded run, fingerprinted as
in ``test_golden`` (summary floats as ``repr``, the sha256 of every per-request and timeline array, steps,
``stopped_early``).  The fingerprints in ``golden_measured.json`` were written by main at c77a2f7, before
issue 28's simulator speed-ups were merged (first at a94ed9f; rewritten once the H200's kernel ceiling and the
``[kernels]`` refit moved vLLM 0.33's step times: the merged simulator writes the same file byte for byte; and
again when the B300/GB300 ceilings' refit moved them ≤ 0.3 %, and when the host-bound step's refit did: each
time the previous constants still reproduced the old file byte for byte under the new code), on
vLLM 0.33's rules (pinned: a newer default engine must not move them).
The cases cover what the fast paths special-case: runs of decode steps cut by arrivals, runs of mixed steps
(one chunk filling the budget), preemptions with and without speculative decoding, the prefix cache with
queues, sliding-window layers, a closed loop, and fleets behind each router.  To rewrite them after an
intended change of results (never for a speed-up): ``python -m tests.sim.test_golden_measured``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from planner.engine.step_time import MeasuredStep, RooflineStepTime
from planner.model.catalog import Catalog, load_catalog
from planner.model.scenario import Scenario
from planner.sim.config import SimConfig
from planner.sim.fleet import simulate_fleet_scenario
from planner.sim.results import SimResult
from planner.sim.simulate import sim_inputs, simulate, simulate_scenario
from planner.sim.traces import bundled_trace
from planner.sim.workload import scenario_workload
from tests.sim.test_golden import fingerprint

GOLDEN = Path(__file__).with_name("golden_measured.json")
#: Every float — the per-request and timeline arrays', the summary's — is compared at 24 mantissa bits.  The curves of
#: measured kernels are interpolated with NumPy's float64 log and exp, which take Intel SVML's kernels on AVX-512
#: machines and the C library's elsewhere, which can differ in the last bit: on 2026-12-02 the file written by an
#: earlier machine failed on an AVX2-only one (no AVX-512), every summary equal to the bit, the three ITL arrays
#: not, two summary percentiles of ITL 1-2 ulp apart — the likely cause, since the code and every package version
#: were the same.  A speed-up that changes a step changes far more than 2⁻²⁴ of it.
ARRAY_MANTISSA_BITS = 24
ENGINE = "vllm@0.33"


def S(**kw) -> Scenario:
    return Scenario(engine=ENGINE, **kw)


def _run(s: Scenario, catalog: Catalog, kv_blocks: int | None = None, **kw) -> SimResult:
    _, x = sim_inputs(s, catalog)
    cfg = SimConfig.from_inputs(x, s)
    if kv_blocks is not None:
        cfg = dataclasses.replace(cfg, kv_capacity_blocks=kv_blocks)
    return simulate(scenario_workload(s), cfg, RooflineStepTime.from_inputs(x), **kw)


def _trace(name: str, n: int):
    return bundled_trace(name).workload.take(slice(0, n))


def _fleet(router: str, n: int) -> Callable[[Catalog], SimResult]:
    def run(c: Catalog) -> SimResult:
        s = S(replicas=3, router=router)
        return simulate_fleet_scenario(s, c, workload=_trace("azure-conv-2023", n)).combined

    return run


CASES: dict[str, Callable[[Catalog], SimResult]] = {
    "default": lambda c: simulate_scenario(S(sim_requests=3000), c),
    "near_saturation": lambda c: simulate_scenario(S(rate=7.0, sim_requests=2000), c),
    "speculative": lambda c: simulate_scenario(S(rate=4.0, spec=True, sim_requests=1500), c),
    "preemptions": lambda c: _run(S(rate=6.0, sim_requests=600), c, kv_blocks=900),
    "speculative_preemptions": lambda c: _run(
        S(rate=5.0, sim_requests=500, spec=True, alpha=0.8, gamma=3, seed=7), c, kv_blocks=800
    ),
    "stop_on_slo_miss": lambda c: _run(S(rate=12.0, sim_requests=800), c, stop_on_slo_miss=True),
    "no_detail": lambda c: _run(S(rate=5.0, sim_requests=800, seed=11), c, detail=False),
    "closed_loop": lambda c: _run(S(rate=50.0, sim_requests=600, seed=4), c, max_concurrency=24),
    "sizing_70b_prefill_runs": lambda c: simulate_scenario(
        S(model="llama-3.1-70b", prompt=4000, output=500, rate=1.5, tp=8, batch=512, chunk=512, sim_requests=600), c
    ),
    "sliding_window": lambda c: simulate_scenario(S(model="mistral-7b", rate=3.0, sim_requests=600), c),
    "mooncake_queues": lambda c: simulate_scenario(
        S(gpu="h200", tp=2), c, workload=_trace("mooncake-conversation", 2500)
    ),
    "mooncake_vllm_defaults": lambda c: simulate_scenario(
        S(gpu="h200", tp=4, batch=256, chunk=8192), c, workload=_trace("mooncake-conversation", 2500)
    ),
    "fleet_round_robin": _fleet("round_robin", 2000),
    "fleet_least_tokens": _fleet("least_tokens", 2000),
    "fleet_prefix_affinity": _fleet("prefix_affinity", 2000),
}


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("case", list(CASES))
def test_simulation_matches_main_bit_for_bit(case, catalog, golden):
    assert fingerprint(CASES[case](catalog), ARRAY_MANTISSA_BITS) == golden[case]


def test_the_cases_take_the_measured_path_and_exercise_what_they_are_named_for(catalog, golden):
    _, x = sim_inputs(S(), catalog)
    assert isinstance(RooflineStepTime.from_inputs(x).target, MeasuredStep)
    sm = {k: v["summary"] for k, v in golden.items()}
    assert float(sm["preemptions"]["preemptions"]) > 0
    assert float(sm["speculative_preemptions"]["preemptions"]) > 0
    assert golden["stop_on_slo_miss"]["stopped_early"]
    assert float(sm["mooncake_queues"]["queue_max"]) > 0
    assert float(sm["mooncake_queues"]["prefix_cache_hit_rate_tokens"]) > 0.05
    assert float(sm["fleet_least_tokens"]["replicas"]) == 3


def _write() -> None:
    catalog = load_catalog()
    data = {case: fingerprint(run(catalog), ARRAY_MANTISSA_BITS) for case, run in CASES.items()}
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    _write()
