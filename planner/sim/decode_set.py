"""The decoding requests of one replica without speculative decoding, advanced in O(1) per step.

Every decoding request gains exactly one token per decode step, so each one's context and
generated tokens are an offset from the replica's ``tick`` (decode steps run so far):
context = ctx_off + tick, generated = gen_off + tick.  What the scheduler needs per step
comes from two heaps instead of a pass over the batch:

- completions: request i finishes at tick = tick₀ + output − generated₀;
- block growth: the step at tick t needs ⌈(ctx_off + t + q) / block⌉ positions, more than the
  h held once t ≥ h·block − q − ctx_off + 1.

Heap entries carry the request's entry count (``epoch``) and, for growth, the positions held
when pushed; an entry that no longer matches is skipped (lazy deletion).  The mean decode
context is (Σ ctx_off + decodes·tick) / decodes, an exact integer sum as before.

A pool without window layers (one unit per block position) and one token per step needs no growth heap:
a member always holds the positions of the step before the tick, p(tick − 1) with p(t) = ⌊(ctx_off + t
+ block) / block⌋ (it enters holding ⌈context / block⌉ = p(tick − 1), and each step's growth is reserved
before it runs), so it grows one block exactly at the ticks t with (ctx_off + t) mod block = 0.  With r =
ctx_off mod block, Σ over the members of p(x) = Σ ⌊(ctx_off − r) / block⌋ + 1 + M·⌊x / block⌋ + #{r ≥
block − x mod block}: a count of the members per residue r gives a step's growth (the members at residue
−t mod block), a jump's (S(last) − S(tick − 1)) and each step's in a run in O(block), whatever the batch.
A member's held positions are written to the pool when it leaves (``BlockPool.release`` reads them);
until then only the pool's free units are kept up to date (``growth_counts``).
"""

from __future__ import annotations

import heapq

from planner.sim.blocks import BlockPool


class DecodeSet:
    """Members (in entry order), their offsets from ``tick``, the completion heap and the growth heap (or, by
    residue, the growth counts: module doc)."""

    __slots__ = (
        "tick",
        "members",
        "ctx_off",
        "gen_off",
        "epoch",
        "member",
        "off_sum",
        "finish_at",
        "grow_at",
        "q",
        "pool",
        "counted",
        "residue_count",
        "covered",
    )

    def __init__(self, requests: int, step_tokens: int, pool: BlockPool, counted: bool | None = None):
        """``counted``: growth by residue counts (module doc; the default where the pool allows it) or the heap."""
        self.tick = 0
        self.q = step_tokens
        self.pool = pool
        self.members: list[int] = []
        self.ctx_off = [0] * requests
        self.gen_off = [0] * requests
        self.epoch = [0] * requests
        self.member = [False] * requests
        self.off_sum = 0
        self.finish_at: list[tuple[int, int, int]] = []  # (tick, request, epoch)
        self.grow_at: list[tuple[int, int, int, int]] = []  # (tick, request, epoch, positions held)
        possible = not pool.windowed and step_tokens == 1
        if counted and not possible:
            raise ValueError("growth counts need a pool without window layers and one token per step")
        self.counted = possible if counted is None else counted
        self.residue_count = [0] * pool.block_tokens  # members per ctx_off mod block (counted)
        self.covered = -1  # the last tick whose positions the members hold (counted: tick − 1, or tick once reserved)

    def __len__(self) -> int:
        return len(self.members)

    def context(self, i: int) -> int:
        return self.ctx_off[i] + self.tick

    def generated(self, i: int) -> int:
        return self.gen_off[i] + self.tick

    def mean_context(self) -> float:
        return (self.off_sum + len(self.members) * self.tick) / len(self.members)

    def _push_growth(self, i: int, held: int, block: int) -> None:
        heapq.heappush(self.grow_at, (held * block - self.q - self.ctx_off[i] + 1, i, self.epoch[i], held))

    def enter(self, i: int, context: int, generated: int, output: int, pool: BlockPool) -> None:
        """Request i finished its prefill (``context`` tokens, ``generated`` so far): it decodes from the next step."""
        self.epoch[i] += 1
        self.member[i] = True
        offset = context - self.tick
        self.ctx_off[i] = offset
        self.gen_off[i] = generated - self.tick
        self.off_sum += offset
        self.members.append(i)
        heapq.heappush(self.finish_at, (self.tick + output - generated, i, self.epoch[i]))
        if self.counted:
            if len(self.members) == 1:  # the first member: it holds the positions of the step before the tick
                self.covered = self.tick - 1
            self.residue_count[offset % pool.block_tokens] += 1
        else:
            self._push_growth(i, pool.held_blocks[i], pool.block_tokens)

    def leave(self, i: int) -> tuple[int, int]:
        """Request i stops decoding (finished or preempted): its (context, generated) now."""
        self.members.remove(i)
        self.member[i] = False
        self.epoch[i] += 1
        offset = self.ctx_off[i]
        self.off_sum -= offset
        if self.counted:  # its positions, p(covered), to the pool (module doc)
            block = self.pool.block_tokens
            self.residue_count[offset % block] -= 1
            self.pool.held_blocks[i] = (offset + self.covered + block) // block
        return self.context(i), self.generated(i)

    def _positions_sum(self, x: int) -> int:
        """Σ over the members of ⌊(r + x) / block⌋, r = ctx_off mod block (counted; module doc)."""
        block = self.pool.block_tokens
        whole, part = divmod(x, block)
        above = sum(self.residue_count[block - part :]) if part else 0  # the members with r ≥ block − part
        return len(self.members) * whole + above

    def growth_counts(self, steps: int) -> list[int]:
        """Blocks the members grow at the start of each of the next ``steps`` steps (counted): those at residue
        −t mod block for step t = tick, tick + 1, …"""
        block, count = self.pool.block_tokens, self.residue_count
        return [count[-t % block] for t in range(self.tick, self.tick + steps)]

    def next_finish(self) -> int:
        """The tick at which the next member finishes (stale heap tops dropped)."""
        heap, epoch = self.finish_at, self.epoch
        while epoch[heap[0][1]] != heap[0][2]:
            heapq.heappop(heap)
        return heap[0][0]

    def pop_finished(self) -> list[int]:
        """Members that reached their output length by now, by (tick, request)."""
        heap, epoch, tick = self.finish_at, self.epoch, self.tick
        done: list[int] = []
        while heap and heap[0][0] <= tick:
            _, i, e = heapq.heappop(heap)
            if epoch[i] == e:
                done.append(i)
        return done

    def growing(self, pool: BlockPool) -> dict[int, tuple[int, int]]:
        """Members whose next step needs more positions: request → (positions, extra units)."""
        heap, epoch, held, tick = self.grow_at, self.epoch, pool.held_blocks, self.tick
        block, reach = pool.block_tokens, self.q + pool.block_tokens - 1
        out: dict[int, tuple[int, int]] = {}
        while heap and heap[0][0] <= tick:
            _, i, e, h = heapq.heappop(heap)
            if epoch[i] != e or held[i] != h:
                continue
            positions = (self.ctx_off[i] + tick + reach) // block
            out[i] = (positions, pool.growth(h, positions))
        return out

    def reserve(
        self, pool: BlockPool, running: list[int], context_tokens: list[int], generated_tokens: list[int]
    ) -> list[tuple[int, bool]]:
        """``BlockPool.reserve_decode_step`` for the members: grow those that need it, preempting the newest
        running request while the free units do not cover it.  Returns (victim, was decoding), newest first."""
        if self.counted:
            return self._reserve_counted(pool, running, context_tokens, generated_tokens)
        heap = self.grow_at
        if not heap or heap[0][0] > self.tick:
            return []  # no member needs a block: nothing to reserve, nobody to preempt
        growing = self.growing(pool)
        needed = sum(extra for _, extra in growing.values())
        victims: list[tuple[int, bool]] = []
        while needed > pool.free_blocks:
            victim = running[-1]
            was_decoding = self.member[victim]
            if was_decoding:
                context_tokens[victim], generated_tokens[victim] = self.leave(victim)
                if victim in growing:
                    needed -= growing.pop(victim)[1]
            victims.append((pool.preempt_newest(running, context_tokens), was_decoding))
        held, block = pool.held_blocks, pool.block_tokens
        for i, (positions, _) in growing.items():
            held[i] = positions
            self._push_growth(i, positions, block)
        pool.free_blocks -= needed
        return victims

    def _reserve_counted(
        self, pool: BlockPool, running: list[int], context_tokens: list[int], generated_tokens: list[int]
    ) -> list[tuple[int, bool]]:
        """``reserve`` by residue counts: the members at residue −tick mod block grow one block each."""
        block = pool.block_tokens
        if self.covered >= self.tick:
            return []  # reserved already
        due = -self.tick % block
        needed = self.residue_count[due]
        victims: list[tuple[int, bool]] = []
        while needed > pool.free_blocks:
            victim = running[-1]
            was_decoding = self.member[victim]
            if was_decoding:
                if self.ctx_off[victim] % block == due:
                    needed -= 1
                context_tokens[victim], generated_tokens[victim] = self.leave(victim)
            victims.append((pool.preempt_newest(running, context_tokens), was_decoding))
        pool.free_blocks -= needed
        self.covered = self.tick
        return victims

    def blocks_needed(self, last_tick: int, pool: BlockPool) -> int:
        """Extra blocks the members need to run every step up to tick ``last_tick`` (a pool without window
        layers: one unit per block position): Σ (ctx_off + last_tick + q + block − 1) // block − held over the
        members whose growth tick is ≤ ``last_tick`` — read from the heap's entries at or below it (a walk
        of the heap's top, not a pass over the batch); by residue counts, S(last_tick) − S(tick − 1)."""
        if self.counted:
            return self._positions_sum(last_tick) - self._positions_sum(self.covered)
        heap, epoch, held, offsets = self.grow_at, self.epoch, pool.held_blocks, self.ctx_off
        block = pool.block_tokens
        reach = last_tick + self.q + block - 1
        total = 0
        if last_tick - self.tick >= block:  # a block's worth of steps or more: most members grow, pass over them
            for i in self.members:
                extra = (offsets[i] + reach) // block - held[i]
                if extra > 0:
                    total += extra
            return total
        todo = [0] if heap and heap[0][0] <= last_tick else []
        size = len(heap)
        while todo:
            k = todo.pop()
            _, i, e, h = heap[k]
            if epoch[i] == e and held[i] == h:
                total += (offsets[i] + reach) // block - h
            for c in (2 * k + 1, 2 * k + 2):
                if c < size and heap[c][0] <= last_tick:
                    todo.append(c)
        return total

    def jumped(self, steps: int, pool: BlockPool) -> None:
        """``steps`` decode steps ran: cover the last one's positions (the caller checked they fit);
        advance the tick.  Only the members whose growth tick falls in the jump grow (popped from the
        heap with their new entry pushed); stale entries are dropped when they outnumber the members.  By
        residue counts only the pool's free units change (module doc)."""
        if self.counted:
            last = self.tick + steps - 1
            pool.free_blocks -= self.blocks_needed(last, pool)
            self.covered = last
            self.tick += steps
            return
        held, block, offsets, epoch = pool.held_blocks, pool.block_tokens, self.ctx_off, self.epoch
        last = self.tick + steps - 1
        reach = last + self.q + block - 1
        lead = 1 - self.q  # the growth tick is held·block − q − ctx_off + 1
        if steps > block:  # most members grow: a pass over them, the heap rebuilt
            free = pool.free_blocks
            for i in self.members:
                positions = (offsets[i] + reach) // block
                if positions > held[i]:
                    free -= pool.growth(held[i], positions)
                    held[i] = positions
            pool.free_blocks = free
            self.tick += steps
            self.grow_at = [(held[i] * block - offsets[i] + lead, i, epoch[i], held[i]) for i in self.members]
            heapq.heapify(self.grow_at)
            return
        heap = self.grow_at
        free = pool.free_blocks
        grown: list[tuple[int, int, int, int]] = []
        while heap and heap[0][0] <= last:
            _, i, e, h = heapq.heappop(heap)
            if epoch[i] != e or held[i] != h:
                continue
            positions = (offsets[i] + reach) // block
            free -= pool.growth(h, positions)
            held[i] = positions
            grown.append((positions * block - offsets[i] + lead, i, e, positions))
        pool.free_blocks = free
        self.tick += steps
        for entry in grown:
            heapq.heappush(heap, entry)
        if len(heap) > 2 * len(self.members) + 64:
            self.grow_at = [(held[i] * block - offsets[i] + lead, i, epoch[i], held[i]) for i in self.members]
            heapq.heapify(self.grow_at)
