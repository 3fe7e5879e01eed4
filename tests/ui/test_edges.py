"""Numeric edges (issue 6): every export is finite or an explicit word, never NaN,
inf or a negative count, and the dashboard draws them without an exception."""

from __future__ import annotations

import csv
import io

import pytest
from streamlit.testing.v1 import AppTest

from planner.cli.main import main
from tests.paths import APP

EDGES = {
    "weights larger than memory": "model=llama-3.1-405b&gpu=l4",
    "zero free memory": "mem_util=0.05&model=llama-3.1-70b&gpu=h100-sxm",
    "alpha 0": "alpha=0&spec=1",
    "alpha 1": "alpha=1&spec=1&gamma=16",
    "gamma 0": "gamma=0&spec=1",
    "hit 0": "hit=0",
    "hit 1": "hit=1",
    "chunk above prompt": "chunk=100000&prompt=1000&prefix=0",
    "batch 1": "batch=1",
    "context 1+1": "prompt=1&output=1&prefix=0",
    "tp 64": "model=llama-3.1-405b&tp=64",
    "million-token context": "model=deepseek-v3&gpu=mi325x&tp=8&prompt=163839&prefix=0&output=1",
    "ten million tokens": "model=llama-3.1-8b&prompt=130000&prefix=0&output=1072&batch=4096",
    "zero prices": "price_in=0&price_out=0&gpu_price=0",
    "moe at batch 4096": "model=mixtral-8x7b&tp=8&batch=4096&chunk=4096",
}


@pytest.mark.parametrize("link", EDGES.values(), ids=EDGES.keys())
def test_csv_cells_are_finite_or_words(link):
    out, err = io.StringIO(), io.StringIO()
    assert main(["evaluate", link, "--format", "csv"], out=out, err=err) == 0, err.getvalue()
    header, row = csv.reader(io.StringIO(out.getvalue()))  # a text input may hold a comma (search=batch,chunk)
    for key, cell in zip(header, row, strict=True):
        assert cell.lower() not in ("nan", "inf", "-inf", "infinity"), key
        try:
            value = float(cell)
        except ValueError:
            continue  # a word (true/false, compute/memory, never, none, n/a) or a text input
        signed = key == "memory_headroom_bytes_per_gpu"  # below 0 the engine fails at start-up
        if not signed and (
            key.startswith(("max_concurrent", "kv_capacity", "min_tp", "chunked_steps"))
            or key.endswith(("_bytes", "_s", "_bytes_per_gpu"))
        ):
            assert value >= 0, (key, value)


@pytest.mark.parametrize(
    "link, rule",
    [
        ("tp=64", "tp=64: vLLM cannot split Llama-3.1-8B over 64 GPUs"),
        ("prompt=1000000&prefix=0&output=1", "exceed Llama-3.1-8B's 131,072-token context window"),
        ("model=mixtral-8x7b&tp=8&batch=4096&chunk=16", "batch=4096 > chunk=16"),
    ],
)
def test_configurations_the_engine_refuses_exit_2_naming_the_rule(link, rule):
    """The old numeric edges (tp 64 on a 32-head model, a context 8× the window, a chunk below the
    batch) are configurations vLLM refuses to start: bad input, one error line, no traceback."""
    out, err = io.StringIO(), io.StringIO()
    assert main(["evaluate", link], out=out, err=err) == 2
    assert rule in err.getvalue() and "Traceback" not in err.getvalue()


@pytest.mark.parametrize(
    "link", [EDGES["weights larger than memory"], EDGES["million-token context"], EDGES["alpha 0"]]
)
def test_dashboard_draws_edges(link):
    at = AppTest.from_file(APP, default_timeout=60)
    for pair in link.split("&"):
        k, v = pair.split("=")
        at.query_params[k] = v
    at.run()
    assert not at.exception
    for m in at.metric:
        assert "nan" not in m.value.lower() and "inf" not in m.value.lower(), (m.label, m.value)
