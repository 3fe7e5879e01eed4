"""A pinned baseline kept in the link (planner/studies/baseline.py) and the headline's deltas against it."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import evaluate
from planner.format import fmt_pct
from planner.links import from_query, to_query_string
from planner.model.scenario import Scenario
from planner.studies.baseline import COMPARED, compare_frame, differing_keys, pin_query, pinned_scenario
from ui import headline


def test_a_pinned_scenario_survives_its_link(catalog):
    pinned = Scenario(gpu="h200", batch=64, layout="a~b:1|c,d;e", search="batch,spec")
    current = pinned.with_changes(batch=128, base=pin_query(pinned))
    link = to_query_string(current)
    assert "&base=v%3D1%26" in link  # the inner query, its own version first
    back, issues = from_query(link, set(catalog.profile_keys()), set(catalog.models), catalog.engine_aliases())
    assert not issues and back == current
    again, problems = pinned_scenario(back, catalog)
    assert again == pinned and problems == []
    assert differing_keys(back, again) == [("batch", 64, 128)]


def test_a_baseline_cannot_pin_another():
    inner = pin_query(Scenario(batch=8))
    with pytest.raises(ValueError, match="cannot pin another"):
        Scenario(base=inner + "&base=x")
    assert pinned_scenario(Scenario())[0] is None


def test_compare_frame_gives_every_headline_metric_and_its_change(catalog):
    pinned = Scenario(batch=32)
    current = Scenario(batch=64, base=pin_query(pinned))
    a, b = evaluate(current, catalog), evaluate(pinned, catalog)
    frame = compare_frame(a, b)
    assert list(frame["metric"]) == [c.key for c in COMPARED]
    row = frame.set_index("metric").loc["tpot_s"]
    assert row["change"] == pytest.approx(a.metrics["tpot_s"] / b.metrics["tpot_s"] - 1.0)
    assert not row["better"]  # a larger batch decodes each token more slowly
    assert frame.set_index("metric").loc["output_tokens_per_s_per_gpu", "better"]


def test_the_headline_deltas_are_against_the_pinned_baseline(catalog):
    pinned = Scenario(batch=32)
    current = Scenario(batch=64, base=pin_query(pinned))
    result = evaluate(current, catalog)
    base = headline.mha_baseline(current, result.resolved.model)
    assert base == pinned
    items = headline.headline_items(result, evaluate(base, catalog))
    # every card against the pinned scenario; speculation is off here, so its card says so instead
    assert all(i.delta_description.startswith("vs pinned") for i in items if i.key != "speculative")
    assert next(i for i in items if i.key == "speculative").delta == "off"
    tokens = next(i for i in items if i.key == "tokens")
    want = (
        result.metrics["output_tokens_per_s_per_gpu"] / evaluate(pinned, catalog).metrics["output_tokens_per_s_per_gpu"]
    )
    assert tokens.delta == fmt_pct(want - 1.0, signed=True) and want > 1.0
    plain = headline.headline_items(
        evaluate(pinned, catalog), evaluate(headline.mha_baseline(pinned, result.resolved.model), catalog)
    )
    assert any(i.delta_description == "vs MHA" for i in plain)
