"""``kvplan size --search`` and ``kvplan pareto`` (planner/cli over planner/search/knob_search.py)."""

from __future__ import annotations

import csv
import io
import json

from planner.cli.main import main
from planner.links import from_query

SMALL = "model=llama-3.2-1b&rate=20&sim_requests=200&gpu=l4"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_size_searches_the_knobs_and_prints_the_answer_and_its_link():
    code, out, err = run("size", SMALL, "--search", "batch,chunk", "--format", "json")
    assert code == 0, err
    record = json.loads(out)
    assert record["reason"].startswith("Cheapest way to meet p99 TTFT ≤ 2.00 s and p99 ITL ≤ 50.0 ms")
    assert record["search"]["knobs"] == "batch,chunk" and record["search"]["configurations_scored"] > 1000
    best = record["table"][record["best_row"]]
    assert best["status"] == "meets SLOs" and best["binding"]
    s, issues = from_query(record["search"]["best_link"])
    assert not issues and (s.batch, s.chunk, s.replicas) == (best["batch"], best["chunk"], best["replicas"])
    code, text, _ = run("size", SMALL, "--search", "batch")
    assert code == 0 and "← best" in text and "screened" in text and "binding / status" in text


def test_every_sized_row_names_the_basis_of_its_step_times():
    """The time basis per row: the whole label in JSON/CSV (``time_basis``), a word in the text table's
    ``times`` column and each distinct label under it — the H100's measured vLLM kernels, the MI300X's roofline."""
    args = ("size", SMALL, "--search", "batch", "--gpus", "h100-sxm,mi300x")
    code, out, err = run(*args, "--format", "json")
    assert code == 0, err
    bases = {row["gpu"]: row["time_basis"] for row in json.loads(out)["table"]}
    assert bases["h100-sxm"] == "measured kernels (vLLM 0.24.0, NVIDIA H100 SXM)"
    assert bases["mi300x"].startswith("fitted roofline") and "AMD Instinct MI300X" in bases["mi300x"]
    code, csv_text, _ = run(*args, "--format", "csv")
    assert "time_basis" in csv_text.splitlines()[0] and bases["h100-sxm"] in csv_text
    code, text, _ = run(*args)
    rows = {line.split()[0]: line for line in text.splitlines() if "colocated" in line}
    assert "  kernels   " in rows["h100-sxm"] and "  roofline  " in rows["mi300x"]
    assert {f"times: {b}" for b in bases.values()} <= set(text.splitlines())


def test_size_without_knobs_is_the_gpu_by_tp_table():
    code, text, err = run("size", SMALL, "--search", "none")
    assert code == 0, err
    assert "Disaggregated prefill/decode pools (estimate" in text and "binding" not in text


def test_a_bad_knob_is_named_with_the_allowed_ones():
    code, _, err = run("size", SMALL, "--search", "batch,fp4")
    assert code == 2
    assert err.startswith("error: search") and "fp4" in err and "batch, chunk, kvdtype, wdtype, spec, disagg" in err


def test_pareto_writes_every_point_and_prints_the_frontiers(tmp_path):
    path = tmp_path / "points.csv"
    code, text, err = run("pareto", SMALL, "--search", "batch,chunk,kvdtype", "--out", str(path))
    assert code == 0, err
    assert "points on the frontier" in text and "wrote" in err
    rows = list(csv.DictReader(path.open()))
    assert len(rows) > 1000
    assert {"point", "gpu", "batch", "chunk", "kvdtype", "binding", "throughput_frontier", "cost_frontier"} <= set(
        rows[0]
    )
    on = [r for r in rows if r["throughput_frontier"] == "true"]
    assert on and all(r["meets_slo"] == "true" for r in on)
    assert {r["kvdtype"] for r in rows} == {"bf16", "fp8"}
    code, out, _ = run("pareto", SMALL, "--search", "batch", "--format", "csv")
    assert code == 0 and out.startswith("point,mode,gpu")


def test_size_on_the_gpus_asked_for_and_an_unknown_key_named():
    code, text, err = run("size", SMALL, "--search", "none", "--gpus", "l4")
    assert code == 0, err
    rows = [line.split()[0] for line in text.splitlines() if line.startswith(("l4 ", "h100", "a100", "rtx"))]
    assert rows and set(rows) == {"l4"}
    code, _, err = run("size", SMALL, "--gpus", "l4,nope")
    assert code == 2 and "--gpus: unknown GPU profile 'nope'; choose from " in err and "h100-sxm" in err


def test_f6_a_whole_knob_search_ends_within_its_time_budget_with_every_candidate_shown():
    """Issue 31 F6: `kvplan size "model=llama-3.1-70b&rate=50&sim_requests=100000" --search
    batch,chunk,kvdtype,wdtype,spec,disagg` ran past 120 s with no bound.  The sizing has one time budget for
    the whole run (planner/search/limits.py, --time-budget): what it has not confirmed when the budget ends is
    shown with the screening model's numbers, marked, never dropped."""
    link = "model=llama-3.1-70b&rate=50&sim_requests=100000"
    code, out, err = run("size", link, "--search", "batch,chunk,kvdtype,wdtype,spec,disagg", "--time-budget", "3")
    assert code == 0, err
    assert "the 3 s time budget ran out: the rest are the screening model's estimates" in out
    rows = [line for line in out.splitlines() if "  colocated  " in line or "  disaggregated  " in line]
    assert rows and all(("simulated" in r) or ("screened" in r) for r in rows)  # every candidate, its basis
