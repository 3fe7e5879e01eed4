"""Usage-log audit speed: parse + validate + audit a 100,000-line log.

Run: .venv/bin/python benchmarks/audit_bench.py [N]
Prints seconds and lines/s for JSON lines and CSV, each clean and with 1 % bad
rows (those take the per-row pydantic path for their messages).  Target: a
100k-line file audited in well under 2 s, so the dashboard stays responsive.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.prompts.usage_audit import audit, parse_usage_log  # noqa: E402

FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


def make_log(n: int, bad_frac: float, seed: int = 0) -> tuple[bytes, bytes]:
    """(JSON lines, CSV) of ``n`` requests over a day in 40 groups; ``bad_frac`` of rows broken."""
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.uniform(1_760_000_000, 1_760_086_400, n))
    hit = rng.random(n) < 0.85
    prefix = rng.integers(1024, 8192, n)
    cols = {
        "input_tokens": rng.integers(10, 2000, n),
        "cache_creation_input_tokens": np.where(hit, 0, prefix),
        "cache_read_input_tokens": np.where(hit, prefix, 0),
        "output_tokens": rng.integers(50, 1500, n),
    }
    groups = [f"tenant-{g}" for g in rng.integers(0, 40, n)]
    bad = set(rng.choice(n, int(n * bad_frac), replace=False).tolist())
    jl, cs = [], [",".join(("timestamp", "group", *FIELDS))]
    for i in range(n):
        vals = [int(cols[f][i]) for f in FIELDS]
        if i in bad:
            vals[0] = -vals[0]
        stamp = f"{ts[i]:.3f}"
        jl.append(json.dumps({"timestamp": float(stamp), "group": groups[i], **dict(zip(FIELDS, vals, strict=True))}))
        cs.append(",".join([stamp, groups[i], *map(str, vals)]))
    return ("\n".join(jl) + "\n").encode(), ("\n".join(cs) + "\n").encode()


def timed(data: bytes, name: str, repeats: int = 3) -> tuple[float, int, int]:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        parsed = parse_usage_log(data, name)
        report = audit(parsed, 3e-6, 15e-6, 1.25)
        best = min(best, time.perf_counter() - t0)
    return best, report.requests, parsed.rows_rejected


def main(n: int = 100_000) -> None:
    print(f"usage-log audit, {n:,} lines (best of 3; parse + validate + audit)")
    for bad_frac in (0.0, 0.01):
        jsonl, csv = make_log(n, bad_frac)
        for label, data, name in (("JSON lines", jsonl, "log.jsonl"), ("CSV", csv, "log.csv")):
            secs, used, rejected = timed(data, name)
            print(
                f"  {label:10s} {len(data) / 2**20:6.1f} MiB, {bad_frac:4.0%} bad: {secs:6.3f} s "
                f"({n / secs:,.0f} lines/s; {used:,} used, {rejected:,} rejected)"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
