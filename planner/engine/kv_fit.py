"""The sizing screen's memory check: ``memory_plan``'s KV capacity and fit alone, by the same steps (the
search asks for these two over thousands of layouts; tests/search/test_search_layouts.py holds them equal)."""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs
from planner.engine.memory import (  # memory_plan's own steps, the private ones too: one rule, two readers
    _budget,
    _stage,
    activation_bytes_per_gpu,
    baseline_bytes_per_gpu,
    block_bytes,
    context_tokens,
    cuda_graph_bytes_per_gpu,
    cuda_graph_charged_bytes_per_gpu,
    kv_allocated_bytes_per_sequence,
    kv_groups,
    non_torch_bytes_per_gpu,
    weight_bytes_per_gpu,
)


def kv_fit(x: EngineInputs) -> tuple[Array, Array]:
    """(kv_capacity_tokens, fits) of ``memory_plan`` alone, by the same steps (module doc)."""
    st = _stage(x, None, None)
    weights, act = weight_bytes_per_gpu(x, stage=st), activation_bytes_per_gpu(x, stage=st)
    non_torch, graphs, baseline = non_torch_bytes_per_gpu(x), cuda_graph_bytes_per_gpu(x, st), baseline_bytes_per_gpu(x)
    reserve = np.where(x.mem_rule == 1, 0.0, act + non_torch + cuda_graph_charged_bytes_per_gpu(x, st, graphs))
    raw = _budget(x, weights, reserve, baseline)
    budget = np.maximum(raw, 0.0)
    groups = kv_groups(x, st)
    bb = block_bytes(x, None, groups, st)
    blocks = np.floor(budget / bb)
    concurrency = x.dp * blocks * bb / kv_allocated_bytes_per_sequence(x, context_tokens(x), None, groups, stage=st)
    outside = np.where(x.graphs_in_budget > 0, 0.0, graphs) + np.where(x.mem_rule == 1, act + non_torch, 0.0)
    headroom = x.memory_reported_bytes - baseline - (budget + weights + reserve) - outside
    kv_tokens = x.dp * np.floor(blocks / (groups["full_groups"] + groups["window_groups"])) * x.block_tokens
    return kv_tokens, (raw > 0) & (concurrency >= x.dp) & (headroom >= 0)
