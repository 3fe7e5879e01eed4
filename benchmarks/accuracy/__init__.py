"""The engine against published serving measurements (``benchmarks/data/published-serving.json``).

``rows`` validates the file; each category module turns a row into a kvplan scenario and
predicts the measured figure; ``benchmarks/published_accuracy.py`` prints per-row and median
errors per category.  Tests pinned to these numbers import the same modules."""
