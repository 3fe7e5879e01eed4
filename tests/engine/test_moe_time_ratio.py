"""``[kernels] moe_time_ratio`` (docs/model.md §4–5, "An older release's expert kernels"): an engine version's
expert layer ÷ the table release's, fitted per TensorRT-LLM version, 1 where the tables are the engine's own; it
scales the expert term alone, in every path that times a step."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine.evaluate import evaluate as evaluate_scenario
from planner.engine.roofline import step_cost
from planner.engine.step_time import RooflineStepTime
from planner.model.engine_kernels import EngineKernels
from planner.model.scenario import Scenario
from planner.studies.explain import explain
from tests.engine.test_host_bound import SMALL_MOE
from tests.engine.test_host_bound import _inputs as small_moe_inputs

# test_host_bound's Qwen3-30B-A3B NVFP4 on one B200, at TensorRT-LLM 1.1 (the largest fitted ratio) and batch 256
MOE = SMALL_MOE | dict(engine="trtllm@1.1", batch=256)


def _inputs(catalog, **changes):
    return small_moe_inputs(catalog, **(MOE | changes))


def test_the_fitted_ratios_are_near_one_and_the_other_engines_take_their_tables_own_kernels(catalog):
    for version in ("1.0", "1.1", "1.2"):
        r = catalog.engine(f"trtllm@{version}").kernels.moe_time_ratio
        assert 1 / 1.35 < r < 1.35, (version, r)
    assert catalog.engine("trtllm@1.1").kernels.moe_time_ratio > catalog.engine("trtllm@1.2").kernels.moe_time_ratio
    for key in ("vllm@0.33", "sglang@0.5.23"):
        assert catalog.engine(key).kernels.moe_time_ratio == 1.0
    assert EngineKernels().moe_time_ratio == 1.0  # a profile that does not say: the tables' own kernels


def test_it_scales_the_expert_term_and_nothing_else(catalog):
    x = _inputs(catalog)
    r = float(np.asarray(x.moe_time_ratio))
    one = x.with_(moe_time_ratio=np.ones_like(x.moe_time_ratio), host_s_per_seq=np.zeros_like(x.host_s_per_seq))
    two = one.with_(moe_time_ratio=np.full_like(x.moe_time_ratio, 2.0))
    assert r != 1.0
    for n in (0.0, 512.0):
        a = step_cost(one, seqs=256.0, ctx=1200.0, n=n, past=0.0)
        b = step_cost(two, seqs=256.0, ctx=1200.0, n=n, past=0.0)
        assert float(b.attention_s) == pytest.approx(float(a.attention_s), rel=1e-12)
        assert float(b.comm_s) == pytest.approx(float(a.comm_s), rel=1e-12)
        assert float(b.matmul_s) > float(a.matmul_s)
    # the simulator's step is the engine's, ratio included
    sim = RooflineStepTime.from_inputs(two)
    assert sim.step_s(256, 1200.0) == pytest.approx(float(step_cost(two, seqs=256.0, ctx=1200.0).time_s), rel=1e-9)


def test_a_dense_model_does_not_see_it(catalog):
    x = _inputs(catalog, model="llama-3.1-8b", wdtype="fp8")
    a = step_cost(x.with_(moe_time_ratio=np.full_like(x.moe_time_ratio, 2.0)), seqs=64.0, ctx=1000.0)
    assert float(a.time_s) == float(step_cost(x, seqs=64.0, ctx=1000.0).time_s)


def test_explain_shows_the_ratio_times_the_tables_expert_time(catalog):
    items = explain(evaluate_scenario(Scenario(**(MOE | dict(prompt=1024, output=256))), catalog))
    decode = next(i for i in items if i.title.startswith("Decode step on measured kernels"))
    r = catalog.engine("trtllm@1.1").kernels.moe_time_ratio
    assert "r_moe · experts" in decode.formula and f" + {r:g} · " in decode.substituted
