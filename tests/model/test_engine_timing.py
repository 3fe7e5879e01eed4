"""Engine profiles' [timing] sections: physical bounds, the fit they come from, the link form."""

from __future__ import annotations

import math

import pytest

from benchmarks.accuracy.rows import load_rows
from benchmarks.accuracy.timing_fit import KIND_OF, fit_rows
from planner.links import from_query, to_query
from planner.model.catalog import load_engines
from planner.model.engine_timing import (
    FRACTION_FIELDS,
    EngineTiming,
    FamilyTiming,
    format_overrides,
    gpu_family,
    link_kind,
    parse_overrides,
    resolve_timing,
)
from planner.model.scenario import Scenario

FRACTIONS = ("attention_compute_frac", "attention_bandwidth_frac", "nvlink_bus_frac", "pcie_bus_frac")
OVERHEADS = ("step_overhead_us", "layer_overhead_us", "decode_layer_overhead_us", "allreduce_overhead_us")


def test_shipped_timing_is_physical():
    """Every efficiency in (0, 1], every overhead and token count ≥ 0 (the issue's bounds check)."""
    engines, problems = load_engines()
    assert problems == []
    for key, e in engines.items():
        t = e.timing
        assert t.fitted_rows > 0 and t.source, key
        for name in FRACTIONS:
            assert 0 < getattr(t, name) <= 1, (key, name)
        assert 0 <= t.gqa_reread_frac <= 1
        for name in (*OVERHEADS, "matmul_half_tokens"):
            assert getattr(t, name) >= 0, (key, name)
        assert "other" in t.families and {"hopper", "ampere", "ada"} <= set(t.families), key
        for fam, f in t.families.items():
            for name in ("matmul_frac", "matmul_frac_8bit", "bandwidth_frac", "moe_matmul_frac"):
                assert 0 < getattr(f, name) <= 1, (key, fam, name)


def test_bounds_are_enforced_by_the_schema():
    with pytest.raises(ValueError, match="less than or equal to 1"):
        FamilyTiming(matmul_frac=1.2)
    with pytest.raises(ValueError, match="greater than 0"):
        EngineTiming(nvlink_bus_frac=0.0)
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        EngineTiming(step_overhead_us=-1.0)


def test_shipped_profiles_are_the_fit_of_the_published_rows(catalog):
    """benchmarks/fit_timing.py --write produced the TOMLs from exactly these rows (4 digits)."""
    rows = [r for r in load_rows() if r.fit_role == "fit" and r.category in KIND_OF]
    fit = fit_rows(rows, catalog)
    for key, engine in (("trtllm@0.9", "trtllm"), ("vllm@0.19", "vllm"), ("sglang@0.5.23", "")):
        fresh = fit.timing(engine, "")
        shipped = catalog.engines[key].timing
        for name in (*FRACTIONS, *OVERHEADS, "matmul_half_tokens"):
            assert getattr(shipped, name) == pytest.approx(getattr(fresh, name), rel=2e-3, abs=1e-6), (key, name)
        for fam, f in fresh.families.items():
            assert shipped.families[fam].bandwidth_frac == pytest.approx(f.bandwidth_frac, rel=2e-3), (key, fam)
            assert shipped.families[fam].matmul_frac == pytest.approx(f.matmul_frac, rel=2e-3), (key, fam)


def test_families_and_links(catalog):
    g = catalog.gpus
    assert [gpu_family(g[k]) for k in ("h100-sxm", "h200", "a100-80gb-sxm", "l40s", "b200", "mi300x")] == [
        "hopper",
        "hopper",
        "ampere",
        "ada",
        "blackwell",
        "cdna3",
    ]
    assert link_kind(g["l40s"]) == "pcie" and link_kind(g["h100-pcie"]) == "pcie"
    assert link_kind(g["h100-sxm"]) == "nvlink"
    renamed = g["h100-sxm"].model_copy(update=dict(key="my-gpu", name="NVIDIA H800 SXM"))
    assert gpu_family(renamed) == "hopper"
    assert gpu_family(g["h100-sxm"].model_copy(update=dict(key="x", name="Some NPU"))) == "other"
    # a Blackwell by key or by name is never read as Hopper (the B300 once matched the Hopper pattern)
    assert [gpu_family(g[k]) for k in ("b300", "gb200")] == ["blackwell", "blackwell"]
    for name in ("NVIDIA B300", "NVIDIA GB200", "NVIDIA B100"):
        assert gpu_family(g["h100-sxm"].model_copy(update=dict(key="y", name=name))) == "blackwell", name
    assert gpu_family(g["h100-sxm"].model_copy(update=dict(key="z", name="NVIDIA GH200"))) == "hopper"


def test_a_profile_without_timing_is_the_previous_model(catalog):
    t = resolve_timing(EngineTiming(), catalog.gpus["h100-sxm"])
    assert (t.matmul_frac, t.bandwidth_frac, t.attention_compute_frac, t.attention_bandwidth_frac) == (
        0.5,
        0.7,
        0.5,
        0.7,
    )
    assert t.step_overhead_s == t.layer_overhead_s == t.matmul_half_tokens == t.gqa_reread_frac == 0.0


def test_overrides_round_trip_and_name_bad_items():
    values = parse_overrides("s35-l4.2-d1-h80-c0.62-q0.5-b0.81-e0.4-a0.55-k0.9-g0.1-r5-n0.7")
    assert values["step_overhead_s"] == pytest.approx(35e-6) and values["bandwidth_frac"] == 0.81
    assert parse_overrides(format_overrides(values)) == pytest.approx(values)
    assert set(values) - {"step_overhead_s", "layer_overhead_s", "decode_layer_overhead_s", "matmul_half_tokens"} <= (
        FRACTION_FIELDS | {"allreduce_overhead_s", "gqa_reread_frac"}
    )
    for bad, why in (("z3", "unknown letter 'z'"), ("b1.5", "must be in (0, 1]"), ("c0", "must be in (0, 1]")):
        with pytest.raises(ValueError, match=re_escape(why)):
            parse_overrides(bad)
    with pytest.raises(ValueError, match="letter-number items"):
        parse_overrides("s35--b")


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_the_link_carries_the_calibration(catalog):
    s = Scenario(timing="s30-b0.8")
    q = to_query(s)
    assert q["timing"] == "s30-b0.8"
    back, issues = from_query(q, set(catalog.gpus), set(catalog.models), catalog.engine_aliases())
    assert back == s and issues == []
    bad, issues = from_query("timing=b7", set(catalog.gpus), set(catalog.models), catalog.engine_aliases())
    assert bad.timing == "" and issues and "must be in (0, 1]" in issues[0].message


def test_overrides_reach_the_engine(catalog):
    from planner.engine.evaluate import evaluate

    base = evaluate(Scenario(), catalog)
    slow = evaluate(Scenario(timing="b0.4"), catalog)
    assert float(slow.inputs.mbu) == 0.4 and slow.metrics["plain_tpot_s"] > base.metrics["plain_tpot_s"]
    own = evaluate(Scenario(timing="b0.4", mbu=0.9), catalog)  # an explicit MBU wins over the calibration
    assert float(own.inputs.mbu) == 0.9
    assert math.isfinite(slow.metrics["ttft_s"])
