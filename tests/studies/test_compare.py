"""Compare GPUs (planner.studies.compare): table invariants and agreement with evaluating
the scenario on each GPU one at a time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.evaluate import evaluate
from planner.engine.validity import valid_tps
from planner.errors import ScenarioError
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from planner.studies.compare import COST_COLUMNS, METRIC_COLUMNS, compare_gpus

CATALOG = load_catalog()
COLUMNS = [
    "gpu",
    "name",
    "fits",
    "min_tp_that_fits",
    "tp_used",
    "max_concurrent_sequences",
    "ttft_s",
    "tpot_s",
    "output_tokens_per_s_per_gpu",
    "cost_per_million_output_tokens_usd",
    "decode_tokens_per_s_per_gpu",
    "decode_cost_per_million_output_tokens_usd",
    "price_per_gpu_hour_usd",
    "batch_fits_memory",
    "meets_slo",
    "cheapest_meeting_slo",
    "note",
    "tp_text",
    "vendor",
]


def check_invariants(s: Scenario, df: pd.DataFrame) -> None:
    assert list(df.columns) == COLUMNS
    assert list(df.gpu) == list(CATALOG.gpus)
    for col in METRIC_COLUMNS + ("price_per_gpu_hour_usd",):
        values = df[col].dropna().to_numpy(dtype=float)
        assert np.isfinite(values).all() and (values >= 0).all(), col
    runs = df.tp_used.notna()
    # a GPU that fits is shown at the scenario's tp; one that does not, at its smallest fitting tp
    assert (df.tp_used[df.fits] == s.tp).all()
    unfit = ~df.fits & runs
    assert (df.tp_used[unfit] == df.min_tp_that_fits[unfit]).all()
    assert (df.min_tp_that_fits.isna() == df.tp_used.isna()).all()
    # rows that fit nowhere: empty metrics and a note saying so
    nowhere = df[~runs]
    assert nowhere[list(METRIC_COLUMNS)].isna().all().all()
    assert (nowhere.note == "does not fit at any tp up to 64").all()
    assert (nowhere.tp_text == "does not fit").all()
    # the tp column says why (issue 30): yours where it fits, else the smallest that fits
    assert (df.tp_text[df.fits & runs] == f"tp{s.tp} (yours)").all()
    smallest = [f"tp{int(u)} (smallest that fits)" for u in df.tp_used[unfit]]
    assert list(df.tp_text[unfit]) == smallest
    assert not (nowhere.meets_slo | nowhere.cheapest_meeting_slo | nowhere.fits).any()
    # every metric where the GPU runs; the cost only where it is priced (a profile with no
    # published price, e.g. H20, says "not priced" and is never the cheapest)
    priced = df.price_per_gpu_hour_usd > 0
    assert df[runs][[c for c in METRIC_COLUMNS if c not in COST_COLUMNS]].notna().all().all()
    for c in COST_COLUMNS:
        assert df[runs & priced][c].notna().all() and df[~priced][c].isna().all()
    assert df[~priced & runs].note.str.contains("not priced").all()
    # SLO and the single cheapest row
    ok = (
        runs
        & df.batch_fits_memory
        & (df.ttft_s <= s.slo_ttft_s).fillna(False)
        & (df.tpot_s <= s.slo_itl_s).fillna(False)
    )
    assert (df.meets_slo == ok).all()
    assert df.cheapest_meeting_slo.sum() == (1 if (df.meets_slo & priced).any() else 0)
    if (df.meets_slo & priced).any():
        best = df[df.cheapest_meeting_slo].iloc[0]
        assert best.meets_slo and best.price_per_gpu_hour_usd > 0
        assert best.cost_per_million_output_tokens_usd == df[df.meets_slo].cost_per_million_output_tokens_usd.min()


@pytest.mark.parametrize("model", sorted(CATALOG.models))
def test_invariants_for_every_model_preset(model):
    s = Scenario(model=model)
    check_invariants(s, compare_gpus(s, CATALOG))


@settings(max_examples=20, deadline=None)
@given(
    model=st.sampled_from(sorted(CATALOG.models)),
    tp=st.sampled_from([1, 2, 8]),
    batch=st.integers(1, 1024),
    slo_itl_s=st.floats(0.005, 0.5),
    slo_ttft_s=st.floats(0.05, 5.0),
    spec=st.booleans(),
)
def test_invariants_hold_across_scenarios(model, tp, batch, slo_itl_s, slo_ttft_s, spec):
    tp = max(t for t in valid_tps(CATALOG.models[model]) if t <= tp)  # a tp vLLM accepts for the model
    s = Scenario(model=model, tp=tp, batch=batch, slo_itl_s=slo_itl_s, slo_ttft_s=slo_ttft_s, spec=spec)
    check_invariants(s, compare_gpus(s, CATALOG))


def test_rows_equal_evaluating_each_gpu_at_tp_used():
    s = Scenario(model="llama-3.1-70b", tp=2, batch=64, spec=True)
    df = compare_gpus(s, CATALOG)
    assert (~df.fits).any() and df.fits.any()  # both paths exercised
    for row in df.itertuples():
        m = evaluate(s.model_copy(update={"gpu": row.gpu, "tp": int(row.tp_used)}), CATALOG).metrics
        assert row.fits == evaluate(s.model_copy(update={"gpu": row.gpu}), CATALOG).metrics["fits"]
        assert row.max_concurrent_sequences == m["max_concurrent_sequences"]
        for col in ("ttft_s", "tpot_s", "decode_tokens_per_s_per_gpu", "cost_per_million_output_tokens_usd"):
            if col.startswith("cost") and row.price_per_gpu_hour_usd == 0:
                assert pd.isna(getattr(row, col)), row.gpu  # unpriced: no cost shown
                continue
            assert getattr(row, col) == pytest.approx(m[col], rel=1e-12), (row.gpu, col)


def test_gpu_that_fits_nowhere_gets_a_note_and_no_numbers():
    s = Scenario(model="llama-3.1-405b", layers=1000)  # ~3.2 T parameters
    df = compare_gpus(s, CATALOG).set_index("gpu")
    assert df.loc["h100-sxm", "note"] == "does not fit at any tp up to 64"
    assert pd.isna(df.loc["h100-sxm", "ttft_s"]) and pd.isna(df.loc["h100-sxm", "tp_used"])
    assert df.loc["mi325x", "tp_used"] == df.loc["mi325x", "min_tp_that_fits"] > 1
    assert df.loc["mi325x", "note"].startswith("does not fit at tp=1; shown at tp=")
    check_invariants(s, df.reset_index()[COLUMNS])


def test_price_override_applies_to_the_scenarios_gpu_only():
    df = compare_gpus(Scenario(gpu="h100-sxm", gpu_price=0.5), CATALOG).set_index("gpu")
    assert df.loc["h100-sxm", "price_per_gpu_hour_usd"] == 0.5
    assert df.loc["h200", "price_per_gpu_hour_usd"] == CATALOG.gpus["h200"].price_per_gpu_hour_usd


def test_batch_beyond_memory_does_not_meet_the_slo():
    s = Scenario(model="llama-3.1-8b", gpu="l4", batch=512, slo_itl_s=10.0, slo_ttft_s=100.0)
    df = compare_gpus(s, CATALOG).set_index("gpu")
    assert not df.loc["l4", "batch_fits_memory"] and not df.loc["l4", "meets_slo"]
    assert "exceeds" in df.loc["l4", "note"]


def test_unknown_model_raises_scenario_error():
    with pytest.raises(ScenarioError):
        compare_gpus(Scenario(model="no-such-model"), CATALOG)
