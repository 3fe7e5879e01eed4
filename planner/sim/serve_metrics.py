"""The statistics ``vllm bench serve`` reports, computed from one simulated replica: kvplan's one
definition of them (``kvplan predict``, the Cross-check tab and ``benchmarks/predict_accuracy.py``
all read them here).

Source: vllm/benchmarks/serve.py, v0.33.0 — ``calculate_metrics`` (lines 602–812) and the
printout and result JSON of ``benchmark`` (lines 1220–1452).  Over the successful requests:

  completed, failed            requests that succeeded / failed (kvplan: refused for the context
                               window or the KV cache — vLLM's server answers those with an error)
  duration_s                   the benchmark's start (t = 0) to the end of its last request
  total_input / total_output   Σ prompt tokens / Σ output tokens
  request_throughput           completed / duration
  output_throughput            total_output / duration
  total_token_throughput       (total_input + total_output) / duration
  TTFT  per request            first token − the request's start (in a closed loop: when its slot came free)
  TPOT  per request            (latency − TTFT) / (output − 1), only for output > 1
  ITL   per streamed chunk     the gap between a request's successive chunks, over every request; a
                               chunk is one scheduler step's tokens of one request (speculative
                               decoding streams its accepted tokens in one chunk, so its ITL is the
                               whole step, not step / tokens)
  E2EL  per request            latency: last token − start
  each as mean, median, std (``np.std``, ddof 0) and ``np.percentile`` (linear interpolation) —
  vLLM's own calls; an empty list gives 0, as its ``np.mean(xs or 0)`` does
  max_concurrent_requests      the most requests active in any one-second bucket from the first
                               start (vLLM's bucketing: seconds int(start − first) … int(end − first))

Not predicted: ``max_output_tokens_per_s`` (vLLM's "Peak output token throughput") needs every
token's timestamp, which the simulator does not keep (it keeps step durations and ITL values); it is
``None`` in the result JSON and left out of the printout.  ``request_goodput`` is ``None`` as in vLLM
without ``--goodput``; ``rtfx`` is 0 (no audio input).

Pure: numpy only; SI inside (``ServeStats``), vLLM's milliseconds only in ``result_json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from planner.sim.results import SERVED, SimResult
from planner.units import MS_PER_S

#: The latencies vLLM can report: attribute name → (short name, section header), its own strings
#: (``process_one_metric("ttft", "TTFT", "Time to First Token")`` …, serve.py lines 1435–1438).
LATENCIES: dict[str, tuple[str, str]] = {
    "ttft": ("TTFT", "Time to First Token"),
    "tpot": ("TPOT", "Time per Output Token (excl. 1st token)"),
    "itl": ("ITL", "Inter-token Latency"),
    "e2el": ("E2EL", "End-to-end Latency"),
}
#: vLLM's defaults: ``--percentile-metrics`` "ttft,tpot,itl" for generative models (kvplan adds
#: e2el: see ``kvplan predict --help``) and ``--metric-percentiles`` "99".
VLLM_DEFAULT_METRICS = ("ttft", "tpot", "itl")
DEFAULT_METRICS = ("ttft", "tpot", "itl", "e2el")
DEFAULT_PERCENTILES = (99.0,)


@dataclass(frozen=True)
class Statistic:
    """One latency's statistics over its samples, seconds."""

    mean_s: float
    median_s: float
    std_s: float
    percentiles_s: tuple[tuple[float, float], ...]  # (percentile, value)


@dataclass(frozen=True)
class ServeStats:
    """What ``vllm bench serve`` computes for a run (module doc), SI units."""

    completed: int
    failed: int
    duration_s: float
    total_input_tokens: int
    total_output_tokens: int
    request_throughput_per_s: float
    output_throughput_tokens_per_s: float
    total_token_throughput_tokens_per_s: float
    max_concurrent_requests: int
    latencies: dict[str, Statistic]  # keys of ``LATENCIES``, in the order asked for


def percentile_label(p: float) -> str:
    """vLLM's ``p_word``: "99" for 99.0, "99.9" for 99.9."""
    return str(int(p)) if int(p) == p else str(p)


def statistic(values: np.ndarray, pcts: Sequence[float], counts: np.ndarray | None = None) -> Statistic:
    """mean, median, std and percentiles of ``values``, each repeated ``counts`` times (integers; None = once),
    exactly as numpy computes them on the repeated list (without building it); 0 for no samples."""
    v = np.asarray(values, dtype=float)
    c = np.ones(v.shape) if counts is None else np.asarray(counts, dtype=float)
    c = np.rint(c).astype(np.int64)
    keep = c > 0
    v, c = v[keep], c[keep]
    n = int(c.sum())
    if n == 0:
        return Statistic(0.0, 0.0, 0.0, tuple((float(p), 0.0) for p in pcts))
    order = np.argsort(v, kind="stable")
    v, c = v[order], c[order]
    mean = float(np.dot(v, c) / n)
    std = float(np.sqrt(np.dot(c, (v - mean) ** 2) / n))
    ends = np.cumsum(c)  # the repeated list's element j is v[searchsorted(ends, j, "right")]

    def at(j: np.ndarray) -> np.ndarray:
        return v[np.searchsorted(ends, j, side="right")]

    def pct(p: Sequence[float]) -> list[float]:
        h = (n - 1) * np.asarray(p, dtype=float) / 100.0  # numpy's "linear": position (n − 1)·p
        lo = np.floor(h).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        a, b = at(lo), at(hi)
        return (a + (h - lo) * (b - a)).tolist()

    median, *rest = pct([50.0, *pcts])
    return Statistic(mean, median, std, tuple(zip(map(float, pcts), rest, strict=True)))


def chunk_itls(r: SimResult) -> tuple[np.ndarray, np.ndarray]:
    """(ITL of a streamed chunk, how many such chunks): the simulator's ITL sample as vLLM's client
    sees it.  Without speculative decoding a sample value of weight w is one step's duration shared by
    w requests (w chunks of one token); with it, a value of weight a is step / a for one request that
    received a tokens in one chunk (one chunk of ITL value · a)."""
    if r.config.gamma > 0:
        return r.itl_s * r.itl_weight, np.ones(r.itl_s.shape, dtype=np.int64)
    return r.itl_s, r.itl_weight


def max_concurrent(start_s: np.ndarray, end_s: np.ndarray) -> int:
    """vLLM's "Peak concurrent requests": per one-second bucket from the first start, the requests whose
    start and end seconds span it (both counted), the largest count; 0 without requests."""
    if start_s.size == 0:
        return 0
    first = float(start_s.min())
    a = (start_s - first).astype(np.int64)  # int() truncates; the offsets are ≥ 0
    b = (end_s - first).astype(np.int64)
    buckets = int(np.ceil(float(end_s.max()) - first)) + 1
    edges = np.zeros(buckets + 2, dtype=np.int64)
    np.add.at(edges, a, 1)
    np.add.at(edges, b + 1, -1)
    return int(np.cumsum(edges).max())


def serve_stats(
    r: SimResult, pcts: Sequence[float] = DEFAULT_PERCENTILES, metrics: Sequence[str] = DEFAULT_METRICS
) -> ServeStats:
    """``r`` as ``vllm bench serve`` would report it (module doc); t = 0 is the benchmark's start."""
    unknown = [m for m in metrics if m not in LATENCIES]
    if unknown:
        raise ValueError(f"metrics {unknown}: allowed {', '.join(LATENCIES)}")
    ok = r.status == SERVED
    completed = int(ok.sum())
    end_s = r.arrival_s + np.where(ok, r.e2e_s, 0.0)  # a failed request returns at its start
    started = np.isfinite(r.arrival_s)
    duration_s = float(end_s[started].max()) if started.any() else 0.0
    total_in = int(r.prompt_tokens[ok].sum())
    total_out = int(r.output_tokens[ok].sum())
    ttft, e2e, out = r.ttft_s[ok], r.e2e_s[ok], r.output_tokens[ok]
    many = out > 1
    samples: dict[str, tuple[np.ndarray, np.ndarray | None]] = {
        "ttft": (ttft, None),
        "tpot": ((e2e[many] - ttft[many]) / (out[many] - 1), None),
        "itl": chunk_itls(r),
        "e2el": (e2e, None),
    }
    per_s = 1.0 / duration_s if duration_s > 0 else 0.0
    return ServeStats(
        completed=completed,
        failed=int(r.status.size - completed),
        duration_s=duration_s,
        total_input_tokens=total_in,
        total_output_tokens=total_out,
        request_throughput_per_s=completed * per_s,
        output_throughput_tokens_per_s=total_out * per_s,
        total_token_throughput_tokens_per_s=(total_in + total_out) * per_s,
        max_concurrent_requests=max_concurrent(r.arrival_s[ok], end_s[ok]),
        latencies={m: statistic(samples[m][0], pcts, samples[m][1]) for m in metrics},
    )


def result_json(stats: ServeStats) -> dict[str, float | int | None]:
    """The metric keys of ``vllm bench serve --save-result`` (serve.py lines 1319–1340 and
    ``process_one_metric``, lines 1398–1432), vLLM's units: seconds, tokens/s, milliseconds."""
    out: dict[str, float | int | None] = {
        "duration": stats.duration_s,
        "completed": stats.completed,
        "failed": stats.failed,
        "total_input_tokens": stats.total_input_tokens,
        "total_output_tokens": stats.total_output_tokens,
        "request_throughput": stats.request_throughput_per_s,
        "request_goodput": None,
        "output_throughput": stats.output_throughput_tokens_per_s,
        "total_token_throughput": stats.total_token_throughput_tokens_per_s,
        "max_output_tokens_per_s": None,
        "max_concurrent_requests": stats.max_concurrent_requests,
        "rtfx": 0.0,
    }
    for name, st in stats.latencies.items():
        out[f"mean_{name}_ms"] = st.mean_s * MS_PER_S
        out[f"median_{name}_ms"] = st.median_s * MS_PER_S
        out[f"std_{name}_ms"] = st.std_s * MS_PER_S
        for p, value in st.percentiles_s:
            out[f"p{percentile_label(p)}_{name}_ms"] = value * MS_PER_S
    return out
