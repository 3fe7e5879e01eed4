"""``kvplan simulate|size`` with traces, replay options, the prefix cache and fleets (the CLI over sim/ and search/)."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from planner.cli.main import main
from planner.errors import EXIT_BAD_INPUT


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_a_bundled_trace_with_an_unbounded_cache_reports_the_hit_rates_beside_the_percentiles():
    code, out, _ = run(
        "simulate",
        "gpu=h200&tp=4&batch=256&chunk=8192",
        "--trace",
        "mooncake-synthetic",
        "--window",
        "0:120",
        "--scale",
        "2",
        "--prefix-cache",
        "unbounded",
        "--format",
        "json",
    )
    assert code == 0
    record = json.loads(out)
    for key in ("prefix_cache_hit_rate_tokens", "prefix_cache_hit_rate_blocks", "prefix_cache_hit_rate_requests"):
        assert 0 < record[key] <= 1
    assert record["ttft_p99_s"] > 0 and record["prefix_cache"] == "unbounded"
    assert record["prefix_cache_capacity_blocks"] == "n/a"  # unbounded: no finite size
    assert record["traffic"] == "mooncake-synthetic"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("t.csv", "arrival_s,prompt_tokens,output_tokens,prefix_id\n0,900,5,a\n0.5,900,5,a\n1,300,5,\n"),
        ("t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.1,374,44\n2024-05-10 00:00:01,40,4\n"),
        (
            "t.csv",
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,m,400,20,420,x\n9,m,10,0,10,x\n",
        ),
        ("t.jsonl", '{"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [1, 2]}\n'),
    ],
)
def test_every_format_reads_from_a_file_gzipped_or_not(tmp_path, name, text):
    for path, data in ((tmp_path / name, text.encode()), (tmp_path / (name + ".gz"), gzip.compress(text.encode()))):
        path.write_bytes(data)
        code, out, err = run("simulate", "", "--trace", str(path), "--format", "json")
        assert code == 0, err
        assert json.loads(out)["served_requests"] >= 1


def test_a_fleet_lists_its_replicas():
    code, out, _ = run(
        "simulate", "rate=6&sim_requests=300", "--replicas", "3", "--router", "prefix_affinity", "--format", "json"
    )
    assert code == 0
    record = json.loads(out)
    assert record["replicas"] == 3 and len(record["per_replica"]) == 3
    assert sum(r["requests"] for r in record["per_replica"]) == 300
    code, text, _ = run("simulate", "rate=6&sim_requests=300", "--replicas", "2")
    assert "2 replicas, router round_robin" in text and "prefix cache hit rate" in text
    assert "gpu_hit=" in text  # the measured hits, ready for the headline (issue 26)
    assert "SLO met                   " in text and "p99 TTFT ≤ 2.00 s and p99 ITL ≤ 50.0 ms" in text


def test_size_takes_the_same_trace_options():
    code, out, err = run(
        "size",
        "model=llama-3.2-1b&sim_requests=50",
        "--trace",
        "azure-code-2023",
        "--window",
        "0:60",
        "--scale",
        "3",
        "--format",
        "json",
    )
    assert code == 0, err
    assert "requests/s" in json.loads(out)["reason"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("--scale", "2"), "--scale and --window replay a trace"),
        (("--trace", "azure-code-2023", "--window", "10"), "START:DURATION"),
        (("--trace", "azure-code-2023", "--window", "99999:10"), "no requests"),
        (("--trace", "azure-code-2023", "--scale", "0"), "trace_scale"),
        (
            (
                "--trace",
                "missing.csv",
            ),
            "bundled traces",
        ),
        (("--replicas", "0"), "replicas"),
    ],
)
def test_bad_traffic_options_exit_2_with_one_line_each(argv, needle):
    code, _, err = run("simulate", "", *argv)
    assert code == EXIT_BAD_INPUT
    assert needle in err and "Traceback" not in err


def test_a_layout_that_does_not_fit_is_an_error_not_nan():
    code, out, err = run("simulate", "model=llama-3.1-70b", "--format", "json")
    assert code == EXIT_BAD_INPUT and out == ""
    assert "does not fit" in err
