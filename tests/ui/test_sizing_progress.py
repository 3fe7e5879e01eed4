"""The dashboard's sizing answers at once and improves in place (ui/jobs.py partials, ui/tabs/runs.py,
ui/tabs/sizing_view.py): the worker sends the screened answer, then each confirmation; Cancel keeps what
is confirmed, the rest screened; the finished table says each row's basis."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from tests.ui.shown import plain
from tests.ui.test_simulate_tab import app, press

BIG = Scenario(model="llama-3.1-70b", prompt=4000, output=500, rate=200.0)
#: Its sizing on 20,000 requests per run: still confirming when the test cancels (the search's default sample of
#: 3,600 confirms it in a few seconds, which a fast machine could finish before the cancel arrives).
SLOW = BIG.with_changes(sim_requests=20000)


def test_a_sizing_job_sends_its_screened_answer_then_stops_on_cancel_with_what_it_has():
    from ui.jobs import RESULTS, WORKERS

    key = f"size|test-cancel|{time.time()}"
    job = WORKERS.submit("test-session-cancel", key, "size", (SLOW.model_dump_json(), None))
    deadline = time.monotonic() + 60
    while job.partial_count == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    first = job.partial
    assert first is not None and first.search is not None and first.search.confirmed == 0
    assert (first.table["basis"] == "screened").all() and first.search.points.empty  # sent without the points
    assert WORKERS.cancel(key)
    assert job.done.wait(60) and job.state == "done"
    z = RESULTS.get(key)
    assert z.search.stopped == "cancelled" and len(z.table) == len(first.table)
    assert (z.table["basis"] == "screened").sum() >= 1 and len(z.search.points) > 1000  # the final carries points
    assert not WORKERS.cancel(key)  # nothing left to cancel


def _partial_page() -> None:
    import streamlit as st

    from planner.model.catalog import load_catalog
    from planner.model.scenario import Scenario
    from planner.search.sizing import size_fleet
    from ui.tabs.sizing_view import show_partial_sizing

    s = Scenario(model="llama-3.2-1b", rate=20.0, sim_requests=200, search="batch")
    z = size_fleet(s, load_catalog(), gpus=["l4", "h100-sxm"], search=True, time_budget_s=1e-9)
    show_partial_sizing(st, z)


def test_the_answer_so_far_is_drawn_with_its_basis_and_no_widgets():
    at = AppTest.from_function(_partial_page, default_timeout=60).run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.info and plain(at.info[0].value).startswith("Screening model (not confirmed by simulation yet)")
    assert "basis" in at.dataframe[0].value.columns and set(at.dataframe[0].value["basis"]) == {"screened"}
    assert not at.button and not at.selectbox  # the finished view owns the widgets' keys


def test_the_finished_sizing_says_each_rows_basis():
    at = app(Scenario(sim_requests=20, model="llama-3.2-1b", rate=5.0))
    press(at, "Size the fleet")
    table = at.dataframe[0].value
    # nothing left screened: each row simulated, or shown unable to win by its price alone ('price', no run)
    assert "simulated" in set(table["basis"]) and set(table["basis"]) <= {"simulated", "price"}
    priced = table["basis"] == "price"
    assert table.loc[priced, "status"].str.startswith("cannot win: one replica costs").all()
    # what each run simulated: behind the default round-robin router one replica at its share of the fleet
    shown = table.loc[~priced, "simulated fleet"]
    assert shown.str.fullmatch(r"1 of [\d,]+ replicas? \(its share, round_robin\)").all(), list(shown)
    assert any("candidates in" in c.value and "simulated" in c.value for c in at.caption)
    assert not [b for b in at.button if b.label.startswith("Cancel")]  # gone with the run


def test_the_page_screens_in_process_while_the_worker_starts(catalog):
    from planner.search.sizing import screened_answer

    z = screened_answer(BIG, catalog)
    assert z.search is not None and z.search.simulations == 0 and z.search.confirmed == 0
    assert (z.table["basis"] == "screened").all() and z.best is not None and z.disaggregated.empty
    assert plain(z.reason).startswith("Screening model (not confirmed by simulation yet)")
