"""Hostile links: random and adversarial query strings never raise, and every
rejected value is named by its key (issue 6)."""

from __future__ import annotations

import csv
import io
import math
from urllib.parse import quote, urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.links import FIELDS, from_query
from planner.model.scenario import Scenario

GPUS = {"h100-sxm", "h200"}
MODELS = {"llama-3.1-8b"}

NASTY_VALUES = [
    "",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "-1",
    "0",
    "-0",
    "1e-400",
    "99999999999999999999999",
    "<script>alert(1)</script>",
    '=HYPERLINK("http://x")',
    "+1",
    "@SUM(A1)",
    "\u202e\u0000\ufeff",
    "x" * 100_000,
    "１２",
    "0x10",
    "1_000",
    " 5 ",
    "true",
    "[]",
    "{}",
    "None",
    "%00",
    "../../etc/passwd",
]
keys = st.sampled_from(list(FIELDS) + ["v", "", "zz", "<b>", "batch[]", "gpu\x00"])
values = st.one_of(st.sampled_from(NASTY_VALUES), st.text(max_size=50), st.integers().map(str), st.floats().map(repr))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(keys, values), max_size=12))
def test_decoder_never_raises_and_names_each_bad_key(pairs):
    query = urlencode(pairs)
    scenario, issues = from_query(query, GPUS, MODELS)
    assert isinstance(scenario, Scenario)
    for issue in issues:
        assert issue.message and len(issue.message) < 1000
    bad_keys = {i.key for i in issues if i.fatal}
    # every valid key whose last value was rejected keeps its default
    last = dict(pairs)
    for key in bad_keys:
        if key in FIELDS and key in last and key != "prefix":
            assert getattr(scenario, key) == FIELDS[key].default
    for name in FIELDS:
        v = getattr(scenario, name)
        if isinstance(v, float):
            assert math.isfinite(v)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_as_a_link(text):
    scenario, _ = from_query(text, GPUS, MODELS)
    assert isinstance(scenario, Scenario)


def test_huge_query_is_bounded():
    scenario, issues = from_query("batch=" + "9" * 1_000_000)
    assert scenario.batch == Scenario().batch and issues


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(keys, st.sampled_from(NASTY_VALUES)), min_size=1, max_size=6))
def test_cli_never_prints_a_traceback(pairs):
    out, err = io.StringIO(), io.StringIO()
    code = main(["evaluate", "&".join(f"{quote(k)}={quote(v)}" for k, v in pairs), "--format", "csv"], out=out, err=err)
    assert code in (0, 2)
    assert "Traceback" not in err.getvalue()
    if code == 2:
        assert all(line.startswith(("error:", "warning:")) for line in err.getvalue().splitlines())
    else:
        header, row = list(csv.reader(io.StringIO(out.getvalue())))[:2]  # a text input may hold a comma
        cells = dict(zip(header, row, strict=True))
        metrics = {
            k: v for k, v in cells.items() if k.endswith(("_s", "_bytes", "_usd", "_tokens", "_frac", "_sequences"))
        }
        assert metrics and not {v.lower() for v in metrics.values()} & {"nan", "inf", "-inf"}
