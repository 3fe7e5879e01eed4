"""``trtllm-bench throughput``'s figures for a prediction (``kvplan predict --max-throughput``).

trtllm-bench's offline run queues every request at once with fixed lengths (its synthetic ISL/OSL,
standard deviation 0) and reports, from each request's start, first-token and end times
(tensorrt_llm/bench/dataclasses/reporting.py and statistics.py, NVIDIA/TensorRT-LLM main as read on
2026-12; the printout of ``ReportUtility.report_statistics``):

  Total Latency                      last end − first start
  Request Throughput (req/sec)       requests / total latency
  Total Output Throughput            Σ output tokens / total latency            (tokens/sec)
  Total Token Throughput             Σ (input + output) tokens / total latency  (tokens/sec)
  Average request latency            mean end-to-end latency                    (ms)
  Per User Output Throughput [w/ ctx] mean over requests of output tokens / end-to-end latency (tps/user)
  Per GPU Output Throughput          total output throughput / world size (tp · pp · dp GPUs)
  Number of concurrent requests      Σ latencies / total latency
  streaming: average TTFT; average TPOT = mean over requests of (end − first token) / (output − 1);
             Per User Output Speed = mean over requests of (output − 1) / (end − first token)
  percentiles (``PercentileStats.from_iterable``): sorted(values)[int(n · p)] for p50, p90, p95, p99,
             with minimum, maximum and average — not numpy's interpolation.

Only served requests are counted (trtllm-bench fails the run on an error; kvplan says how many it
refused instead).  Pure: numpy only; SI inside, milliseconds only in the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.predict.run import Prediction
from planner.sim.results import SERVED
from planner.units import MS_PER_S

PERCENTILE_KEYS = ("p50", "p90", "p95", "p99")
STAT_ORDER = ("minimum", "maximum", "average", "p50", "p90", "p95", "p99")


def percentile_stats(values: np.ndarray) -> dict[str, float]:
    """trtllm-bench's ``PercentileStats``: sorted(values)[int(n · p)], minimum, maximum, average."""
    v = np.sort(np.asarray(values, dtype=float))
    n = v.size
    if n == 0:
        return dict.fromkeys(STAT_ORDER, 0.0)
    out = {k: float(v[min(int(n * int(k[1:]) / 100), n - 1)]) for k in PERCENTILE_KEYS}
    return out | {"minimum": float(v[0]), "maximum": float(v[-1]), "average": float(v.mean())}


@dataclass(frozen=True)
class TrtllmStats:
    """What trtllm-bench reports for the run (module doc), SI units."""

    num_requests: int
    avg_concurrent_requests: float
    avg_input_tokens: float
    avg_output_tokens: float
    total_latency_s: float
    request_throughput_per_s: float
    output_throughput_tokens_per_s: float
    total_token_throughput_tokens_per_s: float
    avg_request_latency_s: float
    per_user_output_throughput_tokens_per_s: float
    per_gpu_output_throughput_tokens_per_s: float
    avg_ttft_s: float
    avg_tpot_s: float
    per_user_output_speed_tokens_per_s: float
    request_latency_s: dict[str, float]
    ttft_s: dict[str, float]
    tpot_s: dict[str, float]


def trtllm_stats(p: Prediction) -> TrtllmStats:
    r = p.result
    ok = r.status == SERVED
    start, e2e, ttft = r.arrival_s[ok], r.e2e_s[ok], r.ttft_s[ok]
    out, inp = r.output_tokens[ok], r.prompt_tokens[ok]
    n = int(ok.sum())
    total = float((start + e2e).max() - start.min()) if n else 0.0
    per_s = 1.0 / total if total > 0 else 0.0
    gen = e2e - ttft
    generated = out - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        tpot = np.where(generated > 0, gen / np.maximum(generated, 1), 0.0)
        speed = np.where(gen > 0, generated / gen, 0.0)
    lat, first, itl = percentile_stats(e2e), percentile_stats(ttft), percentile_stats(tpot)
    return TrtllmStats(
        num_requests=n,
        avg_concurrent_requests=float(e2e.sum()) * per_s,
        avg_input_tokens=float(inp.mean()) if n else 0.0,
        avg_output_tokens=float(out.mean()) if n else 0.0,
        total_latency_s=total,
        request_throughput_per_s=n * per_s,
        output_throughput_tokens_per_s=float(out.sum()) * per_s,
        total_token_throughput_tokens_per_s=float(out.sum() + inp.sum()) * per_s,
        avg_request_latency_s=lat["average"],
        per_user_output_throughput_tokens_per_s=float((out / e2e).mean()) if n else 0.0,
        per_gpu_output_throughput_tokens_per_s=float(out.sum()) * per_s / p.gpus,
        avg_ttft_s=first["average"],
        avg_tpot_s=itl["average"],
        per_user_output_speed_tokens_per_s=float(speed.mean()) if n else 0.0,
        request_latency_s=lat,
        ttft_s=first,
        tpot_s=itl,
    )


def _ms(d: dict[str, float]) -> dict[str, float]:
    return {k: v * MS_PER_S for k, v in d.items()}


def trtllm_json(p: Prediction, t: TrtllmStats) -> dict[str, Any]:
    """The sections of trtllm-bench's ``--report_json`` that a prediction fills (reporting.py
    ``get_statistics_dict``: request_info, performance, streaming_metrics), its key names and units."""
    s = p.scenario
    return {
        "world_info": {
            "tp_size": s.tp,
            "pp_size": s.pp,
            "ep_size": s.ep,
            "max_batch_size": s.batch,
            "max_num_tokens": s.chunk,
        },
        "request_info": {
            "num_requests": t.num_requests,
            "avg_num_concurrent_requests": t.avg_concurrent_requests,
            "avg_input_length": t.avg_input_tokens,
            "avg_output_length": t.avg_output_tokens,
        },
        "performance": {
            "total_latency_ms": t.total_latency_s * MS_PER_S,
            "avg_request_latency_ms": t.avg_request_latency_s * MS_PER_S,
            "request_throughput_req_s": t.request_throughput_per_s,
            "system_output_throughput_tok_s": t.output_throughput_tokens_per_s,
            "system_total_throughput_tok_s": t.total_token_throughput_tokens_per_s,
            "output_throughput_per_user_tok_s": t.per_user_output_throughput_tokens_per_s,
            "output_throughput_per_gpu_tok_s": t.per_gpu_output_throughput_tokens_per_s,
            "request_latency_percentiles_ms": _ms(t.request_latency_s),
        },
        "streaming_metrics": {
            "token_output_speed_tok_s": t.per_user_output_speed_tokens_per_s,
            "avg_ttft_ms": t.avg_ttft_s * MS_PER_S,
            "avg_tpot_ms": t.avg_tpot_s * MS_PER_S,
            "tpot_percentiles": _ms(t.tpot_s),
            "ttft_percentiles": _ms(t.ttft_s),
        },
        "kvplan": {
            "engine": p.resolved.engine.key,
            "engine_label": p.resolved.engine.label,
            "time_basis": p.time_basis,
            "notes": list(p.notes),
        },
    }


def _rule(title: str) -> list[str]:
    bar = "=" * 59
    return [bar, f"= {title}", bar]


def trtllm_text(p: Prediction, t: TrtllmStats, header: list[str]) -> str:
    """trtllm-bench's REQUEST DETAILS and PERFORMANCE OVERVIEW sections, with its streaming rows."""
    lines = (
        header
        + [""]
        + _rule("REQUEST DETAILS ")
        + [
            f"Number of requests:             {t.num_requests}",
            f"Number of concurrent requests:  {t.avg_concurrent_requests:.4f}",
            f"Average Input Length (tokens):  {t.avg_input_tokens:.4f}",
            f"Average Output Length (tokens): {t.avg_output_tokens:.4f}",
        ]
        + _rule("PERFORMANCE OVERVIEW ")
    )
    rows = (
        ("Request Throughput (req/sec):", t.request_throughput_per_s),
        ("Total Output Throughput (tokens/sec):", t.output_throughput_tokens_per_s),
        ("Total Token Throughput (tokens/sec):", t.total_token_throughput_tokens_per_s),
        ("Total Latency (ms):", t.total_latency_s * MS_PER_S),
        ("Average request latency (ms):", t.avg_request_latency_s * MS_PER_S),
        ("Per User Output Throughput [w/ ctx] (tps/user):", t.per_user_output_throughput_tokens_per_s),
        ("Per GPU Output Throughput (tps/gpu):", t.per_gpu_output_throughput_tokens_per_s),
        ("Average time-to-first-token [TTFT] (ms):", t.avg_ttft_s * MS_PER_S),
        ("Average time-per-output-token [TPOT] (ms):", t.avg_tpot_s * MS_PER_S),
        ("Per User Output Speed (tps/user):", t.per_user_output_speed_tokens_per_s),
    )
    lines += [f"{label:<50}{value:.4f}" for label, value in rows]
    breakdowns = (("Time-per-Output-Token [TPOT]", "TPOT", t.tpot_s), ("Time-to-First-Token [TTFT]", "TTFT", t.ttft_s))
    for title, tag, d in breakdowns:
        lines += ["", f"-- Per-Request {title} Breakdown (ms)", ""]
        lines += [f"[{tag}] {k.upper():<7}: {d[k] * MS_PER_S:.4f}" for k in STAT_ORDER]
    lines += ["", "-- Request Latency Breakdown (ms) -----------------------", ""]
    lines += [f"[Latency] {k.upper():<7}: {t.request_latency_s[k] * MS_PER_S:.4f}" for k in STAT_ORDER]
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines) + "\n"
