"""Every parse, fit and audit of a visitor's file runs in the uploads' worker (ui/jobs.py UPLOADS), never in
the server process (issue 31: a 380 KB log stalled every visitor's page while the Check-a-log tab parsed it;
the Cross-check tab fitted 10,000 runs for 21 s in the server).  Each test replaces the reader in the server
process by one that fails, and the tab still shows the result: it came from the worker.  F3's and F4's files
get their refusal on the page, not "internal error"."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from tests.calibration.test_calibration import _as_vllm, _synthetic_runs, vllm_result
from tests.paths import ROOT
from tests.tab_harness import tab_page
from tests.ui.shown import plain

LOGS = ROOT / "tests" / "data" / "vllm_logs"


def _not_here(*args, **kwargs):
    raise AssertionError("an upload was read in the server process")


def _forbid(monkeypatch, module, *names: str) -> None:
    """Replace each function, under every name any loaded module binds it to, by ``_not_here``."""
    import sys

    for name in names:
        original = getattr(module, name)
        for loaded in list(sys.modules.values()):
            for attr, value in list(vars(loaded).items()) if loaded is not None else ():
                if value is original:
                    monkeypatch.setattr(loaded, attr, _not_here)


def app(tab: str, scenario: Scenario | None = None) -> AppTest:
    at = AppTest.from_function(tab_page, args=(tab,), default_timeout=90)
    at.session_state["scenario"] = (scenario or Scenario()).model_dump_json()
    return at.run()


def test_check_a_log_reads_in_the_worker(monkeypatch):
    import planner.logs.check
    import planner.logs.vllm_log
    import ui.tabs.log_check  # noqa: F401 — loaded, so that its names are replaced too

    _forbid(monkeypatch, planner.logs.vllm_log, "parse_vllm_log")
    _forbid(monkeypatch, planner.logs.check, "check_log")
    at = app("ui.tabs.log_check", Scenario(model="qwen2.5-72b"))
    at.text_area(key="_log_text").set_value((LOGS / "qwen25_72b_tp2.log").read_text(encoding="utf-8")).run()
    assert not at.exception, [e.message for e in at.exception]
    frame = at.dataframe[0].value.set_index("term")
    assert (
        frame.loc["GPU KV cache size (pool)", "logged"] == "19,920"
    )  # a vLLM 0.19 log: its pool's tokens, as the page writes numbers


def test_an_f1_log_is_read_in_the_worker_at_once():
    at = app("ui.tabs.log_check")
    at.text_area(key="_log_text").set_value("non-default args: {" * 20_000).run()
    assert not at.exception and "no vLLM start-up memory line found" in plain(at.error[0].value)


def test_an_absurd_log_offers_no_figures():
    from tests.logs.test_check import ABSURD_LOG

    at = app("ui.tabs.log_check")
    at.text_area(key="_log_text").set_value(ABSURD_LOG).run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "log_apply"]
    assert "not calibrated: the log's total device memory" in plain(at.warning[0].value)


def _serving(monkeypatch, files) -> AppTest:
    import ui.tabs.crosscheck as tab

    monkeypatch.setattr(tab, "_serving_uploads", lambda st: files)
    at = app("ui.tabs.crosscheck")
    at.radio(key="xc_mode").set_value(tab.SERVING).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_cross_check_fits_in_the_worker(monkeypatch, catalog):
    import planner.calibration.calibrate
    import ui.tabs.crosscheck  # noqa: F401

    _forbid(monkeypatch, planner.calibration.calibrate, "calibrate", "read_runs")
    runs, _ = _synthetic_runs(catalog)
    at = _serving(monkeypatch, [(f"{r.label}.json", json.dumps(_as_vllm(r)).encode()) for r in runs])
    assert {m.label: m.value for m in at.metric}["Runs"] == "4"


def test_f3_f4_files_are_refused_on_the_page(monkeypatch):
    from tests.calibration.test_calibration_hardening import _short_run

    many = json.dumps([_short_run(i) for i in range(60_000)]).encode()
    at = _serving(monkeypatch, [("many.json", many)])
    shown = " ".join(plain(e.value) for e in at.error)  # the predict-beside table's refusal, then the calibration's
    assert "many.json: 60,000 runs" in shown and "at most 1,000 runs" in shown
    huge = json.dumps(vllm_result(16, 4.0, 50.0, 12.0, 3600.0)).replace("1000000", "1" + "0" * 399).encode()
    at = _serving(monkeypatch, [("huge.json", huge)])
    shown = " ".join(plain(e.value) for e in at.error)
    assert "total_input_tokens (400 digits)" in shown and "internal error" not in shown


def test_the_usage_log_audit_runs_in_the_worker(monkeypatch):
    import planner.prompts.usage_audit
    import ui.tabs.prompt_layout  # noqa: F401

    _forbid(monkeypatch, planner.prompts.usage_audit, "parse_usage_log", "audit")
    at = app("ui.tabs.prompt_layout")
    at.button(key="pl_example").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert {m.label: m.value for m in at.metric}["Requests"] == "170"


@pytest.mark.parametrize("bad", [False, True])
def test_an_uploaded_trace_is_read_in_the_worker(monkeypatch, bad):
    import planner.sim.traces
    import ui.tabs.simulate  # noqa: F401

    _forbid(monkeypatch, planner.sim.traces, "parse_trace")
    rows = "0,10,5\n1,-4,5\n" if bad else "".join(f"{t},{100 + t},{10 + t % 5}\n" for t in range(40))
    at = app("ui.tabs.simulate", Scenario(sim_requests=100))
    data = ("arrival_s,prompt_tokens,output_tokens\n" + rows).encode()
    at.file_uploader(key="_sim_w_upload").set_value(("trace.csv", data, "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    if bad:
        next(b for b in at.button if b.label == "Simulate").click().run()
        assert any("row 2 (line 3): prompt_tokens" in e.value.replace("\\", "") for e in at.error)
    else:
        assert any("40 requests over" in c.value for c in at.caption)
