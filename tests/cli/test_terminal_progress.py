"""`kvplan size` on a terminal, as a person runs it: stderr a pseudo-terminal (the bar redrawn in place, the
screened answer the moment it exists), stdout the confirmed table; Ctrl-C (SIGINT to the foreground process
group, as a terminal sends it) stops the confirmation and still prints every candidate, the unconfirmed
ones marked as screened, with exit code 130.  With stderr not a terminal nothing is drawn
(tests/cli/test_search_cli.py runs the same command into buffers)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time

import pytest

from planner.cli.commands import EXIT_INTERRUPTED
from tests.paths import ROOT

pty = pytest.importorskip("pty", reason="pseudo-terminals are POSIX-only")

LINK = "model=llama-3.1-8b&prompt=2000&output=200&rate=5"
CONFIRMING = b"(confirming by simulation; Ctrl-C stops and prints what is confirmed)"


def _size_on_a_terminal(*argv: str, interrupt: bool = False, limit_s: float = 120.0) -> tuple[int, str, str]:
    """Run ``kvplan size`` with stderr on a pty; with ``interrupt``, SIGINT its process group once the
    screened answer is on the terminal.  Returns (exit code, stdout, what the terminal received)."""
    master, slave = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "planner", "size", *argv],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        start_new_session=True,  # its own process group, as a shell's foreground job
    )
    os.close(slave)
    seen, sent, deadline = b"", False, time.monotonic() + limit_s
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed its end
                    break
                if not chunk:
                    break
                seen += chunk
            if interrupt and not sent and CONFIRMING in seen:
                os.killpg(child.pid, signal.SIGINT)
                sent = True
            if child.poll() is not None and not ready:
                break
        out = child.communicate(timeout=max(deadline - time.monotonic(), 1.0))[0]
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        os.close(master)
    return child.returncode, out.decode(), seen.decode(errors="replace")


def test_the_bar_and_the_screened_answer_go_to_the_terminal_and_the_table_to_stdout():
    code, out, terminal = _size_on_a_terminal(LINK, "--gpus", "h100-sxm")
    assert code == 0, terminal
    assert "Screening model (not confirmed by simulation yet)" in terminal
    assert CONFIRMING.decode() in terminal
    bars = [part for part in terminal.split("\r") if part.startswith("[")]
    assert bars and "#" * 24 in bars[-1] and "candidates confirmed" in bars[-1], bars[-3:]
    assert terminal.rstrip(" ").endswith("\r"), "the bar is cleared before the table is printed"
    assert "[" not in out and "confirmed by simulation" in out.splitlines()[0]
    assert "simulated" in out and "h100-sxm" in out


def test_ctrl_c_stops_the_confirmation_and_prints_every_candidate_marked_screened():
    code, out, terminal = _size_on_a_terminal(LINK, interrupt=True)
    assert code == EXIT_INTERRUPTED == 130, terminal
    assert out.startswith("Screening model (not confirmed by simulation yet)"), out[:300]
    rows = [line for line in out.splitlines() if "colocated" in line]
    assert len(rows) > 5 and any("screened: not confirmed by simulation in time" in r for r in rows)
    assert "Traceback" not in terminal and "KeyboardInterrupt" not in terminal
