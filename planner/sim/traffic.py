"""What a workload looks like before it is simulated: its arrival rate over time, its length
distributions and a summary (the dashboard's trace preview; pure numpy and pandas).

Arrival rate: requests per bin ÷ bin width, over ``RATE_BINS`` equal bins of the span
(at least ``MIN_BIN_S`` wide).  Lengths: counts in ``LENGTH_BINS`` log-spaced bins from 1
token to the longest (heavy tails stay readable).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from planner.sim.workload import Workload

RATE_BINS = 120
MIN_BIN_S = 1.0
LENGTH_BINS = 40
PERCENTILES = (50, 90, 99)


def arrival_rate_frame(w: Workload, bins: int = RATE_BINS) -> pd.DataFrame:
    """time_s (bin start, from the first arrival), requests_per_s, bin_s."""
    if len(w) == 0:
        return pd.DataFrame({"time_s": [], "requests_per_s": [], "bin_s": []})
    rel = w.arrival_s - w.arrival_s[0]
    width = max(float(rel[-1]) / bins, MIN_BIN_S)
    count = max(int(np.ceil(float(rel[-1]) / width)), 1)
    edges = np.arange(count + 1) * width
    hist, _ = np.histogram(rel, bins=edges)
    return pd.DataFrame({"time_s": edges[:-1], "requests_per_s": hist / width, "bin_s": width})


def length_frame(w: Workload, bins: int = LENGTH_BINS) -> pd.DataFrame:
    """Long form: kind (prompt | output), lo_tokens, hi_tokens, requests — log-spaced bins."""
    parts = []
    for kind, values in (("prompt", w.prompt_tokens), ("output", w.output_tokens)):
        top = max(int(values.max()) if len(values) else 1, 2)
        edges = np.unique(np.geomspace(1, top + 1, bins + 1).round())
        hist, _ = np.histogram(values, bins=edges)
        parts.append(pd.DataFrame({"kind": kind, "lo_tokens": edges[:-1], "hi_tokens": edges[1:], "requests": hist}))
    return pd.concat(parts, ignore_index=True)


def traffic_summary(w: Workload) -> dict[str, float]:
    """Requests, span, mean rate, peak binned rate, length percentiles and the prefix-reuse ceiling."""
    rates = arrival_rate_frame(w)["requests_per_s"]
    out: dict[str, float] = dict(
        requests=float(len(w)),
        duration_s=w.duration_s,
        rate_per_s=w.rate_per_s,
        peak_rate_per_s=float(rates.max()) if len(rates) else float("nan"),
        prompt_mean_tokens=float(w.prompt_tokens.mean()),
        output_mean_tokens=float(w.output_tokens.mean()),
    )
    for kind, values in (("prompt", w.prompt_tokens), ("output", w.output_tokens)):
        for pct, v in zip(PERCENTILES, np.percentile(values, PERCENTILES), strict=True):
            out[f"{kind}_p{pct}_tokens"] = float(v)
    prompt = float(w.prompt_tokens.sum())
    out["prefix_reuse_ceiling_frac"] = float(w.reusable_prefix_tokens().sum()) / prompt if prompt else 0.0
    return out
