"""The CLI: same functions as the app, exit code 2 and one line per bad key."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from planner.cli.main import main
from tests.paths import ROOT


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


REQUIRED = [
    "kv_bytes_per_token",
    "kv_bytes_per_sequence",
    "weight_bytes_per_gpu",
    "kv_capacity_tokens",
    "max_concurrent_sequences",
    "max_concurrent_sequences_contiguous",
    "fits",
    "ttft_s",
    "prefill_bound",
    "tpot_s",
    "decode_bound",
    "decode_tokens_per_s",
    "ridge_batch",
    "chunked_ttft_s",
    "chunked_max_itl_s",
    "spec_expected_tokens_per_step",
    "spec_speedup",
    "cache_cost_per_request_usd",
    "nocache_cost_per_request_usd",
    "cache_break_even_hit_rate",
    "cost_per_million_output_tokens_usd",
]


def test_evaluate_json_has_every_required_metric():
    code, out, _ = run("evaluate", "v=1&batch=64&kv_heads=4", "--format", "json")
    assert code == 0
    row = json.loads(out)
    assert set(REQUIRED) <= set(row)
    assert row["batch"] == 64 and row["kv_heads"] == 4
    assert row["prefill_bound"] in ("compute", "memory")


def test_evaluate_csv_is_one_row_of_inputs_and_metrics():
    code, out, _ = run("evaluate", "https://host/app?gpu=h200&model=llama-2-13b", "--format", "csv")
    lines = out.strip().split("\n")
    assert code == 0 and len(lines) == 2
    header = lines[0].split(",")
    assert header[0] == "gpu" and "ttft_s" in header
    assert lines[1].startswith("h200,")


def test_bad_input_exits_2_with_one_line_per_key():
    code, out, err = run("evaluate", "batch=abc&tp=99&zz=1")
    assert code == 2 and out == ""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 2
    assert any("batch" in line for line in errors) and any("tp" in line for line in errors)
    assert "warning: 'zz': unknown key" in err
    assert "Traceback" not in err


def test_unknown_model_exits_2():
    code, _, err = run("evaluate", "model=gpt-9")
    assert code == 2 and "model='gpt-9'" in err


def test_sweep_writes_csv_over_ranges():
    code, out, _ = run("sweep", "gpu=h200", "--set", "batch=1:64:x2", "--set", "gpu=h100-sxm,h200")
    lines = out.strip().split("\n")
    assert code == 0 and len(lines) == 1 + 7 * 2


def test_sweep_bad_axis_exits_2():
    code, _, err = run("sweep", "", "--set", "batch=0,5", "--set", "nokey=1")
    assert code == 2
    assert "batch='0'" in err and "'nokey'" in err


def test_module_entry_point_runs_without_traceback():
    p = subprocess.run([sys.executable, "-m", "planner", "evaluate", "tp=abc"], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "tp='abc'" in p.stderr


def test_sweep_warns_about_a_repeated_set_key(tmp_path):
    code, _, err = run("sweep", "", "--set", "batch=1,2", "--set", "batch=4", "--out", str(tmp_path / "s.csv"))
    assert code == 0 and "warning: --set batch: given more than once; the last values are used" in err
    assert "wrote 1 rows" in err


def test_sweep_over_the_budget_exits_2_before_any_work():
    code, out, err = run("sweep", "", "--set", "prompt=1:5000000:1")
    assert code == 2 and out == "" and "5,000,000 values; a sweep has at most 1,000,000 rows" in err


def test_text_output_is_for_people():
    code, out, _ = run("evaluate", "gpu=h200&model=llama-3.1-70b&tp=2")
    assert code == 0
    lines = out.splitlines()
    assert (
        lines[0]
        == "Llama-3.1-70B on 2 × NVIDIA H200 SXM · weights bf16 (checkpoint meta-llama/Llama-3.1-70B) · KV cache bf16 "
        "· attention math bf16 · vLLM 0.33.0 (engine=vllm@0.33)"
    )
    # the time basis in force, and the ceiling its tables are bounded by (docs/kernel_tables.md "Kernel ceilings")
    assert lines[1] == "times: measured kernels (vLLM 0.24.0, NVIDIA H200 SXM, bounded by h100-sxm)"
    assert lines[2] == "inputs: gpu=h200, tp=2, model=llama-3.1-70b"  # only what was given
    for section in (
        "Memory, per GPU",
        "Latency",
        "Throughput and GPU cost (each cost beside the throughput it comes from)",
        "Prompt caching on your GPUs (vLLM/SGLang prefix cache)",
        "Prompt caching, API billing (write 1.25×/2×, read 0.1×)",
    ):
        assert section in lines
    body = "\n".join(lines)
    assert " GiB" in body and " ms" in body and " tok/s" in body and "$" in body
    assert "kv_bytes_per_token" not in body  # metric names are for --format json / csv


def test_text_output_of_a_model_that_does_not_fit_shows_no_latency_numbers():
    code, out, _ = run("evaluate", "model=llama-3.1-405b&gpu=l4")
    assert code == 0 and "fits" in out and "no (smallest tp that fits: 64)" in out
    latency = out.split("\nLatency\n")[1].split("\n\n")[0]
    assert latency.strip().startswith("does not fit in memory at tp 1") and " ms" not in latency


def test_a_closed_pipe_is_not_a_traceback():
    """`kvplan gpus | head -1` used to end in a BrokenPipeError traceback."""
    p = subprocess.run(
        f"{sys.executable} -m planner gpus | head -1", shell=True, capture_output=True, text=True, cwd=ROOT
    )
    assert p.stdout.strip() and "Traceback" not in p.stderr


def test_the_text_header_counts_every_gpu_of_a_parallel_layout():
    """tp8·pp2 is 16 GPUs, not the tp's 8: the header names the instance's GPUs and its layout."""
    code, out, err = run("evaluate", "model=llama-3.1-405b&gpu=h100-sxm&tp=8&pp=2")
    assert code == 0, err
    assert out.splitlines()[0].startswith("Llama-3.1-405B on 16 × NVIDIA H100 SXM (tp8·pp2) · ")
    code, out, _ = run("evaluate", "model=llama-3.1-8b&tp=2")
    assert " on 2 × NVIDIA H100 SXM · " in out.splitlines()[0]


def test_a_compute_bound_decode_with_no_ridge_is_said_to_turn_memory_bound():
    """DeepSeek-V3 fp8 at tp8·pp2: the padded expert GEMMs make the batch-32 step compute-bound, and each
    sequence's KV reads outgrow its arithmetic (no ridge): never "compute-bound; never compute-bound"."""
    code, out, err = run("evaluate", "model=deepseek-v3&gpu=h100-sxm&wdtype=fp8&quant=fp8-block&tp=8&pp=2")
    assert code == 0, err
    line = next(x for x in out.splitlines() if "time per output token" in x)
    assert "(compute-bound; memory-bound at larger batches" in line and "never" not in line
