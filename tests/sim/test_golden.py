"""Golden results of the serving simulator: refactors must reproduce them bit for bit.

Each case is a seeded simulation; its fingerprint is the summary (floats as ``repr``
strings, so every bit counts), the sha256 of every array of the result (dtype and
shape included), the step count and ``stopped_early``.  The fingerprints in
``golden_simulate.json`` were first written by the simulator before it was split into
blocks / results / simulate, and rewritten once, on purpose, for issue 16 (the prefix
cache decides hits, shared blocks are counted once, sliding-window layers hold their
window, rejections count against the TTFT target, a recomputation's ITL runs from the
last token; docs/simulator.md lists what changed per case); issue 26 added the summary's means, TPOT
percentiles and SLO statistics (every value before it unchanged; ``mean_tpot_s`` is ``tpot_mean_s``).  To
rewrite them after an
intended change of results (never for a refactor): ``python -m tests.sim.test_golden``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from planner.engine.step_time import RooflineStepTime
from planner.model.catalog import Catalog, load_catalog
from planner.model.scenario import Scenario
from planner.sim.config import SimConfig
from planner.sim.fleet import simulate_fleet_scenario
from planner.sim.results import SimResult
from planner.sim.simulate import sim_inputs, simulate, simulate_scenario
from planner.sim.traces import bundled_trace, parse_trace
from planner.sim.workload import Workload, scenario_workload

GOLDEN = Path(__file__).with_name("golden_simulate.json")
#: The engine the fingerprints were written with: vLLM 0.19.0's rules (the newest version is the default now,
#: and its sliding-window reserve and budget differ; engine=vllm@0.19 reproduces every result bit for bit).
ENGINE = "vllm@0.19"


def S(**kw) -> Scenario:
    """A scenario on the golden engine version."""
    return Scenario(engine=ENGINE, **kw)


def _run(
    s: Scenario, catalog: Catalog, workload: Workload | None = None, kv_blocks: int | None = None, **kw
) -> SimResult:
    """``simulate`` on the scenario's replica, optionally with another workload or KV capacity."""
    _, x = sim_inputs(s, catalog)
    cfg = SimConfig.from_inputs(x, s)
    if kv_blocks is not None:
        cfg = dataclasses.replace(cfg, kv_capacity_blocks=kv_blocks)
    w = scenario_workload(s) if workload is None else workload
    return simulate(w, cfg, RooflineStepTime.from_inputs(x), **kw)


def _trace() -> Workload:
    rows = ["arrival_s,prompt_tokens,output_tokens,prefix_id"]
    for i in range(300):
        pid = "" if i % 4 == 3 else f"p{i % 5}"
        rows.append(f"{(i * 37 % 300) * 0.02:.2f},{600 + (i * 131) % 1500},{20 + (i * 53) % 400},{pid}")
    return parse_trace("\n".join(rows) + "\n", prefix_tokens=512).workload


def _over_window(catalog: Catalog) -> SimResult:
    s = S(sim_requests=200, rate=3.0, seed=3)
    w = scenario_workload(s)
    prompt = w.prompt_tokens.copy()
    prompt[[5, 50, 120]] = 200_000  # llama-3.1-8b's window is 131,072 tokens
    return _run(s, catalog, dataclasses.replace(w, prompt_tokens=prompt))


def _mistral_window(catalog: Catalog) -> SimResult:
    s = S(model="mistral-7b", prompt=30000, output=300, dist="fixed", rate=1000.0, sim_requests=120, batch=256)
    return simulate_scenario(s, catalog)


def _mooncake(catalog: Catalog) -> SimResult:
    s = S(gpu="h200", tp=4, batch=256, chunk=8192)
    return simulate_scenario(s, catalog, workload=bundled_trace("mooncake-conversation").workload.take(slice(0, 1500)))


def _fleet(catalog: Catalog) -> SimResult:
    s = S(batch=128, chunk=8192, replicas=3, router="prefix_affinity")
    w = bundled_trace("mooncake-conversation").workload.take(slice(0, 1200))
    return simulate_fleet_scenario(s, catalog, workload=w).combined


CASES: dict[str, Callable[[Catalog], SimResult]] = {
    "default": lambda c: simulate_scenario(S(), c),
    "near_saturation": lambda c: simulate_scenario(S(rate=7.0, sim_requests=1500), c),
    "speculative": lambda c: simulate_scenario(S(rate=4.0, spec=True, sim_requests=1500), c),
    "preemptions": lambda c: _run(S(rate=6.0, sim_requests=600), c, kv_blocks=900),
    "speculative_preemptions": lambda c: _run(
        S(rate=5.0, sim_requests=500, spec=True, alpha=0.8, gamma=3, seed=7), c, kv_blocks=800
    ),
    "trace_prefix_ids": lambda c: simulate_scenario(S(batch=16, chunk=512), c, workload=_trace()),
    "over_context_window": _over_window,
    "rejected_kv": lambda c: _run(S(rate=2.0, sim_requests=300, seed=5), c, kv_blocks=300),
    "stop_on_slo_miss": lambda c: _run(S(rate=12.0, sim_requests=800), c, stop_on_slo_miss=True),
    "no_detail": lambda c: _run(S(rate=5.0, sim_requests=800, seed=11), c, detail=False),
    "sliding_window": _mistral_window,
    "mooncake_prefix_cache": _mooncake,
    "fleet_prefix_affinity": _fleet,
    "unbounded_cache": lambda c: simulate_scenario(S(rate=4.0, sim_requests=600, prefix_cache="unbounded"), c),
}


def fingerprint(r: SimResult, mantissa_bits: int | None = None) -> dict:
    """Summary (floats as repr), sha256 of each array (dtype, shape, bytes), steps, stopped_early.

    ``mantissa_bits``: every float (the arrays' and the summary's) at that many mantissa bits (``np.frexp``'s
    mantissa × 2**bits, rounded: exact operations, the same on every machine) instead of all 52."""

    def at_bits(v):
        mantissa, exponent = np.frexp(v)
        return np.ldexp(np.round(mantissa * 2.0**mantissa_bits), exponent - mantissa_bits)

    arrays = {}
    for f in dataclasses.fields(r):
        v = getattr(r, f.name)
        if isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            if mantissa_bits is not None and a.dtype.kind == "f":
                a = np.ascontiguousarray(at_bits(a))
            digest = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode() + a.tobytes()).hexdigest()
            arrays[f.name] = digest

    def text(v) -> str:
        return repr(float(v if mantissa_bits is None else at_bits(float(v))))

    summary = {k: v if isinstance(v, bool) else text(v) for k, v in r.summary.items()}
    return dict(
        summary=summary,
        arrays=arrays,
        kv_used_time_mean_frac=text(r.kv_used_time_mean_frac),
        steps=int(r.steps),
        stopped_early=bool(r.stopped_early),
    )


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text())


@pytest.mark.parametrize("case", list(CASES))
def test_simulation_matches_its_golden_fingerprint(case, catalog, golden):
    assert fingerprint(CASES[case](catalog)) == golden[case]


def test_golden_cases_exercise_what_they_are_named_for(golden):
    sm = {k: v["summary"] for k, v in golden.items()}
    assert float(sm["preemptions"]["preemptions"]) > 0
    assert float(sm["speculative_preemptions"]["preemptions"]) > 0
    assert float(sm["over_context_window"]["rejected_context"]) == 3
    assert float(sm["rejected_kv"]["rejected_kv"]) > 0
    assert golden["stop_on_slo_miss"]["stopped_early"]
    assert not sm["near_saturation"]["slo_met"] or float(sm["near_saturation"]["queue_max"]) > 0
    assert not sm["over_context_window"]["slo_met"]  # 3 of 200 rejected: over the 1 % a p99 allows
    assert float(sm["mooncake_prefix_cache"]["prefix_cache_hit_rate_tokens"]) > 0.05
    assert float(sm["fleet_prefix_affinity"]["replicas"]) == 3


def _write() -> None:
    catalog = load_catalog()
    data = {case: fingerprint(run(catalog)) for case, run in CASES.items()}
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    _write()
