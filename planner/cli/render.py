"""Terminal renderers for the CLI's output (no pandas).

``--format json`` / ``csv`` are the machine formats: every input and metric, SI values
(``scenario_row``).  The default text output is for people (``scenario_text``): what was
planned, the inputs given (only the non-default ones), then the figures people read, in
sections, in human units through ``planner.format``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from planner.engine.evaluate import Result, evaluate
from planner.engine.metrics import label
from planner.export import present_metrics, present_value
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_sequences, fmt_tokens_per_s, fmt_usd
from planner.links import FIELDS, to_query
from planner.model.catalog import Catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.model.spec_methods import LABELS
from planner.model.weight_plan import resolve_weights


def scenario_row(scenario: Scenario, catalog: Catalog) -> dict[str, Any]:
    """Inputs (link keys) then every metric, presented: the same cells, in the same order, as the
    one-row CSV (``studies.sweep.scenario_frame``), without building a DataFrame."""
    result = evaluate(scenario, catalog)
    named = scenario.with_changes(engine=result.resolved.engine.key)  # the engine version in force (vllm@0.19)
    row = {k: present_value(k, getattr(named, k)) for k in FIELDS}
    row.update(present_metrics(result.metrics))
    row["time_basis"] = present_value("time_basis", result.time_basis)  # engine.metrics.TEXT_COLUMNS
    formats = resolve_weights(result.resolved.model, result.resolved.scenario).describe()
    row["weight_formats"] = present_value("weight_formats", formats)
    return row


Metrics = Mapping[str, Any]
Line = tuple[str, Callable[[Metrics], str]]


def _bound(flag: object) -> str:
    return "compute-bound" if flag else "memory-bound"


def _yes(flag: object) -> str:
    return "yes" if flag else "no"


def _sections(s: Scenario) -> list[tuple[str, list[Line]]]:
    """(section title, [(label, value of the metrics)]) — the figures of the text output."""
    return [_memory_section(s), *_serving_sections(s), *_power_and_option_sections(s)]


def _memory_section(s: Scenario) -> tuple[str, list[Line]]:
    ctx = s.prompt + s.output
    return (
        "Memory, per GPU",
        [
            ("fits", lambda m: _yes(m["fits"]) + ("" if m["fits"] else f" (smallest tp that fits: {_tp(m)})")),
            ("memory share (mem_util in force)", lambda m: fmt_num(m["mem_util_frac"])),
            ("weights", lambda m: fmt_bytes(m["weight_bytes_per_gpu"])),
            ("activation reserve", lambda m: fmt_bytes(m["reserve_bytes_per_gpu"])),
            (
                "  of it CUDA graphs (the engine's estimate)",
                lambda m: fmt_bytes(m["cuda_graph_charged_bytes_per_gpu"]),
            ),
            ("KV cache budget", lambda m: fmt_bytes(m["kv_budget_bytes_per_gpu"])),
            ("KV cache per token", lambda m: fmt_bytes(m["kv_bytes_per_token_per_gpu"])),
            ("KV cache capacity", lambda m: fmt_count(m["kv_capacity_tokens"], "token")),
            (
                "'GPU KV cache size' as the engine logs it",
                lambda m: fmt_count(m["logged_kv_cache_tokens"], "token"),
            ),
            (
                f"max concurrency at {fmt_num(ctx)} tokens",
                lambda m: (
                    f"{fmt_sequences(m['max_concurrent_sequences'])} (paged; vLLM's 'Maximum concurrency' "
                    f"{fmt_num(m['max_concurrent_sequences'])}x), "
                    f"{fmt_sequences(m['max_concurrent_sequences_contiguous'], None)} (contiguous)"
                ),
            ),
        ],
    )


def _serving_sections(s: Scenario) -> list[tuple[str, list[Line]]]:
    return [
        (
            "Latency",
            [
                (
                    f"TTFT, {fmt_num(s.prompt)}-token prompt, idle",
                    lambda m: f"{fmt_seconds(m['ttft_s'])} ({_bound(m['prefill_compute_bound'])}{_cached(m)})",
                ),
                (
                    f"TTFT under batch {fmt_num(s.batch)}, chunk {fmt_num(s.chunk)}",
                    lambda m: fmt_seconds(m["chunked_ttft_s"]),
                ),
                (
                    f"time per output token, batch {fmt_num(s.batch)}",
                    lambda m: f"{fmt_seconds(m['tpot_s'])} ({_bound(m['decode_compute_bound'])}; {_ridge(m)})",
                ),
                ("worst inter-token gap while a prompt is chunked in", lambda m: fmt_seconds(m["chunked_max_itl_s"])),
                (f"request latency, {fmt_num(s.output)} output tokens", lambda m: fmt_seconds(m["request_latency_s"])),
            ],
        ),
        (
            "Throughput and GPU cost (each cost beside the throughput it comes from)",
            [
                _line("output_tokens_per_s_per_gpu", fmt_tokens_per_s),
                _line("cost_per_million_output_tokens_usd", fmt_usd, "  "),
                _line("decode_tokens_per_s_per_gpu", fmt_tokens_per_s),
                _line("decode_cost_per_million_output_tokens_usd", fmt_usd, "  "),
                _line("cost_per_million_input_tokens_usd", fmt_usd),
                _line("cost_per_million_tokens_usd", fmt_usd),
                _line("cost_per_request_usd", fmt_usd),
                ("GPU price per replica-hour", lambda m: fmt_usd(m["price_per_replica_hour_usd"])),
            ],
        ),
        (
            "Prompt caching on your GPUs (vLLM/SGLang prefix cache)",
            [
                ("hit rate", lambda m: fmt_pct(m["gpu_cache_hit_rate"])),
                ("tokens a hit reads", lambda m: fmt_count(m["gpu_cached_tokens"], "token") + " (whole KV blocks)"),
                ("prefill time saved per request", lambda m: fmt_seconds(m["prefill_saved_per_request_s"])),
            ],
        ),
    ]


def _spec_method(s: Scenario) -> str:
    """The proposer the plan prices (``spec_methods.LABELS``): the link's method, else a draft preset's model, else
    the cost ratio (as the launch writer reads it, ``launch.commands._proposer``)."""
    if s.spec_method:
        return LABELS[s.spec_method]
    return f"draft model {s.draft}" if s.draft else "cost ratio (no draft named)"


def _power_and_option_sections(s: Scenario) -> list[tuple[str, list[Line]]]:
    return [
        (
            "Power and energy",
            [
                (
                    "board power per GPU at this load",
                    _power_text,
                ),
                (
                    f"replica IT power (site at PUE {fmt_num(s.pue)})",
                    lambda m: f"{fmt_num(m['replica_power_kw'])} kW ({fmt_num(m['replica_site_power_kw'])} kW)",
                ),
                ("energy per output token (GPU)", lambda m: f"{fmt_num(m['energy_per_output_token_j'])} J"),
                (
                    f"per million output tokens at {fmt_usd(s.electricity_usd_per_kwh)}/kWh",
                    lambda m: (
                        f"{fmt_num(m['kwh_per_million_output_tokens'])} kWh, "
                        f"{fmt_usd(m['energy_cost_per_million_output_tokens_usd'])}"
                    ),
                ),
            ]
            + (
                [
                    (
                        f"replicas within power_limit_kw = {fmt_num(s.power_limit_kw)}",
                        lambda m: fmt_count(m["replicas_within_power_limit"]),
                    )
                ]
                if s.power_limit_kw > 0
                else []
            ),
        ),
        (
            f"Speculative decoding · {_spec_method(s)}" + ("" if s.spec else " (off: what it would give)"),
            [
                (
                    f"speedup at α {fmt_num(s.alpha)}, γ {s.gamma}",
                    lambda m: (
                        f"{fmt_num(m['spec_speedup'])}× ({fmt_num(m['spec_expected_tokens_per_step'])} tokens per pass)"
                    ),
                ),
                (
                    "best γ",
                    lambda m: f"{fmt_num(m['spec_best_gamma'])} ({fmt_num(m['spec_best_speedup'])}×)",
                ),
            ],
        ),
        (
            "Prompt caching, API billing (write 1.25×/2×, read 0.1×)",
            [
                (
                    "hit rate",
                    lambda m: fmt_pct(m["cache_hit_rate"]) + ("" if m["cache_applies"] else " (prefix too short)"),
                ),
                (
                    "cost per request",
                    lambda m: (
                        f"{fmt_usd(m['cache_cost_per_request_usd'])} with caching, "
                        f"{fmt_usd(m['nocache_cost_per_request_usd'])} without"
                    ),
                ),
                ("saving", lambda m: fmt_pct(m["cache_saving_frac"])),
                ("break-even hit rate", lambda m: fmt_pct(m["cache_break_even_hit_rate"])),
            ],
        ),
    ]


def _power_text(m: Metrics) -> str:
    if not math.isfinite(m["power_per_gpu_w"]):
        return "n/a (no published board power: give gpu_power_w)"
    watts = [fmt_num(round(m[k])) for k in ("power_per_gpu_w", "prefill_power_per_gpu_w", "decode_power_per_gpu_w")]
    return f"{watts[0]} W (prefill {watts[1]} W, decode {watts[2]} W)"


def _ridge(m: Metrics) -> str:
    """Where the decode step turns compute-bound; with no such batch (each sequence's KV and activation
    reads outgrow its arithmetic), a step compute-bound now (padded GEMMs) turns memory-bound as it grows."""
    ridge = float(m["ridge_batch"])
    if math.isfinite(ridge):
        return f"compute-bound from batch ≈ {fmt_num(round(ridge))}"
    if m["decode_compute_bound"]:
        return "memory-bound at larger batches: each sequence's KV reads outgrow its arithmetic"
    return "never compute-bound: each sequence's KV reads outgrow its arithmetic"


def _line(name: str, fmt: Callable[[float], str], indent: str = "") -> Line:
    """A figure under its one name (``metrics.label``)."""
    return indent + label(name), lambda m: fmt(m[name])


def _cached(m: Metrics) -> str:
    """'; 297 ms without a prefix-cache hit' where the GPUs' prefix cache saves something."""
    if m["ttft_s"] >= m["ttft_nocache_s"]:
        return ""
    return f"; {fmt_seconds(m['ttft_nocache_s'])} without a prefix-cache hit"


def _tp(m: Metrics) -> str:
    return fmt_num(m["min_tp_that_fits"]) if m["min_tp_that_fits"] else "none up to 64"


#: Sections whose figures need the model to fit on the GPUs (latency, throughput, GPU prefix cache, speculative).
GPU_SECTIONS = (1, 2, 3, 4)


def scenario_text(result: Result) -> str:
    """The people's view of one scenario: header, non-default inputs, sections of figures."""
    r, m = result.resolved, result.metrics
    s = r.scenario
    given = {k: v for k, v in to_query(s).items() if k != "v"}
    w = resolve_weights(r.model, s)
    lines = [
        f"{r.model.name} on {Layout(s.tp, s.pp, s.ep, s.dp).on(r.gpu.name)} · {w.describe()} · "
        f"{r.engine.label} (engine={r.engine.key})",
        f"times: {result.time_basis}",
        "inputs: " + (", ".join(f"{k}={v}" for k, v in given.items()) if given else "the defaults"),
    ]
    lines += [f"note: {n}" for n in r.notes]  # defaults moved, replicated KV heads, how the engine runs the formats
    sections = _sections(s)
    width = max(len(label) for _, items in sections for label, _ in items)
    for k, (title, items) in enumerate(sections):
        lines += ["", title]
        if k in GPU_SECTIONS and not m["fits"]:
            lines.append(f"  {'does not fit in memory at tp ' + str(s.tp):<{width}}  (see Memory)")
            continue
        lines += [f"  {label:<{width}}  {value(m)}" for label, value in items]
    lines += ["", "Every input and metric: --format json or --format csv."]
    return "\n".join(lines) + "\n"


def log_check_text(check: Any) -> str:
    """``kvplan check-log``'s table: each term predicted, logged and the error; then the notes."""
    lines = [f"{'term':<58}{'predicted':>14}{'logged':>14}{'error':>9}"]
    for r in check.rows:
        pred = "—" if r.predicted is None else f"{r.predicted:,.2f}"
        logged = "—" if r.logged is None else f"{r.logged:,.2f}"
        err = "" if r.error_frac is None else f"{r.error_frac:+.1%}"
        lines.append(f"{(r.label + ' (' + r.unit + ')'):<58}{pred:>14}{logged:>14}{err:>9}")
    lines += [f"note: {n}" for n in check.notes]
    return "\n".join(lines) + "\n"
