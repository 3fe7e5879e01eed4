"""Cost checks: prompt caching that does not apply or does not pay, and a cheaper GPU.

Thresholds: docs/advisor.md.  Money keeps its own precision here (5 decimals per
request, 3 per million tokens): a surcharge of a fraction of a percent must not
print as "$0.0124 instead of $0.0124".
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from planner.engine.evaluate import Result
from planner.engine.metrics import label
from planner.format import fmt_count, fmt_pct
from planner.model.scenario import Scenario
from planner.sim.slo import Slo, meets_single_request
from planner.studies.advisor.context import Context, Finding, Option, Severity, fits, meets_slos

#: Another GPU is reported when it is at least this much cheaper per output token (medium from the second).
CHEAPER_MIN_SAVING_FRAC = 0.10
CHEAPER_MEDIUM_SAVING_FRAC = 0.30
#: A prompt-cache surcharge above this share of the request cost is medium, else low.
CACHE_MEDIUM_SURCHARGE_FRAC = 0.10

CACHE_METRIC = "cache_cost_per_request_usd"


def _per_request(after: float, before: float) -> str:
    return f"${after:.5f} per request instead of ${before:.5f}."


def prefix_below_minimum(ctx: Context) -> Finding | None:
    """``cache-prefix-below-minimum``: a non-zero prefix shorter than the minimum cacheable length."""
    metrics, scenario = ctx.metrics, ctx.scenario
    if scenario.prefix <= 0 or metrics["cache_applies"]:
        return None
    min_tokens = int(ctx.result.inputs.min_cacheable_tokens)
    if min_tokens > scenario.prompt:
        return ctx.finding(
            "cache-prefix-below-minimum",
            "info",
            "Prompts are too short to cache",
            f"The {fmt_count(scenario.prompt)}-token prompts are shorter than the {fmt_count(min_tokens)}-token "
            "minimum cacheable prefix, so nothing is cached.",
            CACHE_METRIC,
            None,
            "Requests are billed as uncached.",
            no_change="No change: caching cannot apply to prompts this short.",
        )
    before = float(metrics[CACHE_METRIC])
    action = (
        f"Grow the shared prefix to {fmt_count(min_tokens)} tokens "
        "(move stable instructions and documents to the front)."
    )
    got = ctx.option(action, {"prefix": min_tokens}, CACHE_METRIC)
    title = "The prefix is too short to be cached"
    explanation = (
        f"The {fmt_count(scenario.prefix)}-token prefix is below the {fmt_count(min_tokens)}-token minimum, so it is "
        "never cached and every request pays full input price."
    )
    if got is None or got[0].after >= before:
        hit, break_even = fmt_pct(metrics["cache_hit_rate"]), fmt_pct(metrics["cache_break_even_hit_rate"])
        return ctx.finding(
            "cache-prefix-below-minimum",
            "info",
            title,
            explanation,
            CACHE_METRIC,
            None,
            f"At a {hit} hit rate (break-even {break_even}) a longer cached prefix would not pay either.",
            no_change="No change: caching would not pay at this hit rate.",
        )
    option = got[0]
    return ctx.finding(
        "cache-prefix-below-minimum",
        "low",
        title,
        explanation,
        CACHE_METRIC,
        option,
        _per_request(option.after, before),
    )


def cache_surcharge(ctx: Context) -> Finding | None:
    """``cache-surcharge``: the prefix is cached but the hit rate is below break-even."""
    metrics, scenario = ctx.metrics, ctx.scenario
    if not metrics["cache_applies"] or metrics["cache_saving_frac"] >= 0:
        return None
    before = float(metrics[CACHE_METRIC])
    surcharge = -float(metrics["cache_saving_frac"])
    hit, break_even = fmt_pct(metrics["cache_hit_rate"]), fmt_pct(metrics["cache_break_even_hit_rate"])
    traffic = f"{scenario.rpm:g} requests/min per prefix with a {scenario.ttl} TTL"
    source = traffic if scenario.rpm > 0 else "the given hit rate"
    explanation = (
        f"With {source} the cache hit rate is {hit}, below the {break_even} break-even for a {scenario.ttl} TTL, "
        f"so caching the {fmt_count(scenario.prefix)}-token prefix adds {fmt_pct(surcharge)} to each request's cost."
    )
    options: list[Option] = []
    got = ctx.option("Stop marking the prefix as cacheable.", {"prefix": 0}, CACHE_METRIC)
    if got:
        options.append(got[0])
    if scenario.rpm > 0:
        other = "1h" if scenario.ttl == "5m" else "5m"
        got = ctx.option(f"Use the {other} cache TTL.", {"ttl": other}, CACHE_METRIC)
        if got and got[0].after < before:
            options.append(got[0])
    if not options:
        return None
    chosen = min(options, key=lambda o: o.after)
    return ctx.finding(
        "cache-surcharge",
        "medium" if surcharge > CACHE_MEDIUM_SURCHARGE_FRAC else "low",
        f"Prompt caching is a {fmt_pct(surcharge)} surcharge at this hit rate",
        explanation,
        CACHE_METRIC,
        chosen,
        _per_request(chosen.after, before),
        options=options,
    )


def _serves(grid: Mapping[str, np.ndarray], scenario: Scenario) -> np.ndarray:
    """The weights fit, the batch fits the KV cache, and TTFT under load and TPOT meet the targets."""
    return (
        grid["fits"]
        & grid["batch_fits_memory"]
        & meets_single_request(Slo.of(scenario), grid["chunked_ttft_s"], grid["tpot_s"], grid["request_latency_s"])
    )


def _unlike_now(ctx: Context) -> str:
    """What the cheaper setup does that the current one does not."""
    if fits(ctx.metrics) and meets_slos(ctx.metrics, ctx.scenario):
        return ""
    if not fits(ctx.metrics):
        return " (and, unlike the current setup, holds the whole batch and meets the latency targets)"
    return " (and, unlike the current setup, meets the latency targets)"


def cheaper_gpu(ctx: Context) -> Finding | None:
    """``cheaper-gpu``: another profile serves the scenario at least ``CHEAPER_MIN_SAVING_FRAC`` cheaper per token."""
    metrics, scenario = ctx.metrics, ctx.scenario
    metric = "cost_per_million_output_tokens_usd"
    now = float(metrics[metric])
    if not metrics["fits"]:
        return None  # the weights-dont-fit finding proposes GPUs that hold the model

    def serves_now(_option: Option, result: Result) -> bool:
        return fits(result.metrics) and meets_slos(result.metrics, scenario)

    best = ctx.cheapest_gpu_switch(_serves, metric, serves_now, cost=lambda option, _result: option.after)
    if best is None or best.after > (1.0 - CHEAPER_MIN_SAVING_FRAC) * now:
        return None
    saving = 1.0 - best.after / now
    explanation = (
        f"On {ctx.gpu.name} at tp={scenario.tp} output costs ${now:,.3f} per million tokens (the GPU time of "
        "each request's prefill included); "
        f"{best.action.removeprefix('Switch to ').rstrip('.')} serves the same batch for ${best.after:,.3f}"
        f"{_unlike_now(ctx)}."
    )
    severity: Severity = "medium" if saving >= CHEAPER_MEDIUM_SAVING_FRAC else "low"
    return ctx.finding(
        "cheaper-gpu",
        severity,
        f"Another GPU is {fmt_pct(saving)} cheaper per token",
        explanation,
        metric,
        best,
        f"${best.after:,.3f} instead of ${now:,.3f} ({label(metric)}).",
    )
