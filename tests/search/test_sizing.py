"""Fleet sizing: the search, the table, and the disaggregated estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.engine.memory import memory_plan
from planner.engine.parallel import kv_transfer_s
from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.search.fleet_sample import sample_workload
from planner.search.replicas import fewest_passing
from planner.search.sizing import size_fleet
from planner.sim.config import SimConfig
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.traces import parse_trace

REQUESTS = 300


@given(threshold=st.integers(1, 5000), guess=st.integers(1, 6000), limit=st.integers(1, 6000))
def test_fewest_passing_finds_the_threshold(threshold, guess, limit):
    calls = []

    def check(r):
        calls.append(r)
        return r >= threshold

    got = fewest_passing(check, guess, limit)
    if threshold > limit:
        assert got is None
    else:
        assert got == threshold
        assert threshold in calls and (threshold == 1 or threshold - 1 in calls)
    assert len(calls) <= 4 * math.log2(6000) + 4


@pytest.fixture(scope="module")
def sized(catalog):
    s = Scenario(rate=12.0, sim_requests=REQUESTS)
    return s, size_fleet(s, catalog, gpus=["h100-sxm", "a100-80gb-sxm"], tps=(1, 2), max_requests=REQUESTS)


def _meets(s, catalog, gpu, tp, replicas) -> bool:
    c = s.on_gpu(gpu, tp)
    _, x = sim_inputs(c, catalog)
    w = sample_workload(c, None, replicas, REQUESTS, "round_robin")
    return bool(simulate(w, SimConfig.from_inputs(x, c), RooflineStepTime.from_inputs(x)).summary["slo_met"])


def test_sizing_returns_the_fewest_replicas(sized, catalog):
    s, z = sized
    ok = z.table[z.table["status"] == "meets SLOs"]
    assert len(ok) == 4
    for _, row in ok.iterrows():
        r = int(row["replicas"])
        assert _meets(s, catalog, row["gpu"], int(row["tp"]), r)
        if r > 1:
            assert not _meets(s, catalog, row["gpu"], int(row["tp"]), r - 1)


def test_table_is_sorted_by_cost_and_flags_the_cheapest(sized):
    s, z = sized
    t = z.table
    ok = t[t["status"] == "meets SLOs"]
    assert list(ok["cost_per_hour_usd"]) == sorted(ok["cost_per_hour_usd"])
    assert z.best == 0 and bool(t.loc[0, "best"]) and t["best"].sum() == 1
    row = t.loc[0]
    assert row["gpus"] == row["replicas"] * row["tp"]
    assert row["cost_per_hour_usd"] == pytest.approx(row["gpus"] * row["price_per_gpu_hour_usd"])
    per_mtok = row["cost_per_hour_usd"] / 3600 / (s.rate * s.output) * 1e6
    assert row["cost_per_million_output_tokens_usd"] == pytest.approx(per_mtok)
    assert row["name"] in z.reason and "p99 TTFT" in z.reason
    assert (ok["ttft_q_s"] <= s.slo_ttft_s).all() and (ok["itl_q_s"] <= s.slo_itl_s).all()


def test_disaggregated_estimate_follows_its_formulas(sized, catalog):
    s, z = sized
    d = z.disaggregated.set_index("gpu")
    row = d.loc["h100-sxm"]
    assert row["status"] == "estimated"
    c = s.on_gpu("h100-sxm", int(row["prefill_tp"]))
    _, x = sim_inputs(c, catalog)
    timer = RooflineStepTime.from_inputs(x)
    cached = s.hit * s.prefix
    service = timer.step_s(0, 0.0, [s.prompt - cached], [cached])
    # the prompt's KV crosses the network to the decode pool after the prefill: it eats into the TTFT target
    _, target = sim_inputs(s.on_gpu("h100-sxm", int(row["decode_tp"])), catalog)
    kv_s = float(kv_transfer_s(x, target, s.prompt))
    assert row["kv_transfer_s"] == pytest.approx(kv_s)
    # Llama-3.1-8B bf16: 131,072 B a token; each prefill GPU sends its share of 2,048 tokens over its 50 GB/s NIC
    assert row["kv_transfer_bytes_per_request"] == 2048 * 131_072
    assert kv_s == pytest.approx(45e-6 + 13.75e-6 + 2048 * 131_072 / int(row["prefill_tp"]) / 50e9, rel=1e-6)
    per_replica = 1 / service - math.log(100) / (s.slo_ttft_s - kv_s)
    assert row["prefill_gpus"] == math.ceil(s.rate / per_replica) * row["prefill_tp"]
    c = s.on_gpu("h100-sxm", int(row["decode_tp"]))
    _, x = sim_inputs(c, catalog)
    streams = row["decode_streams_per_gpu"] * row["decode_tp"]
    assert streams <= float(memory_plan(x)["max_concurrent_sequences"])
    timer = RooflineStepTime.from_inputs(x)
    tpot = float(timer.decode_steps_s(streams, np.array([s.prompt + s.output / 2]))[0])
    assert tpot <= s.slo_itl_s
    assert float(
        timer.decode_steps_s(streams + 1, np.array([s.prompt + s.output / 2]))[0]
    ) > s.slo_itl_s or streams == math.floor(float(memory_plan(x)["max_concurrent_sequences"]))
    assert row["disaggregated_gpus"] == row["prefill_gpus"] + row["decode_gpus"]


def test_unreachable_targets_and_models_that_do_not_fit(catalog):
    s = Scenario(model="llama-3.1-70b", slo_itl_s=0.001, sim_requests=REQUESTS)
    z = size_fleet(s, catalog, gpus=["l4", "h100-sxm"], tps=(1, 4), max_requests=REQUESTS)
    # one row per layout: Llama-3.1-70B fits on no tp of (1, 4) on an L4, so its multi-GPU layouts are sized too
    status = dict(zip(zip(z.table["gpu"], z.table["layout"], strict=True), z.table["status"], strict=True))
    assert status["l4", "tp1"].startswith("does not fit")
    assert "misses the SLOs even at low load" in status["h100-sxm", "tp4"]
    assert {layout for gpu, layout in status if gpu == "l4"} - {"tp1", "tp4"}  # e.g. tp1·pp8: 8 × 24 GB
    assert z.best is None and z.reason.startswith("No configuration")
    assert z.table["replicas"].isna().all()


def test_sizing_a_trace(catalog):
    rows = "".join(f"{i * 0.05},{1000 + (i % 7) * 100},{100 + (i % 5) * 20}\n" for i in range(200))
    trace = parse_trace("arrival_s,prompt_tokens,output_tokens\n" + rows, prefix_tokens=0).workload
    s = Scenario(sim_requests=REQUESTS)
    z = size_fleet(s, catalog, trace=trace, gpus=["h100-sxm"], tps=(1,), max_requests=REQUESTS)
    assert z.rate_per_s == pytest.approx(20.0, rel=0.01)
    assert z.mean_output_tokens == pytest.approx(float(trace.output_tokens.mean()))
    assert z.best == 0 and z.table.loc[0, "replicas"] >= 1


def test_a_gpu_price_override_applies_to_the_scenarios_own_gpu_only(catalog):
    s = Scenario(gpu="h100-sxm", gpu_price=1.25, rate=1.0, sim_requests=20)
    z = size_fleet(s, catalog, gpus=["h100-sxm", "a100-80gb-sxm"], tps=(1,), max_requests=20)
    price = dict(zip(z.table["gpu"], z.table["price_per_gpu_hour_usd"], strict=True))
    _, other = sim_inputs(s.model_copy(update={"gpu": "a100-80gb-sxm", "gpu_price": None}), catalog)
    assert price["h100-sxm"] == 1.25
    assert price["a100-80gb-sxm"] == pytest.approx(float(np.asarray(other.price_per_gpu_hour_usd)))
    assert price["a100-80gb-sxm"] != 1.25
    disaggregated = dict(zip(z.disaggregated["gpu"], z.disaggregated["price_per_gpu_hour_usd"], strict=True))
    assert disaggregated == pytest.approx(price)
