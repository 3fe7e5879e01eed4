"""The server's own rerun timing (ui/timing.py), which the load test reads: one JSON line per script run when
KVPLAN_TIMING_LOG is set, nothing otherwise."""

from __future__ import annotations

import json

from tests.tab_harness import run_app
from ui.timing import TIMING_LOG_ENV


def test_each_script_run_is_timed_into_the_log(tmp_path, monkeypatch):
    log = tmp_path / "timing.jsonl"
    monkeypatch.setenv(TIMING_LOG_ENV, str(log))
    at = run_app({"batch": "64"})
    at.run()
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 2 and all(r["status"] == "done" and not r["waited"] for r in rows)
    assert all(0 < r["cpu_s"] <= r["wall_s"] + 0.05 and r["session"] for r in rows)


def test_nothing_is_written_without_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv(TIMING_LOG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    run_app()
    assert list(tmp_path.iterdir()) == []
