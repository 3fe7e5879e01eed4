"""Writing a bundle of files into the folder the user named (``kvplan deploy --out DIR``), and nowhere else.

Rules, each refused with a message naming the path (a BadInput, exit code 2):
  * DIR is created if it does not exist, but its parent must (no folders the user did not ask for);
  * DIR must not be a file, and must not be a symbolic link (the files would land where it points);
  * an existing DIR that holds anything needs ``--force``; with it, files of the bundle's names are replaced
    and nothing else in DIR is touched;
  * every file is written under DIR itself: a name with a path separator or ``..`` is refused, an existing
    entry of that name that is a symbolic link is removed (the link, never its target) before writing, a
    folder of that name is refused, and the file is opened with O_NOFOLLOW (a link put there meanwhile
    makes the write fail instead of following it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from planner.errors import BadInput

#: Scripts are executable; every other file is read-write for the owner, readable for the rest.
SCRIPT_MODE = 0o755
FILE_MODE = 0o644


def _checked_folder(out: Path, force: bool) -> None:
    if out.is_symlink():
        raise BadInput([f"--out {out}: a symbolic link; name the real folder (kvplan does not write through links)"])
    if out.exists():
        if not out.is_dir():
            raise BadInput([f"--out {out}: exists and is not a folder"])
        entries = sorted(p.name for p in out.iterdir())
        if entries and not force:
            shown = ", ".join(entries[:5]) + (" …" if len(entries) > 5 else "")
            raise BadInput(
                [
                    f"--out {out}: the folder is not empty ({len(entries)} entries: {shown}); pass --force to write "
                    "into it (files of the bundle's names are replaced, nothing else is touched)"
                ]
            )
        return
    if not out.parent.is_dir():
        raise BadInput([f"--out {out}: its parent folder {out.parent} does not exist (kvplan creates only {out.name})"])


def _checked_names(files: Mapping[str, str]) -> None:
    bad = [n for n in files if not n or "/" in n or "\\" in n or n in (".", "..") or n.startswith(".")]
    if bad:
        raise BadInput([f"bundle file {n!r}: not a plain file name" for n in bad])


def write_files(out: Path, files: Mapping[str, str], force: bool = False) -> list[Path]:
    """Write ``files`` (name → text) into folder ``out`` by the module's rules; returns the paths written."""
    _checked_names(files)
    _checked_folder(out, force)
    out.mkdir(exist_ok=True)
    written = []
    for name, text in files.items():
        path = out / name
        if path.is_symlink():
            path.unlink()
        elif path.is_dir():
            raise BadInput([f"--out {out}: {name} is a folder; the bundle writes a file of that name"])
        mode = SCRIPT_MODE if name.endswith(".sh") else FILE_MODE
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
            os.fchmod(fd, mode)  # the umask may have narrowed it
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        except OSError as exc:
            raise BadInput([f"--out {out}: cannot write {name}: {exc.strerror or exc}"]) from None
        written.append(path)
    return written
