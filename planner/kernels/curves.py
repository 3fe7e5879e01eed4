"""One scenario's measured kernels as curves on fixed log grids, and their fast vectorised lookup.

``planner.engine.kernel_basis`` sums the scenario's kernels (every GEMM, attention, MoE and collective
of its shapes, looked up by ``planner.kernels.lookup``) into a few curves of seconds per step, each on a
grid uniform in log₂ of its argument, so that a step time over a million scenarios costs a handful of
array gathers (``at_tokens``, ``at_grid``: linear between grid points ``PER_OCTAVE`` to an octave, i.e.
≤ 4.4 % apart in tokens — the curves are sampled by the lookup rule, not re-fitted):

  tokens      seconds of every layer's dense GEMMs and untimed element-wise kernels at T tokens of the step
  experts     the routed experts at T tokens entering each MoE layer
  head        the LM head at T logit rows
  allreduce   one all-reduce of T tokens' hidden states (graph / eager variant; NaN: not measured)
  decode      every attention layer's decode attention at (sequences, kv tokens)
  prefill     every attention layer's prefill attention at (prompts, prompt tokens)

Beyond a grid's last point a curve grows ∝ its argument (∝ prompt tokens² for prefill attention).
Curves are registered once per scenario family (GPU, tables, model, dtypes) and referred to by an integer
id (``EngineInputs.kernel_set``; 0 = no tables: the fitted roofline), so the engine's inputs stay flat
arrays; a family builds its curves for each layout (tp, ep, dp) the first time a scenario asks for it —
a sweep or a search that varies tp finds the kernels of each tp.  The registry lives for the process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

#: Grid points per octave of the token axes (tokens, head) and of the 2-D attention axes.
TOKEN_PER_OCTAVE = 16
GRID_PER_OCTAVE = 4
TOKEN_OCTAVES = 22  # 1 … 4,194,304 tokens in one step
BATCH_OCTAVES = 16  # 1 … 65,536 sequences
SEQ_OCTAVES = 24  # 1 … 16,777,216 tokens of context

TOKEN_GRID = 2.0 ** (np.arange(TOKEN_OCTAVES * TOKEN_PER_OCTAVE + 1) / TOKEN_PER_OCTAVE)
BATCH_GRID = 2.0 ** (np.arange(BATCH_OCTAVES * GRID_PER_OCTAVE + 1) / GRID_PER_OCTAVE)
SEQ_GRID = 2.0 ** (np.arange(SEQ_OCTAVES * GRID_PER_OCTAVE + 1) / GRID_PER_OCTAVE)


@dataclass(frozen=True)
class KernelCurves:
    """The measured step terms of one scenario shape (seconds, all layers; module doc)."""

    label: str  # the basis, as every time figure names it: "measured kernels (vLLM 0.24.0, H100 SXM)"
    tokens: np.ndarray  # [TOKEN_GRID] dense GEMMs of every layer + the untimed element-wise kernels
    experts: np.ndarray  # [TOKEN_GRID] the routed experts at T tokens entering each MoE layer (0: dense)
    head: np.ndarray  # [TOKEN_GRID] the LM head at T logit rows
    decode: np.ndarray  # [BATCH_GRID, SEQ_GRID] decode attention of B sequences at K keys
    prefill: np.ndarray  # [BATCH_GRID, SEQ_GRID] prefill attention of B prompts of S tokens
    allreduce_graph: np.ndarray  # [TOKEN_GRID] one all-reduce inside a CUDA graph (decode-only steps)
    allreduce_eager: np.ndarray  # [TOKEN_GRID] one all-reduce launched eagerly (steps with prefill tokens)
    notes: tuple[str, ...] = ()  # rules beyond the plain lookup that this shape needed (nearest MoE shape …)
    ep_imbalance: float = 0.0  # the busiest EP rank's routed tokens ÷ the mean the MoE rows measured (0: none)


class Family(Protocol):
    """The curves of one scenario shape family (GPU, tables, model, dtypes) at any layout."""

    def curves(self, tp: int, ep: int, dp: int) -> KernelCurves | None: ...


_LOCK = threading.Lock()
_FAMILIES: list[Family] = []
_IDS: dict[Hashable, int] = {}


def register(key: Hashable, build: Callable[[], Family]) -> int:
    """The id of the family for ``key`` (built once per process by ``build``); ids start at 1."""
    with _LOCK:
        if key in _IDS:
            return _IDS[key]
    family = build()
    with _LOCK:
        if key not in _IDS:
            _FAMILIES.append(family)
            _IDS[key] = len(_FAMILIES)
        return _IDS[key]


def family(kernel_set: float) -> Family:
    """The registered family of one id (≥ 1)."""
    return _FAMILIES[int(kernel_set) - 1]


def curves(kernel_set: float, tp: float, ep: float = 1.0, dp: float = 1.0) -> KernelCurves | None:
    """The curves of a family at a layout (None: a kernel of it is not measured there)."""
    return family(kernel_set).curves(int(tp), int(ep), int(dp))


@dataclass(frozen=True)
class Stack:
    """The curves of the (id, tp, ep, dp) of an array of scenarios: one row per distinct combination, and each
    element's row (None when every element has the same: the rows are the curve itself).  A combination whose
    kernels are not all measured has NaN rows (the caller keeps the roofline there)."""

    tokens: np.ndarray
    experts: np.ndarray
    head: np.ndarray
    decode: np.ndarray  # flattened [rows, BATCH × SEQ] (or [BATCH × SEQ])
    prefill: np.ndarray
    allreduce_graph: np.ndarray
    allreduce_eager: np.ndarray
    rows: np.ndarray | None


_STACKED = ("tokens", "experts", "head", "decode", "prefill", "allreduce_graph", "allreduce_eager")
_STACKS: dict[tuple, tuple[np.ndarray, ...]] = {}


def _arrays(c: KernelCurves | None) -> tuple[np.ndarray, ...]:
    if c is None:
        return tuple(
            np.full(n, np.nan)
            for n in (TOKEN_GRID.size,) * 3 + (BATCH_GRID.size * SEQ_GRID.size,) * 2 + (TOKEN_GRID.size,) * 2
        )
    return (c.tokens, c.experts, c.head, c.decode.ravel(), c.prefill.ravel(), c.allreduce_graph, c.allreduce_eager)


def _uniform(a: np.ndarray) -> bool:
    return a.ndim == 0 or bool(np.all(a == a.flat[0]))


#: Bits per column of ``_distinct_rows``' packed key: family ids and tp, ep, dp below 2**15.
_KEY_BITS = 15


def _distinct_rows(cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of the columns, sorted; each element's row), as ``np.unique(axis=0,
    return_inverse=True)`` gives them.  Whole non-negative values below 2**15 (family ids, tp, ep, dp) are packed
    into one int64 and sorted as one column (``np.unique`` on rows sorts each column in turn — the screen asks
    this of ~10⁴ elements hundreds of times); anything else goes to ``np.unique(axis=0)``."""
    limit = float(2**_KEY_BITS)
    if all(bool(np.all((c >= 0) & (c < limit) & (c == np.floor(c)))) for c in cols):
        packed = np.zeros(cols[0].shape, dtype=np.int64)
        for c in cols:
            packed = (packed << _KEY_BITS) | c.astype(np.int64)
        keys, codes = np.unique(packed, return_inverse=True)
        unique = np.empty((keys.size, len(cols)))
        for j in range(len(cols) - 1, -1, -1):
            unique[:, j] = keys & (2**_KEY_BITS - 1)
            keys = keys >> _KEY_BITS
        return unique, codes
    unique, rows = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
    return unique, rows.ravel()


def stack(kernel_set, tp, ep=1.0, dp=1.0) -> Stack:
    """The ``Stack`` of the scenarios' (kernel_set, tp, ep, dp); an element whose kernel_set ≤ 0 takes NaN rows."""
    cols = [np.asarray(v, dtype=float) for v in (kernel_set, tp, ep, dp)]
    if all(_uniform(c) for c in cols):
        first = tuple(float(c.flat[0]) for c in cols)
        t, e, h, d, p, ag, ae = _arrays(curves(*first) if first[0] > 0 else None)
        return Stack(t, e, h, d, p, ag, ae, rows=None)
    shape = np.broadcast_shapes(*(c.shape for c in cols))
    unique, rows = _distinct_rows([np.broadcast_to(c, shape).ravel() for c in cols])
    key = tuple(map(tuple, unique.tolist()))
    if key not in _STACKS:
        parts = [_arrays(curves(*u) if u[0] > 0 else None) for u in key]
        _STACKS[key] = tuple(np.stack([p[i] for p in parts]) for i in range(len(_STACKED)))
    t, e, h, d, p, ag, ae = _STACKS[key]
    return Stack(t, e, h, d, p, ag, ae, rows=rows.reshape(shape))


def _position(v, per_octave: int, points: int):
    """(i, f, beyond): grid segment, the fraction along it (linear in log₂ v) and v ÷ the last point where
    v is beyond the grid (1.0 when no element is)."""
    v = np.asarray(v, dtype=float)
    u = np.asarray(np.log2(np.maximum(v, 1.0)))
    u *= per_octave
    i = np.asarray(u.astype(np.intp))
    np.minimum(i, points - 2, out=i)
    u -= i
    np.minimum(u, 1.0, out=u)
    last = 2.0 ** ((points - 1) / per_octave)
    beyond = np.maximum(v / last, 1.0) if (v > last).any() else 1.0
    return i, u, beyond


def _empty_rows(v) -> bool:
    """Some element asks for nothing (≤ 0 tokens or sequences): its term is 0 there."""
    return bool((np.asarray(v) <= 0).any())


@dataclass(frozen=True)
class WholeTokens:
    """Token counts that are all whole numbers in [0, ``WHOLE_TOKENS``): ``at_tokens`` reads a curve's value at
    each from the curve's table at 0, 1, 2, … (``_tabulated``) — one gather instead of a log₂ and two."""

    tokens: np.ndarray
    index: np.ndarray  # the counts as integers
    top: int  # the largest


#: Whole token counts below this are looked up in a curve's table (``WholeTokens``); tables are kept for the
#: ``TABLES_KEPT`` curves used last (each ≤ 256 KiB: a 32,768-point table).
WHOLE_TOKENS = 1 << 15
TABLES_KEPT = 64
#: Arrays smaller than this take the plain lookup (a table is built once per curve: worth it for a grid).
WHOLE_MIN_SIZE = 256
_TABLES: dict[int, tuple[np.ndarray, np.ndarray]] = {}


def token_position(tokens):
    """The position of ``tokens`` on the token grid for ``at_tokens``: ``WholeTokens`` when every count of a
    large enough array is whole and below ``WHOLE_TOKENS``, else ``_position``'s (i, f, beyond)."""
    t = np.asarray(tokens, dtype=float)
    if t.ndim and t.size >= WHOLE_MIN_SIZE:
        index = t.astype(np.intp)
        # whole counts in range: a negative count is a huge unsigned one
        if (index == t).all() and (index.view(np.uintp) < WHOLE_TOKENS).all():
            return WholeTokens(t, index, int(index.max()))
    return _position(t, TOKEN_PER_OCTAVE, TOKEN_GRID.size)


def _tabulated(curve: np.ndarray, top: int) -> np.ndarray:
    """``curve`` ([TOKEN_GRID]) at every whole count 0 … ≥ ``top``, by ``_interpolated`` itself: the same
    operations on each count as an array of them takes (elementwise ufuncs), so the same values to the bit
    (tests/kernels/test_curves_fast.py).  Kept per curve (the curves live for the process)."""
    hit = _TABLES.get(id(curve))
    if hit is not None and hit[0] is curve and hit[1].size > top:
        return hit[1]
    counts = np.arange(max(1024, 1 << top.bit_length()), dtype=float)  # a power of two above top
    values = _interpolated(curve, None, counts, _position(counts, TOKEN_PER_OCTAVE, TOKEN_GRID.size))
    with _LOCK:
        _TABLES.pop(id(curve), None)
        while len(_TABLES) >= TABLES_KEPT:
            _TABLES.pop(next(iter(_TABLES)))
        _TABLES[id(curve)] = (curve, values)  # holding the curve keeps its id from being reused
    return values


def at_tokens(curve: np.ndarray, rows: np.ndarray | None, tokens, position=None) -> np.ndarray:
    """``curve`` ([TOKEN_GRID] or [rows, TOKEN_GRID]) at ``tokens`` (0 where tokens ≤ 0).  ``position``: a
    ``token_position(tokens)`` already computed (several curves at the same tokens)."""
    position = token_position(tokens) if position is None else position
    if isinstance(position, WholeTokens):
        if rows is None:
            return _tabulated(curve, position.top).take(position.index)
        position = _position(position.tokens, TOKEN_PER_OCTAVE, TOKEN_GRID.size)
    return _interpolated(curve, rows, tokens, position)


def _interpolated(curve: np.ndarray, rows: np.ndarray | None, tokens, position) -> np.ndarray:
    """``at_tokens`` from the grid position (i, f, beyond): linear between grid points, ∝ tokens beyond."""
    i, f, beyond = position
    if rows is None:
        y0, y1 = np.asarray(curve.take(i)), np.asarray(curve.take(i + 1))
    else:
        base = rows * curve.shape[-1] + i
        flat = curve.ravel()
        y0, y1 = np.asarray(flat.take(base)), np.asarray(flat.take(base + 1))
    y1 -= y0
    y1 *= f
    y1 += y0
    if not isinstance(beyond, float):
        y1 *= beyond
    return np.where(np.asarray(tokens) > 0, y1, 0.0) if _empty_rows(tokens) else y1


_BATCH_POSITIONS: dict[float, tuple[int, float, float | None]] = {}


def _batch_position(batch: float) -> tuple[int, float, float | None]:
    """``_position`` of one batch size > 0 on the batch grid as Python scalars (beyond None inside the grid),
    computed on a one-element array — the same ufunc loops, so the same values to the bit as an array of
    that batch — and kept per batch size (the simulator's jumps ask for a few hundred sizes, each many times)."""
    hit = _BATCH_POSITIONS.get(batch)
    if hit is None:
        i, f, beyond = _position(np.full(1, batch), GRID_PER_OCTAVE, BATCH_GRID.size)
        hit = (int(i[0]), float(f[0]), None if isinstance(beyond, float) else float(beyond[0]))
        if len(_BATCH_POSITIONS) < 1 << 16:
            _BATCH_POSITIONS[batch] = hit
    return hit


#: Per 2-D curve (by id; the curve is held so the id is not reused) and batch row ib, ``_segments``' table.
_SEGMENTS: dict[int, tuple[np.ndarray, dict[int, np.ndarray]]] = {}


def _segments(flat: np.ndarray, ib: int) -> np.ndarray:
    """[2, 2, SEQ_GRID − 1]: for each seq segment s of batch rows ib and ib + 1 of ``flat`` ([BATCH × SEQ]),
    ((y00, y10), (y01 − y00, y11 − y10)) — the corner values and the differences ``at_grid`` forms on them
    (the same subtractions of the same floats, so the same bits), kept for the ``TABLES_KEPT`` curves
    used last."""
    hit = _SEGMENTS.get(id(flat))
    if hit is None or hit[0] is not flat:
        with _LOCK:
            _SEGMENTS.pop(id(flat), None)
            while len(_SEGMENTS) >= TABLES_KEPT:
                _SEGMENTS.pop(next(iter(_SEGMENTS)))
            hit = _SEGMENTS[id(flat)] = (flat, {})
    rows = hit[1]
    table = rows.get(ib)
    if table is None:
        n = SEQ_GRID.size
        corners = np.stack([flat[ib * n : (ib + 1) * n], flat[(ib + 1) * n : (ib + 2) * n]])
        table = np.stack([corners[:, :-1], corners[:, 1:] - corners[:, :-1]])
        rows[ib] = table
    return table


_SEQ_LAST = float(SEQ_GRID[-1])


def at_grid_batch(flat: np.ndarray, batch: float, seq: np.ndarray, seq_power: float) -> np.ndarray:
    """``at_grid(flat, None, np.full(seq.shape, batch), seq, seq_power)`` for one batch size > 0, the same values
    to the bit (tests/kernels/test_curves_fast.py): the batch's grid position once (``_batch_position``), the
    seq position by ``_position``'s operations in place (its clamps only where the largest seq comes near the
    grid's end: elsewhere they change nothing), the corners of each element's segment in one gather from the
    batch rows' table (``_segments``: y01 − y00 and y11 − y10 already formed), and the low and high rows'
    interpolations y0 + (y1 − y0)·f_seq as one operation on both — every floating-point operation on each
    element as ``at_grid`` does it.  (The simulator asks this once per run of decode steps: a few dozen
    contexts, where each NumPy call's overhead, not its elements, is the cost.)"""
    ib, fb, bb = _batch_position(batch)
    v = np.asarray(seq, dtype=float)
    top = float(v.max()) if v.size else 0.0
    u = np.maximum(v, 1.0)
    np.log2(u, out=u)
    u *= GRID_PER_OCTAVE
    i = u.astype(np.intp)
    if not top < 0.5 * _SEQ_LAST:  # (NaN too) i may reach the last grid point, u − i may be clamped to 1
        np.minimum(i, SEQ_GRID.size - 2, out=i)
        u -= i
        np.minimum(u, 1.0, out=u)
    else:  # i ≤ SEQ_GRID.size − 6 and u − i ∈ [0, 1): both clamps are no-ops
        u -= i
    corners, rise = _segments(flat, ib).take(i, axis=2)
    rise *= u  # (y01 − y00)·f_seq and (y11 − y10)·f_seq
    rise += corners  # the low row's and the high row's values at seq
    lo, hi = rise
    hi -= lo
    hi *= fb
    hi += lo
    if bb is not None:
        hi *= bb
    if top > _SEQ_LAST:
        bs = np.maximum(v / _SEQ_LAST, 1.0)
        hi *= bs if seq_power == 1.0 else bs**seq_power
    return hi


def at_grid(flat: np.ndarray, rows: np.ndarray | None, batch, seq, seq_power: float) -> np.ndarray:
    """A 2-D attention curve (flattened [BATCH × SEQ], or [rows, BATCH × SEQ]) at (batch, seq), bilinear in
    log₂ of both; ∝ batch beyond the batch grid and ∝ seq^seq_power beyond the seq grid; 0 where batch ≤ 0."""
    ib, fb, bb = _position(batch, GRID_PER_OCTAVE, BATCH_GRID.size)
    iseq, fs, bs = _position(seq, GRID_PER_OCTAVE, SEQ_GRID.size)
    n = SEQ_GRID.size
    base = ib * n + iseq
    if rows is not None:
        base = base + rows * (BATCH_GRID.size * n)
        data = flat.ravel()
    else:
        data = flat
    y00, y01 = np.asarray(data.take(base)), np.asarray(data.take(base + 1))
    base = base + n
    y10, y11 = np.asarray(data.take(base)), np.asarray(data.take(base + 1))
    y01 -= y00
    y01 *= fs
    y01 += y00  # lo
    y11 -= y10
    y11 *= fs
    y11 += y10  # hi
    y11 -= y01
    y11 *= fb
    y11 += y01
    if not isinstance(bb, float):
        y11 *= bb
    if not isinstance(bs, float):
        y11 *= bs if seq_power == 1.0 else bs**seq_power
    return np.where(np.asarray(batch) > 0, y11, 0.0) if _empty_rows(batch) else y11
