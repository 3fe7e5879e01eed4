"""``kvplan serve``: start the dashboard with the server settings it is safe with.

The settings live in ``server.toml`` beside this module (package data), so an
installed ``kvplan serve`` behaves the same from any directory; ``make run`` and the
browser tests start the dashboard through this function too.  Nothing here imports
streamlit: the dashboard runs in a child process (``python -m streamlit run ui/app.py``; the
script puts the folder above ``ui`` on ``sys.path`` itself, so a source checkout works too).

The dashboard dies with this process (issue 31 F12): a SIGTERM or SIGHUP here is passed on to it, and on
Linux it also gets SIGTERM when this process dies any other way (``planner.lifetime``); it then stops its
worker processes (``ui.jobs``), which die with it too.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import TextIO

from planner import lifetime

DEFAULT_PORT = 8501


def server_options() -> list[str]:
    """``server.toml`` as streamlit command-line flags: ``--section.key=value``."""
    config = tomllib.loads((files("planner.cli") / "server.toml").read_text(encoding="utf-8"))
    flags = []
    for section, values in config.items():
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{key}={text}")
    return flags


def app_script() -> Path:
    """The dashboard's entry script, located without importing streamlit."""
    spec = importlib.util.find_spec("ui.app")
    if spec is None or spec.origin is None:
        raise FileNotFoundError("ui/app.py not found: is kvplan installed with its dashboard?")
    return Path(spec.origin)


def dashboard_command(port: int, address: str = "127.0.0.1") -> list[str]:
    """The child process's argv."""
    return [
        sys.executable, "-m", "streamlit", "run", str(app_script()),
        f"--server.port={port}", f"--server.address={address}", *server_options(),
    ]  # fmt: skip


#: Seconds the dashboard is given to stop after Ctrl-C or a passed-on signal, before it is killed.
STOP_WAIT_S = 10.0


def _child_setup(parent_pid: int) -> None:
    """In the dashboard's process, before streamlit starts: SIGTERM when ``parent_pid`` dies."""
    lifetime.set_parent_death_signal(signal.SIGTERM)
    if os.getppid() != parent_pid:  # the parent died before the call
        os._exit(1)


def _stop(child: subprocess.Popen) -> None:
    try:
        child.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def run_dashboard(port: int, address: str, err: TextIO) -> int:
    """Run the dashboard in the foreground until it stops (Ctrl-C); returns its exit code."""
    if not 1 <= port <= 65535:
        print(f"error: --port {port}: must be in [1, 65535]", file=err)
        return 2
    print(f"kvplan dashboard on http://{address}:{port} (Ctrl-C stops it)", file=err, flush=True)
    parent = os.getpid()
    child = subprocess.Popen(dashboard_command(port, address), preexec_fn=lambda: _child_setup(parent))

    def pass_on(sig: int, _frame: object) -> None:
        with contextlib.suppress(OSError):
            child.send_signal(sig)

    previous = {sig: signal.signal(sig, pass_on) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        return child.wait()
    except KeyboardInterrupt:  # Ctrl-C reached the dashboard too (one process group): let it stop
        _stop(child)
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if child.poll() is None:
            child.terminate()
            _stop(child)
