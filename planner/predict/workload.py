"""The requests of one ``vllm bench serve`` run, drawn as the benchmark draws them.

Lengths, ``--dataset-name random`` (vllm/benchmarks/datasets/utils.py ``get_sampling_params`` and
datasets.py ``RandomDataset.sample``, v0.33.0): with input length L_in, output length L_out and range
ratios r_in, r_out in [0, 1),

    input  ~ integers[⌊L_in·(1 − r_in)⌋, ⌈L_in·(1 + r_in)⌉]            (both ends included)
    output ~ integers[max(⌊L_out·(1 − r_out)⌋, 1), max(⌈L_out·(1 + r_out)⌉, 1)]
    drawn by ``numpy.random.default_rng(seed).integers``, inputs first, then outputs

and every prompt starts with the same ``--random-prefix-len`` tokens (one shared prefix: the server's
prefix cache may hold it).  vLLM first subtracts the tokenizer's special tokens from L_in (one BOS for
Llama) and the server adds them back; kvplan has no tokenizer and counts L_in as the prompt.

Arrivals (serve.py ``get_request``): at ``--request-rate`` inf every request is sent at t = 0;
otherwise the gaps are Gamma(shape = b, scale = 1 / (rate · b)) with b = ``--burstiness`` (b = 1:
Poisson), drawn one per request from ``np.random`` seeded with ``--seed`` (serve.py ``main_async``:
``np.random.seed(args.seed)``), summed, and rescaled so that the last request is sent at
n / rate exactly (vLLM's "normalize_factor"); b = inf gives constant gaps 1 / rate.  The first
request waits its own gap.  ``--max-concurrency`` then holds each request until a slot is free
(``planner.sim.closed_loop``).

A trace gives the lengths (and shared prefixes) of its first ``--num-prompts`` requests; it is sent on
its own clock (vLLM's ``--self-timed``) unless ``--request-rate`` is given.
"""

from __future__ import annotations

import math

import numpy as np

from planner.predict.options import PredictOptions
from planner.sim.workload import Workload, one_shared_prefix


def length_bounds(length: int, ratio: float, at_least: int = 0) -> tuple[int, int]:
    """vLLM's sampling interval [⌊L·(1 − r)⌋, ⌈L·(1 + r)⌉], each end at least ``at_least``."""
    return max(math.floor(length * (1 - ratio)), at_least), max(math.ceil(length * (1 + ratio)), at_least)


def random_lengths(o: PredictOptions) -> tuple[np.ndarray, np.ndarray]:
    """(prompt tokens, output tokens) of ``o.num_prompts`` requests (module doc)."""
    rng = np.random.default_rng(o.seed)
    in_lo, in_hi = length_bounds(o.input_len, o.input_range_ratio)
    out_lo, out_hi = length_bounds(o.output_len, o.output_range_ratio, at_least=1)
    prompt = rng.integers(in_lo, in_hi + 1, size=o.num_prompts)
    output = rng.integers(out_lo, out_hi + 1, size=o.num_prompts)
    return (prompt + o.prefix_len).astype(np.int64), output.astype(np.int64)


def send_times_s(n: int, rate_per_s: float, burstiness: float, seed: int) -> np.ndarray:
    """When the benchmark sends each of ``n`` requests, seconds after its start (module doc)."""
    if math.isinf(rate_per_s):
        return np.zeros(n)
    if math.isinf(burstiness):
        gaps = np.full(n, 1.0 / rate_per_s)
    else:
        gaps = np.random.RandomState(seed).gamma(burstiness, 1.0 / (rate_per_s * burstiness), size=n)
    t = np.cumsum(gaps)
    if t[-1] != 0:
        t *= (n / rate_per_s) / t[-1]
    return t


def bench_workload(o: PredictOptions, trace: Workload | None = None) -> Workload:
    """The run's requests: random lengths or the trace's, sent at the benchmark's times (module doc)."""
    if trace is None:
        prompt, output = random_lengths(o)
        w = Workload(send_times_s(o.num_prompts, o.request_rate_per_s, o.burstiness, o.seed), prompt, output, "random")
        if o.prefix_len:
            w = one_shared_prefix(w, np.full(len(w), o.prefix_len, dtype=np.int64))
        return w
    w = trace.take(slice(0, o.num_prompts))
    if o.trace_timed:
        return w.with_arrivals(w.arrival_s - float(w.arrival_s[0]))
    return w.with_arrivals(send_times_s(len(w), o.request_rate_per_s, o.burstiness, o.seed))
