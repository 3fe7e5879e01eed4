"""Sweeps are one vectorised call per categorical combination and agree with evaluate."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import evaluate
from planner.errors import SweepError
from planner.model.scenario import Scenario
from planner.studies.sweep import parse_axis, sweep


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
