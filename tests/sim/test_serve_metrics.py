"""vllm bench serve's statistics (planner.sim.serve_metrics): numpy's own numbers, vLLM's own names."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner.sim.config import SimConfig
from planner.sim.serve_metrics import (
    LATENCIES,
    chunk_itls,
    max_concurrent,
    percentile_label,
    result_json,
    serve_stats,
    statistic,
)
from planner.sim.simulate import simulate
from planner.sim.slo import Slo
from planner.sim.workload import Workload
from tests.sim.test_simulate import ConstantStep

#: vllm/benchmarks/serve.py, v0.33.0 (the unpacked wheel under /work/research/engines/src/, and
#: github.com/vllm-project/vllm at v0.33.0): the metric keys of ``result`` (lines 1319–1340, less the
#: per-request lists dropped without --save-detailed, lines 2430–2444) and of ``process_one_metric``
#: (lines 1426–1432) for ttft, tpot, itl and e2el at --metric-percentiles 99.
_METRIC_KEYS = [f"{stat}_{m}_ms" for m in ("ttft", "tpot", "itl", "e2el") for stat in ("mean", "median", "std", "p99")]
VLLM_RESULT_KEYS = [
    "duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
    "request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
    "max_concurrent_requests", "rtfx",
] + _METRIC_KEYS  # fmt: skip
#: process_one_metric(...) calls, serve.py lines 1435–1438.
VLLM_LATENCIES = {
    "ttft": ("TTFT", "Time to First Token"),
    "tpot": ("TPOT", "Time per Output Token (excl. 1st token)"),
    "itl": ("ITL", "Inter-token Latency"),
    "e2el": ("E2EL", "End-to-end Latency"),
}
VLLM_SOURCE = Path("/work/research/engines/src/vllm-0.33.0/vllm/benchmarks/serve.py")


def test_latency_names_are_vllms():
    assert LATENCIES == VLLM_LATENCIES


@pytest.mark.skipif(not VLLM_SOURCE.is_file(), reason="the vLLM 0.33.0 source is not on this machine")
def test_names_appear_in_vllms_source():
    src = VLLM_SOURCE.read_text()
    for name, (short, header) in LATENCIES.items():
        assert f'process_one_metric("{name}", "{short}", "{header}")' in src
    for key in VLLM_RESULT_KEYS:
        if not key.endswith("_ms"):
            assert re.search(rf'"{key}":', src), key


def test_result_json_has_vllms_keys():
    w = Workload(np.zeros(2), np.array([10, 10]), np.array([3, 1]), "test")
    r = simulate(w, _cfg(), ConstantStep(0.01))
    assert list(result_json(serve_stats(r))) == VLLM_RESULT_KEYS


@given(
    values=hnp.arrays(np.float64, st.integers(0, 40), elements=st.floats(0, 10)),
    pcts=st.lists(st.floats(0.5, 100), min_size=1, max_size=4),
    data=st.data(),
)
def test_statistics_are_numpys_on_the_repeated_list(values, pcts, data):
    counts = data.draw(hnp.arrays(np.int64, values.shape, elements=st.integers(0, 6)))
    s = statistic(values, pcts, counts)
    full = np.repeat(values, counts)
    if full.size == 0:
        assert (s.mean_s, s.median_s, s.std_s) == (0.0, 0.0, 0.0)
        return
    assert s.mean_s == pytest.approx(np.mean(full), rel=1e-12, abs=1e-12)
    assert s.std_s == pytest.approx(np.std(full), rel=1e-9, abs=1e-9)
    assert s.median_s == pytest.approx(np.median(full), rel=1e-12, abs=1e-12)
    for p, v in s.percentiles_s:
        assert v == pytest.approx(np.percentile(full, p), rel=1e-12, abs=1e-12)


def _vllm_max_concurrent(start, end) -> int:
    """vLLM's loop (serve.py lines 714–753), as it is written."""
    lo = min(start)
    buckets = int(np.ceil(max(end) - lo)) + 1
    conc = np.zeros(buckets)
    for s, e in zip(start, end, strict=True):
        for second in range(int(s - lo), int(e - lo) + 1):
            conc[second] += 1
    return int(np.max(conc))


@given(st.lists(st.tuples(st.floats(0, 30), st.floats(0, 20)), min_size=1, max_size=30))
def test_peak_concurrency_is_vllms_bucketing(pairs):
    start = np.array([a for a, _ in pairs])
    end = start + np.array([b for _, b in pairs])
    assert max_concurrent(start, end) == _vllm_max_concurrent(start, end)


def _cfg(gamma: int = 0) -> SimConfig:
    return SimConfig(
        batch=8, chunk_tokens=512, block_tokens=16, kv_capacity_blocks=10_000, context_window_tokens=10_000,
        gamma=gamma, alpha=0.8, seed=0, slo=Slo(ttft_s=1.0, itl_s=1.0),
    )  # fmt: skip


def test_a_hand_checked_run():
    # two requests at t = 0, 100-token prompts, 4 and 1 output tokens, every step 10 ms: one step
    # prefills both (first tokens at 10 ms), then three decode steps of the first
    w = Workload(np.zeros(2), np.array([100, 100]), np.array([4, 1]), "test")
    s = serve_stats(simulate(w, _cfg(), ConstantStep(0.01)), (50.0, 99.0))
    assert (s.completed, s.failed, s.total_input_tokens, s.total_output_tokens) == (2, 0, 200, 5)
    assert s.duration_s == pytest.approx(0.04)
    assert s.request_throughput_per_s == pytest.approx(2 / 0.04)
    assert s.output_throughput_tokens_per_s == pytest.approx(5 / 0.04)
    assert s.total_token_throughput_tokens_per_s == pytest.approx(205 / 0.04)
    assert s.latencies["ttft"].mean_s == pytest.approx(0.01)
    tpot = s.latencies["tpot"]  # only the 4-token request has a TPOT: (40 − 10) ms / 3
    assert tpot.mean_s == pytest.approx(0.01) and tpot.std_s == pytest.approx(0.0)
    assert s.latencies["e2el"].mean_s == pytest.approx(0.025)  # (40 + 10) / 2
    assert s.latencies["e2el"].percentiles_s[1][1] == pytest.approx(0.01 + 0.99 * 0.03)  # numpy's linear p99
    assert s.latencies["itl"].mean_s == pytest.approx(0.01)
    assert s.max_concurrent_requests == 2


def test_speculative_chunks_are_whole_steps():
    # with speculative decoding vLLM streams a step's accepted tokens in one chunk: one ITL = one step
    w = Workload(np.zeros(1), np.array([100]), np.array([60]), "test")
    r = simulate(w, _cfg(gamma=3), ConstantStep(0.01))
    values, counts = chunk_itls(r)
    assert values == pytest.approx(np.full(values.shape, 0.01)) and (counts == 1).all()
    assert values.size < 59  # fewer chunks than tokens: several tokens per step
    tpot = serve_stats(r).latencies["tpot"].mean_s
    assert tpot < 0.01  # TPOT counts tokens, so it is below a step


def test_unknown_metric_is_refused():
    w = Workload(np.zeros(1), np.array([10]), np.array([2]), "test")
    with pytest.raises(ValueError, match="allowed"):
        serve_stats(simulate(w, _cfg(), ConstantStep(0.01)), metrics=("ttft", "goodput"))


def test_percentile_labels_are_vllms():
    assert [percentile_label(p) for p in (99.0, 99.9, 50.0)] == ["99", "99.9", "50"]
