"""What a simulation returns, and the views of it: summary, tables, CDFs, timeline, text.

Per request (arrival order): TTFT = first token − arrival; e2e = last token − arrival;
TPOT = (e2e − TTFT) / (output − 1); its median and largest inter-token latency (ITL).  The ITL
sample is stored as (value, weight in tokens): a speculative step that emits a tokens at once gives
a samples of step / a, stored as one value of weight a.  Each latency's statistics, the goodput and
the verdict against the run's SLO are ``planner.sim.slo``'s (one definition): percentiles are the
inverse empirical CDF.  Throughput is output tokens / (last completion − first arrival).  The
queue/KV timeline keeps ≤ ``MAX_TIMELINE_POINTS`` points, each the first time and the largest value
of a run of records (spikes survive).  Pure: numpy and pandas only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from planner.format import fmt_count, fmt_pct, fmt_seconds, fmt_sig, fmt_tokens_per_s
from planner.sim.config import SimConfig
from planner.sim.slo import (
    LATENCIES,
    LatencyName,
    good_requests,
    goodput_targets,
    percentiles,
    statistic,
    statistics,
    verdict,
)
from planner.sim.status import NOT_RUN, REJECTED_CONTEXT, REJECTED_KV, SERVED, STATUS_NAMES

__all__ = [
    "NOT_RUN",
    "REJECTED_CONTEXT",
    "REJECTED_KV",
    "SERVED",
    "STATUS_NAMES",
    "SimResult",
    "percentiles",
]

MAX_TIMELINE_POINTS = 2000
PERCENTILES = (50, 90, 99)
#: Points per CDF curve (``cdf_points``).
CDF_POINTS = 400
#: The time-weighted mean needs a positive span; a run whose records share one instant divides by this instead.
_TINY_SPAN_S = 1e-300


@dataclass(frozen=True)
class SimResult:
    """One simulated replica (SI units, token counts); ``summary`` is filled by ``with_summary``."""

    config: SimConfig
    # per request, in arrival order
    arrival_s: np.ndarray
    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    cached_tokens: np.ndarray
    status: np.ndarray  # SERVED, REJECTED_CONTEXT, REJECTED_KV, NOT_RUN
    ttft_s: np.ndarray  # NaN unless served
    e2e_s: np.ndarray
    itl_p50_s: np.ndarray  # NaN for one-token outputs, or when detail=False
    itl_max_s: np.ndarray
    preemptions: np.ndarray
    # every inter-token latency, with its weight in tokens
    itl_s: np.ndarray
    itl_weight: np.ndarray
    # over time, ≤ MAX_TIMELINE_POINTS points
    timeline_s: np.ndarray
    queue_len: np.ndarray
    kv_used_frac: np.ndarray
    kv_used_time_mean_frac: float
    steps: int
    stopped_early: bool  # stop_on_slo_miss fired: the SLOs are certainly missed
    summary: dict[str, float | bool] = field(default_factory=dict)
    # the prefix cache, per request at its first admission (0 blocks: never admitted)
    prefix_blocks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    prefix_hit_blocks: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    replica: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    prefix_cache_max_blocks: float = 0.0  # the most KV blocks of shared prefix blocks one replica's cache held
    prefix_reuse_ceiling_frac: float = 0.0  # prompt tokens an unbounded cache could serve / prompt tokens

    @property
    def tpot_s(self) -> np.ndarray:
        """(e2e − TTFT) / (output − 1) per request; NaN for one-token outputs and requests not served."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.output_tokens > 1, (self.e2e_s - self.ttft_s) / (self.output_tokens - 1), np.nan)

    @property
    def meets_slo(self) -> np.ndarray:
        """Per request: within the goodput's targets (``slo.good_requests``)."""
        return good_requests(self, self.config.slo)


# ------------------------------------------------------------------ assembling a result


def itl_by_request(
    booked: list[tuple[list[int], np.ndarray, np.ndarray]], requests: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, weights, starts): speculative decoding's ITLs grouped by request, request i's being
    ``values[starts[i]:starts[i + 1]]`` in the order they were booked.

    ``booked``: (requests, ITLs, tokens) per booking, row r of the [requests, steps] arrays being the ITLs of
    request r of the list (``steps.book_decodes``, a recomputation's gap).  Every value is tagged with its request
    (each row's request repeated over the row's steps) and a stable sort by tag groups them: the work is per
    value, not per row of each booking."""
    starts = np.zeros(requests + 1, dtype=np.int64)
    if not booked:
        return np.zeros(0), np.zeros(0, dtype=np.int64), starts
    values = np.concatenate([itl.ravel() for _, itl, _ in booked])
    weights = np.concatenate([tokens.ravel() for _, _, tokens in booked])
    members = np.fromiter(itertools.chain.from_iterable(rows for rows, _, _ in booked), dtype=np.int64)
    steps = np.array([itl.shape[1] for _, itl, _ in booked], dtype=np.int64)
    per_row = np.repeat(steps, [len(rows) for rows, _, _ in booked])
    tags = np.repeat(members, per_row)
    # the stable sort keeps each request's booking order (a radix sort where the tags fit in 16 bits)
    order = np.argsort(tags.astype(np.int16) if requests <= 1 << 15 else tags, kind="stable")
    np.cumsum(np.bincount(tags, minlength=requests), out=starts[1:])
    return values[order], weights[order], starts


def per_request_itl_p50_max(values: np.ndarray, starts: np.ndarray, requests: int) -> tuple[np.ndarray, np.ndarray]:
    """Each request's inverse-CDF median and largest ITL (a partial sort per request).

    ``values[starts[i]:starts[i + 1]]``: request i's ITLs (``itl_by_request``); NaN for a request without any.
    The median of c sorted values is the ⌈c/2⌉-th (inverse CDF at 0.5)."""
    p50, pmax = np.full(requests, np.nan), np.full(requests, np.nan)
    bounds = starts.tolist()
    for i in np.flatnonzero(np.diff(starts)).tolist():
        part = values[bounds[i] : bounds[i + 1]]
        k = (part.shape[0] + 1) // 2 - 1
        p50[i] = np.partition(part, k)[k]
        pmax[i] = part.max()
    return p50, pmax


def per_request_itl_from_runs(
    step_logs: list[np.ndarray],
    replica: list[int],
    decode_runs: list[list[tuple[int, int]]],
    gaps: list[list[float]],
) -> tuple[np.ndarray, np.ndarray]:
    """Each request's inverse-CDF median and largest ITL without speculative decoding.

    A request decodes in every step of its replica from its prefill to its completion or
    preemption, so its ITLs are the durations of runs of consecutive steps
    (``step_logs[replica][a:b]`` for each run (a, b)) and the gaps of its recomputations."""
    n = len(decode_runs)
    p50, pmax = np.full(n, np.nan), np.full(n, np.nan)
    one: list[list[int]] = [[] for _ in step_logs]  # per replica: the requests with one run and no gap …
    bounds: list[list[int]] = [[] for _ in step_logs]  # … and that run's (start, end), flat
    for i in range(n):
        runs, extra = decode_runs[i], gaps[i]
        if not runs and not extra:
            continue
        log = step_logs[replica[i]]
        if len(runs) == 1 and not extra:
            a, b = runs[0]
            values = log[a:b].copy()
            one[replica[i]].append(i)
            bounds[replica[i]].extend(runs[0])
        else:
            values = np.concatenate([log[a:b] for a, b in runs] + [np.array(extra, dtype=float)])
            pmax[i] = values.max()
        k = (values.shape[0] + 1) // 2 - 1
        values.partition(k)  # the k-th smallest: the same value whatever the method
        p50[i] = values[k]
    for log, rows, edges in zip(step_logs, one, bounds, strict=True):
        if rows:  # the largest of each run in one call (the even segments of reduceat: [start, end))
            padded = np.append(log, 0.0)  # an end may be the log's length
            pmax[rows] = np.maximum.reduceat(padded, edges)[::2]
    return p50, pmax


def itl_sample(pieces: list[tuple[np.ndarray, np.ndarray | int]]) -> tuple[np.ndarray, np.ndarray]:
    """The ITL values and their token weights, from (values, weights) pieces in booking order.

    A piece's weight is an array (one per value) or an int shared by all its values."""
    if not pieces:
        empty = np.zeros(0)
        return empty, empty
    values = np.concatenate([v for v, _ in pieces])
    if all(not isinstance(wt, np.ndarray) for _, wt in pieces):
        weights = np.repeat(np.array([wt for _, wt in pieces], dtype=float), [v.shape[0] for v, _ in pieces])
    else:
        weights = np.concatenate(
            [wt if isinstance(wt, np.ndarray) else np.full(v.shape[0], float(wt)) for v, wt in pieces]
        ).astype(float)
    return values, weights


def time_mean(times_s: np.ndarray, values: np.ndarray) -> float:
    """Time-weighted mean of a step function (value i holds from time i to time i + 1).

    Σ v_i·(t_{i+1} − t_i) / (t_last − t_first); the plain mean for a single record, 0 for none."""
    if times_s.size > 1:
        return float(np.sum(values[:-1] * np.diff(times_s)) / max(times_s[-1] - times_s[0], _TINY_SPAN_S))
    return float(values.mean()) if values.size else 0.0


def downsample_timeline(times_s: np.ndarray, *series: np.ndarray) -> tuple[np.ndarray, ...]:
    """≤ MAX_TIMELINE_POINTS points: the first time and the largest value of each run of records."""
    if times_s.size <= MAX_TIMELINE_POINTS:
        return (times_s, *series)
    edges = np.unique(np.linspace(0, times_s.size, MAX_TIMELINE_POINTS + 1).astype(int)[:-1])
    return (times_s[edges], *(np.maximum.reduceat(s, edges) for s in series))


# ------------------------------------------------------------------ summary


def with_summary(r: SimResult) -> SimResult:
    """``r`` with its summary: mean, p50/p90/p99 of TTFT, TPOT, ITL and e2e over what was served, the
    statistic its SLO holds, throughput, goodput, the verdict, KV and queue use."""
    served = r.status == SERVED
    out: dict[str, float | bool] = {}
    slo = r.config.slo
    judged: dict[LatencyName, float] = {}  # the verdict's statistics (``slo.verdict``): rejected requests as ∞
    for name in LATENCIES:
        # one sort per sample (``statistics``); TPOT's and ITL's samples are the verdict's too (no rejections in them)
        shared = name in ("tpot", "itl")
        values = statistics(r, name, [*PERCENTILES, "mean", *([slo.pct] if shared else [])], rejected_as_inf=False)
        for pct, value in zip(PERCENTILES, values[: len(PERCENTILES)], strict=True):
            out[f"{name}_p{pct}_s"] = value
        out[f"{name}_mean_s"] = values[len(PERCENTILES)]
        judged[name] = values[-1] if shared else statistic(r, name, slo.pct)
    n_served = int(served.sum())
    span_s = float(np.nanmax(r.arrival_s + r.e2e_s) - r.arrival_s[0]) if n_served else float("nan")
    tokens = float(r.output_tokens[served].sum())
    good = r.meets_slo
    out.update(
        requests=float(r.status.size),
        served_requests=float(n_served),
        rejected_context=float((r.status == REJECTED_CONTEXT).sum()),
        rejected_kv=float((r.status == REJECTED_KV).sum()),
        duration_s=span_s,
        output_tokens_per_s=tokens / span_s if span_s > 0 else float("nan"),
        requests_per_s=n_served / span_s if span_s > 0 else float("nan"),
        goodput_frac=float(good.mean()) if good.size else float("nan"),
        goodput_requests_per_s=float(good.sum()) / span_s if span_s > 0 else float("nan"),
        preemptions=float(r.preemptions.sum()),
        kv_capacity_blocks=float(r.config.kv_capacity_blocks),
        kv_used_mean_frac=r.kv_used_time_mean_frac,
        kv_used_max_frac=float(r.kv_used_frac.max()) if r.kv_used_frac.size else 0.0,
        queue_max=float(r.queue_len.max()) if r.queue_len.size else 0.0,
        steps=float(r.steps),
    )
    out.update(prefix_cache_summary(r))
    # a rejected request never gets its first token: for the verdict its TTFT is infinite
    out["ttft_p99_with_rejected_s"] = statistic(r, "ttft", 99)
    v = verdict(r, slo, judged)
    for name in LATENCIES:
        out[f"{name}_slo_stat_s"] = v.value(name)
    out["slo_met"] = v.met
    return replace(r, summary=out)


def prefix_cache_summary(r: SimResult) -> dict[str, float]:
    """Prefix-cache hit rates over the requests admitted at least once, by tokens (vLLM's
    ``prefix_cache_hits / prefix_cache_queries``), by prefix blocks and by requests; and the
    cache size that produced them: the pool's blocks (``pool``: the cache lives in the free KV
    blocks), inf (``unbounded``) or 0 (``off``), and the most blocks of shared prefix blocks it
    held (it holds other freed blocks too, as vLLM does, but no request finds them); and the
    traffic's ceiling: the share of prompt tokens an unbounded cache could serve."""
    admitted = r.prefix_blocks > 0
    prompt = float(r.prompt_tokens[admitted].sum())
    blocks = float(r.prefix_blocks.sum())
    mode = r.config.prefix_cache
    capacity = {"pool": float(r.config.kv_capacity_blocks), "unbounded": float("inf"), "off": 0.0}[mode]
    return dict(
        prefix_cache_hit_rate_tokens=float(r.cached_tokens[admitted].sum()) / prompt if prompt else float("nan"),
        prefix_cache_hit_rate_blocks=float(r.prefix_hit_blocks.sum()) / blocks if blocks else float("nan"),
        prefix_cache_hit_rate_requests=float((r.prefix_hit_blocks[admitted] > 0).mean())
        if admitted.any()
        else float("nan"),
        prefix_cache_capacity_blocks=capacity,
        prefix_cache_max_blocks=r.prefix_cache_max_blocks,
        prefix_reuse_ceiling_frac=r.prefix_reuse_ceiling_frac,
    )


def simulated_gpu_hit(r: SimResult, prompt_tokens: float, hit_tokens: float) -> float | None:
    """The GPUs' prefix-cache hit rate (``gpu_hit``) this run's cache measured, as the engine's headline reads
    it (``engine.prefix_reuse``): the share of prompt tokens found (vLLM's ``prefix_cache_hits /
    prefix_cache_queries``) × P / X_hit, the share of requests finding the scenario's X_hit cached tokens
    that reads as many of its P-token prompts; at most 1.  None when no token of the prompt can be cached
    (X_hit = 0) or no prompt was looked up."""
    rate = float(r.summary.get("prefix_cache_hit_rate_tokens", float("nan")))
    if hit_tokens <= 0 or not np.isfinite(rate):
        return None
    return float(min(1.0, rate * prompt_tokens / hit_tokens))


# ------------------------------------------------------------------ views


def requests_frame(r: SimResult) -> pd.DataFrame:
    """One row per request (the per-request CSV), SI units."""
    return pd.DataFrame(
        {
            "request": np.arange(r.status.size),
            "arrival_s": r.arrival_s,
            "prompt_tokens": r.prompt_tokens,
            "cached_tokens": r.cached_tokens,
            "prefix_blocks": r.prefix_blocks,
            "prefix_hit_blocks": r.prefix_hit_blocks,
            "replica": r.replica,
            "output_tokens": r.output_tokens,
            "status": [STATUS_NAMES[int(v)] for v in r.status],
            "ttft_s": r.ttft_s,
            "tpot_s": r.tpot_s,
            "itl_p50_s": r.itl_p50_s,
            "itl_max_s": r.itl_max_s,
            "e2e_s": r.e2e_s,
            "preemptions": r.preemptions,
            "meets_slo": r.meets_slo,
        }
    )


def summary_frame(r: SimResult) -> pd.DataFrame:
    """The summary as a one-row table."""
    return pd.DataFrame([r.summary])


def cdf_points(
    values: np.ndarray, weights: np.ndarray | None = None, points: int = CDF_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """(value, cumulative share) at ``points`` evenly spaced shares: the inverse empirical CDF.

    Unweighted values drop their NaNs (requests not served); weighted ones are all finite."""
    values = values[np.isfinite(values)] if weights is None else values
    if values.size == 0:
        return np.zeros(0), np.zeros(0)
    share = np.linspace(0.0, 1.0, points)
    return np.quantile(values, share, method="inverted_cdf", weights=weights), share


def cdf_frame(r: SimResult) -> pd.DataFrame:
    """The TTFT and TPOT (per request) and ITL (per token) CDF curves, long form: metric, value_s, share."""
    parts = []
    for metric, values, weights in (("ttft", r.ttft_s, None), ("tpot", r.tpot_s, None), ("itl", r.itl_s, r.itl_weight)):
        x, p = cdf_points(values, weights)
        parts.append(pd.DataFrame({"metric": metric, "value_s": x, "share": p}))
    return pd.concat(parts, ignore_index=True)


def timeline_frame(r: SimResult) -> pd.DataFrame:
    """Waiting requests and KV-cache use over simulated time: time_s, queue_len, kv_used_frac."""
    return pd.DataFrame({"time_s": r.timeline_s, "queue_len": r.queue_len, "kv_used_frac": r.kv_used_frac})


def summary_text(r: SimResult) -> str:
    """The summary for a terminal, one line each (numbers via ``planner.format``)."""
    sm = r.summary
    served = f"{fmt_count(sm['served_requests'])} served of {fmt_count(sm['requests'])}"
    if sm["rejected_context"] or sm["rejected_kv"]:
        served += (
            f" ({fmt_count(sm['rejected_context'])} over the context window, "
            f"{fmt_count(sm['rejected_kv'])} over the KV cache)"
        )
    rows = [("requests", served)]
    for name, label in (
        ("ttft", "TTFT"),
        ("tpot", "TPOT (per request)"),
        ("itl", "inter-token latency"),
        ("e2e", "end-to-end latency"),
    ):
        stats = [f"mean {fmt_seconds(sm[f'{name}_mean_s'])}"]
        stats += [f"p{p} {fmt_seconds(sm[f'{name}_p{p}_s'])}" for p in PERCENTILES]
        rows.append((label, "  ".join(stats)))
    slo = r.config.slo
    targets = goodput_targets(slo)
    kv_blocks = fmt_count(sm["kv_capacity_blocks"], "block")
    rows += [
        (
            "throughput",
            f"{fmt_tokens_per_s(sm['output_tokens_per_s'])} output, {fmt_sig(sm['requests_per_s'])} requests/s",
        ),
        ("goodput", f"{fmt_pct(sm['goodput_frac'])} of requests meet {targets}"),
        ("SLO met", f"{_verdict(sm)}: {slo.text()}"),
        (
            "KV cache used",
            f"mean {fmt_pct(sm['kv_used_mean_frac'])}, max {fmt_pct(sm['kv_used_max_frac'])} of {kv_blocks}",
        ),
        ("queue", f"max {fmt_count(sm['queue_max'])} waiting; {fmt_count(sm['preemptions'], 'preemption')}"),
        _prefix_row(r),
    ]
    return "".join(f"{k:<26}{v}\n" for k, v in rows)


def _verdict(sm: dict[str, float | bool]) -> str:
    """yes / no, and the rejections that count against the TTFT target."""
    rejected = sm["rejected_context"] + sm["rejected_kv"]
    if sm["slo_met"]:
        within = f" ({fmt_count(rejected)} rejected requests within what the statistic allows)"
        return "yes" + (within if rejected else "")
    return "no" + (f" ({fmt_count(rejected)} of {fmt_count(sm['requests'])} requests rejected)" if rejected else "")


def _prefix_row(r: SimResult) -> tuple[str, str]:
    """The prefix cache's hit rates and the cache size that produced them."""
    sm, mode = r.summary, r.config.prefix_cache
    if mode == "off":
        return "prefix cache", "off (no sharing between requests)"
    if not sm["prefix_reuse_ceiling_frac"]:
        return "prefix cache", "no prompt shares a prefix with another in this traffic"
    where = "unbounded" if mode == "unbounded" else f"in the KV pool of {fmt_count(sm['kv_capacity_blocks'], 'block')}"
    return (
        "prefix cache hit rate",
        f"{fmt_pct(sm['prefix_cache_hit_rate_tokens'])} of prompt tokens, "
        f"{fmt_pct(sm['prefix_cache_hit_rate_blocks'])} of prefix blocks, "
        f"{fmt_pct(sm['prefix_cache_hit_rate_requests'])} of requests (cache {where}, at most "
        f"{fmt_count(sm['prefix_cache_max_blocks'], 'block')} of shared prefixes; an unbounded cache: "
        f"{fmt_pct(sm['prefix_reuse_ceiling_frac'])} of prompt tokens)",
    )
