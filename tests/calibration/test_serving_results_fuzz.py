"""Fuzzing the serving-engine result reader (``vllm bench serve --save-result`` JSON, SGLang bench_serving
JSON lines): runs with every field huge-but-valid or hostile (10**400, 1e308, -1, NaN as text, "inf",
a 100 KB string, a wrong type).  ``parse_serving_results`` returns the runs or raises ValueError naming
the file — never another exception."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.calibration.serving_results import ServingRun, parse_serving_results

KEYS = (
    "completed", "duration", "total_input_tokens", "total_output_tokens", "request_throughput",
    "median_ttft_ms", "median_tpot_ms", "mean_tpot_ms", "max_concurrency", "concurrency", "request_rate",
)  # fmt: skip
VALUES = st.one_of(
    st.sampled_from([10**400, 2**64, 1e308, 5e-324, -1, 0, "inf", "NaN", None, True, [], {}]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(min_value=0, max_value=10**12),
    st.integers(min_value=1, max_value=100_000).map(lambda n: "x" * n),
)


@st.composite
def runs(draw) -> dict:
    run = {k: draw(VALUES) for k in KEYS if draw(st.booleans())}
    tool = draw(
        st.sampled_from(
            [{"model_id": "m", "mean_e2el_ms": 1000.0}, {"backend": "sglang", "mean_e2e_latency_ms": 900.0}]
        )
    )
    return {**tool, **run}


@settings(max_examples=50)
@given(st.lists(runs(), min_size=1, max_size=4), st.sampled_from(["list", "lines", "one"]))
def test_a_hostile_run_is_read_or_refused_naming_the_file(items, shape):
    if shape == "list":
        text = json.dumps(items)
    elif shape == "lines":
        text = "\n".join(json.dumps(r) for r in items)
    else:
        text = json.dumps(items[0])
    try:
        found = parse_serving_results(text.encode(), name="bench.json")
    except ValueError as exc:
        assert str(exc).startswith("bench.json"), str(exc)[:200]
        return
    for r in found:
        assert isinstance(r, ServingRun)
        assert all(math.isfinite(v) for v in r.model_dump().values() if isinstance(v, float))
