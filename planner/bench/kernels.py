"""The microbenchmark's kernels as a kernel table (``planner.kernels.format``: the shipped tables' file
format): the machine's own GEMM, prefill- and decode-attention and, with more than one GPU, all-reduce
latencies, so a planner can use this GPU's kernels instead of the shipped ones.

What is measured (``KernelGrid``; every cell through the same backend calls the decoder makes):

  gemm                  ``backend.mm`` (x · W, the decoder's weight layout) for the decoder's five linear
                        shapes (fused QKV, o_proj, gate_up, down, LM head) and, on a GPU, a grid of
                        n, k = 2,048 … 16,384, over a token grid
  context_attention     ``backend.attend`` of ``batch`` causal prompts of ``isl_tokens``
  generation_attention  ``backend.attend`` of one new token for each of ``batch`` sequences over
                        ``kv_tokens`` cached keys (the cached ones and the new one)
                        — for the decoder's (heads, kv_heads, head_dim) and, on a GPU, the common
                        per-GPU layouts (8/1, 16/2, 32/4, 32/8, 64/8 at head_dim 128; 64/8 at 64)
  allreduce             (more than one CUDA device) ``torch.cuda.nccl.all_reduce`` of bf16 tensors, one
                        per GPU, over 2, 4 or 8 GPUs of this node, from one process: variant ``eager``

A cell is one call's median seconds: the call repeated ``reps`` times inside one timed call (a CUDA
graph on a GPU, ``backend.prepare``), so a microsecond kernel is not a host round trip.  Inputs rotate
over enough copies that they stream from memory (≥ 2 × the last-level cache or L2, at most
``MAX_COPIES``; the decoder's own weights are its layers' copies), as a serving step streams every
layer's weights and KV cache.  Cells run coarse grid points first; a cell that would end past the
table's deadline, or whose inputs exceed the memory budget, is left NaN ("not measured", as the format
allows), so the sweep always ends in its share of the run's budget.

The table's identity (``KernelTableMeta``): ``gpu`` = the shipped profile this device matches (an H100
SXM → ``h100-sxm``, so it is found before the shipped tables of that GPU: an engine-independent table,
``engine = "*"``, is the first a scenario reads — docs/kernel_tables.md "Which table a scenario uses"),
else the measured profile's key (the results' slug); ``engine_version`` = kvplan's version.  dtypes are
the run's: ``bfloat16`` on a GPU; ``float32`` on a CPU (a scenario's 16-bit GEMMs do not match it:
categorical keys match exactly, so a CPU's table documents the machine and leaves planning to its
calibrated roofline).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from planner import outfile
from planner.bench.budget import Deadline
from planner.bench.decoder import Decoder, DecoderShape
from planner.bench.results import KernelTableData, KernelTableResult
from planner.kernels.format import ANY_ENGINE, TABLE_SCHEMAS, KernelTableMeta, TableMeta, table_bytes
from planner.units import MS_PER_S, MiB

#: At most this many copies of a cell's inputs (rotation; module doc).
MAX_COPIES = 8
#: Timed calls of the repeated kernel per cell (the median is kept), after one warm-up call.
CELL_REPEATS = 3
DTYPE_KEY = {"fp32": "float32", "bf16": "bfloat16"}
#: The table file beside the results: ``<slug>.kernels.npz``.
KERNEL_TABLE_SUFFIX = "kernels.npz"
ALLREDUCE_BYTES = tuple(2**p for p in range(12, 29, 2))  # 4 KiB … 256 MiB per rank


@dataclass(frozen=True)
class KernelGrid:
    """The cells a run measures (module doc)."""

    gemm_shapes: tuple[tuple[int, int], ...]  # (n, k): Linear(k → n)
    gemm_tokens: tuple[int, ...]
    attention: tuple[tuple[int, int, int], ...]  # (heads, kv_heads, head_dim) per GPU
    context_batch: tuple[int, ...]
    context_isl: tuple[int, ...]
    generation_batch: tuple[int, ...]
    generation_kv: tuple[int, ...]
    cell_target_s: float
    allreduce_gpus: tuple[int, ...] = ()
    allreduce_bytes: tuple[int, ...] = ALLREDUCE_BYTES


def decoder_linears(s: DecoderShape) -> tuple[tuple[int, int], ...]:
    """(n, k) of the decoder's linears: QKV, o_proj, gate_up, down, LM head."""
    qkv = (s.heads + 2 * s.kv_heads) * s.head_dim
    return (
        (qkv, s.hidden),
        (s.hidden, s.heads * s.head_dim),
        (2 * s.ffn, s.hidden),
        (s.hidden, s.ffn),
        (s.vocab, s.hidden),
    )


def kernel_grid(device: str, quick: bool, shape: DecoderShape, gpus: int = 1) -> KernelGrid:
    """The cells of a run on ``device`` (module doc)."""
    own = (shape.heads, shape.kv_heads, shape.head_dim)
    if quick:
        return KernelGrid(decoder_linears(shape), (1, 4, 16), (own,), (1,), (16, 32), (1, 2), (16, 32), 0.002)
    if device == "cuda":
        generic = tuple((n, k) for n in (2048, 4096, 8192, 16384) for k in (2048, 4096, 8192, 16384))
        layouts = ((8, 1, 128), (16, 2, 128), (32, 4, 128), (32, 8, 128), (64, 8, 128), (64, 8, 64))
        return KernelGrid(
            gemm_shapes=tuple(dict.fromkeys(decoder_linears(shape) + generic)),
            gemm_tokens=tuple(2**p for p in range(14)),
            attention=tuple(dict.fromkeys((own, *layouts))),
            context_batch=(1, 2, 4, 8),
            context_isl=(128, 256, 512, 1024, 2048, 4096, 8192, 16384),
            generation_batch=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            generation_kv=(128, 512, 1024, 2048, 4096, 8192, 16384, 32768),
            cell_target_s=0.02,
            allreduce_gpus=tuple(g for g in (2, 4, 8) if g <= gpus),
        )
    return KernelGrid(
        gemm_shapes=decoder_linears(shape),
        gemm_tokens=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048),
        attention=(own,),
        context_batch=(1,),
        context_isl=(64, 128, 256, 512, 1024, 2048),
        generation_batch=(1, 4, 16, 64),
        generation_kv=(128, 512, 1024, 2048),
        cell_target_s=0.05,
    )


def coarse_first(n: int) -> list[int]:
    """0 … n − 1 with the ends first, then the midpoints of ever finer halvings (a sweep cut short still
    spans its axis)."""
    order, seen = [], set()
    step = 1 << max(n - 1, 1).bit_length()
    while step >= 1:
        for i in range(0, n, step):
            if i not in seen:
                order.append(i)
                seen.add(i)
        if n - 1 not in seen:
            order.append(n - 1)
            seen.add(n - 1)
        step //= 2
    return order


@dataclass
class Sweep:
    """One run's table sweep: its backend, deadline, memory budget and cost model."""

    be: Any
    grid: KernelGrid
    deadline: Deadline
    memory_bytes: float  # largest inputs a cell may allocate
    cache_bytes: float  # last-level cache (CPU) or L2 (GPU): inputs rotate past it
    estimate_s: Callable[[str, dict[str, int]], float]  # (table, shape) → predicted seconds per call
    log: Callable[[str], None] = lambda _m: None
    measured: int = 0
    planned: int = 0
    skipped: list[str] = field(default_factory=list)
    tables: dict[str, tuple[dict, tuple, np.ndarray]] = field(default_factory=dict)

    def copies(self, nbytes: float) -> int:
        return int(min(MAX_COPIES, max(1, math.ceil(2 * self.cache_bytes / max(nbytes, 1.0)))))

    def time_cell(self, calls: Sequence[Callable[[], Any]], est_s: float) -> float:
        """Median seconds of one call of ``calls`` (rotating copies), or NaN when it would overrun."""
        self.planned += 1
        t = self.grid.cell_target_s
        cost = (CELL_REPEATS + 2) * max(est_s * len(calls), t / CELL_REPEATS)
        if not self.deadline.allows(cost):
            return math.nan
        be = self.be

        def one() -> None:
            for c in calls:
                c()

        be.sync()
        t0 = time.perf_counter()
        one()
        be.sync()
        first = max(time.perf_counter() - t0, 1e-7)
        reps = max(1, math.ceil(t / (CELL_REPEATS * first)))

        def many() -> None:
            for _ in range(reps):
                one()

        fn, _ = be.prepare(many)
        med, _ = be.time(fn, 1, CELL_REPEATS)
        self.measured += 1
        return med / (reps * len(calls))


def _gemm(sw: Sweep, decoder: Decoder) -> tuple[dict, tuple, np.ndarray]:
    be, g = sw.be, sw.grid
    own: dict[tuple[int, int], list[Any]] = {}  # the decoder's matrices of each shape: its layers are the copies
    for layer in decoder.layers:
        matrices = (layer.w_qkv, layer.w_o, layer.w_gate_up, layer.w_down)
        for shape, m in zip(decoder_linears(decoder.shape)[:4], matrices, strict=True):
            own.setdefault(shape, []).append(m)
    own.setdefault(decoder_linears(decoder.shape)[-1], []).append(decoder.lm_head)
    ms = np.full((len(g.gemm_shapes), len(g.gemm_tokens)), np.nan)
    for ci, (n, k) in enumerate(g.gemm_shapes):
        nbytes = n * k * be.bytes_per_element
        weights = own.get((n, k)) or []
        if not weights and nbytes * sw.copies(nbytes) <= sw.memory_bytes:
            weights = [be.weight(be.randn((k, n), k**-0.5)) for _ in range(sw.copies(nbytes))]
        if not weights:
            sw.skipped.append(f"gemm n={n} k={k}: {nbytes / MiB:.0f} MiB × copies over the memory budget")
            continue
        for ti in coarse_first(len(g.gemm_tokens)):
            tokens = g.gemm_tokens[ti]
            x = be.randn((tokens, k))
            est = sw.estimate_s("gemm", dict(n=n, k=k, tokens=tokens))
            ms[ci, ti] = sw.time_cell([partial(be.mm, x, w) for w in weights], est) * MS_PER_S
            del x
        del weights
        be.release()
    dtype = DTYPE_KEY[be.dtype_name]
    keys = dict(
        dtype=np.array([dtype] * len(g.gemm_shapes)),
        n=np.array([n for n, _ in g.gemm_shapes], dtype=np.int64),
        k=np.array([k for _, k in g.gemm_shapes], dtype=np.int64),
    )
    return keys, (np.array(g.gemm_tokens, dtype=float),), ms


def _cells_2d(a: int, b: int) -> Iterator[tuple[int, int]]:
    """(i, j) over an a × b grid, coarse points of both axes first."""
    rank_a = {i: r for r, i in enumerate(coarse_first(a))}
    rank_b = {j: r for r, j in enumerate(coarse_first(b))}
    yield from sorted(((i, j) for i in range(a) for j in range(b)), key=lambda ij: max(rank_a[ij[0]], rank_b[ij[1]]))


def _attention(sw: Sweep, decode: bool) -> tuple[dict, tuple, np.ndarray]:
    be, g = sw.be, sw.grid
    batches = g.generation_batch if decode else g.context_batch
    lengths = g.generation_kv if decode else g.context_isl
    ms = np.full((len(g.attention), len(batches), len(lengths)), np.nan)
    for ci, (h, kv, d) in enumerate(g.attention):
        for bi, li in _cells_2d(len(batches), len(lengths)):
            b, length = batches[bi], lengths[li]
            q_heads = 0 if decode else h  # a decode's one query row is small beside its cache
            nbytes = (2 * kv + q_heads) * b * length * d * be.bytes_per_element
            copies = sw.copies(nbytes)
            if nbytes * copies > sw.memory_bytes:
                continue
            q_len = 1 if decode else length
            sets = [
                (
                    be.filled((b, h, q_len, d), 0.01),
                    be.filled((b, kv, length, d), 0.01),
                    be.filled((b, kv, length, d), 0.01),
                )
                for _ in range(copies)
            ]
            offset = length - 1 if decode else 0
            table = "generation_attention" if decode else "context_attention"
            est = sw.estimate_s(table, dict(heads=h, kv_heads=kv, head_dim=d, batch=b, tokens=length))
            calls = [partial(be.attend, q, k, v, offset) for q, k, v in sets]
            ms[ci, bi, li] = sw.time_cell(calls, est) * MS_PER_S
            del sets, calls
            be.release()
    dtype = DTYPE_KEY[be.dtype_name]
    c = len(g.attention)
    keys = dict(
        attn_dtype=np.array([dtype] * c),
        kv_dtype=np.array([dtype] * c),
        head_dim=np.array([d for _, _, d in g.attention], dtype=np.int64),
        window=np.zeros(c, dtype=np.int64),
        heads=np.array([h for h, _, _ in g.attention], dtype=np.int64),
        kv_heads=np.array([kv for _, kv, _ in g.attention], dtype=np.int64),
    )
    return keys, (np.array(batches, dtype=float), np.array(lengths, dtype=float)), ms


def _allreduce(sw: Sweep) -> tuple[dict, tuple, np.ndarray]:
    g = sw.grid
    ms = np.full((1, len(g.allreduce_gpus), len(g.allreduce_bytes)), np.nan)
    for gi, bi in _cells_2d(len(g.allreduce_gpus), len(g.allreduce_bytes)):
        sw.planned += 1
        gpus, nbytes = g.allreduce_gpus[gi], g.allreduce_bytes[bi]
        if sw.deadline.allows(10 * g.cell_target_s):
            ms[0, gi, bi] = sw.be.allreduce_s(gpus, nbytes, CELL_REPEATS) * MS_PER_S
            sw.measured += 1
    keys = dict(dtype=np.array([DTYPE_KEY[sw.be.dtype_name]]), variant=np.array(["eager"]))
    return keys, (np.array(g.allreduce_gpus, dtype=float), np.array(g.allreduce_bytes, dtype=float)), ms


def measure_kernels(sw: Sweep, decoder: Decoder) -> dict[str, tuple[dict, tuple, np.ndarray]]:
    """Every table of the grid (module doc), name → (keys by column, axes, milliseconds)."""
    tables = {"gemm": _gemm(sw, decoder)}
    tables["context_attention"] = _attention(sw, decode=False)
    tables["generation_attention"] = _attention(sw, decode=True)
    if sw.grid.allreduce_gpus:
        tables["allreduce"] = _allreduce(sw)
    return {name: t for name, t in tables.items() if np.isfinite(t[2]).any()}


NOTES = {
    "gemm": "backend.mm (the decoder's weight layout and kernels: {linear}); inputs rotate over copies",
    "context_attention": "backend.attend, causal prompts, no cached prefix",
    "generation_attention": "backend.attend, one new token per sequence over the cache",
    "allreduce": "torch.cuda.nccl.all_reduce from one process over this node's GPUs (eager)",
}


def kernel_estimate(
    peak_flop_per_s: float,
    bandwidth_bytes_per_s: float,
    attn_compute_frac: float,
    attn_bandwidth_frac: float,
    bpe: float,
) -> Callable[[str, dict[str, int]], float]:
    """Predicted seconds of one cell's call from the first calibration round's rates (the sweep's cost model):
    gemm max(2·t·n·k / peak, (n·k + t·(n + k))·bytes / bw); prefill attention 2·h·2d·b·L(L+1)/2 FLOP at the
    attention share of the peak; decode attention 2·b·g·L·d·bytes at the attention share of the bandwidth."""

    def estimate(table: str, s: dict[str, int]) -> float:
        if table == "gemm":
            n, k, t = s["n"], s["k"], s["tokens"]
            return max(2.0 * t * n * k / peak_flop_per_s, (n * k + t * (n + k)) * bpe / bandwidth_bytes_per_s)
        h, g, d, b, length = s["heads"], s["kv_heads"], s["head_dim"], s["batch"], s["tokens"]
        if table == "context_attention":
            return 2.0 * h * 2 * d * b * length * (length + 1) / 2 / (peak_flop_per_s * max(attn_compute_frac, 0.02))
        return 2.0 * b * g * length * d * bpe / (bandwidth_bytes_per_s * max(attn_bandwidth_frac, 0.02))

    return estimate


def _nested_with_none(ms: np.ndarray) -> list:
    """``ms`` as nested lists with None where it is NaN (JSON has no NaN)."""
    if ms.ndim == 1:
        return [None if math.isnan(v) else float(v) for v in ms]
    return [_nested_with_none(row) for row in ms]


def kernel_table_result(sw: Sweep, gpu: str, device_name: str, be: Any, when: str) -> KernelTableResult | None:
    """The sweep's tables as the results file holds them; None when no cell was measured."""
    if not sw.tables:
        return None
    from planner.bench.host import host_name, kvplan_version

    version = kvplan_version()
    libs = ", ".join(f"{k} {v}" for k, v in be.versions().items())
    data = []
    for name, (keys, axes, ms) in sw.tables.items():
        cells = _nested_with_none(ms)
        data.append(
            KernelTableData(
                name=name,  # type: ignore[arg-type]  # the sweep's table names are the schema's Literal
                keys={k: v.tolist() for k, v in keys.items()},
                axes=[a.tolist() for a in axes],
                latency_ms=cells,
            )
        )
    return KernelTableResult(
        gpu=gpu,
        device_name=device_name[:200],
        engine_version=version,
        measured_by=f"kvplan bench {version} ({be.name} {be.dtype_name}; {libs})"[:400],
        source=f"measured by kvplan bench on {host_name()} {when}"[:2000],
        created_utc=when,
        tables=data,
        measured_cells=sw.measured,
        planned_cells=sw.planned,
        skipped=sw.skipped[:1000],
    )


def kernel_table_meta(r: KernelTableResult, linear_note: str = "") -> KernelTableMeta:
    """The table file's header (module doc): engine "*", kvplan's version."""
    return KernelTableMeta(
        gpu=r.gpu,
        device_name=r.device_name,
        engine=ANY_ENGINE,
        engine_version=r.engine_version,
        measured_by=r.measured_by,
        source=r.source,
        license="your own measurement (kvplan bench): no third-party data",
        created_utc=r.created_utc,
        tables={
            t.name: TableMeta(
                keys=TABLE_SCHEMAS[t.name].keys,
                axes=TABLE_SCHEMAS[t.name].axes,
                source=r.source,
                notes=NOTES[t.name].format(linear=linear_note)[:4000],
            )
            for t in r.tables
        },
    )


def write_kernel_table(path: Path, r: KernelTableResult, linear_note: str = "", force: bool = True) -> KernelTableMeta:
    """The results' kernel table as a ``.npz`` file (validated by ``table_bytes``; written by ``planner.outfile``'s
    rules: over an existing file only with ``force``); its header."""
    meta = kernel_table_meta(r, linear_note)
    outfile.write_bytes(str(path), table_bytes(path, meta, {t.name: t.arrays() for t in r.tables}), force)
    return meta
