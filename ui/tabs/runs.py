"""Waiting on a worker run from a tab (``ui.jobs``): the visitor's session id for the one-run rule, and
the wait with its progress bar.  One rule for every tab that starts runs.  ``upload_job``: a visitor's
file parsed, fitted or audited in the uploads' pool, its outcome — the value, or the problems — kept per
content (a bad file is read once, not at every rerun)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Hashable
from typing import Any

from planner.units import MiB
from ui.cache import BoundedCache
from ui.jobs import UPLOAD_RESULTS, UPLOADS, Busy, Job
from ui.timing import mark_waited

#: The problems of refused uploads, by job key (small: sentences).
UPLOAD_PROBLEMS = BoundedCache("refused uploads", max_bytes=4 * MiB, max_entries=256)

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
    mark_waited()
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


def content_key(*parts: Hashable | bytes | str) -> str:
    """A job key from the upload's content and its settings (bytes and long text by SHA-256)."""
    out = []
    for part in parts:
        if isinstance(part, bytes | str) and len(part) > 64:
            data = part.encode("utf-8", errors="surrogatepass") if isinstance(part, str) else part
            out.append(hashlib.sha256(data).hexdigest())
        else:
            out.append(repr(part))
    return "|".join(out)


def upload_job(st: Any, kind: str, key: str, payload: Any, text: str) -> tuple[Any, tuple[str, ...]]:
    """(value, ()) or (None, problems) of the upload job ``kind`` on ``payload`` (``ui.job_kinds``), from the
    cache when it ran before, else run in the uploads' pool while this rerun waits (progress after a
    second).  A full pool or a second run of the visitor's: (None, ("Not started: …",))."""
    key = f"{kind}|{key}"
    found = UPLOAD_RESULTS.get(key, _MISSING)
    if found is not _MISSING:
        return found, ()
    refused = UPLOAD_PROBLEMS.get(key)
    if refused is not None:
        return None, refused
    job = UPLOADS.find(key)
    if job is None:
        try:
            job = UPLOADS.submit(session_id(st), key, kind, payload)
        except Busy as exc:
            return None, (f"Not started: {exc}.",)
    wait(st.empty(), job, text)
    if job.state == "done":
        return job.value, ()
    if job.state == "problems":
        UPLOAD_PROBLEMS.put(key, job.problems)
    return None, job.problems


_MISSING = object()


def cancel_button(st: Any, job: Job, key: str, label: str = "Cancel") -> None:
    """A button that asks the running ``job`` to stop (``ui.jobs.Workers.cancel``): a sizing or search then
    finishes with what it has confirmed, the rest shown with the screening model's numbers."""
    from ui.jobs import WORKERS

    if st.button(label, key=key, icon=":material/stop_circle:", disabled=job.cancel_requested):
        WORKERS.cancel(job.key)
