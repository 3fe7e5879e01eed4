"""Hold-out check of the lookup rule on the shipped kernel tables (docs/kernel_tables.md "The lookup rule").

Every interior measured point of a sweep axis whose two neighbours are measured is removed and predicted
from them by ``planner.kernels.lookup.axis_interp`` (log-log) — twice the grid's own spacing, so a
pessimistic stand-in for an off-grid query — and every interior measured GEMM ``n`` from the classes around
it by ``gemm_ms``.  Prints the median and p90 |error| per table and axis over every shipped file.

    .venv/bin/python tools/validate_kernel_lookup.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.kernels.format import read_table  # noqa: E402 — after the path set-up above
from planner.kernels.lookup import axis_interp, gemm_ms  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent / "planner" / "data" / "kernel_tables"


def _along(grid: np.ndarray, rows: np.ndarray) -> list[float]:
    """|error| of each interior point predicted from its neighbours, over the rows of one table's last axis."""
    errs = []
    for row in rows:
        for i in range(1, len(grid) - 1):
            a, b, c = row[i - 1], row[i], row[i + 1]
            if np.isfinite(a) and np.isfinite(b) and np.isfinite(c) and b > 0:
                pred = axis_interp(grid[[i - 1, i + 1]], np.array([a, c]), [grid[i]])[0]
                errs.append(abs(pred / b - 1.0))
    return errs


def _gemm_n(t) -> list[float]:
    errs = []
    for dtype in sorted(set(t.keys["dtype"].tolist())):
        sel = t.keys["dtype"] == dtype
        for k in sorted(set(t.keys["k"][sel].tolist())):
            rows = np.flatnonzero(sel & (t.keys["k"] == k))
            ns = t.keys["n"][rows]
            for j in range(1, len(rows) - 1):
                keep = np.delete(np.arange(len(rows)), j)
                sub = type(t)(t.name, {c: v[rows[keep]] for c, v in t.keys.items()}, t.axes, t.latency_ms[rows[keep]])
                pred = gemm_ms(sub, dtype, float(ns[j]), float(k), t.axes[0])
                truth = t.latency_ms[rows[j]]
                ok = np.isfinite(truth) & np.isfinite(pred)
                errs.extend(np.abs(pred[ok] / truth[ok] - 1.0).tolist())
    return errs


def main() -> None:
    found: dict[str, list[float]] = {}
    for path in sorted(ROOT.rglob("*.npz")):
        f = read_table(path)
        for name, t in f.tables.items():
            values = t.latency_ms.reshape(-1, t.latency_ms.shape[-1])
            found.setdefault(f"{name} along its last axis", []).extend(_along(t.axes[-1], values))
            if name == "gemm" and f.meta.engine != "nccl":
                found.setdefault("gemm between measured n", []).extend(_gemm_n(t))
    for key, errs in sorted(found.items()):
        if errs:
            e = np.asarray(errs)
            print(f"{key:<40} median {np.median(e):6.1%}  p90 {np.quantile(e, 0.9):6.1%}  ({e.size:,} points)")


if __name__ == "__main__":
    main()
