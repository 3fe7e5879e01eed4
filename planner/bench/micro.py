"""Micro-measurements that calibrate the roofline: matmul FLOP/s and memory bandwidth.

Matmul: C = A·B with square n × n operands, 2·n³ FLOP (one multiply and one add
per MAC), through the same ``backend.mm`` the decoder's weight products use.

Bandwidth, on buffers of ``buffer_bytes`` (≥ 2 × the last-level cache, so they
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

Overlap (``measure_overlap``): the same weight through ``backend.mm`` with r token
rows around the ridge, r ≈ peak · bytes_per_element / (2 · bandwidth), where the
kernel's arithmetic c = 2·r·elements / peak and its traffic m = bytes / bandwidth
are about equal.  The time t gives the overlap o of the engine's
t = max(c, m) + (1 − o)·min(c, m):   o = (c + m − t) / min(c, m), clipped to [−1, 1].

Attention (``measure_attention``), through the decoder's own ``backend.attend``:
  decode    one query token per sequence over a KV cache of ≥ the bandwidth buffer:
            bytes = K + V read; bytes/s ÷ the gemv bandwidth = attention_bandwidth_frac
  prefill   one causal prompt of P tokens: FLOP = 2·h·(2k)·P(P+1)/2 (the engine's count,
            ``roofline.attention_flop``); FLOP/s ÷ the matmul peak = attention_compute_frac
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import median
from typing import Literal

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
    kernel: Literal["copy", "sum", "gemv"]
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
        a = b = None  # free the buffers (closures above captured them)
        be.release()
    return out


def measure_bandwidth(
    be, buffer_bytes: float, warmup: int, repeats: int, target_s: float = 0.0
) -> list[BandwidthSample]:
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
    dst = None  # free the buffers (closures above captured them)
    med, _ = be.time(lambda: be.total(src), warmup, repeats, target_s)
    out.append(BandwidthSample("sum", nbytes, nbytes, med))

    src = None  # free the buffers (closures above captured them)
    m = be.weight(be.filled((rows, GEMV_COLS), 1.0))  # read through the decoder's own matmul path
    x = be.filled((1, rows), 1.0)
    med, _ = be.time(lambda: be.mm(x, m), warmup, repeats, target_s)
    vec_bytes = (rows + GEMV_COLS) * be.bytes_per_element
    out.append(BandwidthSample("gemv", nbytes, nbytes + vec_bytes, med))
    m = x = None  # free the buffers (closures above captured them)
    be.release()
    return out


@dataclass(frozen=True)
class OverlapSample:
    rows: int
    flop: float
    bytes: float
    median_s: float

    def overlap(self, peak_flop_per_s: float, bandwidth_bytes_per_s: float) -> float:
        """o with t = max(c, m) + (1 − o)·min(c, m), clipped to [−1, 1]."""
        c, m = self.flop / peak_flop_per_s, self.bytes / bandwidth_bytes_per_s
        return min(max((c + m - self.median_s) / min(c, m), -1.0), 1.0)


def ridge_rows(peak_flop_per_s: float, bandwidth_bytes_per_s: float, bytes_per_element: float) -> int:
    """Token rows where a weight product's arithmetic time equals its weight streaming time:
    2·r FLOP per weight element vs bytes_per_element bytes."""
    return max(2, round(peak_flop_per_s * bytes_per_element / (2.0 * bandwidth_bytes_per_s)))


def measure_overlap(
    be, buffer_bytes: float, rows: list[int], warmup: int, repeats: int, target_s: float = 0.0
) -> list[OverlapSample]:
    """``backend.mm`` over the gemv weight (``measure_bandwidth``'s) with each row count in ``rows``."""
    inner = max(int(buffer_bytes // be.bytes_per_element) // GEMV_COLS, 1)
    m = be.weight(be.filled((inner, GEMV_COLS), 1.0))
    out = []
    for r in rows:
        x = be.filled((r, inner), 1.0)
        med, _ = be.time(lambda x=x: be.mm(x, m), warmup, repeats, target_s)
        elements = inner * GEMV_COLS
        nbytes = (elements + r * (inner + GEMV_COLS)) * be.bytes_per_element
        out.append(OverlapSample(rows=r, flop=2.0 * r * elements, bytes=nbytes, median_s=med))
        x = None  # free the buffers (closures above captured them)
    m = None  # free the buffers (closures above captured them)
    be.release()
    return out


@dataclass(frozen=True)
class AttentionSample:
    kind: Literal["decode", "prefill"]  # KV streaming, or causal compute
    seqs: int
    queries: int  # per sequence
    keys: int
    flop: float
    bytes: float
    median_s: float


def measure_attention(
    be,
    heads: int,
    kv_heads: int,
    head_dim: int,
    kv_bytes: float,
    decode_keys: int,
    prompt_tokens: int,
    warmup: int,
    repeats: int,
    target_s: float = 0.0,
) -> list[AttentionSample]:
    """The decoder's ``attend`` at a decode shape (≥ ``kv_bytes`` of K + V) and a prefill shape."""
    per_seq = 2.0 * kv_heads * decode_keys * head_dim * be.bytes_per_element
    seqs = max(1, math.ceil(kv_bytes / per_seq))
    q = be.filled((seqs, heads, 1, head_dim), 0.01)
    k = be.filled((seqs, kv_heads, decode_keys, head_dim), 0.01)
    v = be.filled((seqs, kv_heads, decode_keys, head_dim), 0.01)
    med, _ = be.time(lambda: be.attend(q, k, v, decode_keys - 1), warmup, repeats, target_s)
    out = [
        AttentionSample(
            "decode", seqs, 1, decode_keys, 2.0 * heads * 2 * head_dim * seqs * decode_keys, seqs * per_seq, med
        )
    ]
    q = k = v = None  # free the buffers (closures above captured them)
    be.release()
    p = prompt_tokens
    q = be.randn((1, heads, p, head_dim))
    k, v = be.randn((1, kv_heads, p, head_dim)), be.randn((1, kv_heads, p, head_dim))
    med, _ = be.time(lambda: be.attend(q, k, v, 0), warmup, repeats, target_s)
    flop = 2.0 * heads * 2 * head_dim * p * (p + 1) / 2.0
    out.append(AttentionSample("prefill", 1, p, p, flop, 2.0 * p * kv_heads * head_dim * be.bytes_per_element, med))
    q = k = v = None  # free the buffers (closures above captured them)
    be.release()
    return out


@dataclass(frozen=True)
class CalibrationRound:
    """One round of measurements 1–2 and what it implies for the calibrated profile."""

    matmul: list[MatmulSample]
    bandwidth: list[BandwidthSample]
    overlap: list[OverlapSample]
    attention: list[AttentionSample]

    @property
    def peak_flop_per_s(self) -> float:
        return max(m.flop_per_s for m in self.matmul)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return next(b for b in self.bandwidth if b.kernel == CALIBRATION_KERNEL).bytes_per_s

    @property
    def compute_memory_overlap(self) -> float:
        return median(o.overlap(self.peak_flop_per_s, self.bandwidth_bytes_per_s) for o in self.overlap)

    def _attention(self, kind: Literal["decode", "prefill"]) -> AttentionSample:
        return next(a for a in self.attention if a.kind == kind)

    @property
    def attention_compute_frac(self) -> float:
        a = self._attention("prefill")
        return min(a.flop / a.median_s / self.peak_flop_per_s, 1.0)

    @property
    def attention_bandwidth_frac(self) -> float:
        a = self._attention("decode")
        return min(a.bytes / a.median_s / self.bandwidth_bytes_per_s, 1.0)
