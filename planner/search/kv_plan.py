"""The two KV figures the search needs of every configuration — KV tokens and whether it fits — from the
same functions as ``memory.memory_plan`` (a test compares them), vectorised over the search's grid: the
plain tensor-parallel rows from the budget directly, the rows with pipeline stages, data-parallel engines
or expert parallelism from ``kv_fit.kv_fit``."""

from __future__ import annotations

from dataclasses import fields

import numpy as np

from planner.engine import parallel
from planner.engine.inputs import Array, EngineInputs, broadcast_shape
from planner.engine.kv_fit import kv_fit
from planner.engine.memory import (
    activation_bytes_per_gpu,
    baseline_bytes_per_gpu,
    block_bytes,
    cuda_graph_bytes_per_gpu,
    kv_allocated_bytes_per_sequence,
    kv_budget_raw_bytes,
    kv_groups,
    non_torch_bytes_per_gpu,
    reserve_bytes_per_gpu,
    weight_bytes_per_gpu,
)
from planner.engine.memory import context_tokens as sequence_tokens


def kv_plan(x: EngineInputs) -> tuple[Array, np.ndarray]:
    """(KV tokens, fits) of ``memory.memory_plan`` — the two figures the search needs, from the same functions;
    the configurations (first axis) with pipeline stages, data-parallel engines or expert parallelism from
    ``kv_fit.kv_fit`` (``memory_plan``'s steps: per stage, × dp engines)."""
    if parallel.plain_layout(x):
        return _plain_kv_plan(x)
    shape = broadcast_shape(x)
    layout = np.broadcast_to((x.pp > 1) | (x.dp > 1) | (x.ep > 1), shape)
    rows = np.flatnonzero(layout.reshape(shape[0], -1).any(axis=1))
    if rows.size == shape[0]:  # every configuration has a layout (``_by_kind``'s layout pass)
        tokens, fitting = kv_fit(x)
        return np.broadcast_to(tokens, shape), np.broadcast_to(fitting, shape)
    kv_tokens, fits = _plain_kv_plan(x)
    sub = EngineInputs(**{f.name: _first_axis(getattr(x, f.name), rows, shape[0]) for f in fields(EngineInputs)})
    sub_tokens, sub_fits = kv_fit(sub)
    kv_tokens, fits = np.array(np.broadcast_to(kv_tokens, shape)), np.array(np.broadcast_to(fits, shape))
    kv_tokens[rows] = np.broadcast_to(sub_tokens, (rows.size, *shape[1:]))
    fits[rows] = np.broadcast_to(sub_fits, (rows.size, *shape[1:]))
    return kv_tokens, fits


def _first_axis(a: Array, rows: np.ndarray, n: int) -> Array:
    """``a``'s entries at ``rows`` of a first axis of ``n`` (a field broadcast along it stays as it is)."""
    a = np.asarray(a)
    return a[rows] if a.ndim and a.shape[0] == n else a


def _plain_kv_plan(x: EngineInputs) -> tuple[Array, np.ndarray]:
    raw = kv_budget_raw_bytes(x)
    groups = kv_groups(x)
    bb = block_bytes(x, None, groups)
    blocks = np.floor(np.maximum(raw, 0.0) / bb)
    concurrency = blocks * bb / kv_allocated_bytes_per_sequence(x, sequence_tokens(x), None, groups)
    graphs = cuda_graph_bytes_per_gpu(x)
    reserve = reserve_bytes_per_gpu(x)
    outside = np.where(x.graphs_in_budget > 0, 0.0, graphs)
    if np.any(x.mem_rule == 1):  # SGLang: activations and non-torch memory live outside its fraction
        outside = outside + np.where(x.mem_rule == 1, activation_bytes_per_gpu(x) + non_torch_bytes_per_gpu(x), 0.0)
    usable = np.maximum(raw, 0.0) + weight_bytes_per_gpu(x) + reserve
    headroom = x.memory_reported_bytes - baseline_bytes_per_gpu(x) - usable - outside
    kv_tokens = np.floor(blocks / (groups["full_groups"] + groups["window_groups"])) * x.block_tokens
    return kv_tokens, (raw > 0) & (concurrency >= 1) & (headroom >= 0)
