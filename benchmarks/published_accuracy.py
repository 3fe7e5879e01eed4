"""The engine against every published measurement in benchmarks/data/published-serving.json.

Prints, per category (KV capacity from vLLM start-up logs; first-token latency, time per output
token and throughput from benchmark tables), each row's measured and predicted figure and the
median |error|, the median signed error and the worst |error|.

    .venv/bin/python benchmarks/published_accuracy.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.accuracy import kv_capacity, latency  # noqa: E402 — after the path set-up above
from benchmarks.accuracy.report import summary, table  # noqa: E402
from benchmarks.accuracy.rows import load_rows  # noqa: E402
from planner.model.catalog import load_catalog  # noqa: E402


def main() -> None:
    rows = load_rows()
    catalog = load_catalog()
    sections = {
        "kv_capacity": kv_capacity.predictions(rows, catalog, "in_sample"),
        "kv_held_out": kv_capacity.predictions(rows, catalog, "held_out"),
        **latency.predictions(rows, catalog),
    }
    titles = {
        "kv_capacity": "kv_capacity, in-sample (the 18 rows vLLM's memory constants are fitted on)",
        "kv_held_out": "kv_capacity, held-out (never fitted)",
    }
    for name, preds in sections.items():
        print(table(titles.get(name, name), preds))
        print()
    waiting = kv_capacity.pending(rows, catalog)
    if waiting:
        print(f"## kv_capacity, pending ({len(waiting)} held-out rows kvplan cannot predict yet)")
        for row_id, reason in waiting:
            print(f"{row_id:<36}{reason}")
        print()
    print("## summary")
    for name, preds in sections.items():
        med, signed, worst = summary(preds)
        print(
            f"{name:<12} median |error| {med:6.1%}  median signed {signed:+6.1%}  worst {worst:6.1%}  "
            f"({len(preds)} rows)"
        )


if __name__ == "__main__":
    main()
