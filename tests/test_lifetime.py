"""planner/lifetime.py: a worker dies with its parent, and a child it forks does not inherit that rule
(the search's process pool stops its children with SIGTERM: the inherited handler killed the worker)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_forked_child_stopped_with_sigterm_leaves_its_parent_alive():
    code = textwrap.dedent(
        """
        import os, signal, time
        from planner.lifetime import die_with_parent
        die_with_parent(os.getppid())
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)  # the rule is in force here
        ready_r, ready_w = os.pipe()
        child = os.fork()
        if child == 0:
            os.write(ready_w, b"1")  # running: the fork hooks have run
            time.sleep(30)
            os._exit(0)
        os.read(ready_r, 1)
        os.kill(child, signal.SIGTERM)  # as multiprocessing.Pool.terminate stops its workers
        _, status = os.waitpid(child, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status
        print("parent alive")
        """
    )
    # its own session: were the rule inherited, the child would kill this group, not pytest's
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, start_new_session=True
    )
    assert done.returncode == 0 and "parent alive" in done.stdout, (done.returncode, done.stderr)
