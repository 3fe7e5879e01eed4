"""The one exception family for input that cannot be used.

Every boundary (link, CLI, uploaded file, profile file, trace, prompt layout)
reports *all* it found wrong at once: ``problems`` holds one line per bad key,
row or field, each naming the field, the rule and the allowed values.  Callers
print or show those lines; nothing below the boundary raises anything else for
bad user input.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError


class ProblemsError(ValueError):
    """Input that cannot be used; ``problems``: one line per problem."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


class ScenarioError(ProblemsError):
    """A scenario that cannot be evaluated (unknown GPU or model, inconsistent shape)."""


class SweepError(ProblemsError):
    """A sweep axis or combination that cannot be run."""


class TraceError(ProblemsError):
    """A request trace that cannot be read (one line per bad row or field)."""


class LayoutError(ProblemsError):
    """A prompt-layout string that cannot be read (one line per bad block or setting)."""


class BadInput(ProblemsError):
    """A command-line argument that cannot be used (the CLI exits with ``EXIT_BAD_INPUT``)."""


class Cancelled(Exception):
    """Raised by a progress callback to stop a long run (the dashboard's Cancel); a sizing search catches it
    and returns what it has confirmed, the rest screened."""


#: The CLI's exit code for bad input (one ``error:`` line per problem on stderr).
EXIT_BAD_INPUT = 2


def format_validation_error(err: ValidationError) -> str:
    """One pydantic error as ``field: message; field: message`` (``(file)`` for a whole-object rule)."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "(file)"
        parts.append(f"{loc}: {e['msg']}")
    return "; ".join(parts)
