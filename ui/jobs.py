"""Heavy work off the script thread: simulations and fleet sizings run in worker processes.

A visitor's simulation is the one piece of dashboard work that can take tens of seconds
(the simulator's own work budget, ``planner.sim.budget``, bounds it to ≈ 30 s of
steps).  Run on the script thread it would hold the server's interpreter lock (every
other visitor's rerun waits) and its memory would stay in the server process.  So:

* ``WORKERS`` (process-wide, started on first use) keeps ``processes`` worker processes:
  fresh interpreters (``python -m ui.jobs FD LIMIT``, not forks of the threaded server, and
  not multiprocessing children, which would re-run the server's ``__main__`` — Streamlit's
  script), each at a lower CPU priority, with an address-space limit (``MEMORY_LIMIT_BYTES``)
  and one numeric thread, talking to the server over a socket pair;
* ``submit`` queues a job (kind, the scenario's JSON, the traffic) under a result key; a
  job already queued or running under the same key is joined, not repeated;
* each session may have ``PER_SESSION`` jobs at once and the queue holds at most
  ``MAX_QUEUED``: beyond either, ``submit`` raises ``Busy`` with a sentence saying why;
* a job that runs past ``TIME_LIMIT_S`` is stopped (its worker killed and replaced) and
  reported as such; an out-of-memory worker is reported the same way, never a traceback;
* a finished job's value goes into ``RESULTS`` (a byte-bounded cache, ``ui.cache``), where
  the tab finds it on any later rerun — also after the visitor moved on while it ran;
* a sizing or search sends its answer as it improves (``Job.partial``: the screened answer within a
  second, then the table as each candidate is confirmed; sent without the screened points, which only
  the finished value carries); ``cancel`` asks the worker to stop — the run's progress callback raises
  ``planner.errors.Cancelled`` there — and a sizing or search then finishes with what it has, the rest
  screened.

Two pools: ``WORKERS`` for the heavy runs and ``UPLOADS`` (one process, ``UPLOAD_TIME_LIMIT_S``) for every
parse, fit and audit of a visitor's file — a log, benchmark results, a usage log, a trace — so a hostile
file costs a worker's time and memory, never the server's, and never waits behind a sizing
(``ui.job_kinds`` says what each kind runs).

Workers die with the server (issue 31 F12): each worker is the leader of its own process group (its
search pool's children stay in it), it dies with its parent (``planner.lifetime``: Linux's parent-death
signal and a watch thread) and kills its group when it does; a stopped job, the server's exit
(``atexit``) and a replaced worker kill the group too.  A lost connection — the server gone, or a job
it stopped — ends the worker quietly, and the server logs a dead worker in one line, never a traceback.

The tab waits on ``Job.done`` and draws ``Job.progress`` and ``Job.partial`` (``ui.tabs.runs``).  No
streamlit here; the worker side imports only the planner.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from planner.units import GiB, MiB
from ui.cache import BoundedCache
from ui.job_kinds import default_processes

LOG = logging.getLogger("kvplan.jobs")

#: One run's wall-clock limit (the work budget is ≈ 30 s of steps on this 2-core machine; a sizing
#: runs many shorter simulations).
TIME_LIMIT_S = 120.0
#: One worker's address space (numpy's and the simulator's arrays); a run over it fails alone.
MEMORY_LIMIT_BYTES = 3 * GiB
#: Jobs one session may have queued or running at once, and jobs the whole server queues.
PER_SESSION = 1
MAX_QUEUED = 8
#: The worker's CPU priority offset (nice): visitors' reruns in the server come first.
WORKER_NICE = 10
#: Seconds between two progress messages from a worker.
PROGRESS_EVERY_S = 0.2
#: Seconds between two looks at a running job's messages and its cancel request.
POLL_S = 0.25
RESULTS = BoundedCache("simulation results", max_bytes=192 * MiB, max_entries=32)
#: The uploads' pool: one process, a shorter limit (a 50 MiB usage log audits in seconds).
UPLOAD_PROCESSES = 1
UPLOAD_TIME_LIMIT_S = 60.0
UPLOAD_RESULTS = BoundedCache("upload results", max_bytes=160 * MiB, max_entries=48)
#: Seconds a worker is given to exit after its connection closes before its group is killed.
STOP_GRACE_S = 5.0


class Busy(Exception):
    """The job was not queued: the session or the server has as many as it may (the message says which)."""


@dataclass
class Job:
    """One queued or running piece of work, as the script thread sees it."""

    key: str
    session: str
    kind: str
    payload: Any
    queued_at: float = field(default_factory=time.monotonic)
    started_at: float | None = None
    progress: float = 0.0
    note: str = ""  # the run's own words for its progress (the search's stage), when it has them
    partial: Any = None  # the run's answer so far (a sizing or search), replaced as it improves
    partial_count: int = 0  # partials received (a tab redraws when it moves)
    cancel_requested: bool = False
    state: str = "queued"  # queued | running | done | problems | failed
    problems: tuple[str, ...] = ()
    value: Any = None  # the result, also when ``results`` could not keep it (larger than the cache)
    done: threading.Event = field(default_factory=threading.Event)
    id: int = field(default_factory=lambda: next(_IDS))

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - (self.started_at or self.queued_at)


_IDS = itertools.count(1)


# --------------------------------------------------------------------------- the worker process side


def _limit_resources(memory_limit_bytes: int) -> None:
    """In the worker: lower priority and a bounded address space (one BLAS thread: set in its environment)."""
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICE)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit_bytes, memory_limit_bytes))
    except (ImportError, ValueError, OSError):  # not on this platform, or a lower hard limit already
        pass


class _ServerGone(BaseException):
    """The connection to the server is lost (it exited, or stopped this job): the worker ends.  A
    BaseException, so that no ``except Exception`` in the work swallows it."""


_LOST = (BrokenPipeError, ConnectionError, EOFError, OSError)


def _send(conn: Any, message: tuple[str, Any]) -> None:
    try:
        conn.send(message)
    except _LOST:
        raise _ServerGone from None


class _Reporter:
    """The progress callback of one job: a message every ``PROGRESS_EVERY_S`` at most; raises ``Cancelled``
    once the server asked to cancel (it looks for the request at each call)."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.last = conn, 0.0

    def __call__(self, frac: float, note: str = "") -> None:
        from planner.errors import Cancelled

        try:
            tag = self.conn.recv() if self.conn.poll(0) else None
        except _LOST:
            raise _ServerGone from None
        if tag == "cancel":
            raise Cancelled
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            _send(self.conn, ("progress", (float(frac), str(note))))

    def partial(self, value: Any) -> None:
        """The run's answer so far, without what only the finished value needs (``_light``)."""
        _send(self.conn, ("partial", _light(value)))


def _outcome(kind: str, payload: Any, conn: Any, memory_limit_bytes: int) -> tuple[str, Any]:
    """("done", value), ("problems", sentences) or ("failed", the exception's type) of one job."""
    from planner.errors import Cancelled, ProblemsError
    from ui.job_kinds import run_job

    try:
        return "done", run_job(kind, payload, _Reporter(conn))
    except ProblemsError as exc:
        return "problems", list(exc.problems)
    except Cancelled:
        return "problems", ["cancelled"]
    except MemoryError:
        return "problems", [f"the run needed more than {memory_limit_bytes / GiB:g} GiB, the limit for one run"]
    except Exception as exc:  # noqa: BLE001 — reported by type to the visitor, in full to the log
        logging.getLogger("kvplan.jobs.worker").exception("job %s failed", kind)
        return "failed", type(exc).__name__


def _light(value: Any) -> Any:
    """A sizing or search result without its screened points (tens of thousands of rows, sent once at the end)."""
    from dataclasses import replace

    from planner.search.knob_search import SearchResult
    from planner.search.sizing import Sizing

    if isinstance(value, SearchResult):
        return replace(value, points=value.points.iloc[:0], bases=[])
    if isinstance(value, Sizing) and value.search is not None:
        return replace(value, search=_light(value.search))
    return value


def _serve(conn: Any, memory_limit_bytes: int) -> None:
    """A worker's loop: receive (kind, payload), send progress, then the value or the problems; ends quietly
    when the connection is lost."""
    _limit_resources(memory_limit_bytes)
    logging.basicConfig(level=logging.WARNING, format="kvplan worker %(process)d: %(levelname)s %(message)s")
    try:
        while True:
            try:
                message_in = conn.recv()
            except _LOST:
                return
            if message_in == "cancel":  # a cancel that arrived after its job had finished
                continue
            kind, payload = message_in
            message = _outcome(kind, payload, conn, memory_limit_bytes)
            try:
                _send(conn, message)
            except MemoryError:
                _send(conn, ("problems", ["the result was too large to return"]))
    except _ServerGone:
        return


# --------------------------------------------------------------------------- the server side


class _WorkerDied(Exception):
    """The worker process exited while running a job."""


class _Slot:
    """One worker process and the thread that feeds it jobs and enforces the time limit."""

    def __init__(self, pool: Workers, index: int) -> None:
        self.pool, self.index = pool, index
        self.process: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.thread = threading.Thread(target=self._loop, name=f"kvplan-worker-{index}", daemon=True)
        self.thread.start()

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        env = {**os.environ, **{v: "1" for v in _THREAD_VARS}}
        env["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ui.jobs",
                str(theirs.fileno()),
                str(self.pool.memory_limit_bytes),
                str(os.getpid()),
            ],
            pass_fds=(theirs.fileno(),),
            env=env,
            cwd=str(_ROOT),
            stdin=subprocess.DEVNULL,
            process_group=0,  # its own group: stopping it stops its search pool too
        )
        theirs.close()
        self.conn = Connection(ours.detach())

    def _stop(self) -> None:
        """Kill the worker's whole process group (it and the pool it started), then close the connection."""
        if self.process is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=STOP_GRACE_S)
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def _loop(self) -> None:
        while True:
            job = self.pool.jobs.get()
            if job is None:
                self._stop()
                return
            try:
                self._run(job)
            except _LOST + (_WorkerDied,) as exc:  # a lost pipe or a dead worker: one line, no traceback
                code = self.process.poll() if self.process is not None else None
                LOG.warning("worker %s lost job %s (%s; exit code %s)", self.index, job.kind, type(exc).__name__, code)
                self._stop()
                self.pool.finish(job, "failed", problems=("the worker stopped unexpectedly",))
            except Exception:  # noqa: BLE001 — anything else: this job fails, the slot lives on
                LOG.exception("worker %s lost job %s", self.index, job.kind)
                self._stop()
                self.pool.finish(job, "failed", problems=("the worker stopped unexpectedly",))

    def _run(self, job: Job) -> None:
        if job.cancel_requested:
            self.pool.finish(job, "problems", problems=("cancelled before it started",))
            return
        if not self.alive():
            self._stop()
            self._start()
        assert self.conn is not None
        job.state, job.started_at = "running", time.monotonic()
        try:
            self.conn.send((job.kind, job.payload))
        except _LOST:  # the idle worker had died: one fresh start
            self._stop()
            self._start()
            assert self.conn is not None
            self.conn.send((job.kind, job.payload))
        deadline = job.started_at + self.pool.time_limit_s
        cancel_sent = False
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._stop()
                limit = f"{self.pool.time_limit_s:g} s"
                self.pool.finish(job, "problems", problems=(f"stopped after {limit}, the limit for one run",))
                return
            if job.cancel_requested and not cancel_sent:
                self.conn.send("cancel")  # the worker's progress callback raises Cancelled at its next call
                cancel_sent = True
            if not self.conn.poll(min(left, POLL_S)):
                if not self.alive():
                    raise _WorkerDied
                continue
            tag, value = self.conn.recv()
            if tag == "progress":
                job.progress, job.note = value
                continue
            if tag == "partial":
                job.partial, job.partial_count = value, job.partial_count + 1
                continue
            if tag == "done":
                self.pool.finish(job, "done", value=value)
            elif tag == "problems":
                self.pool.finish(job, "problems", problems=tuple(value))
            else:
                self.pool.finish(job, "failed", problems=(f"the run failed ({value}); it was logged on the server",))
            return


class Workers:
    """The worker pool and its bookkeeping (module doc).  Thread-safe."""

    def __init__(
        self,
        processes: int | None = None,
        time_limit_s: float = TIME_LIMIT_S,
        per_session: int = PER_SESSION,
        max_queued: int = MAX_QUEUED,
        memory_limit_bytes: int = MEMORY_LIMIT_BYTES,
        results: BoundedCache = RESULTS,
    ) -> None:
        self.processes = processes or default_processes()
        self.time_limit_s, self.per_session, self.max_queued = time_limit_s, per_session, max_queued
        self.memory_limit_bytes = memory_limit_bytes
        self.results = results
        self.jobs: queue.Queue[Job | None] = queue.Queue()
        self._lock = threading.Lock()
        self._active: dict[str, Job] = {}  # key -> queued or running job
        self._slots: list[_Slot] = []

    def _ensure_started(self) -> None:
        if not self._slots:
            self._slots = [_Slot(self, i) for i in range(self.processes)]

    def find(self, key: str) -> Job | None:
        """The queued or running job under ``key``, if any."""
        with self._lock:
            return self._active.get(key)

    def submit(self, session: str, key: str, kind: str, payload: Any) -> Job:
        """Queue ``kind`` for ``payload`` under result ``key`` (joined when already active); raises Busy."""
        with self._lock:
            same = self._active.get(key)
            if same is not None:
                return same
            mine = [j for j in self._active.values() if j.session == session]
            if len(mine) >= self.per_session:
                running = mine[0]
                raise Busy(
                    f"your previous {_WORDS.get(running.kind, running.kind)} is still running "
                    f"({running.elapsed_s:.0f} s so far; each visitor runs {self.per_session} at a time, at most "
                    f"{self.time_limit_s:g} s each); its result will show here when it is done"
                )
            waiting = sum(j.state == "queued" for j in self._active.values())
            if waiting >= self.max_queued:
                raise Busy(f"the server is busy ({waiting} runs are waiting); try again in a minute")
            job = Job(key, session, kind, payload)
            self._active[key] = job
            self._ensure_started()
        self.jobs.put(job)
        return job

    def finish(self, job: Job, state: str, value: Any = None, problems: tuple[str, ...] = ()) -> None:
        """Record a job's end: its value into ``results`` (state "done") or its problems; wake the waiters."""
        if state == "done":
            self.results.put(job.key, value)
        job.state, job.problems, job.progress, job.value = state, problems, 1.0, value
        with self._lock:
            if self._active.get(job.key) is job:
                del self._active[job.key]
        job.done.set()

    def cancel(self, key: str) -> bool:
        """Ask the job under ``key`` to stop (module doc); False when none is queued or running."""
        with self._lock:
            job = self._active.get(key)
        if job is None:
            return False
        job.cancel_requested = True
        return True

    def stats(self) -> dict[str, Any]:
        with self._lock:
            active = list(self._active.values())
        return {
            "processes": self.processes,
            "running": sum(j.state == "running" for j in active),
            "queued": sum(j.state == "queued" for j in active),
            "worker_pids": [s.process.pid for s in self._slots if s.process is not None and s.alive()],
        }


#: The numeric libraries' thread counts, 1 in a worker (set in its environment before numpy loads).
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: The folder that holds ``ui`` and ``planner`` (a worker imports them from there).
_ROOT = Path(__file__).resolve().parent.parent


_WORDS = {
    "simulate": "simulation",
    "size": "fleet sizing",
    "search": "search",
    "simulate_point": "simulation",
    "check_log": "log check",
    "calibrate": "calibration",
    "bench_results": "results check",
    "audit_usage": "usage-log audit",
    "parse_trace": "trace check",
}
WORKERS = Workers()
UPLOADS = Workers(processes=UPLOAD_PROCESSES, time_limit_s=UPLOAD_TIME_LIMIT_S, results=UPLOAD_RESULTS)


def stop_all() -> None:
    """Kill every worker's process group (the server is exiting)."""
    for pool in (WORKERS, UPLOADS):
        for slot in pool._slots:
            with contextlib.suppress(Exception):
                slot._stop()


atexit.register(stop_all)


def main(argv: list[str]) -> None:
    """A worker process: ``python -m ui.jobs FD MEMORY_LIMIT_BYTES PARENT_PID`` (started by ``_Slot``); it dies
    with its parent, taking its process group along (``planner.lifetime``)."""
    from planner.lifetime import die_with_parent

    if len(argv) > 2:
        die_with_parent(int(argv[2]))
    _serve(Connection(int(argv[0])), int(argv[1]))


if __name__ == "__main__":
    main(sys.argv[1:])
