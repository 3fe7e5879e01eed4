"""The paged KV cache of one replica: a pool of fixed-size blocks (vLLM's KV-cache manager).

PagedAttention (Kwon et al., SOSP 2023) stores a sequence's keys and values in blocks of
``block_tokens`` tokens, so a sequence with a context of c tokens holds ⌈c / block⌉
blocks.  Capacity: ``memory_plan``'s KV budget per GPU ÷ bytes of one block (``SimConfig``).

- Admission: a request whose prefill covers t tokens needs ⌈t / block⌉ free blocks.
- Growth: before a decode step of q tokens a sequence needs ⌈(c + q) / block⌉ blocks.
- Preemption (recompute, vLLM's default): while the free blocks do not cover the growth,
  the newest running request loses all its blocks and its context is reset to 0 tokens;
  the scheduler puts it back at the head of the queue, to prefill its prompt and the
  tokens generated so far again.

Counts are plain Python ints in lists indexed by request: the scheduler touches them once
per request per step, where numpy's per-call cost would dominate.
"""

from __future__ import annotations


def blocks_for(tokens: int, block_tokens: int) -> int:
    """⌈tokens / block_tokens⌉: the blocks holding a context of ``tokens`` tokens."""
    return (tokens + block_tokens - 1) // block_tokens


class BlockPool:
    """Free blocks, and the blocks and preemptions of each request (indexed 0 … requests − 1)."""

    __slots__ = ("block_tokens", "capacity_blocks", "free_blocks", "held_blocks", "preemptions")

    def __init__(self, block_tokens: int, capacity_blocks: int, requests: int):
        self.block_tokens = block_tokens
        self.capacity_blocks = capacity_blocks
        self.free_blocks = capacity_blocks
        self.held_blocks = [0] * requests
        self.preemptions = [0] * requests

    @property
    def used_blocks(self) -> int:
        return self.capacity_blocks - self.free_blocks

    def blocks_for(self, tokens: int) -> int:
        """⌈tokens / block⌉."""
        return blocks_for(tokens, self.block_tokens)

    def can_admit(self, prefill_tokens: int) -> bool:
        """Whether the free blocks hold a new request's ⌈prefill_tokens / block⌉ blocks."""
        return self.blocks_for(prefill_tokens) <= self.free_blocks

    def admit(self, request: int, prefill_tokens: int) -> None:
        """Give a new (or recomputed) request the blocks of its ``prefill_tokens``; check ``can_admit`` first."""
        blocks = self.blocks_for(prefill_tokens)
        self.held_blocks[request] = blocks
        self.free_blocks -= blocks

    def grow_to(self, request: int, context_tokens: int) -> None:
        """Hold ⌈context_tokens / block⌉ blocks (never fewer than now); the caller checked they are free."""
        blocks = self.blocks_for(context_tokens)
        held = self.held_blocks[request]
        if blocks > held:
            self.free_blocks -= blocks - held
            self.held_blocks[request] = blocks

    def grow_each_to(self, requests: list[int], context_tokens: list[int]) -> None:
        """``grow_to`` for each request and its context (one call per jump over decode steps)."""
        block, held = self.block_tokens, self.held_blocks
        free = self.free_blocks
        for i, tokens in zip(requests, context_tokens, strict=True):
            blocks = (tokens + block - 1) // block
            if blocks > held[i]:
                free -= blocks - held[i]
                held[i] = blocks
        self.free_blocks = free

    def release(self, request: int) -> None:
        """Return all of a finished request's blocks to the pool."""
        self.free_blocks += self.held_blocks[request]
        self.held_blocks[request] = 0

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
    ) -> list[int]:
        """Blocks for one decode step of ``step_tokens`` tokens per ``decoding`` request.

        Each decoding request needs ⌈(context + step_tokens) / block⌉ blocks; while the free
        blocks do not cover the growth, the newest running request is preempted (and leaves
        ``decoding`` if it is there).  Returns the preempted requests, newest first.
        ``running`` (arrival-ordered admissions) and ``decoding`` are updated in place."""
        block, held = self.block_tokens, self.held_blocks
        growing = [i for i in decoding if context_tokens[i] + step_tokens > held[i] * block]
        needed = sum((context_tokens[i] + step_tokens + block - 1) // block - held[i] for i in growing)
        preempted: list[int] = []
        while needed > self.free_blocks:
            victim = running[-1]
            if victim in decoding:
                decoding.remove(victim)
                if victim in growing:
                    growing.remove(victim)
                    needed -= (context_tokens[victim] + step_tokens + block - 1) // block - held[victim]
            preempted.append(self.preempt_newest(running, context_tokens))
        for i in growing:
            held[i] = (context_tokens[i] + step_tokens + block - 1) // block
        self.free_blocks -= needed
        return preempted
