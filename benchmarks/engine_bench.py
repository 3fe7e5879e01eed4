"""Engine throughput: one vectorised call over 1,000,000 scenarios vs a per-scenario loop.

Run: make bench-engine   (or .venv/bin/python benchmarks/engine_bench.py [N])
Prints scenarios/s for both and their ratio.  Target: ≥ 1,000,000 scenarios/s
vectorised on one core (numpy's elementwise kernels are single-threaded).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.evaluate import compute, inputs_for, resolve  # noqa: E402
from planner.model.catalog import load_catalog  # noqa: E402
from planner.model.scenario import Scenario  # noqa: E402

TARGET_SCENARIOS_PER_S = 1_000_000


def main(n: int = 1_000_000, loop_n: int = 2_000) -> None:
    catalog = load_catalog()
    x = inputs_for(resolve(Scenario(), catalog))
    rng = np.random.default_rng(0)
    prompt = rng.integers(16, 32_768, n).astype(float)
    grid = x.with_(
        batch=rng.integers(1, 512, n).astype(float),
        prompt_tokens=prompt,
        output_tokens=rng.integers(1, 4_096, n).astype(float),
        chunk_tokens=rng.integers(64, 8_192, n).astype(float),
        cache_hit_rate=rng.random(n),
        prefix_tokens=np.floor(prompt * rng.random(n)),
        alpha=rng.random(n),
    )
    compute(x)  # warm-up
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        out = compute(grid)
        best = min(best, time.perf_counter() - t0)
    assert out["tpot_s"].shape == (n,)
    vec_rate = n / best

    t0 = time.perf_counter()
    for i in range(loop_n):
        compute(
            x.with_(
                batch=float(grid.batch[i]),
                prompt_tokens=float(prompt[i]),
                output_tokens=float(grid.output_tokens[i]),
                chunk_tokens=float(grid.chunk_tokens[i]),
                cache_hit_rate=float(grid.cache_hit_rate[i]),
                prefix_tokens=float(grid.prefix_tokens[i]),
                alpha=float(grid.alpha[i]),
            )
        )
    loop_rate = loop_n / (time.perf_counter() - t0)
    print(f"vectorised: {n:,} scenarios in {best:.3f} s = {vec_rate:,.0f} scenarios/s (best of 3)")
    print(f"loop:       {loop_n:,} scenarios one by one = {loop_rate:,.0f} scenarios/s")
    print(
        f"ratio:      {vec_rate / loop_rate:,.0f}x; "
        f"target >= 1,000,000 scenarios/s: {'met' if vec_rate >= TARGET_SCENARIOS_PER_S else 'NOT met'}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
