"""Edge module: where kernel tables are found, read lazily and kept (docs/kernel_tables.md "Where kvplan
finds tables").

The shipped files sit in ``planner/data/kernel_tables/<gpu>/<engine>-<version>.npz``; a user's own
tables in ``$KVPLAN_DATA_DIR/kernel_tables/`` (any sub-folder, any ``*.npz``).  A file's identity is its
header's (gpu, engine, engine_version): a later file of the same identity replaces an earlier one.
Only the headers' file list is scanned on first use; a file's arrays are read the first time a scenario
needs that GPU's tables, and kept for the process.  Nothing is read at import.  A file that does not
validate is skipped and named in ``problems()``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from importlib.resources.abc import Traversable
from pathlib import Path

import numpy as np

from planner.kernels.format import (
    ANY_ENGINE,
    MAX_TABLE_FILE_BYTES,
    KernelTableError,
    KernelTableFile,
    Table,
    read_header,
    read_table,
)
from planner.model.catalog import data_dirs

KERNEL_TABLES = "kernel_tables"
NCCL = "nccl"


@dataclass(frozen=True)
class TableSet:
    """The tables that describe one GPU under one engine release, in priority order (docs/kernel_tables.md
    "Which table a scenario uses"): the GPU's engine-independent tables, the engine release's, the GPU's
    nccl-tests table.  ``ceiling``: the same release's tables of a GPU whose kernel times bound this one's
    from above (``bounded``)."""

    gpu: str
    engine: str
    version: str
    files: tuple[KernelTableFile, ...]
    ceiling: TableSet | None = None
    ceiling_slack: float = 1.0  # the bound is slack × the ceiling's time (``bounded``)

    def table(self, name: str, collective: bool = False):
        """The first file's table ``name`` (and its file), or (None, None); under a ceiling, bounded by it."""
        for f in self.files:
            if name in f.tables and (collective or f.meta.engine != NCCL):
                own = f.tables[name]
                if self.ceiling is None:
                    return own, f
                return bounded(own, self.ceiling.table(name, collective)[0], self.ceiling_slack), f
        return None, None

    @property
    def key(self) -> tuple:
        below = () if self.ceiling is None else self.ceiling.key
        return (self.gpu, self.engine, self.version, tuple(f.path for f in self.files), below, self.ceiling_slack)


#: (own, ceiling, slack) → (own, ceiling, bounded): the pair is held so that its ids stay theirs for the process.
_BOUNDED: dict[tuple[int, int, float], tuple[Table, Table, Table]] = {}


def bounded(own: Table, ceiling: Table | None, slack: float = 1.0) -> Table:
    """``own`` with each measured time at most ``slack`` × the ``ceiling`` table's at the same class keys and sweep
    point: a GPU with at least the ceiling GPU's compute (SMs, clocks and the dense peaks the tables' dtypes use)
    and memory bandwidth can run the ceiling's kernel, so a slower time of its own is a measurement fault
    (docs/kernel_tables.md "Kernel ceilings"); ``slack`` ≥ 1 is the ceiling's bandwidth ÷ this GPU's where this
    one's is lower (a memory-bound kernel may be that much slower).  Classes or axes the two tables do not share
    stay as measured, and a point this GPU did not measure (NaN) stays unmeasured: a ceiling lowers times, it adds
    none."""
    if ceiling is None or set(own.keys) != set(ceiling.keys) or len(own.axes) != len(ceiling.axes):
        return own
    if not all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(own.axes, ceiling.axes, strict=True)):
        return own
    hit = _BOUNDED.get((id(own), id(ceiling), slack))
    if hit is not None:
        return hit[2]
    cols = sorted(own.keys)
    index = {tuple(ceiling.keys[c][r].item() for c in cols): r for r in range(ceiling.classes)}
    mine = [(r, index.get(tuple(own.keys[c][r].item() for c in cols))) for r in range(own.classes)]
    pairs = np.array([(r, i) for r, i in mine if i is not None], dtype=np.intp).reshape(-1, 2)
    latency = own.latency_ms.copy()
    if pairs.size:
        ours, theirs = latency[pairs[:, 0]], ceiling.latency_ms[pairs[:, 1]]
        latency[pairs[:, 0]] = np.where(np.isnan(ours), ours, np.fmin(ours, slack * theirs))
    out = Table(own.name, own.keys, own.axes, latency)
    _BOUNDED[(id(own), id(ceiling), slack)] = (own, ceiling, out)
    return out


def _walk(d: Traversable) -> Iterator[Traversable]:
    if not d.is_dir():
        return
    for item in sorted(d.iterdir(), key=lambda t: t.name):
        if item.is_dir():
            yield from _walk(item)
        elif item.name.endswith(".npz"):
            yield item


@functools.lru_cache(maxsize=8)
def _scan(dirs_key: tuple[str, ...]) -> tuple[dict[tuple[str, str, str], Traversable], tuple[str, ...]]:
    """Every readable table file by identity (a later folder's replaces an earlier one's), and the problems."""
    found: dict[tuple[str, str, str], Traversable] = {}
    problems: list[str] = []
    for d in data_dirs(KERNEL_TABLES):
        for item in _walk(d):
            try:
                meta = read_header(item.name, _bytes(item))
            except KernelTableError as exc:
                problems.extend(exc.problems)
                continue
            found[meta.identity] = item
    return found, tuple(problems)


def _bytes(item: Traversable) -> bytes:
    """The file's bytes, refused past ``MAX_TABLE_FILE_BYTES`` (KernelTableError naming it)."""
    try:
        with item.open("rb") as fh:
            data = fh.read(MAX_TABLE_FILE_BYTES + 1)
    except OSError as exc:
        raise KernelTableError([f"{item.name}: not readable ({exc})"]) from None
    if len(data) > MAX_TABLE_FILE_BYTES:
        raise KernelTableError([f"{item.name}: over {MAX_TABLE_FILE_BYTES} bytes"])
    return data


_FILES: dict[str, KernelTableFile] = {}


def _dirs_key() -> tuple[str, ...]:
    return tuple(str(d) for d in data_dirs(KERNEL_TABLES)) + (os.environ.get("KVPLAN_DATA_DIR", ""),)


def problems() -> tuple[str, ...]:
    """The table files skipped, each named with why (docs/kernel_tables.md)."""
    return _scan(_dirs_key())[1]


def available() -> list[tuple[str, str, str]]:
    """Every (gpu, engine, engine_version) a readable table file covers."""
    return sorted(_scan(_dirs_key())[0])


def _file(item: Traversable) -> KernelTableFile:
    key = str(item)
    if key not in _FILES:
        _FILES[key] = read_table(Path(item.name), _bytes(item))
    return _FILES[key]


@functools.lru_cache(maxsize=256)
def _table_set(gpu: str, engine: str, version: str, dirs_key: tuple[str, ...]) -> TableSet | None:
    found, _ = _scan(dirs_key)
    files = [_file(item) for (g, e, _v), item in sorted(found.items()) if g == gpu and e == ANY_ENGINE]
    own = found.get((gpu, engine, version))
    if own is None and not files:
        return None
    if own is not None:
        files.append(_file(own))
    files.extend(_file(item) for (g, e, _v), item in sorted(found.items()) if g == gpu and e == NCCL)
    return TableSet(gpu, engine, version, tuple(files))


def table_set(gpu: str, engine: str, version: str, ceiling: str = "", slack: float = 1.0) -> TableSet | None:
    """The tables for ``gpu`` under ``engine`` ``version`` (``TableSet``), or None when no file covers it;
    ``ceiling``: a GPU whose tables of the same release bound these, × ``slack`` (``bounded``; none when it has
    no such tables)."""
    own = _table_set(gpu, engine, version, _dirs_key())
    if own is None or not ceiling:
        return own
    above = _table_set(ceiling, engine, version, _dirs_key())
    return own if above is None else replace(own, ceiling=above, ceiling_slack=slack)


def engine_versions(gpu: str, engine: str) -> list[str]:
    """The releases of ``engine`` with a table for ``gpu``."""
    return sorted(v for g, e, v in available() if g == gpu and e == engine)
