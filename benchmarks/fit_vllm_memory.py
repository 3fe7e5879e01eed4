"""Fit vLLM 0.19's empirical memory constants on the 18 in-sample rows, and print them.

The constants of ``engine_profiles/vllm.toml [memory]`` that no source code fixes come from
the in-sample kv_capacity rows of ``benchmarks/data/published-serving.json`` (``"split":
"in_sample"``), each row carrying its start-up log's own breakdown (``"logged"``):

  peak activation   P = P₀ + C · d · 2 B + s · min(B, C) · V   least squares over the dense rows
                    (the MoE row, Mixtral, is predicted by the fused-MoE term, not fitted)
  non-torch         N(tp) = the mean logged increase at tp = 1, 2 and 4
  start-up baseline the mean logged ``non_torch_memory`` of the init snapshot at tp = 1, 2 and 4
  CUDA graphs       G = g₀ + g₁ · layers                        least squares over all 18 rows

Held-out rows are never read here.  Run:  .venv/bin/python benchmarks/fit_vllm_memory.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.accuracy.kv_capacity import in_sample_rows, preset_key  # noqa: E402 — after the path set-up
from planner.model.catalog import load_catalog  # noqa: E402
from planner.units import GiB  # noqa: E402

ACT_BYTES = 2.0


def main() -> None:
    catalog = load_catalog()
    rows = in_sample_rows()
    feats, peaks, graphs, layers = [], [], [], []
    by_tp: dict[int, list[float]] = {}
    base_tp: dict[int, list[float]] = {}
    for r in rows:
        m = catalog.models[preset_key(r, catalog)]
        logged = r.logged
        chunk, seqs = r.max_num_batched_tokens or 8192, r.max_num_seqs or 1024
        by_tp.setdefault(min(r.tp, 4), []).append(logged["non_torch_gib"])
        if "startup_baseline_gib" in logged:
            base_tp.setdefault(min(r.tp, 4), []).append(logged["startup_baseline_gib"])
        graphs.append(logged["cuda_graph_gib"])
        layers.append(m.layers)
        if m.is_moe:
            continue
        keep = chunk * m.hidden * ACT_BYTES / GiB
        feats.append([1.0, min(seqs, chunk) * m.vocab / GiB])
        peaks.append(logged["activation_gib"] - keep)
    (p0, s), *_ = np.linalg.lstsq(np.array(feats), np.array(peaks), rcond=None)
    (g0, g1), *_ = np.linalg.lstsq(np.c_[np.ones(len(layers)), layers], np.array(graphs), rcond=None)
    resid = np.array(peaks) - np.array(feats) @ np.array([p0, s])
    print(f"in-sample rows: {len(rows)} ({len(peaks)} dense rows in the activation fit)")
    print(f"activation_base_gib      = {p0:.3f}")
    print(f"sampler_bytes_per_logit  = {s:.2f}    (worst residual {np.abs(resid).max():.3f} GiB)")
    for tp in sorted(by_tp):
        print(f"non_torch_gib_tp{tp}        = {np.mean(by_tp[tp]):.2f}    ({len(by_tp[tp])} rows)")
    for tp in sorted(base_tp):
        print(f"baseline_gib_tp{tp}         = {np.mean(base_tp[tp]):.2f}    ({len(base_tp[tp])} rows)")
    g_resid = np.array(graphs) - (g0 + g1 * np.array(layers))
    print(f"cuda_graph_base_gib      = {g0:.3f}")
    print(f"cuda_graph_per_layer_gib = {g1:.4f}   (worst residual {np.abs(g_resid).max():.2f} GiB)")


if __name__ == "__main__":
    main()
