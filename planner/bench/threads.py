"""Process set-up for timing: pin the BLAS thread pool that numpy uses, and tune malloc.

numpy's matmul runs in OpenBLAS, whose pool is sized when the library loads;
changing it later needs the library's own ``*_set_num_threads`` entry point.
We find the loaded library in ``/proc/self/maps`` (as threadpoolctl does) and
call it through ctypes.  numpy's elementwise kernels stay single-threaded.
Torch is pinned with ``torch.set_num_threads`` in ``backend.TorchBackend``.

OpenBLAS's idle workers spin for 2^OPENBLAS_THREAD_TIMEOUT cycles (default 2^28,
~77 ms at 3.5 GHz) after each threaded call before they sleep, so on a 2-core
machine a spinning worker takes a core from any other thread for that long
(``shorten_blas_spin``).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
from pathlib import Path

from planner.units import GiB, MiB

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


@functools.cache
def _openblas_controls():
    """(set_num_threads, get_num_threads) of the OpenBLAS numpy loaded, or None."""
    import numpy  # noqa: F401  (loads the BLAS library if it is not loaded yet)

    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        setter, getter = _symbol(lib, _SETTERS), _symbol(lib, _GETTERS)
        if setter is not None and getter is not None:
            return setter, getter
    return None


def pin_numpy_blas_threads(n: int) -> int | None:
    """Set numpy's OpenBLAS pool to ``n`` threads; the size now in force, or None
    when no OpenBLAS with a thread setter is loaded (the pool is then left as is).
    Cheap after the first call (the library is looked up once)."""
    controls = _openblas_controls()
    if controls is None:
        return None
    setter, getter = controls
    setter(ctypes.c_int(n))
    return int(getter())


#: log2 of the cycles an idle OpenBLAS worker spins before it sleeps: 2^22 ≈ 1.2 ms at 3.5 GHz,
#: long enough to stay awake across back-to-back calls, short enough to free the core soon after
BLAS_SPIN_LOG2_CYCLES = 22


def shorten_blas_spin(log2_cycles: int = BLAS_SPIN_LOG2_CYCLES) -> str:
    """Make numpy's OpenBLAS workers sleep after 2^``log2_cycles`` idle cycles instead of 2^28.

    The library reads OPENBLAS_THREAD_TIMEOUT once, at load; we set it, ask the library to
    read its environment again (``openblas_read_env``) and stop its workers
    (``blas_thread_shutdown_``), which it restarts with the new timeout on the next threaded
    call.  The decoder's attention runs in Python threads right after threaded GEMMs, and with
    the default a spinning worker halved their speed on 2 cores.  Returns a note for the results.
    """
    for path in _openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        read_env, shutdown = getattr(lib, "openblas_read_env", None), getattr(lib, "blas_thread_shutdown_", None)
        if read_env is None or shutdown is None:
            continue
        os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(log2_cycles)
        read_env()
        shutdown()
        return f"idle OpenBLAS workers sleep after 2^{log2_cycles} cycles (OPENBLAS_THREAD_TIMEOUT)"
    return "OpenBLAS worker spin left at the library default"


#: glibc mallopt parameters (malloc.h): M_TRIM_THRESHOLD = -1, M_MMAP_THRESHOLD = -3
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 32 * MiB  # glibc's ceiling for this setting on 64-bit
TRIM_THRESHOLD_BYTES = GiB


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
