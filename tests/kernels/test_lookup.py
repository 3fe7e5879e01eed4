"""The lookup rule over kernel tables (docs/kernel_tables.md "The lookup rule") and the curves' gathers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.kernels import curves, lookup
from planner.kernels.format import Table
from planner.kernels.lookup import NotMeasured


def test_along_a_sweep_axis_log_log_floor_below_power_law_above():
    grid, ms = np.array([1.0, 4.0]), np.array([1.0, 4.0])
    assert lookup.axis_interp(grid, ms, [2.0])[0] == pytest.approx(2.0)  # log-log between points
    assert lookup.axis_interp(grid, ms, [0.25])[0] == pytest.approx(1.0)  # the first measured value below
    assert lookup.axis_interp(grid, ms, [8.0], above=1.0)[0] == pytest.approx(8.0)  # ∝ x beyond
    steep = np.array([1.0, 8.0])  # log-log slope 3, clamped to [1, 2] (prefill isl)
    assert lookup.axis_interp(np.array([1.0, 2.0]), steep, [4.0], above=(1.0, 2.0))[0] == pytest.approx(32.0)


def test_unmeasured_cells_are_skipped():
    v = lookup.axis_interp(np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan, 9.0]), [2.0])[0]
    assert v == pytest.approx(math.exp(math.log(9.0) * math.log(2.0) / math.log(3.0)))
    assert np.isnan(lookup.axis_interp(np.array([1.0]), np.array([np.nan]), [1.0])[0])


def _gemm_table() -> Table:
    """Two measured classes n = 1024, 4096 at k = 1024; latency ∝ n · tokens above a floor."""
    n = np.array([1024, 4096])
    tokens = np.array([1.0, 1024.0])
    ms = np.array([[0.01, 1.0], [0.04, 4.0]])
    return Table("gemm", {"dtype": np.array(["fp8", "fp8"]), "n": n, "k": np.array([1024, 1024])}, (tokens,), ms)


def test_gemm_between_measured_shapes_and_beyond_them():
    t = _gemm_table()
    mid = lookup.gemm_ms(t, "fp8", 2048, 1024, [1024.0])[0]
    assert mid == pytest.approx(2.0)  # log-log between n = 1024 and 4096
    assert lookup.gemm_ms(t, "fp8", 8192, 1024, [1024.0])[0] == pytest.approx(8.0)  # the edge class ∝ n
    assert lookup.gemm_ms(t, "fp8", 1024, 2048, [1024.0])[0] == pytest.approx(2.0)  # beyond the largest k: ∝ k


def test_a_dtype_is_never_borrowed():
    with pytest.raises(NotMeasured, match="GEMM dtype nvfp4 not measured \\(have fp8\\)"):
        lookup.gemm_ms(_gemm_table(), "nvfp4", 1024, 1024, [1.0])


def _attention_table() -> Table:
    keys = {
        "attn_dtype": np.array(["bfloat16"] * 2),
        "kv_dtype": np.array(["bfloat16"] * 2),
        "head_dim": np.array([128, 128]),
        "window": np.array([0, 0]),
        "heads": np.array([8, 32]),
        "kv_heads": np.array([8, 8]),
    }
    batch, seq = np.array([1.0, 2.0]), np.array([1.0, 4.0])
    ms = np.array([[[1.0, 4.0], [2.0, np.nan]], [[4.0, 16.0], [8.0, np.nan]]])  # the large corner unmeasured
    return Table("generation_attention", keys, (batch, seq), ms)


def test_attention_fills_an_unmeasured_corner_along_batch_and_blends_heads():
    t = _attention_table()
    match = dict(attn_dtype="bfloat16", kv_dtype="bfloat16", head_dim=128, window=0, kv_heads=8)
    corner = lookup.attention_ms(t, match, 8, [2.0], [4.0], lookup.DECODE_SEQ_SLOPE)[0, 0]
    assert corner == pytest.approx(8.0)  # batch 1 → 2 ∝ batch in the seq = 4 column
    assert lookup.attention_ms(t, match, 16, [1.0], [1.0], 1.0)[0, 0] == pytest.approx(2.0)  # log-log in heads
    with pytest.raises(NotMeasured, match="kv_heads=4"):
        lookup.attention_ms(t, {**match, "kv_heads": 4}, 8, [1.0], [1.0], 1.0)


def test_a_collective_needs_its_gpu_count_measured():
    keys = {"dtype": np.array(["bfloat16"]), "variant": np.array(["graph"])}
    t = Table("allreduce", keys, (np.array([2.0, 8.0]), np.array([1e3, 1e6])), np.array([[[0.01, 0.1], [0.02, 0.2]]]))
    assert lookup.collective_ms(t, dict(dtype="bfloat16", variant="graph"), 8, [1e6])[0] == pytest.approx(0.2)
    with pytest.raises(NotMeasured, match="on 4 GPUs"):
        lookup.collective_ms(t, dict(dtype="bfloat16", variant="graph"), 4, [1e6])


def test_curves_gather_linear_in_log2_and_grow_beyond_the_grid():
    curve = curves.TOKEN_GRID * 1e-6  # 1 µs per token
    at = curves.at_tokens(curve, None, np.array([64.0, 100.0, 0.0]))
    assert at[0] == pytest.approx(64e-6) and at[2] == 0.0  # a grid point; nothing asked, nothing spent
    assert at[1] == pytest.approx(100e-6, rel=2e-3)  # between points ≤ 4.4 % apart
    big = 2.0 * curves.TOKEN_GRID[-1]
    assert curves.at_tokens(curve, None, np.array([big]))[0] == pytest.approx(big * 1e-6)  # ∝ tokens beyond
    rows = np.array([0, 1])  # two scenarios' curves, one gather
    two = np.stack([curve, 2.0 * curve])
    assert curves.at_tokens(two, rows, np.array([64.0, 64.0])).tolist() == pytest.approx([64e-6, 128e-6])
