"""The server's caches, bounded in bytes as well as in entries.

Streamlit's ``st.cache_data`` / ``st.cache_resource`` bound a cache by its number of entries
only, and one entry can be a 100,000-request simulation or a parsed 20 MB trace.  Every
cache here is a ``BoundedCache``: least recently used first out, until both the entry count
and the estimated size (``approx_bytes``) are within the cache's limits; an entry larger
than its whole cache is not kept (it is returned, and recomputed next time).  The caches are
process-wide (shared by every session of the server, like ``st.cache_resource``), guarded by
one lock each, and hold values that are never mutated.  ``CACHES`` lists them, so the load
test and ``stats()`` can report their size.  No streamlit import: the worker and the tests use
this module too.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from planner.units import MiB

T = TypeVar("T")
#: How deep ``approx_bytes`` follows containers (the results are shallow; cycles are cut by id).
MAX_DEPTH = 12


def _frame_bytes(frame: pd.DataFrame | pd.Series) -> int:
    return int(np.sum(frame.memory_usage(index=True, deep=True)))


def approx_bytes(obj: Any, _seen: set[int] | None = None, _depth: int = 0) -> int:
    """An estimate of the memory ``obj`` holds: arrays and frames by their buffers, containers,
    dataclasses, pydantic models and plotly figures by their parts (each object counted once)."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen or _depth > MAX_DEPTH:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) + 112
    if isinstance(obj, pd.DataFrame | pd.Series):
        return _frame_bytes(obj)
    if isinstance(obj, str | bytes | bytearray | int | float | bool | type(None)):
        return sys.getsizeof(obj)
    rec = lambda part: approx_bytes(part, seen, _depth + 1)  # noqa: E731 — one line per container kind below
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(rec(k) + rec(v) for k, v in obj.items())
    if isinstance(obj, list | tuple | set | frozenset):
        return sys.getsizeof(obj) + sum(rec(v) for v in obj)
    if hasattr(obj, "_data") and hasattr(obj, "_layout"):  # a plotly figure: its plain-dict traces and layout
        return rec(obj._data) + rec(obj._layout)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sys.getsizeof(obj) + sum(rec(getattr(obj, f.name)) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__"):
        return sys.getsizeof(obj) + rec(vars(obj))
    return sys.getsizeof(obj)


class BoundedCache:
    """A thread-safe LRU cache bounded by ``max_entries`` and ``max_bytes`` (module doc)."""

    def __init__(self, name: str, max_bytes: int, max_entries: int) -> None:
        self.name = name
        self.max_bytes = int(max_bytes)
        self.max_entries = int(max_entries)
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = self.refused = 0
        CACHES.append(self)

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value under ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return default
            self._items.move_to_end(key)
            self.hits += 1
            return found[0]

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    def put(self, key: Hashable, value: Any, size: int | None = None) -> bool:
        """Keep ``value`` under ``key``, evicting the least recently used; False when it is larger than
        the whole cache (then it is not kept)."""
        nbytes = approx_bytes(value) + sys.getsizeof(key) if size is None else int(size)
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if nbytes > self.max_bytes:
                self.refused += 1
                return False
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            while self._items and (len(self._items) > self.max_entries or self._bytes > self.max_bytes):
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
            return True

    def get_or_compute(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The cached value, or ``compute()`` kept (exceptions propagate and are not cached)."""
        sentinel = _MISSING
        found = self.get(key, sentinel)
        if found is not sentinel:
            return found
        value = compute()
        self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {
                "name": self.name,
                "entries": len(self._items),
                "mib": round(self._bytes / MiB, 1),
                "max_mib": round(self.max_bytes / MiB, 1),
                "hits": self.hits,
                "misses": self.misses,
                "refused": self.refused,
            }


_MISSING = object()
#: Every cache of the process (the load test prints their sizes).
CACHES: list[BoundedCache] = []


def stats() -> list[dict[str, Any]]:
    """Each cache's entries, size and hit counts."""
    return [c.stats() for c in CACHES]


def total_bytes_limit() -> int:
    """The sum of every cache's byte limit: the most the caches can hold together."""
    return sum(c.max_bytes for c in CACHES)
