"""Progress of a long command on a terminal's stderr: a bar redrawn in place, and the screened answer the
moment the sizing search has it (the confirmed table goes to stdout at the end).  Nothing is written when
stderr is not a terminal (a pipe, a log file, a test's buffer): the output stays what the command prints.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

BAR_CELLS = 24
#: Seconds between two redraws.
REDRAW_S = 0.2


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


class TerminalProgress:
    """``progress(frac, note)`` for ``search_fleet``/``size_fleet``/a replay, drawn on ``err`` (module doc)."""

    def __init__(self, err: TextIO, enabled: bool | None = None):
        self.err = err
        self.enabled = is_terminal(err) if enabled is None else enabled
        self.last = 0.0
        self.start = time.monotonic()
        self.width = 0
        self.screened_shown = False

    def __call__(self, frac: float, note: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < REDRAW_S and frac < 1.0:
            return
        self.last = now
        filled = int(round(max(0.0, min(frac, 1.0)) * BAR_CELLS))
        line = f"[{'#' * filled}{'.' * (BAR_CELLS - filled)}] {now - self.start:5.1f} s  {note}"
        self._draw(line)

    def _draw(self, line: str) -> None:
        pad = max(self.width - len(line), 0)
        self.err.write("\r" + line + " " * pad)
        self.err.flush()
        self.width = len(line)

    def clear(self) -> None:
        if self.enabled and self.width:
            self.err.write("\r" + " " * self.width + "\r")
            self.err.flush()
            self.width = 0

    def screened(self, z: Any) -> None:
        """The search's first answer (``on_update``): printed once, above the bar, marked as screened."""
        if not self.enabled or self.screened_shown:
            return
        self.screened_shown = True
        self.clear()
        self.err.write(f"{z.reason}\n(confirming by simulation; Ctrl-C stops and prints what is confirmed)\n")
        self.err.flush()
