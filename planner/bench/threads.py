"""Process set-up for timing: pin the BLAS thread pool that numpy uses, and tune malloc.

numpy's matmul runs in OpenBLAS, whose pool is sized when the library loads;
changing it later needs the library's own ``*_set_num_threads`` entry point.
We find the loaded library in ``/proc/self/maps`` (as threadpoolctl does) and
call it through ctypes.  numpy's elementwise kernels stay single-threaded.
Torch is pinned with ``torch.set_num_threads`` in ``backend.TorchBackend``.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

_SETTERS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads")


def _openblas_paths() -> list[str]:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    paths = {m.group(0) for m in re.finditer(r"/\S*openblas\S*\.so\S*", maps)}
    return sorted(paths)


def _symbol(lib: ctypes.CDLL, names: tuple[str, ...]):
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            return fn
    return None


def pin_numpy_blas_threads(n: int) -> int | None:
    """Set numpy's OpenBLAS pool to ``n`` threads; the size now in force, or None
    when no OpenBLAS with a thread setter is loaded (the pool is then left as is)."""
    import numpy  # noqa: F401  (loads the BLAS library if it is not loaded yet)

    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter, getter = _symbol(lib, _SETTERS), _symbol(lib, _GETTERS)
        if setter is None or getter is None:
            continue
        setter(ctypes.c_int(n))
        return int(getter())
    return None


#: glibc mallopt parameters (malloc.h): M_TRIM_THRESHOLD = -1, M_MMAP_THRESHOLD = -3
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 * 2**20  # glibc's ceiling for this setting on 64-bit
TRIM_THRESHOLD_BYTES = 2**30


def tune_malloc() -> str:
    """Keep freed activation buffers in the process instead of returning them to the OS.

    Eager numpy/torch allocate every intermediate afresh; with glibc's defaults a
    buffer over the (adaptive) mmap threshold is mapped and unmapped on each call,
    so each step pays page faults that a serving process with a tuned allocator does
    not.  Fixed thresholds: blocks up to 32 MiB come from the heap, and up to 1 GiB
    of free heap is kept.  Returns a note for the results (or why nothing changed).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        ok = libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        ok = libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1 and ok
    except (OSError, AttributeError):
        return "malloc untuned (no glibc mallopt)"
    return "glibc mmap threshold 32 MiB, trim threshold 1 GiB" if ok else "malloc untuned (mallopt refused)"
