"""``kvplan serve``: start the dashboard with the server settings it is safe with.

The settings live in ``server.toml`` beside this module (package data), so an
installed ``kvplan serve`` behaves the same from any directory; ``make run`` and the
browser tests start the dashboard through this function too.  Nothing here imports
streamlit: the dashboard runs in a child process (``python -m streamlit run ui/app.py``; the
script puts the folder above ``ui`` on ``sys.path`` itself, so a source checkout works too).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path
from typing import TextIO

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


def run_dashboard(port: int, address: str, err: TextIO) -> int:
    """Run the dashboard in the foreground until it stops (Ctrl-C); returns its exit code."""
    if not 1 <= port <= 65535:
        print(f"error: --port {port}: must be in [1, 65535]", file=err)
        return 2
    print(f"kvplan dashboard on http://{address}:{port} (Ctrl-C stops it)", file=err, flush=True)
    try:
        return subprocess.call(dashboard_command(port, address))
    except KeyboardInterrupt:
        return 0
