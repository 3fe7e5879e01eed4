"""Array back-ends for the benchmark: numpy (CPU, fp32) and torch (CPU fp32, CUDA bf16).

Both expose the same small surface — array creation, a few fused-by-hand ops,
causal GQA attention, synchronisation and timing — so ``decoder.py`` and
``micro.py`` are written once.  ``x @ w``, slicing, ``reshape`` and
``swapaxes`` behave alike on numpy arrays and torch tensors and are used
directly.  torch is imported only inside ``TorchBackend.__init__``.

Timing: ``warmup`` untimed calls, then ``repeats`` timed calls, each followed by
``sync()`` (``torch.cuda.synchronize`` on a GPU; a no-op on the CPU, where every
op is eager); the median is reported.  On CUDA a step is captured once in a
CUDA graph and replayed, as serving engines do for decode, so per-kernel launch
latency from Python is not timed (eager timing is the fallback, and recorded).

Linear layers (``weight`` / ``mm``) use, per back-end, the kernel a CPU serving
engine would: weights laid out once at load for the kernel that streams them,
and for numpy a kernel chosen per token-row count by timing the candidates on
the decoder's own weights (``tune_linear``), as llama.cpp or oneDNN pick
kernels per shape.  The choices are recorded (``linear_note``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from statistics import median
from typing import Any

import numpy as np

from planner.bench.threads import pin_numpy_blas_threads, shorten_blas_spin
from planner.units import MiB

#: Query rows per attention block on the CPU: a block's scores, (h · block × keys)
#: fp32, stay near the last-level cache instead of a (h · T × T) matrix in DRAM.
ATTENTION_BLOCK_ROWS = 256


#: numpy: token-row counts up to this many are timed with both linear kernels (``tune_linear``);
#: beyond it the panel GEMV re-reads each panel too often to beat the GEMM
PANEL_MAX_ROWS = 8
#: numpy panel GEMV: weight bytes per panel, re-read once per token row, so they must stay in
#: cache (2 MiB streamed best on this project's CPU: 1 MiB L2 per core, 32 MiB shared L3)
PANEL_BYTES = 2 * MiB
#: numpy ``tune_linear``: passes over all the weights per candidate kernel; the fastest counts
TUNE_PASSES = 2
#: torch CPU: weights are reordered once for a batched input of this many rows; oneDNN then
#: picks its blocked layout (a 1-row hint gives the plain layout, which streamed 20–30 % slower
#: at every batch size on this project's CPU)
PACK_ROWS_HINT = 256


#: at most this many times the planned repeats when a call is short (see ``timed``)
MAX_REPEAT_FACTOR = 5


def timed(
    fn: Callable[[], Any], sync: Callable[[], None], warmup: int, repeats: int, target_s: float = 0.0
) -> tuple[float, list[float]]:
    """(median seconds, all samples) of ``fn`` after at least ``warmup`` untimed calls.

    With ``target_s`` > 0, warm-up goes on until ``target_s`` / 2 has passed (libraries
    pick and JIT kernels, caches and allocators settle, clocks ramp), and short calls
    get more repeats — enough to fill ``target_s``, at most MAX_REPEAT_FACTOR ×
    ``repeats`` — so a median of a fast step is not three noisy samples.
    """
    last, start, calls = 0.0, time.perf_counter(), 0
    while calls < warmup or (target_s > 0 and time.perf_counter() - start < target_s / 2):
        t0 = time.perf_counter()
        fn()
        sync()
        last = time.perf_counter() - t0
        calls += 1
    if target_s > 0 and last > 0:
        repeats = min(max(repeats, math.ceil(target_s / last)), MAX_REPEAT_FACTOR * repeats)
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return median(samples), samples


def gemm_rows(x, w):
    """x (T × in) · wᵀ, w stored (out × in): one BLAS sgemm (transposed operand, no copy)."""
    return x @ w.T


def gemv_rows(x, w):
    """x (T × in) · wᵀ as one BLAS sgemv per token row.  T = 1: one sgemv over the whole
    weight.  T > 1: over panels of PANEL_BYTES, all T rows per panel, so the weight streams
    from DRAM once and the other T − 1 passes hit the cache."""
    if x.shape[0] == 1:
        return np.matmul(w, x[0])[None]
    rows, outs = x.shape[0], w.shape[0]
    out = np.empty((rows, outs), dtype=np.float32)
    step = max(1, PANEL_BYTES // w[0].nbytes)
    for a in range(0, outs, step):
        panel = w[a : a + step]
        for i in range(rows):
            np.matmul(panel, x[i], out=out[i, a : a + step])
    return out


LINEAR_KERNELS = {"gemm": gemm_rows, "gemv": gemv_rows}


def _attend_into(q, k, v, q_offset: int, out) -> None:
    """Causal GQA attention of q (S, h, Lq, d) over k, v (S, g, q_offset + Lq, d) into out (S, h, Lq, d).

    Query i sits at position q_offset + i and sees keys 0 … q_offset + i.  Query heads
    h = g · r share K/V head h // r.  Blocks of query rows only touch the keys they can
    see, so a prefill does ~half the T² work and its scores stay small.
    """
    s_, h, lq, d = q.shape
    g = k.shape[1]
    r = h // g
    scale = np.float32(1.0 / math.sqrt(d))
    q5 = q.reshape(s_, g, r, lq, d)
    o5 = out.reshape(s_, g, r, lq, d)
    for i0 in range(0, lq, ATTENTION_BLOCK_ROWS):
        i1 = min(lq, i0 + ATTENTION_BLOCK_ROWS)
        b, keys = i1 - i0, q_offset + i1
        scores = q5[:, :, :, i0:i1].reshape(s_, g, r * b, d) @ k[:, :, :keys].swapaxes(-1, -2)
        scores *= scale
        if b > 1:  # the last b keys are the block's own tokens: mask j > i
            s5 = scores.reshape(s_, g, r, b, keys)
            s5[..., keys - b :] += np.triu(np.full((b, b), -np.inf, dtype=np.float32), 1)
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        o5[:, :, :, i0:i1] = (scores @ v[:, :, :keys]).reshape(s_, g, r, b, d)


class NumpyBackend:
    """fp32 on the CPU; matmuls in numpy's OpenBLAS pinned to ``threads`` threads."""

    name = "numpy"
    device = "cpu"
    dtype_name = "fp32"
    bytes_per_element = 4.0

    def __init__(self, threads: int, seed: int = 0):
        self.threads = pin_numpy_blas_threads(threads)
        self.thread_note = (
            f"OpenBLAS pinned to {self.threads} threads; elementwise numpy ops single-threaded"
            if self.threads is not None
            else "OpenBLAS thread setter not found; pool left at its default size"
        )
        self._rng = np.random.default_rng(seed)
        self.dtype = np.float32
        self.linear_kernels: dict[int, str] = {}  # token rows → LINEAR_KERNELS key, from tune_linear
        self.linear_note = "linear: weights stored (out × in); 1 row: BLAS sgemv; more rows: BLAS sgemm (untuned)"
        parallel = self.threads is not None and self.threads > 1
        self._pool = ThreadPoolExecutor(self.threads - 1) if self.threads is not None and self.threads > 1 else None
        if parallel:
            self.thread_note += (
                f"; attention of several sequences split over {self.threads} threads; {shorten_blas_spin()}"
            )

    def versions(self) -> dict[str, str]:
        return {"numpy": np.__version__}

    def device_count(self) -> int:
        """One CPU device (the table's all-reduce needs several GPUs)."""
        return 1

    # creation -----------------------------------------------------------------
    def randn(self, shape: tuple[int, ...], scale: float = 1.0):
        a = self._rng.standard_normal(shape, dtype=np.float32)
        a *= np.float32(scale)
        return a

    def filled(self, shape: tuple[int, ...], value: float):
        """An array with every page written (calloc'd zero pages would read from nowhere)."""
        a = np.empty(shape, dtype=np.float32)
        a.fill(value)
        return a

    def from_numpy(self, a: np.ndarray):
        return np.ascontiguousarray(a, dtype=np.float32)

    def token_ids(self, n: int, vocab: int):
        return self._rng.integers(0, vocab, size=n)

    # ops ----------------------------------------------------------------------
    def weight(self, w):
        """A (in × out) weight stored (out × in), C-contiguous: each output's weights are one
        contiguous row, the order a GEMV streams them in (the tied LM head Eᵀ is then E itself)."""
        return np.ascontiguousarray(w.T)

    def mm(self, x, w):
        """x (T × in) · w, w from ``weight``, with the kernel chosen for T rows (``tune_linear``)."""
        rows = x.shape[0]
        return LINEAR_KERNELS[self.linear_kernels.get(rows, "gemv" if rows == 1 else "gemm")](x, w)

    def tune_linear(self, weights: Sequence, rows: Sequence[int]) -> dict[int, str]:
        """For each token-row count 2 … PANEL_MAX_ROWS in ``rows``, time both kernels over all
        ``weights`` (the decoder's: well beyond the last-level cache, so a pass streams DRAM as a
        decode step does; fastest of TUNE_PASSES passes each) and keep the faster for ``mm``.
        One row always takes the sgemv (numpy's matmul would route it there anyway)."""
        inputs = {w.shape[1] for w in weights}
        for t in sorted({r for r in rows if 2 <= r <= PANEL_MAX_ROWS}):
            xs = {n: self.randn((t, n)) for n in inputs}
            best: dict[str, float] = {}
            for name, kernel in LINEAR_KERNELS.items():
                for _ in range(TUNE_PASSES):
                    t0 = time.perf_counter()
                    for w in weights:
                        kernel(xs[w.shape[1]], w)
                    best[name] = min(best.get(name, math.inf), time.perf_counter() - t0)
            self.linear_kernels[t] = min(best, key=best.__getitem__)
        tuned = ", ".join(f"{t}: {k}" for t, k in sorted(self.linear_kernels.items()))
        self.linear_note = (
            "linear: weights stored (out × in); 1 row: BLAS sgemv; "
            + (
                f"rows 2–{PANEL_MAX_ROWS} timed at load, sgemm vs per-row sgemv over {PANEL_BYTES // MiB} MiB panels "
                f"({tuned}); "
                if tuned
                else ""
            )
            + "more rows: BLAS sgemm"
        )
        return dict(self.linear_kernels)

    def cat_rows(self, parts):
        return np.concatenate(parts, axis=0)

    def cat_last(self, a, b):
        return np.concatenate((a, b), axis=-1)

    def rmsnorm(self, x, w, eps: float = 1e-5):
        ms = np.mean(x * x, axis=-1, keepdims=True)
        return x * (1.0 / np.sqrt(ms + np.float32(eps))) * w

    def silu_mul(self, gate, up):
        with np.errstate(over="ignore"):
            return gate / (1.0 + np.exp(-gate)) * up

    def total(self, x):
        return np.add.reduce(x, axis=None)

    def attend(self, q, k, v, q_offset: int):
        """Causal GQA attention.  q (S, h, Lq, d); k, v (S, g, q_offset + Lq, d) → (S, h, Lq, d)
        (``_attend_into``).  Several sequences (decode, verification): split into one slice per
        thread, each slice's small matrix products in single-threaded BLAS — OpenBLAS runs a
        stack of (r·Lq × d)·(d × keys) products on one core; the pool is restored afterwards."""
        out = np.empty(q.shape, dtype=np.float32)
        s_ = q.shape[0]
        if self._pool is None or s_ < 2:
            _attend_into(q, k, v, q_offset, out)
            return out
        parts = min(self.threads, s_)
        edges = [s_ * i // parts for i in range(parts + 1)]
        pin_numpy_blas_threads(1)
        try:
            futures = [
                self._pool.submit(_attend_into, q[a:b], k[a:b], v[a:b], q_offset, out[a:b])
                for a, b in zip(edges[1:-1], edges[2:], strict=True)
            ]
            _attend_into(q[: edges[1]], k[: edges[1]], v[: edges[1]], q_offset, out[: edges[1]])
            for f in futures:
                f.result()
        finally:
            if self.threads is not None:
                pin_numpy_blas_threads(self.threads)
        return out

    # timing -------------------------------------------------------------------
    def sync(self) -> None:
        """numpy is eager: nothing to wait for."""

    def prepare(self, fn: Callable[[], Any]) -> tuple[Callable[[], Any], str]:
        return fn, "eager"

    def release(self) -> None:
        """Nothing cached beyond the arrays the caller drops."""

    def time(self, fn, warmup: int, repeats: int, target_s: float = 0.0) -> tuple[float, list[float]]:
        return timed(fn, self.sync, warmup, repeats, target_s)


class TorchBackend:
    """torch on ``cpu`` (fp32, ``torch.set_num_threads(threads)``) or ``cuda`` (bf16)."""

    name = "torch"

    def __init__(self, device: str, threads: int, seed: int = 0):
        import torch  # the optional extra: imported only here
        import torch.nn.functional as F

        self.torch, self.F = torch, F
        self.device = device
        if device == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("torch reports no CUDA device")
            self.dtype, self.dtype_name, self.bytes_per_element = torch.bfloat16, "bf16", 2.0
        else:
            self.dtype, self.dtype_name, self.bytes_per_element = torch.float32, "fp32", 4.0
        torch.set_num_threads(threads)
        self.threads = torch.get_num_threads()
        self.thread_note = f"torch intra-op threads {self.threads}" + (" (host side)" if device == "cuda" else "")
        self._gen = torch.Generator(device=device)
        self._gen.manual_seed(seed)
        self.linear_note = (
            "linear: x @ w (cuBLAS)"
            if device == "cuda"
            else "linear: oneDNN inner product (torch.ops.mkldnn._linear_pointwise), weights reordered once "
            f"(_reorder_linear_weight, {PACK_ROWS_HINT}-row hint: oneDNN's blocked layout)"
        )

    def versions(self) -> dict[str, str]:
        t = self.torch
        v = {"torch": t.__version__, "numpy": np.__version__}
        if self.device == "cuda":
            v["cuda"] = str(t.version.cuda or t.version.hip or "")
            v["gpu"] = t.cuda.get_device_name()
        return v

    # creation -----------------------------------------------------------------
    def randn(self, shape, scale: float = 1.0):
        a = self.torch.randn(shape, generator=self._gen, device=self.device, dtype=self.dtype)
        return a.mul_(scale)

    def filled(self, shape, value: float):
        return self.torch.full(shape, value, device=self.device, dtype=self.dtype)

    def from_numpy(self, a: np.ndarray):
        return self.torch.as_tensor(np.ascontiguousarray(a)).to(device=self.device, dtype=self.dtype)

    def token_ids(self, n: int, vocab: int):
        return self.torch.randint(0, vocab, (n,), generator=self._gen, device=self.device)

    # ops ----------------------------------------------------------------------
    def weight(self, w):
        """A (in × out) weight as ``mm`` wants it.  CPU: transposed to (out × in) and reordered
        once into the layout oneDNN's inner product streams (for a PACK_ROWS_HINT-row input), as
        torch's CPU inference paths (inductor's freezing, IPEX) prepack linear weights; torch's
        default fp32 matmul on this kind of CPU runs MKL's AVX2 code (about half the AVX-512
        peak, and ~23 GB/s on a matrix–vector product).  CUDA: the tensor itself (cuBLAS)."""
        if self.device == "cuda":
            return w
        return self.torch.ops.mkldnn._reorder_linear_weight(w.t().contiguous(), PACK_ROWS_HINT)

    def mm(self, x, w):
        """x (T × in) · w (in × out), w from ``weight``."""
        if self.device == "cuda":
            return x @ w
        return self.torch.ops.mkldnn._linear_pointwise(x.contiguous(), w, None, "none", [], "")

    def tune_linear(self, weights: Sequence, rows: Sequence[int]) -> dict[int, str]:
        """One kernel for every shape (oneDNN / cuBLAS choose internally): nothing to time."""
        return {}

    def cat_rows(self, parts):
        return self.torch.cat(parts, dim=0)

    def cat_last(self, a, b):
        return self.torch.cat((a, b), dim=-1)

    def rmsnorm(self, x, w, eps: float = 1e-5):
        return self.F.rms_norm(x, (x.shape[-1],), w, eps)

    def silu_mul(self, gate, up):
        return self.F.silu(gate) * up

    def total(self, x):
        return x.sum()

    def attend(self, q, k, v, q_offset: int):
        """Same contract as ``NumpyBackend.attend``, through ``scaled_dot_product_attention``
        in forms every SDPA kernel accepts (no reliance on ``enable_gqa`` support):

        * a whole prompt (q_offset = 0, Lq = Lk): K/V expanded to the h query heads — a copy
          of T·h·k elements, negligible beside the prefill's matmuls — and ``is_causal``;
        * one new token per sequence on the CPU (decode): scores = K · qᵀ (keys × r) per
          sequence and KV head, softmax over the keys, then scoresᵀ · V: the cache is the
          large, untransposed operand of both products (~20 % faster here than SDPA's
          CPU kernel at decode shapes);
        * otherwise the r = h/g query heads sharing a KV head are folded into rows
          (S, g, r·Lq, k), with a bool mask when Lq > 1: row (i_r, j) sees keys ≤ q_offset + j.
        """
        t, F = self.torch, self.F
        s_, h, lq, d = q.shape
        g, lk = k.shape[1], k.shape[2]
        r = h // g
        if q_offset == 0 and lq == lk:
            if r > 1:
                k, v = k.repeat_interleave(r, dim=1), v.repeat_interleave(r, dim=1)
            return F.scaled_dot_product_attention(q, k, v, is_causal=lq > 1)
        if lq == 1 and self.device != "cuda":
            scores = t.matmul(k, q.reshape(s_, g, r, d).transpose(-1, -2)).mul_(1.0 / math.sqrt(d))
            probs = t.softmax(scores, dim=-2)
            return t.matmul(probs.transpose(-1, -2), v).reshape(s_, h, 1, d)
        mask = None
        if lq > 1:
            rows = q_offset + t.arange(lq, device=self.device).repeat(r)
            mask = t.arange(lk, device=self.device)[None, :] <= rows[:, None]
        o = F.scaled_dot_product_attention(q.reshape(s_, g, r * lq, d), k, v, attn_mask=mask)
        return o.reshape(s_, h, lq, d)

    # timing -------------------------------------------------------------------
    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def prepare(self, fn: Callable[[], Any]) -> tuple[Callable[[], Any], str]:
        """On CUDA: capture ``fn`` in a CUDA graph (replayed when timed); else ``fn``."""
        if self.device != "cuda":
            return fn, "eager"
        t = self.torch
        try:
            side = t.cuda.Stream()
            side.wait_stream(t.cuda.current_stream())
            with t.cuda.stream(side):  # warm-up on a side stream before capture, as torch requires
                for _ in range(2):
                    fn()
            t.cuda.current_stream().wait_stream(side)
            graph = t.cuda.CUDAGraph()
            with t.cuda.graph(graph):
                fn()
            t.cuda.synchronize()
            return graph.replay, "cuda-graph"
        except RuntimeError as exc:  # capture unsupported for this step: time it eagerly
            t.cuda.synchronize()
            return fn, f"eager (graph capture failed: {str(exc).splitlines()[0][:120]})"

    def release(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()
            self.torch.cuda.empty_cache()

    def time(self, fn, warmup: int, repeats: int, target_s: float = 0.0) -> tuple[float, list[float]]:
        return timed(fn, self.sync, warmup, repeats, target_s)

    # device facts ---------------------------------------------------------------
    def host_link_bytes_per_s(self, nbytes: float, warmup: int, repeats: int) -> float:
        """Pinned host → device copy rate: the link a GPU without a profile is known to have."""
        t = self.torch
        src = t.empty(int(nbytes), dtype=t.uint8, pin_memory=True)
        dst = t.empty(int(nbytes), dtype=t.uint8, device=self.device)
        med, _ = self.time(lambda: dst.copy_(src, non_blocking=True), warmup, repeats)
        src = dst = None  # free the buffers (closures above captured them)
        self.release()
        return nbytes / med

    def device_count(self) -> int:
        return int(self.torch.cuda.device_count()) if self.device == "cuda" else 1

    def allreduce_s(self, gpus: int, nbytes: int, repeats: int) -> float:
        """Median seconds of ``torch.cuda.nccl.all_reduce`` of ``nbytes`` per GPU (bf16) over devices
        0 … gpus − 1, from this one process, every device synchronised after each call (eager)."""
        t = self.torch
        from torch.cuda import nccl

        elements = max(int(nbytes // 2), 1)
        bufs = [t.ones(elements, dtype=t.bfloat16, device=f"cuda:{i}") for i in range(gpus)]

        def call() -> None:
            nccl.all_reduce(bufs)
            for i in range(gpus):
                t.cuda.synchronize(i)

        med, _ = timed(call, lambda: None, 2, repeats)
        bufs = []
        self.release()
        return med

    def cuda_facts(self) -> dict[str, float | str]:
        """Name, memory, L2 size and free memory of the current CUDA device."""
        t = self.torch
        props = t.cuda.get_device_properties(t.cuda.current_device())
        free, total = t.cuda.mem_get_info()
        return {
            "name": t.cuda.get_device_name(),
            "memory_bytes": float(total),
            "free_bytes": float(free),
            "l2_bytes": float(getattr(props, "L2_cache_size", 0) or 0),
        }


def make_backend(name: str, device: str, threads: int):
    if name == "numpy":
        return NumpyBackend(threads)
    return TorchBackend(device, threads)


def torch_available() -> bool:
    """Whether torch can be imported (without importing it)."""
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def cuda_available() -> bool:
    if not torch_available():
        return False
    import torch

    return bool(torch.cuda.is_available())
