"""The MoE rows' routing on measured kernels (planner/engine/kernel_basis.py ``_experts``): without EPLB the
profile's power-law rows time the busiest EP group, so the layout's imbalance is the tables' own."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine import parallel
from planner.engine.evaluate import inputs_for, resolve
from planner.engine.kernel_basis import basis_for
from planner.kernels import curves as kc
from planner.kernels import lookup
from planner.kernels.store import table_set
from planner.model.catalog import load_catalog
from planner.model.parallel_layout import EP_IMBALANCE_EPLB, EP_IMBALANCE_NO_EPLB
from planner.model.scenario import Scenario
from planner.units import MS_PER_S

CATALOG = load_catalog()
#: Qwen3-235B-A22B FP8 on 8 × H200 as TensorRT-LLM's perf-overview runs it (attention DP 8 + EP 8, no EPLB).
DEP8 = dict(gpu="h200", model="qwen3-235b-a22b", wdtype="fp8", kvdtype="fp8", engine="trtllm@1.0", tp=1, dp=8, ep=8)
SHAPE = dict(dtype="fp8", hidden=4096, inter=1536, topk=8, experts=128)


def _rows(distribution: str, tokens) -> np.ndarray:
    t, _ = table_set("h200", "trtllm", "1.3.0rc20").table("moe")
    return lookup.moe_ms(t, dict(distribution=distribution, **SHAPE), 1, 8, np.asarray(tokens, dtype=float))


def test_the_profile_names_its_routing_with_a_source():
    """AIConfigurator's alphas: 1.2 for its MOEModel family (Qwen3-MoE, Llama-4, gpt-oss), 1.01 for DeepSeek."""
    k = CATALOG.engine("trtllm@1.0").kernels
    assert (k.moe_distribution, k.moe_distribution_mla) == ("power_law_1.2", "power_law_1.01")
    assert "AIConfigurator" in k.moe_distribution_source


def test_an_mla_model_takes_the_mla_routing():
    s = Scenario(
        gpu="h200", model="deepseek-r1", wdtype="fp8", quant="fp8-block", kvdtype="fp8", engine="trtllm@1.1",
        tp=1, dp=8, ep=8, eplb=False,
    )  # fmt: skip
    r = resolve(s, CATALOG)
    basis = basis_for(r.gpu, r.model, s, r.engine)
    assert any("power_law_1.01" in n for n in kc.curves(basis.kernel_set, 1, 8, 8).notes)


def test_without_eplb_the_imbalance_is_the_power_law_rows_over_the_balanced_ones():
    s = Scenario(eplb=False, **DEP8)
    r = resolve(s, CATALOG)
    basis = basis_for(r.gpu, r.model, s, r.engine)
    far = _rows("power_law_1.2", [2.0**30]) / _rows("balanced", [2.0**30])
    assert basis.ep_imbalance == pytest.approx(min(max(float(far[0]), 1.0), 8.0), rel=1e-9)
    assert 1.0 < basis.ep_imbalance < EP_IMBALANCE_NO_EPLB  # EP 8 spreads the hot experts: less than EP 32's
    x = inputs_for(r)
    assert float(x.ep_imbalance) == pytest.approx(basis.ep_imbalance)
    # the busiest group's time at T tokens entering, asked for at imbalance · T (kernel_step.kernel_terms)
    c = kc.curves(basis.kernel_set, 1, 8, 8)
    assert c is not None
    tokens = np.array([512.0, 4096.0])
    at = kc.at_tokens(c.experts, None, tokens * basis.ep_imbalance)
    layers = CATALOG.models["qwen3-235b-a22b"].layers
    want = layers * _rows("power_law_1.2", tokens) / MS_PER_S
    assert at == pytest.approx(want, rel=0.05)  # the curve's grid (≤ 4.4 % apart) and its rising envelope


@pytest.mark.parametrize(
    ("extra", "imbalance"), [({"eplb": True}, EP_IMBALANCE_EPLB), ({"eplb": False, "ep_imbalance": 1.8}, 1.8)]
)
def test_eplb_or_a_stated_imbalance_uses_the_balanced_rows(extra, imbalance):
    s = Scenario(**DEP8, **extra)
    r = resolve(s, CATALOG)
    assert basis_for(r.gpu, r.model, s, r.engine).ep_imbalance == 0.0
    x = inputs_for(r)
    assert float(parallel.expert_imbalance(x)) == pytest.approx(imbalance)


def test_a_profile_with_balanced_rows_keeps_the_constant():
    s = Scenario(**{**DEP8, "engine": "vllm@0.33", "eplb": False})
    x = inputs_for(resolve(s, CATALOG))
    assert float(x.ep_imbalance) == pytest.approx(EP_IMBALANCE_NO_EPLB)
