"""The public API: ``from planner import …`` gives the engine's entry points."""

from __future__ import annotations

import pytest

import planner


def test_public_names_work_together():
    from planner import Scenario, evaluate, from_query, load_catalog, to_query

    scenario, issues = from_query("gpu=h200&model=llama-3.1-70b&tp=2")
    assert issues == [] and to_query(scenario)["gpu"] == "h200"
    result = evaluate(scenario, load_catalog())
    assert isinstance(result, planner.Result) and result.metrics["fits"] is True
    assert isinstance(Scenario(), Scenario)


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = planner.nope
