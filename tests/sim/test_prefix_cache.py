"""The prefix cache shared across requests: vLLM's rules on their own, then on the Mooncake trace."""

from __future__ import annotations

import dataclasses
import gzip
import json
from importlib import resources

import numpy as np
import pytest

from planner.engine.step_time import RooflineStepTime
from planner.model.scenario import Scenario
from planner.sim.blocks import BlockPool
from planner.sim.config import SimConfig
from planner.sim.fleet import simulate_fleet
from planner.sim.prefix_cache import PrefixCache
from planner.sim.results import SERVED
from planner.sim.simulate import sim_inputs, simulate
from planner.sim.traces import bundled_trace
from planner.sim.workload import Workload, shared_prefix
from tests.sim.test_simulate import ConstantStep, _config

# ------------------------------------------------------------------ the cache on its own


def _cache(capacity: int, mode: str = "pool", requests: int = 4) -> tuple[BlockPool, PrefixCache]:
    pool = BlockPool(16, capacity, requests)
    return pool, PrefixCache(pool, mode, requests)  # type: ignore[arg-type]


def _conserved(pool: BlockPool, cache: PrefixCache) -> bool:
    private = sum(pool.charge(n, s) for n, s in zip(pool.held_blocks, pool.shared_blocks, strict=True))
    in_use = sum(e[2] for e in cache.entries.values() if e[0] > 0)
    return pool.free_blocks + private + in_use == pool.capacity_blocks


def test_a_block_is_found_once_cached_and_counted_once_however_many_use_it():
    pool, cache = _cache(100)
    keys, ends, cum = [7, 8], [32, 64], [2, 4]
    pool.admit(0, 80)  # 5 blocks, none cached yet
    assert cache.register_computed(0, keys, ends, cum, 0, 64) == (2, 4)
    pool.shared_blocks[0] += 4
    assert cache.lookup(keys, ends, 79) == (2, 0)  # found; in use by request 0: no extra units
    cache.use(1, keys, 2)
    pool.admit(1, 80, shared=4)  # only its fifth block is private
    assert pool.free_blocks == 100 - 5 - 1 and cache.entries[7][0] == 2
    assert _conserved(pool, cache)


def test_the_last_prompt_token_is_always_recomputed():
    pool, cache = _cache(100)
    cache.register_computed(0, [1, 2], [32, 64], [2, 4], 0, 64)
    assert cache.lookup([1, 2], [32, 64], 63) == (1, 0)  # a 64-token prompt may reuse at most 63 tokens


def test_freed_blocks_stay_findable_until_the_pool_needs_them_then_go_lru_tail_first():
    pool, cache = _cache(10)
    pool.admit(0, 64)
    cache.register_computed(0, [1, 2], [32, 64], [2, 4], 0, 64)
    pool.shared_blocks[0] = 4
    pool.release(0)  # its two prefix blocks are free but cached: the tail (key 2) is evicted first
    assert pool.free_blocks == 10 and cache.lookup([1, 2], [32, 64], 99) == (2, 4)
    pool.free_blocks -= 7  # another request takes 7 blocks: 6 never-used ones, then 1 of key 2's
    assert cache.lookup([1, 2], [32, 64], 99) == (1, 2)
    pool.free_blocks -= 2  # and key 1's
    assert cache.lookup([1, 2], [32, 64], 99) == (0, 0)


def test_a_hit_takes_the_block_out_of_the_free_queue():
    pool, cache = _cache(6)
    pool.admit(0, 32)
    cache.register_computed(0, [1], [32], [2], 0, 32)
    pool.shared_blocks[0] = 2
    pool.release(0)
    found, extra = cache.lookup([1], [32], 99)
    assert (found, extra) == (1, 2)
    cache.use(1, [1], found)
    pool.admit(1, 48, shared=2)
    assert pool.free_blocks == 6 - 2 - 1
    pool.free_blocks -= 3  # the rest of the pool: key 1 is in use, so it is not evicted
    assert cache.lookup([1], [32], 99)[0] == 1


def test_unbounded_never_evicts_and_off_has_no_cache():
    pool, cache = _cache(4, mode="unbounded")
    pool.admit(0, 64)
    cache.register_computed(0, [1, 2], [32, 64], [2, 4], 0, 64)
    pool.shared_blocks[0] = 4
    pool.release(0)
    pool.free_blocks -= 4
    assert cache.lookup([1, 2], [32, 64], 99) == (2, 4)  # still there, costing units only when used
    cfg = _config(prefix_cache="off")
    w = shared_prefix(
        Workload(np.array([0.0, 5.0]), np.array([200, 200]), np.array([2, 2])),
        np.array([True, True]),
        np.array([160, 160]),
        ["p", "p"],
    )
    r = simulate(w, cfg, ConstantStep(0.01))
    assert r.cached_tokens.tolist() == [0, 0] and r.summary["prefix_cache_hit_rate_tokens"] == 0


def test_the_second_request_skips_the_shared_prefix_and_shares_its_blocks():
    w = shared_prefix(
        Workload(np.array([0.0, 0.001]), np.array([200, 200]), np.array([50, 50])),
        np.array([True, True]),
        np.array([160, 160]),
        ["p", "p"],
    )
    r = simulate(w, _config(chunk_tokens=1000), ConstantStep(0.01))
    assert r.cached_tokens.tolist() == [0, 160]  # scheduled in the same step, after the first (vLLM)
    assert r.prefix_hit_blocks.tolist() == [0, 1] and r.summary["prefix_cache_hit_rate_requests"] == 0.5
    # counted once: the two requests hold 2·⌈250/16⌉ − 10 shared blocks at most
    assert r.summary["kv_used_max_frac"] * 10_000 <= 2 * 16 - 10
    assert (r.status == SERVED).all()


# ------------------------------------------------------------------ on the Mooncake conversation trace


def _raw_mooncake_rows() -> list[dict]:
    """The bundled file read independently of the trace reader."""
    data = resources.files("planner.data").joinpath("traces", "mooncake-conversation.jsonl.gz").read_bytes()
    rows = [json.loads(line) for line in gzip.decompress(data).decode().splitlines() if line.strip()]
    return sorted(rows, key=lambda r: r["timestamp"])  # stable: file order within a timestamp


@pytest.fixture(scope="module")
def mooncake(catalog):
    """The trace, and a replica that never queues it: every prompt prefills in the step that admits it."""
    s = Scenario(gpu="h200", tp=4, batch=4096)
    _, x = sim_inputs(s, catalog)
    cfg = dataclasses.replace(SimConfig.from_inputs(x, s), chunk_tokens=1 << 24)
    return bundled_trace("mooncake-conversation").workload, cfg, RooflineStepTime.from_inputs(x)


def test_unbounded_block_hit_rate_is_the_share_of_blocks_seen_before(mooncake):
    w, cfg, timer = mooncake
    r = simulate(w, dataclasses.replace(cfg, prefix_cache="unbounded"), timer, detail=False)
    seen: set[int] = set()
    hits = blocks = 0
    for row in _raw_mooncake_rows():
        n = row["input_length"]
        for j, block_id in enumerate(row["hash_ids"]):
            blocks += 1
            # a 512-token block whose id appeared before, unless it holds the prompt's last token (recomputed)
            hits += block_id in seen and min(512 * (j + 1), n) <= n - 1
        seen.update(row["hash_ids"])
    assert r.summary["prefix_cache_hit_rate_blocks"] == hits / blocks
    assert 0.36 < hits / blocks < 0.37
    assert r.summary["prefix_cache_hit_rate_tokens"] == pytest.approx(r.summary["prefix_reuse_ceiling_frac"], abs=1e-3)


def test_a_bounded_cache_finds_less_and_less_as_it_shrinks(mooncake):
    w, cfg, timer = mooncake
    rates = [
        simulate(w, dataclasses.replace(cfg, prefix_cache=mode, kv_capacity_blocks=blocks), timer, detail=False)
        for mode, blocks in (
            ("unbounded", cfg.kv_capacity_blocks),
            ("pool", 100_000),
            ("pool", 30_000),
            ("pool", 12_000),
        )
    ]
    hit = [r.summary["prefix_cache_hit_rate_blocks"] for r in rates]
    assert hit[0] > hit[1] > hit[2] > hit[3] > 0
    assert [r.summary["prefix_cache_capacity_blocks"] for r in rates[1:]] == [100_000, 30_000, 12_000]


def test_prefix_affinity_routing_finds_more_than_round_robin(catalog):
    s = Scenario(gpu="h100-sxm", batch=256, chunk=8192)
    _, x = sim_inputs(s, catalog)
    cfg, timer = SimConfig.from_inputs(x, s), RooflineStepTime.from_inputs(x)
    w = bundled_trace("mooncake-conversation").workload.take(slice(0, 3000))
    rr, affinity = (
        simulate_fleet(w, cfg, timer, 4, router, detail=False) for router in ("round_robin", "prefix_affinity")
    )
    assert (
        affinity.combined.summary["prefix_cache_hit_rate_tokens"]
        > 1.2 * rr.combined.summary["prefix_cache_hit_rate_tokens"]
    )
    assert sum(len(p.status) for p in affinity.replicas) == 3000
