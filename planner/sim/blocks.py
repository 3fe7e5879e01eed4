"""The paged KV cache of one replica: a pool of fixed-size blocks (vLLM's KV-cache manager).

PagedAttention (Kwon et al., SOSP 2023) stores a sequence's keys and values in blocks of
``block_tokens`` tokens, so a sequence with a context of c tokens covers n = ⌈c / block⌉
block positions.  Capacity: ``memory_plan``'s KV budget per GPU ÷ bytes of one block
(``SimConfig``).

Pool units.  Full-attention layers keep every position; sliding-window layers keep at most
``window_cap_blocks`` = ⌈min(W − 1 + chunk, max_model_len) / block⌉ + 1 positions per request (vLLM ≥ 0.26:
the batches in flight × chunk in place of one chunk)
(vLLM's ``SlidingWindowSpec.max_memory_usage_bytes``: the window, the tokens of one step, and
one block because the window need not start on a block boundary; its ``SlidingWindowManager``
frees the blocks that fall out of the window).  With L_f full and L_w window layers and
g = gcd(L_f, L_w), one pool unit is one block of g layers, and a request covering n positions,
s of them in shared prefix blocks (``prefix_cache``), is charged

    a·(n − s) + b·min(n, cap),    a = L_f / g,  b = L_w / g,

units, its shared blocks a·(their blocks) once however many requests use them; capacity =
blocks × (L_f + L_w) / g.  A model without window layers has a = 1, b = 0: units are blocks.
Shared blocks carry the full-attention layers only: the window layers' blocks stay private.

- Admission: a request (re)computing t tokens needs its charge for n = ⌈t / block⌉ in free
  units (plus the cached blocks it reuses that no running request holds).
- Growth: before a decode step of q tokens a sequence needs n = ⌈(c + q) / block⌉.
- Preemption (recompute, vLLM's default): while the free units do not cover the growth,
  the newest running request loses all its blocks and its context is reset to 0 tokens;
  the scheduler puts it back at the head of the queue, to prefill its prompt and the
  tokens generated so far again.

Counts are plain Python ints in lists indexed by request: the scheduler touches them once
per request per step, where numpy's per-call cost would dominate.
"""

from __future__ import annotations

import math
from typing import Protocol


class SharedBlocks(Protocol):
    """What the pool hands a leaving request's units to when a prefix cache keeps shared blocks
    (``prefix_cache.PrefixCache``, which imports this module; the pool needs only this method)."""

    def release(self, request: int, private_units: int) -> None: ...


def blocks_for(tokens: int, block_tokens: int) -> int:
    """⌈tokens / block_tokens⌉: the blocks holding a context of ``tokens`` tokens."""
    return (tokens + block_tokens - 1) // block_tokens


def window_cap_blocks(
    window_tokens: int, chunk_tokens: int, context_window_tokens: int, block_tokens: int, chunked: bool = False
) -> int:
    """⌈min(W − 1 + reach, max_model_len) / block⌉ + 1: the most positions a sliding-window layer holds, reach the
    tokens in flight (one chunk; vLLM ≥ 0.26: the batches in flight × chunk); a chunked-local layer
    ⌈min(W + reach, max_model_len) / block⌉ (``ChunkedLocalAttentionSpec``)."""
    if chunked:
        return blocks_for(min(window_tokens + chunk_tokens, context_window_tokens), block_tokens)
    return blocks_for(min(window_tokens - 1 + chunk_tokens, context_window_tokens), block_tokens) + 1


def unit_weights(full_layers: int, window_layers: int) -> tuple[int, int, int]:
    """(a, b, layers per unit g) of the module doc."""
    if window_layers <= 0:
        return 1, 0, max(full_layers, 1)
    g = math.gcd(full_layers, window_layers)
    return full_layers // g, window_layers // g, g


class BlockPool:
    """Free units, and the block positions, shared blocks and preemptions of each request (0 … requests − 1).

    ``held_blocks[i]``: positions n request i covers; ``shared_blocks[i]``: how many of them are
    shared prefix blocks it references (charged to the cache, once)."""

    __slots__ = (
        "block_tokens",
        "capacity_blocks",
        "free_blocks",
        "held_blocks",
        "shared_blocks",
        "preemptions",
        "full_weight",
        "window_weight",
        "window_cap",
        "windowed",
        "cache",
    )

    def __init__(
        self,
        block_tokens: int,
        capacity_blocks: int,
        requests: int,
        full_weight: int = 1,
        window_weight: int = 0,
        window_cap: int = 0,
    ):
        self.block_tokens = block_tokens
        self.capacity_blocks = capacity_blocks  # in units (= blocks without window layers)
        self.free_blocks = capacity_blocks
        self.held_blocks = [0] * requests
        self.shared_blocks = [0] * requests
        self.preemptions = [0] * requests
        self.full_weight, self.window_weight, self.window_cap = full_weight, window_weight, window_cap
        self.windowed = window_weight > 0
        self.cache: SharedBlocks | None = None

    @property
    def used_blocks(self) -> int:
        return self.capacity_blocks - self.free_blocks

    def blocks_for(self, tokens: int) -> int:
        """⌈tokens / block⌉."""
        return blocks_for(tokens, self.block_tokens)

    def charge(self, positions: int, shared: int = 0) -> int:
        """Units charged to a request covering ``positions`` blocks, ``shared`` of them shared:
        a·(n − s) + b·min(n, cap)."""
        return self.full_weight * (positions - shared) + self.window_weight * min(positions, self.window_cap)

    def growth(self, held: int, positions: int) -> int:
        """Extra units to grow from ``held`` to ``positions`` block positions (0 if not more)."""
        if positions <= held:
            return 0
        if not self.windowed:
            return positions - held
        cap = self.window_cap
        return self.full_weight * (positions - held) + self.window_weight * (min(positions, cap) - min(held, cap))

    def can_admit(self, prefill_tokens: int) -> bool:
        """Whether the free units hold a new request's charge for ⌈prefill_tokens / block⌉ private blocks."""
        return self.charge(self.blocks_for(prefill_tokens)) <= self.free_blocks

    def admit(self, request: int, prefill_tokens: int, shared: int = 0) -> None:
        """Give a (re)computed request the blocks of its ``prefill_tokens``, ``shared`` of them already in the
        cache and referenced by it (the cache charged those); check the free units first."""
        positions = self.blocks_for(prefill_tokens)
        self.held_blocks[request] = positions
        self.shared_blocks[request] = shared
        self.free_blocks -= self.charge(positions, shared)

    def grow_to(self, request: int, context_tokens: int) -> None:
        """Cover ⌈context_tokens / block⌉ positions (never fewer than now); the caller checked they are free."""
        positions = self.blocks_for(context_tokens)
        held = self.held_blocks[request]
        if positions > held:
            self.free_blocks -= self.growth(held, positions)
            self.held_blocks[request] = positions

    def grow_each_to(self, requests: list[int], context_tokens: list[int]) -> None:
        """``grow_to`` for each request and its context (one call per jump over decode steps)."""
        block, held = self.block_tokens, self.held_blocks
        free = self.free_blocks
        if not self.windowed:
            for i, tokens in zip(requests, context_tokens, strict=True):
                positions = (tokens + block - 1) // block
                if positions > held[i]:
                    free -= positions - held[i]
                    held[i] = positions
        else:
            for i, tokens in zip(requests, context_tokens, strict=True):
                positions = (tokens + block - 1) // block
                if positions > held[i]:
                    free -= self.growth(held[i], positions)
                    held[i] = positions
        self.free_blocks = free

    def release(self, request: int) -> None:
        """Return a finished (or preempted) request's private blocks to the pool, and its shared ones to the cache."""
        units = self.charge(self.held_blocks[request], self.shared_blocks[request])
        if self.cache is not None:
            self.cache.release(request, units)
        else:
            self.free_blocks += units
        self.held_blocks[request] = 0
        self.shared_blocks[request] = 0

    def preempt_newest(self, running: list[int], context_tokens: list[int]) -> int:
        """Preempt the newest running request: pop it, free its blocks, reset its context, count it.

        Returns it; the caller puts it at the head of the queue (recompute preemption)."""
        victim = running.pop()
        self.release(victim)
        context_tokens[victim] = 0
        self.preemptions[victim] += 1
        return victim

    def reserve_decode_step(
        self, running: list[int], decoding: list[int], context_tokens: list[int], step_tokens: int
    ) -> list[tuple[int, bool]]:
        """Blocks for one decode step of ``step_tokens`` tokens per ``decoding`` request.

        Each decoding request needs ⌈(context + step_tokens) / block⌉ positions; while the free
        units do not cover the growth, the newest running request is preempted (and leaves
        ``decoding`` if it is there).  Returns (preempted request, whether it was decoding), newest first.
        ``running`` (arrival-ordered admissions) and ``decoding`` are updated in place."""
        block, held = self.block_tokens, self.held_blocks
        reach = step_tokens + block - 1
        growing = [i for i in decoding if context_tokens[i] + step_tokens > held[i] * block]
        if self.windowed:
            extra = {i: self.growth(held[i], (context_tokens[i] + reach) // block) for i in growing}
        else:
            extra = {i: (context_tokens[i] + reach) // block - held[i] for i in growing}
        needed = sum(extra.values())
        preempted: list[tuple[int, bool]] = []
        while needed > self.free_blocks:
            victim = running[-1]
            was_decoding = victim in decoding
            if was_decoding:
                decoding.remove(victim)
                if victim in extra:
                    needed -= extra.pop(victim)
            preempted.append((self.preempt_newest(running, context_tokens), was_decoding))
        for i in extra:
            held[i] = (context_tokens[i] + reach) // block
        self.free_blocks -= needed
        return preempted
