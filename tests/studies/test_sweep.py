"""Sweeps are one vectorised call per categorical combination and agree with evaluate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.engine.evaluate import evaluate
from planner.errors import SweepError
from planner.model.scenario import Scenario
from planner.studies.sweep import NUMERIC_KEYS, parse_axis, sweep, sweep_chunks


def test_parse_axis_forms():
    assert parse_axis("batch", "1,2,4") == [1, 2, 4]
    assert parse_axis("batch", "1:16:x2") == [1, 2, 4, 8, 16]
    assert parse_axis("hit", "0:1:0.25") == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert parse_axis("gpu", "h100-sxm,h200") == ["h100-sxm", "h200"]


@pytest.mark.parametrize("key,spec", [("batch", "0,1"), ("hit", "0:2:0.5"), ("batch", "5:1:1"), ("zzz", "1")])
def test_parse_axis_rejects_bad_values(key, spec):
    with pytest.raises(SweepError):
        parse_axis(key, spec)


def test_sweep_rows_match_single_evaluations(catalog):
    base = Scenario(prompt=1000, prefix=900)
    df = sweep(base, {"batch": [1, 8, 64], "prompt": [500, 4000], "gpu": ["h100-sxm", "a100-80gb-sxm"]}, catalog)
    assert len(df) == 12
    row = df[(df.gpu == "a100-80gb-sxm") & (df.batch == 8) & (df.prompt == 500)].iloc[0]
    assert row.prefix == 500  # clamped to the prompt, and shown
    direct = evaluate(Scenario(gpu="a100-80gb-sxm", batch=8, prompt=500, prefix=500), catalog).metrics
    for k in ("ttft_s", "tpot_s", "max_concurrent_sequences", "cache_cost_per_request_usd"):
        assert row[k] == pytest.approx(direct[k])


@pytest.mark.parametrize("key", sorted(NUMERIC_KEYS))
def test_every_numeric_key_sweeps_alone(key, catalog):
    """Each numeric key broadcasts on its own (α or the draft ratio alone used to fail: the best-γ
    grid was shaped after the plain step, which does not depend on them)."""
    values = {"alpha": [0.5, 0.6, 0.7], "draft_ratio": [0.1, 0.2], "hit": [0.0, 1.0]}.get(key)
    if values is None:
        default = getattr(Scenario(), key)
        values = [default if default is not None else 1.0] * 2
        values = list(dict.fromkeys(values))
    df = sweep(Scenario(), {key: values}, catalog)
    assert len(df) == len(values)
    assert np.isfinite(df["spec_best_gamma"].to_numpy(dtype=float)).all()


def test_a_sweep_over_the_budget_states_its_cost_before_running(catalog):
    axes = {"batch": list(range(1, 1001)), "prompt": list(range(1, 1002))}
    with pytest.raises(SweepError, match=r"1,001,000 rows \(≈ 80 s and ≈ 0.9 GB of CSV\); the limit is 1,000,000"):
        next(sweep_chunks(Scenario(), axes, catalog))


def test_chunks_are_the_whole_sweep(catalog):
    axes = {"batch": [1, 2, 4, 8, 16], "gpu": ["h100-sxm", "h200"]}
    whole = sweep(Scenario(), axes, catalog)
    parts = pd.concat(list(sweep_chunks(Scenario(), axes, catalog, chunk_rows=2)), ignore_index=True)
    pd.testing.assert_frame_equal(whole, parts)
