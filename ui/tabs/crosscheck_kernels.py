"""The Cross-check tab's kernel-table panel: the microbenchmark's own kernels (``planner.bench.kernels``)
— which tables, how many cells measured — and the ``.kernels.npz`` file to plan with them."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.bench.kernels import KERNEL_TABLE_SUFFIX, kernel_table_meta, write_kernel_table
from planner.bench.results import BenchResults
from planner.format import fmt_count
from planner.kernels.format import table_file_name
from ui.format import md_escape


def table_frame(r: BenchResults) -> pd.DataFrame:
    """One row per table: classes, its axes' ranges, cells measured of cells planned."""
    k = r.kernel_table
    assert k is not None
    rows = []
    for t in k.tables:
        ms = np.array(t.latency_ms, dtype=float)
        axes = " × ".join(f"{a[0]:g} … {a[-1]:g}" for a in t.axes)
        rows.append(
            {
                "table": t.name,
                "classes": ms.shape[0],
                "axes": axes,
                "cells measured": f"{int(np.isfinite(ms).sum())} of {ms.size}",
                "fastest (ms)": float(np.nanmin(ms)) if np.isfinite(ms).any() else None,
                "slowest (ms)": float(np.nanmax(ms)) if np.isfinite(ms).any() else None,
            }
        )
    return pd.DataFrame(rows)


def table_bytes(r: BenchResults) -> bytes:
    """The results' kernel table as the ``.kernels.npz`` file ``kvplan bench`` writes."""
    assert r.kernel_table is not None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{r.device.slug}.{KERNEL_TABLE_SUFFIX}"
        write_kernel_table(path, r.kernel_table, r.device.linear_note)
        return path.read_bytes()


def render_kernel_table(st: Any, r: BenchResults) -> None:
    """The panel (module doc); nothing for results from before kernel tables."""
    k = r.kernel_table
    if k is None:
        return
    st.markdown("**Kernel table: this machine's kernels, in the shipped tables' format**")
    st.dataframe(table_frame(r), hide_index=True)
    name = table_file_name(kernel_table_meta(k))
    st.caption(
        md_escape(
            f"{fmt_count(k.measured_cells)} of {fmt_count(k.planned_cells)} cells measured on {k.device_name} "
            f"(gpu={k.gpu}, engine *, {k.measured_by}). Saved as $KVPLAN_DATA_DIR/kernel_tables/{name}, it is the "
            "first table a scenario on this GPU reads, before the shipped ones."
        )
    )
    st.download_button(
        "Kernel table (.npz)",
        data=table_bytes(r),
        file_name=f"{r.device.slug}.{KERNEL_TABLE_SUFFIX}",
        mime="application/octet-stream",
        key="xc_kernels_npz",
        on_click="ignore",
        icon=":material/download:",
    )
