"""Memory checks: the weights fit, the KV cache holds the batch, the weights leave room for KV.

Thresholds and grids: docs/advisor.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from planner.engine.memory import kv_bytes_per_sequence, memory_plan, paged_context_tokens
from planner.format import fmt_bytes, fmt_count, fmt_pct, whole_sequences
from planner.model.scenario import Scenario
from planner.model.weight_plan import resolve_weights
from planner.studies.advisor.context import MAX_TP, Context, Finding, Option, metric_value

#: "Weights leave little room for KV" below this share of usable memory per GPU.
KV_ROOM_MIN_FRAC = 0.25
#: Points in the shorter-prompt search.
PROMPT_GRID_POINTS = 2048


def sequences_fit(options: list[Option]) -> str:
    """Each option as "<action>: N sequences fit", joined by "; "."""
    return "; ".join(f"{o.action.rstrip('.')}: {fmt_count(o.after, 'sequence')} fit" for o in options)


def weights_fit(ctx: Context) -> Finding | None:
    """``weights-dont-fit``: weights + reserve leave no room for one sequence's KV cache."""
    metrics, scenario = ctx.metrics, ctx.scenario
    if metrics["fits"]:
        return None
    explanation = (
        f"At tp={scenario.tp} the {ctx.model.name} weights take {fmt_bytes(metrics['weight_bytes_per_gpu'])} per GPU "
        f"and the reserve {fmt_bytes(metrics['reserve_bytes_per_gpu'])}, of the "
        f"{fmt_bytes(metrics['usable_bytes_per_gpu'])} usable on a {ctx.gpu.name}, leaving no room for even one "
        f"{fmt_count(scenario.prompt + scenario.output)}-token sequence's KV cache."
    )
    metric = "max_concurrent_sequences"
    options: list[Option] = []
    min_tp = int(metrics["min_tp_that_fits"])
    if 0 < min_tp <= MAX_TP and min_tp != scenario.tp:
        action = f"Run each replica on {min_tp} GPUs (tp={min_tp}), the smallest tensor-parallel size that fits."
        got = ctx.option(action, {"tp": min_tp}, metric)
        if got:
            options.append(got[0])
    switch = ctx.cheapest_gpu_switch(
        lambda grid, _s: grid["fits"], metric, lambda _option, result: bool(result.metrics["fits"])
    )
    if switch:
        options.append(switch)
    return ctx.finding(
        "weights-dont-fit",
        "high",
        "The model does not fit on this GPU setup",
        explanation,
        metric,
        options[0] if options else None,
        sequences_fit(options) or "No change tried fits.",
        no_change=f"No GPU profile in the catalog holds this model at tp ≤ {MAX_TP}: quantise the weights (wdtype) "
        "or shorten the context.",
        options=options,
    )


def next_kv_heads_down(heads: int, kv_heads: int) -> int | None:
    """Largest divisor of ``heads`` below ``kv_heads`` (GQA with fewer groups), if any."""
    for divisor in range(kv_heads - 1, 0, -1):
        if heads % divisor == 0:
            return divisor
    return None


def longest_prompt_that_fits(ctx: Context) -> int | None:
    """Longest prompt < the current one at which the batch fits in memory (``memory_plan`` over a grid)."""
    scenario = ctx.scenario
    if scenario.prompt <= 1:
        return None
    points = min(PROMPT_GRID_POINTS, scenario.prompt - 1)
    grid = np.unique(np.floor(np.linspace(1, scenario.prompt - 1, points)))
    plan = memory_plan(ctx.inputs.with_(prompt_tokens=grid, prefix_tokens=np.minimum(scenario.prefix, grid)))
    ok = plan["fits"] & plan["batch_fits_memory"]
    return int(grid[ok].max()) if ok.any() else None


def _concurrency_tries(ctx: Context) -> list[tuple[str, dict[str, Any]]]:
    """The remedies, least disruptive first: fp8 KV, twice the GPUs, shorter prompts, fewer KV heads."""
    scenario, model = ctx.scenario, ctx.model
    tries: list[tuple[str, dict[str, Any]]] = []
    if resolve_weights(model, scenario).kvdtype in ("bf16", "fp16"):
        tries.append(("Store the KV cache in fp8 (kvdtype=fp8).", {"kvdtype": "fp8"}))
    if scenario.tp * 2 <= MAX_TP:
        tries.append((f"Double the GPUs per replica (tp={scenario.tp * 2}).", {"tp": scenario.tp * 2}))
    prompt = longest_prompt_that_fits(ctx)
    if prompt is not None:
        changes: dict[str, Any] = {"prompt": prompt}
        if scenario.prefix > prompt:
            changes["prefix"] = prompt
        tries.append((f"Cap prompts at {fmt_count(prompt)} tokens.", changes))
    if not model.is_mla:
        groups = next_kv_heads_down(model.heads, model.kv_heads)
        if groups is not None:
            action = f"Use a model variant with {groups} KV heads instead of {model.kv_heads} (kv_heads={groups})."
            tries.append((action, {"kv_heads": groups}))
    return tries


def kv_concurrency(ctx: Context) -> Finding | None:
    """``kv-caps-concurrency``: the KV cache holds fewer sequences than the batch."""
    metrics, scenario = ctx.metrics, ctx.scenario
    held = int(whole_sequences(metrics["max_concurrent_sequences"]))
    if not metrics["fits"] or held >= scenario.batch:
        return None
    per_sequence_bytes = float(kv_bytes_per_sequence(ctx.inputs, paged_context_tokens(ctx.inputs)))
    explanation = (
        f"At {fmt_count(scenario.prompt + scenario.output)} tokens of context each sequence needs "
        f"{fmt_bytes(per_sequence_bytes)} of KV cache per GPU, so only {fmt_count(held, 'sequence')} fit in the "
        f"{fmt_bytes(metrics['kv_budget_bytes_per_gpu'])} KV budget — fewer than the batch of "
        f"{fmt_count(scenario.batch)}; the model's {fmt_count(ctx.model.context_window_tokens)}-token context window "
        "is not the limit."
    )
    metric = "max_concurrent_sequences"
    options = [got[0] for action, changes in _concurrency_tries(ctx) if (got := ctx.option(action, changes, metric))]
    title = f"The KV cache caps concurrency at {fmt_count(held, 'sequence')}"
    if not options:
        return ctx.finding(
            "kv-caps-concurrency", "high", title, explanation, metric, None, "No change tried.", "Lower the batch."
        )
    chosen = next((o for o in options if o.after >= scenario.batch), max(options, key=lambda o: o.after))
    return ctx.finding(
        "kv-caps-concurrency",
        "high",
        f"{title}, below the batch of {fmt_count(scenario.batch)}",
        explanation,
        metric,
        chosen,
        sequences_fit([chosen, *(o for o in options if o is not chosen)]),
        options=options,
    )


def _roomy(grid: Mapping[str, np.ndarray], _scenario: Scenario) -> np.ndarray:
    """The weights fit and leave at least ``KV_ROOM_MIN_FRAC`` of usable memory for KV."""
    return grid["fits"] & (grid["kv_budget_bytes_per_gpu"] >= KV_ROOM_MIN_FRAC * grid["usable_bytes_per_gpu"])


def kv_room(ctx: Context) -> Finding | None:
    """``weights-leave-little-kv``: the KV budget is under ``KV_ROOM_MIN_FRAC`` of usable memory."""
    metrics, scenario = ctx.metrics, ctx.scenario
    metric = "kv_budget_frac"
    frac = metric_value(metrics, metric)
    if not metrics["fits"] or frac >= KV_ROOM_MIN_FRAC:
        return None
    explanation = (
        f"The weights take {fmt_bytes(metrics['weight_bytes_per_gpu'])} of the "
        f"{fmt_bytes(metrics['usable_bytes_per_gpu'])} usable per GPU, leaving "
        f"{fmt_bytes(metrics['kv_budget_bytes_per_gpu'])} ({fmt_pct(frac)}) for the KV cache, under the "
        f"{fmt_pct(KV_ROOM_MIN_FRAC)} that leaves room to batch."
    )
    options: list[Option] = []
    tp = ctx.smallest_tp(scenario.gpu, _roomy)
    if tp is not None and tp > scenario.tp:
        got = ctx.option(f"Run each replica on {tp} GPUs (tp={tp}).", {"tp": tp}, metric)
        if got:
            options.append(got[0])
    switch = ctx.cheapest_gpu_switch(_roomy, metric, lambda option, _result: option.after >= KV_ROOM_MIN_FRAC)
    if switch:
        options.append(switch)
    effect = "; ".join(f"{o.action.rstrip('.')}: {fmt_pct(o.after)} of usable memory for KV" for o in options)
    return ctx.finding(
        "weights-leave-little-kv",
        "medium",
        f"Weights leave only {fmt_pct(frac)} of memory for the KV cache",
        explanation,
        metric,
        options[0] if options else None,
        effect or "No change tried reaches the threshold.",
        no_change=f"No tp ≤ {MAX_TP} or GPU profile in the catalog changes this: quantise the weights (wdtype).",
        options=options,
    )
