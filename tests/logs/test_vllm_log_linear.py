"""Issue 31, F1: logs that repeat a phrase on one line, each under the 8,000,000-character read limit,
made ``kvplan check-log`` run for minutes (four quadratic patterns).  Each reproducer, from its own input,
goes through the CLI in a child process (the ``re`` engine cannot be interrupted: a regression fails the
test at the timeout instead of hanging the suite); each must finish in ``BOUND_S`` — a hang guard, not a
timed performance claim (it was > 120 s) — with exit 0 (terms read) or 2 (one ``error:`` line)."""

from __future__ import annotations

import json
import subprocess
import sys

from planner.logs.vllm_log import parse_vllm_log
from tests.paths import ROOT

BOUND_S = 10.0
TIMEOUT_S = 240
REPRODUCERS = {
    "v0_profile": "Memory profiling results: total_gpu_memory=1GiB" * 20_000,  # 940 KB, was > 120 s
    "snapshot": "worker init memory snapshot: " * 20_000,  # 580 KB, was > 120 s
    "args": "non-default args: {" * 20_000,  # 380 KB, was 16 s
    "engine_config": "LLM engine (v" * 80_000,  # 1 MB: `\(v[^)]*\)` scanned to the end from each
    "error_name": "pydantic" * 125_000,  # 1 MB: `pydantic[\w.]*ValidationError` the same
}
_DRIVER = """
import io, json, sys, time
from planner.cli.main import main
for path in sys.argv[1:]:
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    rc = main(["check-log", "", "--log", path], out=out, err=err)
    print(json.dumps({"path": path, "rc": rc, "s": time.perf_counter() - t0, "err": err.getvalue()}), flush=True)
"""


def test_f1_reproducers_through_the_cli_finish_at_once(tmp_path):
    paths = []
    for name, text in REPRODUCERS.items():
        (tmp_path / f"{name}.log").write_text(text, encoding="utf-8")
        paths.append(str(tmp_path / f"{name}.log"))
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, *paths], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert proc.returncode == 0, proc.stderr
    runs = {json.loads(line)["path"]: json.loads(line) for line in proc.stdout.splitlines()}
    assert set(runs) == set(paths)
    for run in runs.values():
        assert run["s"] < BOUND_S, run
        assert run["rc"] in (0, 2) and "Traceback" not in run["err"], run
    assert "no vLLM start-up memory line found" in runs[paths[1]]["err"]


def test_the_one_pass_searches_find_what_the_patterns_found():
    """``head.*?tail`` on one line, and ``non-default args: {…}`` to the line's last brace, as before."""
    text = (
        "worker init memory snapshot: torch_peak=0.1GiB\n"  # no tail on this line
        "x worker init memory snapshot: a=1 worker init memory snapshot: non_torch_memory=0.51GiB\n"
        "Memory profiling results: total_gpu_memory=79.19GiB initial_memory_usage=1.0GiB peak_torch_memory=2.5GiB "
        "non_torch_memory=0.2GiB kv_cache_size=60.0GiB gpu_memory_utilization=0.90\n"
        "non-default args: {'model': 'a'\n"  # no closing brace on this line
        "non-default args: {'model': 'b', 'max_model_len': 4096} trailing}\n"
    )
    with_args = text.replace(" trailing}", "")
    log = parse_vllm_log(with_args)
    assert log.startup_baseline_gib == 0.51 and log.v0_engine and log.total_memory_gib == 79.19
    assert log.model == "b" and log.max_model_len == 4096
    assert parse_vllm_log(text).model is None  # `{…} trailing}` is not a dict literal: the args are not read
