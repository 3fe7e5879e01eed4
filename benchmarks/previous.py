"""The previous commit's code beside this tree's, for speed measured side by side in one run (this VM's
speed drifts between runs, so a figure is only compared with one taken minutes apart on the same machine).

``extract(rev, into)`` writes ``planner/`` and the data folders the catalog reads (``hardware_profiles/``,
``model_presets/``, ``engine_profiles/``) at ``rev`` into ``into`` with ``git archive`` — nothing is
checked out here; ``baseline_rev`` is the parent commit when the worktree's ``planner/`` is clean (HEAD is
what is measured), else HEAD.
"""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ("planner", "hardware_profiles", "model_presets", "engine_profiles")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def baseline_rev(requested: str | None) -> str:
    if requested:
        return requested
    dirty = git("status", "--porcelain", "--untracked-files=no", "planner")
    return "HEAD" if dirty else "HEAD~1"


def extract(rev: str, into: Path) -> None:
    """The tree at ``rev`` under ``into`` (module doc)."""
    listed = set(git("ls-tree", "--name-only", rev).splitlines())
    paths = [p for p in TREE if p in listed]
    data = subprocess.run(["git", "archive", rev, *paths], cwd=ROOT, check=True, capture_output=True).stdout
    archive = into / "tree.tar"
    archive.write_bytes(data)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
