"""Fitting the efficiency model to measurements: published tables (benchmarks/fit_timing.py) and the
user's own serving benchmarks (``calibrate``).  ``points`` predicts measured numbers with any
efficiency parameters in one vectorised call; ``fit`` is the bounded least-squares fitter;
``serving_results`` reads ``vllm bench serve`` and SGLang ``bench_serving`` result files."""
