"""Child processes that die with their parent (issue 31 F12: stopping ``kvplan serve`` left workers running).

Two mechanisms, each enough alone, together robust:

* ``die_with_parent`` asks Linux to send ``sig`` to this process when its parent exits
  (``prctl(PR_SET_PDEATHSIG)`` through ctypes; a no-op elsewhere), and checks that the parent it was
  started by is still the parent (it may have died before the call: then ``on_death`` runs at once);
* ``watch_parent`` starts a daemon thread that checks every ``WATCH_EVERY_S`` whether the parent is still
  there (``os.getppid`` changes when a process is re-parented), for the platforms without the signal and
  for a parent that died between fork and the ``prctl``.

The dashboard's worker processes (``ui.jobs``) run each in its own process group with its own children
(the search's confirmation pool), so their ``on_death`` kills the whole group; ``kvplan serve`` starts
the dashboard the same way (``planner.cli.serve``).  Standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

#: ``PR_SET_PDEATHSIG`` from <linux/prctl.h>.
PR_SET_PDEATHSIG = 1
#: Seconds between two checks of the parent by ``watch_parent``.
WATCH_EVERY_S = 0.5


def set_parent_death_signal(sig: int) -> bool:
    """Linux: deliver ``sig`` to this process when its parent exits.  False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def kill_own_group() -> None:
    """SIGKILL this process's whole process group (this process and every child that stayed in it)."""
    with contextlib.suppress(OSError):
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os._exit(1)


def watch_parent(parent_pid: int, on_death: Callable[[], None], every_s: float = WATCH_EVERY_S) -> threading.Thread:
    """A daemon thread that calls ``on_death`` once the parent ``parent_pid`` is gone (module doc)."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(every_s)
        on_death()

    thread = threading.Thread(target=watch, name="kvplan-parent-watch", daemon=True)
    thread.start()
    return thread


def die_with_parent(parent_pid: int, on_death: Callable[[], None] = kill_own_group) -> None:
    """In a child: ``on_death`` when the parent ``parent_pid`` exits — by SIGTERM from Linux (handled here)
    and by the watch thread; at once when the parent is already gone."""
    if set_parent_death_signal(signal.SIGTERM):
        signal.signal(signal.SIGTERM, lambda _sig, _frame: on_death())
        # A child forked from here (the search's process pool) must not inherit the handler: the pool stops its
        # children with SIGTERM, and the inherited handler would kill the whole group, this process included.
        os.register_at_fork(after_in_child=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    if os.getppid() != parent_pid:
        on_death()
        return
    watch_parent(parent_pid, on_death)
