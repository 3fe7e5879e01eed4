"""A prefix cache shared across the requests of one replica, as vLLM's automatic prefix caching does it.

vLLM (``vllm/v1/core/block_pool.py``, ``kv_cache_manager.py``): every full KV block is keyed by
the hash of its tokens chained to its parent block's hash.  A new request looks up its chain
from the first block and stops at the first miss (``find_longest_cache_hit``), at most
``num_tokens − 1`` tokens (the last token is always recomputed, for its logits).  Blocks are
reference-counted while requests use them and counted once however many do; a finished or
preempted request frees its blocks tail first into the free queue, where cached blocks stay
findable until the pool allocates them again, least recently freed first (LRU); a hit on a
block with no user takes it out of the free queue (``touch``).  Blocks are cached as soon as
the step that computes them is scheduled (``cache_blocks`` in ``allocate_slots``).

Here a cached entry is one *prefix block* of the workload (Mooncake: 512 tokens = 32 KV
blocks of 16), holding the KV blocks that end inside it: ⌊end_j / block⌋ − ⌊end_{j−1} / block⌋.
A lookup stops at the first block not cached, or ending after token prompt − 1.  Eviction
takes whole prefix blocks: when the pool allocates any of an entry's blocks the entry is
dropped (vLLM drops its 16-token blocks one by one).  Modes:

  pool       (vLLM) the cache lives in the free part of the KV pool, as above;
  unbounded  entries with no user live outside the pool and are never evicted: the ceiling
             the traffic's reuse allows (a hit still takes room in the pool while in use);
  off        no sharing (vLLM ``--no-enable-prefix-caching``).

The free queue is kept lazily: the pool's hot paths only lower ``pool.free_blocks``; the
units allocated since the last look-up are taken from the queue's head (``_evict``) just
before the next look-up, which is when evictions become visible.
"""

from __future__ import annotations

from collections import deque
from typing import Any, get_args

from planner.model.scenario import PrefixCacheMode
from planner.sim.blocks import BlockPool

MODES: tuple[PrefixCacheMode, ...] = get_args(PrefixCacheMode)


class PrefixCache:
    """Cached prefix blocks of one replica: key → [users, queue stamp, units, KV blocks]."""

    __slots__ = (
        "pool",
        "mode",
        "entries",
        "queue",
        "queue_units",
        "stamp",
        "cached_blocks",
        "max_cached_blocks",
        "held",
    )

    def __init__(self, pool: BlockPool, mode: PrefixCacheMode, requests: int):
        self.pool, self.mode = pool, mode
        self.entries: dict[int, list[int]] = {}
        # the free queue, LRU first: (-1, units) holding nothing findable, or (stamp, keys) the prefix
        # blocks one release freed, tail first from the end of the list
        self.queue: deque[tuple[int, Any]] = deque([(-1, pool.capacity_blocks)])
        self.queue_units = pool.capacity_blocks
        self.stamp = 0
        self.cached_blocks = 0  # KV blocks in entries (in use or not)
        self.max_cached_blocks = 0
        self.held: list[list[int]] = [[] for _ in range(requests)]  # the keys each request references, in order
        pool.cache = self

    # -------------------------------------------------------------- look-up and use

    def _evict(self) -> None:
        """Take the units allocated since the last call from the head of the free queue, evicting entries."""
        debt = self.queue_units - self.pool.free_blocks
        queue, entries = self.queue, self.entries
        while debt > 0:
            stamp, payload = queue[0]
            if stamp < 0:  # free units holding nothing findable
                take = min(payload, debt)
                if take == payload:
                    queue.popleft()
                else:
                    queue[0] = (-1, payload - take)
                debt -= take
                self.queue_units -= take
                continue
            keys = payload  # one release's prefix blocks, the next to evict last
            while keys and debt > 0:
                entry = entries.get(keys[-1])
                if entry is None or entry[1] != stamp:
                    keys.pop()  # touched or evicted since: nothing free here
                    continue
                del entries[keys.pop()]
                self.cached_blocks -= entry[3]
                take = min(entry[2], debt)
                debt -= take
                self.queue_units -= take
                if entry[2] > take:  # the rest of its blocks are free and hold nothing findable
                    if not keys:
                        queue.popleft()
                    queue.appendleft((-1, entry[2] - take))
                    return
            if not keys:
                queue.popleft()

    def lookup(self, keys: list[int], ends: list[int], limit_tokens: int) -> tuple[int, int]:
        """(blocks found, units they need from the free pool) for a chain, up to ``limit_tokens``."""
        if self.mode == "pool" and self.queue_units != self.pool.free_blocks:
            self._evict()
        entries = self.entries
        found = units = 0
        for key, end in zip(keys, ends, strict=False):
            entry = entries.get(key)
            if entry is None or end > limit_tokens:
                break
            found += 1
            if entry[0] == 0:
                units += entry[2]
        return found, units

    def use(self, request: int, keys: list[int], found: int) -> None:
        """Request ``request`` references the first ``found`` blocks of its chain (after ``lookup``)."""
        entries, pool, held = self.entries, self.pool, self.held[request]
        for key in keys[:found]:
            entry = entries[key]
            if entry[0] == 0:
                pool.free_blocks -= entry[2]
                if self.mode == "pool":
                    self.queue_units -= entry[2]  # out of the free queue (its queue slot goes stale)
                    entry[1] = -1
            entry[0] += 1
            held.append(key)

    def register_computed(
        self, request: int, keys: list[int], ends: list[int], cum: list[int], j: int, context: int
    ) -> tuple[int, int]:
        """Cache blocks j, j + 1, … of request ``request``'s chain that end by ``context`` tokens, in use by it;
        a block another request cached first stays a private copy (vLLM does not deduplicate).
        Returns (the next block to cache, KV blocks newly shared)."""
        if self.mode == "pool" and self.queue_units != self.pool.free_blocks:
            self._evict()  # evictions since the last look-up first: what is cached, and how much
        entries, held, weight = self.entries, self.held[request], self.pool.full_weight
        shared = 0
        while j < len(keys) and ends[j] <= context:
            key = keys[j]
            if key not in entries:
                blocks = cum[j] - (cum[j - 1] if j else 0)
                entries[key] = [1, -1, blocks * weight, blocks]
                held.append(key)
                shared += blocks
            j += 1
        if shared:
            self.cached_blocks += shared
            if self.cached_blocks > self.max_cached_blocks:
                self.max_cached_blocks = self.cached_blocks
        return j, shared

    def release(self, request: int, private_units: int) -> None:
        """A request leaves: its private units, then its prefix blocks tail first, go to the free queue."""
        pool, entries = self.pool, self.entries
        pool.free_blocks += private_units
        pooled = self.mode == "pool"
        if pooled and private_units:
            self.queue.append((-1, private_units))
            self.queue_units += private_units
        held = self.held[request]
        self.stamp += 1
        stamp, freed, units = self.stamp, [], 0
        for key in reversed(held):  # tail first
            entry = entries[key]
            entry[0] -= 1
            if entry[0] == 0:
                units += entry[2]
                entry[1] = stamp
                freed.append(key)
        pool.free_blocks += units
        if pooled and freed:
            freed.reverse()  # evicted from the end: the tail first
            self.queue.append((stamp, freed))
            self.queue_units += units
        held.clear()

    def size_blocks(self) -> int:
        """KV blocks the cache holds now (after the evictions still pending)."""
        if self.mode == "pool" and self.queue_units != self.pool.free_blocks:
            self._evict()
        return self.cached_blocks

    def holds(self, keys: list[int], ends: list[int], limit_tokens: int) -> int:
        """Tokens of the chain this cache would serve now (the router's view; no side effects on hits)."""
        found, _ = self.lookup(keys, ends, limit_tokens)
        return ends[found - 1] if found else 0
