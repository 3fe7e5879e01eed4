"""The KV block pool on its own: ceil sizing, admission, growth before a decode step, preemption."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from planner.sim.blocks import BlockPool, blocks_for, unit_weights, window_cap_blocks


def _conserved(pool: BlockPool) -> bool:
    charged = sum(pool.charge(n, s) for n, s in zip(pool.held_blocks, pool.shared_blocks, strict=True))
    return pool.free_blocks + charged == pool.capacity_blocks and pool.free_blocks >= 0


@given(tokens=st.integers(0, 10**7), block=st.integers(1, 1024))
def test_blocks_for_is_the_ceiling(tokens, block):
    n = blocks_for(tokens, block)
    assert n * block >= tokens > (n - 1) * block or (tokens == 0 and n == 0)
    assert BlockPool(block, 10, 1).blocks_for(tokens) == n


def test_admission_needs_the_ceiling_of_the_prefill_in_free_blocks():
    pool = BlockPool(16, 4, 3)
    assert pool.can_admit(64) and not pool.can_admit(65)
    pool.admit(0, 17)  # 2 blocks
    assert pool.held_blocks[0] == 2 and pool.free_blocks == 2 and pool.used_blocks == 2
    assert pool.can_admit(32) and not pool.can_admit(33)
    pool.release(0)
    assert pool.free_blocks == 4 and pool.held_blocks[0] == 0


def test_grow_to_adds_only_the_missing_blocks_and_never_shrinks():
    pool = BlockPool(16, 10, 1)
    pool.admit(0, 16)
    pool.grow_to(0, 16)
    assert pool.held_blocks[0] == 1 and pool.free_blocks == 9
    pool.grow_to(0, 49)
    assert pool.held_blocks[0] == 4 and pool.free_blocks == 6
    pool.grow_to(0, 1)
    assert pool.held_blocks[0] == 4 and pool.free_blocks == 6


def test_preempt_newest_frees_it_resets_its_context_and_counts_it():
    pool = BlockPool(16, 10, 3)
    context = [40, 20, 5]
    running = [0, 1, 2]
    for i in running:
        pool.admit(i, context[i])
    victim = pool.preempt_newest(running, context)
    assert victim == 2 and running == [0, 1]
    assert context == [40, 20, 0] and pool.held_blocks[2] == 0 and pool.preemptions == [0, 0, 1]
    assert _conserved(pool)


def test_decode_step_grows_only_across_a_block_boundary():
    pool = BlockPool(16, 10, 2)
    context = [15, 16]
    running, decoding = [0, 1], [0, 1]
    for i in running:
        pool.admit(i, context[i])
    assert pool.reserve_decode_step(running, decoding, context, 1) == []
    assert pool.held_blocks == [1, 2] and pool.free_blocks == 7  # 15 + 1 fits its block, 16 + 1 does not
    assert pool.reserve_decode_step(running, decoding, context, 5) == []
    assert pool.held_blocks == [2, 2]  # q = 5 (speculative): 15 + 5 = 20 tokens


def test_decode_step_preempts_the_newest_while_short():
    # three requests at 16 tokens hold one block each; a decode step needs a second each
    pool = BlockPool(16, 4, 3)
    context = [16, 16, 16]
    running, decoding = [0, 1, 2], [0, 1, 2]
    for i in running:
        pool.admit(i, 16)
    preempted = pool.reserve_decode_step(running, decoding, context, 1)
    assert preempted == [(2, True)]
    assert running == [0, 1] and decoding == [0, 1]
    assert pool.held_blocks == [2, 2, 0] and pool.free_blocks == 0 and pool.preemptions == [0, 0, 1]
    assert context[2] == 0


def test_a_prefilling_request_can_be_preempted_for_the_decodes():
    pool = BlockPool(16, 3, 2)
    context = [16, 10]
    running, decoding = [0, 1], [0]  # request 1 is still prefilling
    pool.admit(0, 16)
    pool.admit(1, 30)  # two blocks for its 30-token prefill
    preempted = pool.reserve_decode_step(running, decoding, context, 1)
    assert preempted == [(1, False)] and decoding == [0] and running == [0]
    assert pool.held_blocks == [2, 0] and pool.free_blocks == 1


@given(
    contexts=st.lists(st.integers(1, 200), min_size=1, max_size=12),
    block=st.integers(1, 32),
    step_tokens=st.integers(1, 6),
    spare=st.integers(0, 20),
)
def test_after_reserving_every_decode_fits_and_blocks_are_conserved(contexts, block, step_tokens, spare):
    n = len(contexts)
    capacity = sum(blocks_for(c, block) for c in contexts) + spare
    pool = BlockPool(block, capacity, n)
    context = list(contexts)
    running = list(range(n))
    for i in running:
        pool.admit(i, context[i])
    decoding = list(running)
    preempted = [i for i, was_decoding in pool.reserve_decode_step(running, decoding, context, step_tokens)]
    assert _conserved(pool)
    assert running == list(range(n - len(preempted))) and decoding == running
    assert preempted == list(range(n - 1, n - 1 - len(preempted), -1))  # newest first
    for i in running:
        assert pool.held_blocks[i] == max(blocks_for(context[i] + step_tokens, block), blocks_for(contexts[i], block))
    for i in preempted:
        assert pool.held_blocks[i] == 0 and context[i] == 0 and pool.preemptions[i] == 1


# ------------------------------------------------------------------ sliding-window layers


def test_sliding_window_cap_is_vllms_rule():
    # vLLM SlidingWindowSpec: ⌈min(W − 1 + max_num_batched_tokens, max_model_len) / block⌉ + 1
    assert window_cap_blocks(4096, 2048, 32768, 16) == -(-(4095 + 2048) // 16) + 1 == 385
    assert window_cap_blocks(4096, 8192, 8192, 16) == 512 + 1  # the window bound is the whole length
    assert unit_weights(32, 0) == (1, 0, 32)
    assert unit_weights(0, 32) == (0, 1, 32)  # Mistral 7B: every layer windowed
    assert unit_weights(21, 21) == (1, 1, 21)  # Gemma 2 9B: one full and one window group


def test_window_layers_stop_growing_at_their_cap():
    # Gemma-like: a = b = 1, cap 10 positions; 100 positions cost 100 (full) + 10 (window)
    pool = BlockPool(16, 1000, 1, full_weight=1, window_weight=1, window_cap=10)
    assert pool.charge(5) == 10 and pool.charge(100) == 110
    assert pool.growth(9, 12) == 3 + 1 and pool.growth(20, 21) == 1
    pool.admit(0, 16 * 100)
    assert pool.free_blocks == 1000 - 110
    pool.release(0)
    assert pool.free_blocks == 1000


def test_an_all_window_model_holds_only_its_window():
    # Mistral-like: a = 0, b = 1; a 30k-token context at block 16 with cap 385 costs 385 units, not 1875
    pool = BlockPool(16, 2000, 2, full_weight=0, window_weight=1, window_cap=385)
    pool.admit(0, 30_000)
    pool.admit(1, 30_000)
    assert pool.free_blocks == 2000 - 2 * 385
    assert pool.reserve_decode_step([0, 1], [0, 1], [30_000, 30_000], 1) == []
    assert _conserved(pool)
