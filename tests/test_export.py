"""Exports: spreadsheet-formula cells neutralised, no NaN/inf cells, bound names (issue 6)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from planner.export import frame_to_csv, neutralise, present_metrics, present_value


@pytest.mark.parametrize("cell", ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\tx", "\rx"])
def test_formula_cells_are_neutralised(cell):
    assert neutralise(cell) == "'" + cell


def test_plain_cells_are_untouched():
    assert neutralise("h100-sxm") == "h100-sxm" and neutralise(-3) == -3


def test_csv_neutralises_cells_and_headers():
    text = frame_to_csv(pd.DataFrame({"=evil": ["=HYPERLINK(1)", "ok"], "n": [1, 2]}))
    assert text.splitlines() == ["'=evil,n", "'=HYPERLINK(1),1", "ok,2"]


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, np.float64("nan")])
def test_non_finite_numbers_never_reach_an_export(value):
    assert present_value("tpot_s", value) == "n/a"


def test_named_sentinels():
    assert present_value("ridge_batch", math.inf) == "never"
    assert present_value("min_tp_that_fits", 0.0) == "none"
    cells = present_metrics({"prefill_compute_bound": True, "decode_compute_bound": np.bool_(False)})
    assert cells["prefill_bound"] == "compute" and cells["decode_bound"] == "memory"
    assert cells["prefill_compute_bound"] == "true"
