"""The decode set's growth by residue counts (``planner.sim.decode_set``, pools without window layers) gives
the growth heap's results to the bit, and hands each leaving member's positions to the pool as the heap
kept them."""

from __future__ import annotations

import dataclasses
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.sim.blocks import BlockPool, blocks_for
from planner.sim.config import SimConfig
from planner.sim.decode_set import DecodeSet
from planner.sim.fleet import simulate_fleet
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.workload import scenario_workload
from tests.sim.test_golden import fingerprint


def _both(s: Scenario, catalog, kv_blocks=None, replicas=1, router="round_robin", **kw):
    """(counted, heap) results of one run, and the held positions each mode handed the pool at each leave."""
    _, x = sim_inputs(s, catalog)
    cfg = SimConfig.from_inputs(x, s)
    if kv_blocks is not None:
        cfg = dataclasses.replace(cfg, kv_capacity_blocks=kv_blocks)
    timer, w = RooflineStepTime.from_inputs(x), scenario_workload(s)
    init, leave = DecodeSet.__init__, DecodeSet.leave
    out, handed = [], []
    for counted in (True, False):
        log: list[tuple[int, int, int]] = []

        def made(self, requests, step_tokens, pool, counted_=None, _c=counted):
            init(self, requests, step_tokens, pool, _c)

        def left(self, i, _log=log):
            result = leave(self, i)
            _log.append((self.tick, i, self.pool.held_blocks[i]))
            return result

        with patch.object(DecodeSet, "__init__", made), patch.object(DecodeSet, "leave", left):
            if replicas > 1:
                out.append(simulate_fleet(w, cfg, timer, replicas, router, **kw).combined)
            else:
                out.append(simulate(w, cfg, timer, **kw))
        handed.append(log)
    return out, handed


@settings(max_examples=25)
@given(
    prompt=st.integers(30, 6000),
    output=st.integers(1, 400),
    rate=st.floats(0.5, 40.0),
    chunk=st.sampled_from([256, 2048, 8192]),
    batch=st.sampled_from([4, 32, 256]),
    hit=st.sampled_from([0.0, 0.5]),
    kv_blocks=st.sampled_from([None, 300, 900, 3000]),
    dist=st.sampled_from(["fixed", "lognormal"]),
    stop=st.booleans(),
)
def test_growth_counts_equal_the_growth_heap(catalog, prompt, output, rate, chunk, batch, hit, kv_blocks, dist, stop):
    s = Scenario(
        prompt=prompt,
        output=output,
        rate=rate,
        chunk=chunk,
        batch=batch,
        hit=hit,
        dist=dist,
        sim_requests=150,
        slo_tpot_s=0.03,
    )
    (counted, heap), (handed_counted, handed_heap) = _both(s, catalog, kv_blocks, stop_on_slo_miss=stop)
    assert fingerprint(counted) == fingerprint(heap)
    assert handed_counted == handed_heap  # every leaving member's positions, as the heap mode held them


@settings(max_examples=6)
@given(router=st.sampled_from(["least_tokens", "prefix_affinity", "round_robin"]), rate=st.floats(2.0, 30.0))
def test_growth_counts_equal_the_growth_heap_in_a_fleet(catalog, router, rate):
    s = Scenario(prompt=1500, output=120, rate=rate, batch=64, hit=0.5, sim_requests=200)
    (counted, heap), _ = _both(s, catalog, kv_blocks=1500, replicas=3, router=router)
    assert fingerprint(counted) == fingerprint(heap)
    assert counted.summary["preemptions"] == heap.summary["preemptions"]


def test_the_counts_follow_block_boundaries():
    pool = BlockPool(block_tokens=16, capacity_blocks=100, requests=3)
    ds = DecodeSet(3, 1, pool)
    assert ds.counted
    for i, context in enumerate((16, 17, 31)):  # each enters holding ⌈context / 16⌉ positions
        pool.admit(i, context)
        ds.enter(i, context, 1, 100, pool)
    free = pool.free_blocks
    # the step at tick t needs ⌈(context + t + 1) / 16⌉: request 0 grows at tick 0 (17 tokens), request 2 at
    # tick 1 (33), request 1 at tick 15 (33)
    assert ds.reserve(pool, [0, 1, 2], [0, 0, 0], [0, 0, 0]) == [] and pool.free_blocks == free - 1
    assert ds.reserve(pool, [0, 1, 2], [0, 0, 0], [0, 0, 0]) == [] and pool.free_blocks == free - 1  # once
    assert ds.growth_counts(16) == [1, 1, *[0] * 13, 1]
    assert ds.blocks_needed(15, pool) == 2  # ticks 1 … 15 (tick 0's is reserved)
    ds.jumped(16, pool)  # ticks 0 … 15
    assert pool.free_blocks == free - 3
    ds.leave(1)
    assert pool.held_blocks[1] == blocks_for(17 + 16, 16)  # its last step ran at 33 tokens


def test_a_pool_with_window_layers_keeps_the_heap():
    pool = BlockPool(block_tokens=16, capacity_blocks=100, requests=2, full_weight=1, window_weight=1, window_cap=4)
    assert not DecodeSet(2, 1, pool).counted
    assert not DecodeSet(2, 4, BlockPool(16, 100, 2)).counted  # several tokens per step
    with pytest.raises(ValueError, match="growth counts need"):
        DecodeSet(2, 1, pool, counted=True)
