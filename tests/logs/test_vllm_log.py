"""The vLLM start-up log parser (planner.logs.vllm_log) on real log lines: the llm-d-planner
v0.19.0 H100 sweep (excerpts in tests/data/vllm_logs/, source in each file's first line) and a V0
log quoted in vllm-project/vllm issue #10517; bad or foreign text gets one clear message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.logs.vllm_log import LogError, parse_vllm_log
from tests.paths import ROOT

LOGS = ROOT / "tests" / "data" / "vllm_logs"


def read(name: str) -> str:
    return (LOGS / name).read_text(encoding="utf-8")


def test_llama_8b_tp1_every_term_and_setting():
    """'Model loading took 14.99 GiB', 'torch peak memory increase: 1.89GiB; non-torch forward increase
    memory: 0.25GiB', 'Available KV cache memory: 58.11 GiB', 'GPU KV cache size: 476,016 tokens',
    'Maximum concurrency for 8,192 tokens per request: 58.11x', 'Graph capturing finished in 3 secs, took 0.91 GiB'."""
    log = parse_vllm_log(read("llama31_8b_tp1.log"))
    assert log.engine_version == "0.19.0" and not log.v0_engine
    assert log.model == "meta-llama/Llama-3.1-8B-Instruct" and log.tp == 1 and log.pp == 1
    assert (log.max_model_len, log.max_num_batched_tokens, log.max_num_seqs) == (8192, 8192, 1024)
    assert log.gpu_memory_utilization == 0.95 and log.enable_prefix_caching is False and log.dtype == "bfloat16"
    assert log.memory_terms() == {
        "total_memory_gib": 79.19,
        "requested_memory_gib": 75.23,
        "weights_gib": 14.99,
        "activation_gib": 1.89,
        "non_torch_gib": 0.25,
        "cuda_graph_estimate_gib": 0.84,  # computed and printed by 0.19, but not subtracted (no "is enabled" line)
        "kv_cache_gib": 58.11,
        "cuda_graph_gib": 0.91,
    }
    assert log.graphs_in_budget is None and log.release() == (0, 19, 0) and not log.one_line_kv_size
    assert (log.kv_cache_tokens, log.num_gpu_blocks) == (476_016, 29_751)
    assert (log.concurrency_tokens, log.concurrency) == (8192, 58.11)
    assert log.cuda_graph_estimate_gib == 0.84 and log.startup_baseline_gib == 0.51


def test_tp2_log_takes_the_smallest_rank_and_counts_the_ranks():
    log = parse_vllm_log(read("qwen25_72b_tp2.log"))
    assert log.tp == 2 and log.kv_cache_gib == 3.04 and log.ranks_reporting == 1  # only TP0 prints "Available"
    assert log.weights_gib == 67.8 and log.non_torch_gib == 2.09 and log.kv_cache_tokens == 19_920
    assert log.startup_baseline_gib == 1.51


def test_a_log_that_ends_in_an_error_keeps_the_error():
    """Qwen3-14B at tp=5: 'AssertionError: 151936 is not divisible by 5' (the padded vocabulary)."""
    log = parse_vllm_log(read("qwen3_14b_tp5_failed.log"))
    assert log.tp == 5 and log.total_memory_gib == 79.19 and log.kv_cache_tokens is None
    assert "AssertionError: 151936 is not divisible by 5" in log.errors


def test_info_level_lines_alone_are_enough():
    text = "\n".join(line for line in read("gemma2_9b.log").splitlines() if " INFO " in line or line.startswith("#"))
    log = parse_vllm_log(text)
    assert log.weights_gib == 17.22 and log.kv_cache_gib == 54.12 and log.kv_cache_tokens == 168_880
    assert log.concurrency == 20.6 and log.activation_gib is None and log.total_memory_gib is None


def test_v0_engine_summary_line():
    """vllm-project/vllm issue #10517 (RTX 3090, V0 engine), quoted in benchmarks/data/published-serving.json."""
    text = (
        "INFO 12-02 10:00:00 model_runner.py:1077] Loading model weights took 14.9888 GB\n"
        "INFO 12-02 10:00:05 worker.py:232] Memory profiling results: total_gpu_memory=23.58GiB "
        "initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB "
        "non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90\n"
        "INFO 12-02 10:00:05 gpu_executor.py:113] # GPU blocks: 1952, # CPU blocks: 2048\n"
        "INFO 12-02 10:00:05 gpu_executor.py:117] Maximum concurrency for 20000 tokens per request: 1.56x\n"
    )
    log = parse_vllm_log(text)
    assert log.v0_engine and log.total_memory_gib == 23.58 and log.gpu_memory_utilization == 0.9
    assert log.weights_gib == 14.9888 and log.activation_gib == pytest.approx(1.72) and log.non_torch_gib == 0.35
    assert log.kv_cache_gib == 3.81 and log.num_gpu_blocks == 1952 and log.concurrency == 1.56


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "the log is empty"),
        ("   \n\t", "the log is empty"),
        ("Hello, this is not a log at all.", "no vLLM start-up memory line found"),
        ('{"model": "x", "layers": 3}', "no vLLM start-up memory line found"),
        ("INFO: Started server process [1]\nINFO: Uvicorn running on http://0.0.0.0:8000", "no vLLM start-up"),
        ("\x00\x01\x02binary\xff", "no vLLM start-up memory line found"),
        (
            "ValueError: Free memory on device cuda:0 (1.0/79.19 GiB) on startup is less than desired",
            "ends in an error",
        ),
        ("non-default args: {'gpu_memory_utilization': 7}\nAvailable KV cache memory: 3 GiB", "outside what vLLM"),
    ],
)
def test_bad_or_foreign_text_gets_one_clear_message(text, expected):
    with pytest.raises(LogError) as info:
        parse_vllm_log(text)
    assert len(info.value.problems) == 1 and expected in info.value.problems[0]


def test_bytes_and_hostile_args_are_read_as_data():
    text = b"non-default args: {'model': __import__('os').system('true')}\nGPU KV cache size: 1,024 tokens\n"
    log = parse_vllm_log(text)
    assert log.kv_cache_tokens == 1024 and log.model is None  # the args dict is not a literal: ignored, not run
    with pytest.raises(LogError, match="expected the log's text"):
        parse_vllm_log(123)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_or_raises_log_error(text):
    try:
        parse_vllm_log(text)
    except LogError as exc:
        assert exc.problems
