"""Hostile links through the real app (AppTest): no exception escapes, each bad key
is named in a warning, and link text is never rendered as HTML (issue 6)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from planner.links import FIELDS
from tests.paths import APP

NASTY = [
    "",
    "nan",
    "inf",
    "-1",
    "1e400",
    "<script>alert(1)</script>",
    "<b>x</b>",
    "=1+1",
    "x" * 5000,
    "\u202e",
    "0",
    "99999999999",
    "custom",
    "L1-H1-A1-G1-D1-F1-V1-C1",
    "L32-H4096-Q7",
]


def run(query: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    return at


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(list(FIELDS) + ["zz", "<i>"]), st.sampled_from(NASTY), min_size=1, max_size=5))
def test_hostile_links_never_raise(query):
    at = run(query)
    assert not at.exception, [e.message for e in at.exception]
    assert at.metric  # the headline still renders


def test_each_bad_key_is_named_and_markup_is_escaped():
    at = run({"batch": "<script>alert(1)</script>", "tp": "-5", "gpu": "<b>x</b>", "zz": "1"})
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    for key in ("batch", "tp", "gpu", "zz"):
        assert key in text
    # Markdown-escaped: the tag's angle brackets are shown as text, not interpreted.
    assert "\\<script\\>" in text and "pattern" not in text
