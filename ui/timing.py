"""Server-side rerun timing: what the server itself spends on each visitor's rerun, apart from any browser.

With ``KVPLAN_TIMING_LOG=PATH`` in the server's environment (the load test sets it; nothing is written
otherwise), every script run appends one JSON line to PATH:

  session   the visitor's Streamlit session id
  tab       the tab shown (``_tab`` in session state)
  start     when the run began (epoch seconds)
  wall_s    the run's wall time in the server, script start to script end (perf_counter)
  cpu_s     CPU seconds of the script thread in that time (thread_time)
  waited    True when the run waited on a worker job (``ui.tabs.runs.wait``): its wall time is the job's,
            not the server's work
  status    "done", or "interrupted" (a newer rerun of the same session stopped it)

``timed(run)`` wraps the page's ``main``.  No streamlit import at module level.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

TIMING_LOG_ENV = "KVPLAN_TIMING_LOG"
_LOCK = threading.Lock()
_RUN = threading.local()  # one script run per thread (Streamlit's script runner)


def mark_waited() -> None:
    """Record that this script run waits on a worker job."""
    _RUN.waited = True


def _session_and_tab() -> tuple[str, str]:
    import streamlit as st
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return (ctx.session_id if ctx is not None else ""), str(st.session_state.get("_tab", ""))


def timed(run: Callable[[], Any]) -> None:
    """``run()``, timed into ``$KVPLAN_TIMING_LOG`` when it is set (module doc)."""
    path = os.environ.get(TIMING_LOG_ENV)
    if not path:
        run()
        return
    _RUN.waited = False
    start, t0, c0 = time.time(), time.perf_counter(), time.thread_time()
    status = "interrupted"
    try:
        run()
        status = "done"
    finally:
        wall, cpu = time.perf_counter() - t0, time.thread_time() - c0
        session, tab = _session_and_tab()
        line = dict(session=session, tab=tab, start=start, wall_s=wall, cpu_s=cpu, waited=_RUN.waited, status=status)
        with _LOCK, open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")
