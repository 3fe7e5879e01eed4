"""A prediction written as ``vllm bench serve`` writes its run: the printout and the result JSON.

The printout is vLLM's block, line for line (vllm/benchmarks/serve.py v0.33.0, lines 1220–1268 and
1398–1452: ``"{:<40} {:<10}"`` rows, 50-character rules), with one omission said in a note:
"Peak output token throughput" (``planner.sim.serve_metrics``: not predicted).  Above it, what kvplan
simulated (the scenario, the engine version, the traffic); below it, kvplan's notes.

The JSON has the keys of ``--save-result``'s file (serve.py lines 2300–2335 for the run's settings,
``planner.sim.serve_metrics.result_json`` for its metrics) and one more, ``kvplan``, with the scenario
and the notes; ``date`` is the caller's (the engine has no clock).
"""

from __future__ import annotations

import math
from typing import Any

from planner.predict.run import Prediction
from planner.sim.serve_metrics import LATENCIES, percentile_label, result_json
from planner.units import MS_PER_S

RULE_WIDTH = 50
LABEL_WIDTH = 40

PEAK_OMITTED = "Peak output token throughput (tok/s)"


def _row(label: str, value: Any, fmt: str = "") -> str:
    return f"{label:<{LABEL_WIDTH}} {value:<10{fmt}}".rstrip()


def _title(text: str, fill: str) -> str:
    return f"{text:{fill}^{RULE_WIDTH}}"


def result_lines(p: Prediction) -> list[str]:
    """vLLM's result block for the prediction (module doc)."""
    st, o = p.stats, p.options
    lines = [
        _title(" Serving Benchmark Result ", "="),
        _row("Successful requests:", st.completed),
        _row("Failed requests:", st.failed),
    ]
    if o.max_concurrency is not None:
        lines.append(_row("Maximum request concurrency:", o.max_concurrency))
    if math.isfinite(o.request_rate_per_s):
        lines.append(_row("Request rate configured (RPS):", o.request_rate_per_s, ".2f"))
    lines += [
        _row("Benchmark duration (s):", st.duration_s, ".2f"),
        _row("Total input tokens:", st.total_input_tokens),
        _row("Total generated tokens:", st.total_output_tokens),
        _row("Request throughput (req/s):", st.request_throughput_per_s, ".2f"),
        _row("Output token throughput (tok/s):", st.output_throughput_tokens_per_s, ".2f"),
        _row("Peak concurrent requests:", float(st.max_concurrent_requests), ".2f"),
        _row("Total token throughput (tok/s):", st.total_token_throughput_tokens_per_s, ".2f"),
    ]
    for name, stat in st.latencies.items():
        short, header = LATENCIES[name]
        lines += [
            _title(header, "-"),
            _row(f"Mean {short} (ms):", stat.mean_s * MS_PER_S, ".2f"),
            _row(f"Median {short} (ms):", stat.median_s * MS_PER_S, ".2f"),
        ]
        lines += [_row(f"P{percentile_label(q)} {short} (ms):", v * MS_PER_S, ".2f") for q, v in stat.percentiles_s]
    lines.append("=" * RULE_WIDTH)
    return lines


def traffic_lines(p: Prediction) -> list[str]:
    """vLLM's lines before its run (serve.py lines 980–992), and the lengths kvplan drew."""
    o = p.options
    if p.traffic != "random" and o.trace_timed:
        first = ["Self timing is set, using the timestamps from the trace file."]
    else:
        burst = "Poisson process" if o.burstiness == 1.0 else "Gamma distribution"
        first = [f"Traffic request rate: {o.request_rate_per_s}", f"Burstiness factor: {o.burstiness} ({burst})"]
    first.append(f"Maximum request concurrency: {o.max_concurrency}")
    return first


def header_lines(p: Prediction, link: str) -> list[str]:
    """What was simulated: the server (scenario), its engine version and scheduler limits, the requests."""
    s, r, o = p.scenario, p.resolved, p.options
    if p.traffic == "random":
        data = (
            f"random dataset: input {o.input_len} ± {o.input_range_ratio:g}, output {o.output_len} ± "
            f"{o.output_range_ratio:g} (range ratio), prefix {o.prefix_len}, seed {o.seed}, {o.num_prompts} prompts"
        )
    else:
        data = f"trace {p.traffic}: the first {len(p.result.status)} requests' lengths"
    layout = f" (pp {s.pp}, ep {s.ep}, dp {s.dp})" if s.pp * s.ep * s.dp > 1 else ""
    server = (
        f"server: max_num_seqs (batch) {s.batch}, max_num_batched_tokens (chunk) {s.chunk}, "
        f"prefix cache {s.prefix_cache}"
    )
    return [
        f"kvplan predict: {r.model.name} on {s.tp} × {r.gpu.name}{layout} · {p.engine_label}",
        server + (f"; link: ?{link}" if link else ""),
        f"times: {p.time_basis}",
        data,
    ]


def vllm_text(p: Prediction, link: str = "") -> str:
    """The whole printout: header, vLLM's traffic lines and result block, kvplan's notes."""
    notes = [f"note: {PEAK_OMITTED} is not predicted (the simulator keeps no per-token timestamps)"]
    notes += [f"note: {n}" for n in p.notes]
    return "\n".join(header_lines(p, link) + [""] + traffic_lines(p) + result_lines(p) + notes) + "\n"


def vllm_json(p: Prediction, link: str = "", date: str | None = None) -> dict[str, Any]:
    """The result JSON of ``vllm bench serve --save-result`` (module doc)."""
    o, r = p.options, p.resolved
    settings: dict[str, Any] = {
        "date": date,
        "endpoint_type": "openai",
        "backend": "openai",
        "label": None,
        "model_id": r.model.name,
        "tokenizer_id": r.model.name,
        "num_prompts": len(p.result.status),
        "request_rate": o.request_rate_per_s if math.isfinite(o.request_rate_per_s) else "inf",
        "burstiness": o.burstiness,
        "max_concurrency": o.max_concurrency,
    }
    return (
        settings
        | result_json(p.stats)
        | {
            "kvplan": {
                "link": link,
                "engine": r.engine.key,
                "engine_label": r.engine.label,
                "time_basis": p.time_basis,
                "traffic": p.traffic,
                "batch": p.scenario.batch,
                "chunk": p.scenario.chunk,
                "not_predicted": ["max_output_tokens_per_s"],
                "notes": list(p.notes),
            }
        }
    )
