"""Micro-measurements that calibrate the roofline: matmul FLOP/s and memory bandwidth.

Matmul: C = A·B with square n × n operands, 2·n³ FLOP (one multiply and one add
per MAC), through the same ``backend.mm`` the decoder's weight products use.

Bandwidth, on buffers of ``buffer_bytes`` (≥ 16 × the last-level cache, so they
stream from DRAM), bytes counted as the program moves them:
  copy      dst ← src                     2 · bytes  (one read + one write; the
                                                       write-allocate read a CPU adds is not counted)
  sum       Σ src                         1 · bytes
  gemv      y ← x · M  (M rows × 4096)    bytes(M) + bytes(x) + bytes(y), through ``backend.mm``
The roofline's bandwidth is ``gemv`` — ``backend.mm`` at one token row, the very
kernel (and weight layout) the decoder streams its weights with — not the best of
the three: a decode step reads its weights through that kernel, so that is the
rate a planner can expect (docs/benchmark.md, *Which bandwidth*).  copy and sum
are reported beside it, as what the memory system delivers to simpler loops.
"""

from __future__ import annotations

from dataclasses import dataclass

GEMV_COLS = 4096
#: the bandwidth kernel the calibrated profile uses (see module doc)
CALIBRATION_KERNEL = "gemv"


@dataclass(frozen=True)
class MatmulSample:
    size: int
    flop: float
    median_s: float

    @property
    def flop_per_s(self) -> float:
        return self.flop / self.median_s


@dataclass(frozen=True)
class BandwidthSample:
    kernel: str
    buffer_bytes: float
    bytes_moved: float
    median_s: float

    @property
    def bytes_per_s(self) -> float:
        return self.bytes_moved / self.median_s


def measure_matmul(be, sizes, warmup: int, repeats: int, target_s: float = 0.0) -> list[MatmulSample]:
    out = []
    for n in sizes:
        a, b = be.randn((n, n)), be.weight(be.randn((n, n)))
        med, _ = be.time(lambda a=a, b=b: be.mm(a, b), warmup, repeats, target_s)
        out.append(MatmulSample(size=n, flop=2.0 * n**3, median_s=med))
        del a, b
        be.release()
    return out


def measure_bandwidth(be, buffer_bytes: float, warmup: int, repeats: int, target_s: float = 0.0) -> list[BandwidthSample]:
    elems = int(buffer_bytes // be.bytes_per_element)
    rows = max(elems // GEMV_COLS, 1)
    elems = rows * GEMV_COLS
    nbytes = elems * be.bytes_per_element
    out = []

    src, dst = be.filled((elems,), 1.0), be.filled((elems,), 0.0)

    def copy():
        dst[:] = src

    med, _ = be.time(copy, warmup, repeats, target_s)
    out.append(BandwidthSample("copy", nbytes, 2.0 * nbytes, med))
    del dst
    med, _ = be.time(lambda: be.total(src), warmup, repeats, target_s)
    out.append(BandwidthSample("sum", nbytes, nbytes, med))

    del src
    m = be.weight(be.filled((rows, GEMV_COLS), 1.0))  # read through the decoder's own matmul path
    x = be.filled((1, rows), 1.0)
    med, _ = be.time(lambda: be.mm(x, m), warmup, repeats, target_s)
    vec_bytes = (rows + GEMV_COLS) * be.bytes_per_element
    out.append(BandwidthSample("gemv", nbytes, nbytes + vec_bytes, med))
    del m, x
    be.release()
    return out
