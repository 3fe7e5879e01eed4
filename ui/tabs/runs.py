"""Waiting on a worker run from a tab (``ui.jobs``): the visitor's session id for the one-run rule, and
the wait with its progress bar.  One rule for every tab that starts runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from ui.jobs import Job

SESSION_KEY = "_session_id"
PROGRESS_AFTER_S = 1.0
WAIT_POLL_S = 0.25


def session_id(st: Any) -> str:
    """This visitor's session, for the one-run-at-a-time rule (a random id kept in session state)."""
    return st.session_state.setdefault(SESSION_KEY, uuid.uuid4().hex)


def wait(slot: Any, job: Job, text: str, on_partial: Callable[[Any], None] | None = None) -> None:
    """Wait for ``job`` in the script thread (the work is in a worker), a progress bar in ``slot`` once it
    has taken a second, and ``on_partial(answer so far)`` each time the run sends a better one (a sizing:
    its screened answer at once, then each confirmation).  A rerun meanwhile interrupts only the waiting:
    the run goes on, and its result shows on any later rerun."""
    seen = 0
    while not job.done.wait(WAIT_POLL_S):
        if on_partial is not None and job.partial_count != seen and job.partial is not None:
            seen = job.partial_count
            on_partial(job.partial)
        if job.elapsed_s > PROGRESS_AFTER_S:
            where = "waiting for a free worker" if job.state == "queued" else f"{job.elapsed_s:.0f} s"
            if job.cancel_requested:
                where += ", cancelling: what is confirmed so far will show"
            slot.progress(min(max(job.progress, 0.0), 1.0), text=f"{text} ({where})")
    slot.empty()


def cancel_button(st: Any, job: Job, key: str, label: str = "Cancel") -> None:
    """A button that asks the running ``job`` to stop (``ui.jobs.Workers.cancel``): a sizing or search then
    finishes with what it has confirmed, the rest shown with the screening model's numbers."""
    from ui.jobs import WORKERS

    if st.button(label, key=key, icon=":material/stop_circle:", disabled=job.cancel_requested):
        WORKERS.cancel(job.key)
