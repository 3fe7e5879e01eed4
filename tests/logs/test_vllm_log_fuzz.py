"""Fuzzing the vLLM start-up log reader with huge-but-valid logs: every line it reads, with numbers from
0 to hundreds of digits, thousands separators, repeated ranks, long and nested ``non-default args``
and up to megabytes of filler.  ``parse_vllm_log`` returns the terms or raises ``LogError`` (the
ProblemsError family) naming what it found wrong — never another exception."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.errors import ProblemsError
from planner.logs.vllm_log import LogError, VllmStartup, parse_vllm_log

NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**6).map(str),
    st.integers(min_value=0, max_value=10**12).map(lambda n: f"{n:,}"),
    st.floats(min_value=0, max_value=1e6, allow_nan=False).map(lambda x: f"{x:.2f}"),
    st.sampled_from(["0", "0.00", "1" + "0" * 400, "9" * 320, "1,,,2", "7.", "3.14159265358979323846" * 3]),
)
LINES = (
    "INFO 05-01 12:00:00 [gpu_worker.py:1] Model loading took {} GiB memory and 5.2 seconds",
    "INFO [gpu_worker.py:2] Available KV cache memory: {} GiB",
    "INFO [kv_cache_utils.py:3] GPU KV cache size: {} tokens",
    "INFO [kv_cache_utils.py:4] Maximum concurrency for {} tokens per request: {}x",
    "INFO [gpu_worker.py:5] torch peak memory increase: {} GiB",
    "INFO [gpu_worker.py:6] non-torch forward increase memory: {} GiB",
    "INFO [gpu_model_runner.py:7] Graph capturing finished in 12 secs, took {} GiB",
    "INFO [executor_base.py:8] # GPU blocks: {}, # CPU blocks: 2048",
    "INFO [worker.py:9] Memory profiling results: total_gpu_memory={}GiB initial_memory_usage={}GiB "
    "peak_torch_memory={}GiB memory_usage_post_profile=1GiB non_torch_memory={}GiB kv_cache_size={}GiB "
    "gpu_memory_utilization={}",
    "INFO [core.py:10] Initializing a V1 LLM engine (v0.{}.0) with config: model='m', max_seq_len={}, "
    "tensor_parallel_size={}, enable_prefix_caching=True",
    "INFO [utils.py:11] Defaulting max_num_seqs to {}",
    "INFO [arg_utils.py:12] Chunked prefill is enabled with max_num_batched_tokens={}.",
    "(EngineCore pid={}) INFO [gpu_worker.py:13] Available KV cache memory: {} GiB",
)
ARGS = st.one_of(
    st.dictionaries(
        st.sampled_from(["max_num_seqs", "max_model_len", "tensor_parallel_size", "x"]), NUMBERS, max_size=4
    ).map(lambda d: "{" + ", ".join(f"'{k}': {v}" for k, v in d.items()) + "}"),
    st.integers(min_value=1, max_value=3000).map(lambda n: "{'a': " + "[" * n + "]" * n + "}"),
    st.integers(min_value=1, max_value=30_000).map(lambda n: "{'a': '" + "x" * n + "'}"),
)


@st.composite
def logs(draw) -> str:
    out = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        kind = draw(st.integers(min_value=0, max_value=len(LINES) + 1))
        if kind < len(LINES):
            line = LINES[kind]
            out.append(line.format(*(draw(NUMBERS) for _ in range(line.count("{}")))))
        elif kind == len(LINES):
            out.append("INFO [arg_utils.py:14] non-default args: " + draw(ARGS))
        else:
            out.append(draw(st.sampled_from(["", "ValueError: boom", "\r", "x" * 100_000, "é\x00\ufeff"])))
    return draw(st.sampled_from(["\n", "\r\n"])).join(out)


@settings(max_examples=60)
@given(logs(), st.booleans())
def test_a_huge_but_valid_log_is_read_or_refused_by_name(text, as_bytes):
    try:
        found = parse_vllm_log(text.encode() if as_bytes else text)
    except LogError as exc:
        assert isinstance(exc, ProblemsError) and exc.problems and all(isinstance(p, str) for p in exc.problems)
        return
    assert isinstance(found, VllmStartup)
