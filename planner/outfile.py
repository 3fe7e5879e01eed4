"""The files a command writes (``--out``): only where the user asked, never over a file without ``--force``,
never through a symbolic link.

``checked(path, force)`` runs before the command's work (a refused ``--out`` wastes no minutes):

* a folder, or a name ending in ``/``, is refused ("is a folder: give a file name in it");
* a missing parent folder is refused (nothing is created on the way: a typo must not make a tree);
* an existing name needs ``--force``;
* a symbolic link whose target lies outside the link's own folder is refused, ``--force`` or not.

``writing(path, force)`` then writes through a temporary file in the same folder, renamed over the name at
the end (``os.replace``): a link at the name is replaced, never followed; a full disk or a missing permission
is a ``BadInput`` naming the file and the reason, and leaves any earlier file as it was.  Each refusal is a
``BadInput`` (exit code 2, one ``error:`` line).

A bundle of files into one folder (``write_folder``: ``kvplan deploy --out DIR``), each refused with a
``BadInput`` naming the path:

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

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from planner.errors import BadInput


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _link_problem(p: Path, option: str) -> str | None:
    """Why the symbolic link ``p`` is refused (its target is outside its folder), or None."""
    target = Path(os.readlink(p))
    resolved = (p.parent / target).resolve(strict=False)
    if resolved.parent != p.parent.resolve():
        return (
            f"{option} {p}: a symbolic link to {target}, outside {p.parent.resolve()}; kvplan does not write "
            "through a link out of the folder: remove the link or give another name"
        )
    return None


def checked(text: str, force: bool, option: str = "--out") -> Path:
    """``text`` as the path to write, after the module doc's rules; BadInput naming the rule otherwise."""
    p = Path(text)
    if text.endswith(("/", os.sep)) or (p.is_dir() and not p.is_symlink()):
        raise BadInput([f"{option} {text}: is a folder; give a file name in it (e.g. {p / 'out.csv'})"])
    parent = p.parent
    if not parent.is_dir():
        raise BadInput([f"{option} {text}: the folder {parent} does not exist; create it first"])
    if p.is_symlink():
        problem = _link_problem(p, option)
        if problem:
            raise BadInput([problem])
        if p.is_dir():
            raise BadInput([f"{option} {text}: a link to a folder; give a file name"])
    if os.path.lexists(p) and not force:
        raise BadInput([f"{option} {text}: already exists; add --force to overwrite it"])
    return p


@contextlib.contextmanager
def writing(text: str, force: bool, option: str = "--out") -> Iterator[TextIO]:
    """A text handle whose content becomes the file ``text`` when the block ends (module doc)."""
    with _writing(text, force, option, binary=False) as fh:
        yield fh


@contextlib.contextmanager
def _writing(text: str, force: bool, option: str, binary: bool) -> Iterator[Any]:
    p = checked(text, force, option)
    try:
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".part")
    except OSError as exc:
        raise BadInput([f"{option} {text}: cannot write in {p.parent} ({exc.strerror or exc})"]) from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # as open() would make it (mkstemp's file is private)
        with os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            yield fh
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise BadInput([f"{option} {text}: cannot write it ({exc.strerror or exc}); nothing was written"]) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(text: str, content: str, force: bool, option: str = "--out") -> None:
    """``content`` into the file ``text`` (``writing``)."""
    with writing(text, force, option) as fh:
        fh.write(content)


def write_bytes(text: str, content: bytes, force: bool, option: str = "--out") -> None:
    """``content`` into the file ``text``, by the rules of ``writing``."""
    with _writing(text, force, option, binary=True) as fh:
        fh.write(content)


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


def write_folder(out: Path, files: Mapping[str, str], force: bool = False) -> list[Path]:
    """Write ``files`` (name → text) into folder ``out`` by the folder rules of the module doc; returns the paths
    written."""
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
