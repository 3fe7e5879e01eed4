"""Fuzzing the benchmark-results reader (the Cross-check tab's upload, ``kvplan`` bench files): a committed
results file with one value anywhere replaced by a huge-but-valid or hostile one (1e308, -1, NaN as
text, a 100 KB string, a 10,000-item list, deep nesting, a wrong type), or the whole text cut or nested.
``parse_results`` returns the results or raises ValueError (ProblemsError is one) with a message that names
the field or says why the text is not JSON — never another exception."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.bench.results import BenchResults, parse_results
from tests.paths import ROOT

BASE = json.loads((ROOT / "benchmarks" / "results" / "amd-epyc-2-cores-numpy.json").read_text(encoding="utf-8"))
HOSTILE = st.one_of(
    st.sampled_from([1e308, -1, 0, -0.0, 2**64, "NaN", "", True, None, {}, [], {"a": {"b": {}}}]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=1, max_value=100_000).map(lambda n: "x" * n),
    st.integers(min_value=0, max_value=10_000).map(lambda n: [1.0] * n),
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):
            out += _paths(v, (*prefix, i))
    return out


PATHS = _paths(BASE)


def _replaced(path: tuple, new: Any) -> Any:
    doc = json.loads(json.dumps(BASE))
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = new
    return doc


@settings(max_examples=40)
@given(st.sampled_from(PATHS), HOSTILE)
def test_one_hostile_value_is_read_or_refused_naming_its_field(path, new):
    text = json.dumps(_replaced(path, new))
    try:
        parse_results(text)
    except ValueError as exc:
        message = str(exc)
        named = [str(k) for k in path if isinstance(k, str)]
        assert message and (any(k in message for k in named) or "bytes" in message), (path, message[:300])


@settings(max_examples=15)
@given(st.integers(min_value=0, max_value=len(json.dumps(BASE))), st.integers(min_value=1, max_value=50_000))
def test_a_cut_or_deeply_nested_file_is_refused_in_words(cut, depth):
    for text in (json.dumps(BASE)[:cut], "[" * depth + "]" * depth, '{"a": ' * depth + "1" + "}" * depth):
        try:
            assert isinstance(parse_results(text.encode()), BenchResults)
        except ValueError as exc:
            assert str(exc)
