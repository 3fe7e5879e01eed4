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
    sections = {"kv_capacity": kv_capacity.predictions(rows, catalog), **latency.predictions(rows, catalog)}
    for name, preds in sections.items():
        print(table(name, preds))
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
