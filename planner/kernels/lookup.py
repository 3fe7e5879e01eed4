"""The lookup rule over measured kernel tables (docs/kernel_tables.md "The lookup rule"): pure numpy.

Every function takes one kernel's shape (its class keys) and arrays of sweep values, and returns the
measured milliseconds per call at those values, interpolated as validated on the tables themselves:

  categorical keys      exact match (dtype, kv dtype, head_dim, window, variant, op, distribution),
                        never borrowed across dtypes: ``NotMeasured`` names what is missing
  along a sweep axis    piecewise linear in (log x, log ms) over the class's measured points
                        (``axis_interp``); below the grid the first measured value (a latency floor),
                        above it a power law from the last point: exponent ``above`` (a number), or the
                        last two points' log-log slope clamped to ``above = (lo, hi)``
  a 2-D table           along ``batch`` at every measured column first, then along the second axis
  numeric class keys    bilinear in (log key, log ms) between the bracketing measured classes (GEMM n
                        and k, attention and MLA heads, MoE tp and ep); beyond the largest measured n or k
                        the edge class ∝ n (∝ k); attention KV heads and collective GPU counts exact
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from planner.kernels.format import Table

#: Exponents beyond the last measured point (docs/kernel_tables.md rule 2).
LINEAR = 1.0
PREFILL_SEQ_SLOPE = (1.0, 2.0)  # prefill isl: the local slope, between linear and quadratic
DECODE_SEQ_SLOPE = (0.0, 1.0)  # decode kv tokens: at most linear (memory-bound)


class NotMeasured(LookupError):
    """No measured class covers the kernel: the scenario runs on the fitted roofline (the message says why)."""


def axis_interp(grid, values, x, above: float | tuple[float, float] = LINEAR) -> np.ndarray:
    """Milliseconds at ``x`` along one sweep axis: piecewise linear in (log x, log ms) over the finite
    points of ``values``; ``values[0]`` below the grid; a power law from the last point above it
    (module doc).  NaN where the class has no measured point."""
    grid = np.asarray(grid, dtype=float)
    values = np.asarray(values, dtype=float)
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(values) & (values > 0)
    if not ok.any():
        return np.full(x.shape, np.nan)
    lg, lv = np.log(grid[ok]), np.log(values[ok])
    lx = np.log(np.maximum(x, 1e-300))
    out = np.interp(lx, lg, lv)  # clamps at both ends
    if isinstance(above, tuple):
        slope = (lv[-1] - lv[-2]) / (lg[-1] - lg[-2]) if lg.size > 1 else above[1]
        power = float(np.clip(slope, above[0], above[1]))
    else:
        power = float(above)
    beyond = lx > lg[-1]
    out[beyond] = lv[-1] + power * (lx[beyond] - lg[-1])
    return np.exp(out)


def grid_interp(
    axes: tuple[np.ndarray, np.ndarray],
    values: np.ndarray,
    batch,
    seq,
    seq_above: float | tuple[float, float],
) -> np.ndarray:
    """A 2-D class [batch, seq] on the outer grid ``batch`` × ``seq`` ([len(batch), len(seq)]): along
    batch at every measured seq column (∝ batch beyond the largest measured batch), then along seq."""
    batch = np.atleast_1d(np.asarray(batch, dtype=float))
    seq = np.atleast_1d(np.asarray(seq, dtype=float))
    by_col = np.stack([axis_interp(axes[0], values[:, j], batch, LINEAR) for j in range(values.shape[1])], axis=1)
    return np.stack([axis_interp(axes[1], row, seq, seq_above) for row in by_col])


def bracket(grid, v: float) -> tuple[int, int, float]:
    """(i0, i1, t): the measured values of a numeric key around ``v`` and the weight of i1 in log space;
    clamped to the ends (the caller scales beyond them where the rule says so)."""
    grid = np.asarray(grid, dtype=float)
    if v <= grid[0]:
        return 0, 0, 0.0
    if v >= grid[-1]:
        return len(grid) - 1, len(grid) - 1, 0.0
    i1 = int(np.searchsorted(grid, v))
    if grid[i1] == v:
        return i1, i1, 0.0
    return i1 - 1, i1, float(np.log(v / grid[i1 - 1]) / np.log(grid[i1] / grid[i1 - 1]))


def _rows(t: Table, match: Mapping[str, object]) -> np.ndarray:
    """Indices of the classes whose keys equal ``match`` (exact)."""
    sel = np.ones(t.classes, dtype=bool)
    for col, v in match.items():
        sel &= t.keys[col] == v
    return np.flatnonzero(sel)


def _describe(match: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in match.items())


def _blend(lo: np.ndarray, hi: np.ndarray, t: float) -> np.ndarray:
    """exp((1 − t)·log lo + t·log hi); a NaN side gives way to the other."""
    if t == 0.0 or not np.all(np.isfinite(hi)):
        return lo if np.all(np.isfinite(lo)) else hi
    if not np.all(np.isfinite(lo)):
        return hi
    return np.exp((1.0 - t) * np.log(lo) + t * np.log(hi))


def gemm_ms(t: Table, dtype: str, n: float, k: float, tokens) -> np.ndarray:
    """One Linear(k → n) in ``dtype`` on ``tokens`` rows (ms per call; module doc)."""
    rows = _rows(t, {"dtype": dtype})
    if rows.size == 0:
        raise NotMeasured(f"GEMM dtype {dtype} not measured (have {', '.join(sorted(set(t.keys['dtype'])))})")
    ns, ks = np.unique(t.keys["n"][rows]), np.unique(t.keys["k"][rows])
    dense = np.full((ns.size, ks.size, t.latency_ms.shape[1]), np.nan)
    dense[np.searchsorted(ns, t.keys["n"][rows]), np.searchsorted(ks, t.keys["k"][rows])] = t.latency_ms[rows]
    n0, n1, tn = bracket(ns, n)
    k0, k1, tk = bracket(ks, k)
    corner = {(a, b): axis_interp(t.axes[0], dense[a, b], tokens, LINEAR) for a in {n0, n1} for b in {k0, k1}}
    finite = [v for v in corner.values() if np.all(np.isfinite(v))]
    if not finite:
        raise NotMeasured(f"GEMM {dtype} n={n:g} k={k:g}: no measured neighbour")
    corner = {key: (v if np.all(np.isfinite(v)) else finite[0]) for key, v in corner.items()}
    out = _blend(_blend(corner[(n0, k0)], corner[(n0, k1)], tk), _blend(corner[(n1, k0)], corner[(n1, k1)], tk), tn)
    return out * max(n / ns[-1], 1.0) * max(k / ks[-1], 1.0)


def attention_ms(
    t: Table, match: Mapping[str, object], heads: float, batch, seq, seq_above: float | tuple[float, float]
) -> np.ndarray:
    """An attention class (exact ``match`` on every key but ``heads``) on the outer grid batch × seq,
    log-log between the two measured head counts around ``heads`` (∝ heads beyond the largest)."""
    rows = _rows(t, match)
    if rows.size == 0:
        raise NotMeasured(f"{t.name} not measured for {_describe(match)}")
    order = np.argsort(t.keys["heads"][rows])
    rows = rows[order]
    hs = t.keys["heads"][rows].astype(float)
    i0, i1, th = bracket(hs, heads)
    lo = grid_interp((t.axes[0], t.axes[1]), t.latency_ms[rows[i0]], batch, seq, seq_above)
    hi = lo if i1 == i0 else grid_interp((t.axes[0], t.axes[1]), t.latency_ms[rows[i1]], batch, seq, seq_above)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise NotMeasured(f"{t.name} {_describe(match)}: a class with no measured cell")
    return _blend(lo, hi, th) * max(heads / hs[-1], 1.0)


def heads_ms(t: Table, match: Mapping[str, object], heads: float, x) -> np.ndarray:
    """A 1-D table keyed by ``heads`` (MLA's absorbed BMMs) at ``x``, log-log between measured head counts."""
    rows = _rows(t, match)
    if rows.size == 0:
        raise NotMeasured(f"{t.name} not measured for {_describe(match)}")
    rows = rows[np.argsort(t.keys["heads"][rows])]
    hs = t.keys["heads"][rows].astype(float)
    i0, i1, th = bracket(hs, heads)
    lo = axis_interp(t.axes[0], t.latency_ms[rows[i0]], x, LINEAR)
    out = _blend(lo, axis_interp(t.axes[0], t.latency_ms[rows[i1]], x, LINEAR), th) * max(heads / hs[-1], 1.0)
    if not np.all(np.isfinite(out)):
        raise NotMeasured(f"{t.name} {_describe(match)}: no measured point")
    return out


def moe_ms(t: Table, match: Mapping[str, object], moe_tp: float, moe_ep: float, tokens) -> np.ndarray:
    """One MoE layer's expert compute for a measured model shape (``match``: dtype, hidden, inter, topk,
    experts, distribution), log-log between measured ep (at the same tp) or tp (at the same ep) splits."""
    rows = _rows(t, match)
    if rows.size == 0:
        raise NotMeasured(f"MoE shape not measured: {_describe(match)}")
    tps, eps = t.keys["moe_tp"][rows].astype(float), t.keys["moe_ep"][rows].astype(float)

    def along(sel: np.ndarray, axis: np.ndarray, v: float) -> np.ndarray | None:
        if not sel.any():
            return None
        order = np.argsort(axis[sel])
        cand, grid = rows[sel][order], axis[sel][order]
        i0, i1, w = bracket(grid, v)
        if not grid[0] <= v <= grid[-1]:
            return None
        lo = axis_interp(t.axes[0], t.latency_ms[cand[i0]], tokens, LINEAR)
        return _blend(lo, axis_interp(t.axes[0], t.latency_ms[cand[i1]], tokens, LINEAR), w)

    for out in (along(tps == moe_tp, eps, moe_ep), along(eps == moe_ep, tps, moe_tp)):
        if out is not None and np.all(np.isfinite(out)):
            return out
    raise NotMeasured(f"MoE {_describe(match)}: no measured split near tp={moe_tp:g} ep={moe_ep:g}")


def nearest_moe_shape(t: Table, dtype: str, distribution: str, shape: Mapping[str, float]) -> dict[str, int]:
    """The measured (hidden, inter, topk, experts) of ``dtype`` nearest ``shape`` in log distance."""
    rows = _rows(t, {"dtype": dtype, "distribution": distribution})
    if rows.size == 0:
        raise NotMeasured(f"MoE dtype {dtype} not measured")
    cols = ("hidden", "inter", "topk", "experts")
    have = np.stack([t.keys[c][rows].astype(float) for c in cols], axis=1)
    want = np.array([max(float(shape[c]), 1.0) for c in cols])
    best = rows[int(np.argmin(np.sum(np.log(have / want) ** 2, axis=1)))]
    return {c: int(t.keys[c][best]) for c in cols}


def collective_ms(t: Table, match: Mapping[str, object], gpus: int, message_bytes) -> np.ndarray:
    """A collective of ``message_bytes`` over exactly ``gpus`` GPUs (``match``: its class keys)."""
    rows = _rows(t, match)
    g = np.flatnonzero(t.axes[0] == gpus)
    if rows.size == 0 or g.size == 0:
        raise NotMeasured(f"{t.name} not measured for {_describe(match)} on {gpus} GPUs")
    out = axis_interp(t.axes[1], t.latency_ms[rows[0], g[0]], message_bytes, LINEAR)
    if not np.all(np.isfinite(out)):
        raise NotMeasured(f"{t.name} {_describe(match)} on {gpus} GPUs: no measured size")
    return out
