"""Throughput and latency checks: decode regime, chunk size, speculative decoding, TP communication.

Thresholds and grids: docs/advisor.md.
"""

from __future__ import annotations

import math

import numpy as np

from planner.engine.chunked import chunked_prefill
from planner.engine.evaluate import compute
from planner.engine.metrics import label
from planner.engine.speculative import speedup
from planner.format import fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_tokens_per_s, whole_sequences
from planner.sim.slo import Slo
from planner.studies.advisor.context import (
    MAX_BATCH,
    MIN_CHUNK,
    Context,
    Finding,
    Option,
    Severity,
    fits,
    metric_value,
)
from planner.studies.ridge import fmt_turn
from planner.units import GB

#: "TP communication eats the step" above this share of the decode step (medium above the second).
COMM_MAX_FRAC = 0.20
COMM_MEDIUM_FRAC = 0.40
#: Decode throughput gain (×) from a larger batch that makes the finding low / medium.
THROUGHPUT_LOW_GAIN = 1.25
THROUGHPUT_MEDIUM_GAIN = 2.0
#: Points in the α search.
ALPHA_GRID_POINTS = 200
#: A chunk that meets neither target is offered only when it lowers the worst ratio by this much.
CHUNK_MIN_IMPROVEMENT_FRAC = 0.10


# --------------------------------------------------------------------------- decode regime


def _regime(ctx: Context) -> tuple[str, int, str]:
    """(the sentence placing the batch against the ridge, the batch the ridge caps, the title)."""
    scenario = ctx.scenario
    ridge = float(ctx.metrics["ridge_batch"])
    now = f"{fmt_tokens_per_s(ctx.metrics['decode_tokens_per_s'])} ({label('decode_tokens_per_s')})"
    if math.isinf(ridge):
        where = (
            "Decode stays memory-bound at every batch (each sequence's KV reads at this context and its activation "
            f"traffic take longer than its arithmetic), and batch {fmt_count(scenario.batch)} produces {now}"
        )
        return where, MAX_BATCH, "Decode is memory-bound at every batch"
    regime = "compute" if scenario.batch >= ridge else "memory"
    where = (
        f"Decode is memory-bound below batch {fmt_turn(ridge)} and compute-bound from {fmt_turn(ridge)} on; batch "
        f"{fmt_count(scenario.batch)} is {regime}-bound and produces {now}"
    )
    title = f"Decode is memory-bound below batch {fmt_turn(ridge)}, compute-bound from {fmt_turn(ridge)}"
    return where, max(math.floor(ridge), 0), title


def _limit(target: float | None) -> float:
    """A target, or ∞ where it is unset (nothing to meet)."""
    return float("inf") if target is None else target


def _largest_good_batch(ctx: Context, cap: int) -> int | None:
    """Largest batch in (batch, cap] that fits memory and meets the TPOT target (one vectorised call)."""
    scenario = ctx.scenario
    if cap <= scenario.batch:
        return None
    grid = np.arange(scenario.batch + 1, cap + 1, dtype=float)
    metrics = compute(ctx.inputs.with_(batch=grid))
    ok = metrics["batch_fits_memory"] & (metrics["tpot_s"] <= _limit(Slo.of(scenario).step_limit_s))
    return int(grid[ok].max()) if ok.any() else None


def _batch_limit(ctx: Context, target: int, ridge_cap: int) -> str:
    """Which limit stops the batch at ``target``."""
    held = int(whole_sequences(ctx.metrics["max_concurrent_sequences"]))
    if target == held:
        return f"the KV-cache limit of {fmt_count(held)} sequences"
    if target == ridge_cap and not math.isinf(ctx.metrics["ridge_batch"]):
        return "the ridge"
    if target == MAX_BATCH:
        return "the largest batch a scenario allows"
    slo = Slo.of(ctx.scenario)
    return f"the {fmt_seconds(_limit(slo.step_limit_s))} {slo.step_limit_words} target"


def _no_larger_batch(ctx: Context, ridge_cap: int) -> str:
    """Why no larger batch is proposed."""
    scenario = ctx.scenario
    if scenario.batch >= ridge_cap and not math.isinf(ctx.metrics["ridge_batch"]):
        return "the batch is at or past the ridge, so a larger one adds latency, not throughput"
    if scenario.batch >= int(whole_sequences(ctx.metrics["max_concurrent_sequences"])):
        return "the KV cache holds no more sequences"
    slo = Slo.of(scenario)
    limit = fmt_seconds(_limit(slo.step_limit_s))
    return f"a larger batch would push TPOT past the {limit} {slo.step_limit_words} target"


def decode_regime(ctx: Context) -> Finding | None:
    """``decode-regime``: where the batch sits against the ridge, and the throughput a larger batch gives."""
    metrics = ctx.metrics
    if not metrics["fits"]:
        return None
    where, ridge_cap, regime_title = _regime(ctx)
    now = float(metrics["decode_tokens_per_s"])
    metric = "decode_tokens_per_s"
    target = _largest_good_batch(
        ctx, min(int(whole_sequences(metrics["max_concurrent_sequences"])), MAX_BATCH, ridge_cap)
    )
    got = ctx.option("", {"batch": target}, metric) if target is not None else None
    if target is None or got is None:
        return ctx.finding(
            "decode-regime",
            "info",
            regime_title,
            f"{where}.",
            metric,
            None,
            f"Throughput stays at {fmt_tokens_per_s(now)} ({label('decode_tokens_per_s')}).",
            no_change=f"No change: {_no_larger_batch(ctx, ridge_cap)}.",
        )
    option, result = got
    gain = option.after / now
    severity: Severity = (
        "medium" if gain >= THROUGHPUT_MEDIUM_GAIN else "low" if gain >= THROUGHPUT_LOW_GAIN else "info"
    )
    action = f"Raise the batch to {fmt_count(target)} (limited by {_batch_limit(ctx, target, ridge_cap)})."
    option = Option(action, option.changed_keys, metric, option.after)
    tpot = fmt_seconds(result.metrics["tpot_s"])
    effect = f"{fmt_tokens_per_s(option.after)} {label(metric)} ({gain:.2f}× now) at a TPOT of {tpot}."
    title = f"{gain:.1f}× decode throughput left on the table" if severity != "info" else regime_title
    return ctx.finding("decode-regime", severity, title, f"{where}.", metric, option, effect)


# --------------------------------------------------------------------------- chunk size


def chunk_grid(prompt: int) -> np.ndarray:
    """16·2^k and 24·2^k up to the prompt, plus the prompt itself (one chunk)."""
    powers = 2.0 ** np.arange(0, 24)
    grid = np.concatenate([MIN_CHUNK * powers, 1.5 * MIN_CHUNK * powers])
    top = max(prompt, MIN_CHUNK)
    return np.unique(np.append(grid[grid <= top], top))


def _balanced_chunk(ctx: Context) -> tuple[int, str, Severity] | None:
    """(chunk, how it was chosen, severity): the grid chunk nearest the current one (in log) that
    meets both targets, else the one closest to meeting both; None when the chunk is not the lever."""
    metrics, scenario = ctx.metrics, ctx.scenario
    grid = chunk_grid(scenario.prompt)
    swept = chunked_prefill(ctx.inputs, chunk_tokens=grid)
    slo = Slo.of(scenario)
    ttft_ratio = swept["chunked_ttft_s"] / _limit(slo.ttft_s)
    itl_ratio = swept["chunked_max_itl_s"] / _limit(slo.gap_limit_s)
    feasible = (ttft_ratio <= 1) & (itl_ratio <= 1)
    if feasible.any():
        distance = np.where(feasible, np.abs(np.log(grid / scenario.chunk)), np.inf)
        return int(grid[np.argmin(distance)]), "meets both targets", "medium"
    # Only when each target is reachable alone (plain decode meets TPOT, an idle prefill
    # meets TTFT): otherwise the chunk size is not the lever.
    if metrics["tpot_s"] > _limit(slo.step_limit_s) or metrics["ttft_s"] > _limit(slo.ttft_s):
        return None
    worst = np.maximum(ttft_ratio, itl_ratio)
    best = int(np.argmin(worst))
    worst_now = max(
        metrics["chunked_ttft_s"] / _limit(slo.ttft_s), metrics["chunked_max_itl_s"] / _limit(slo.gap_limit_s)
    )
    if worst[best] >= (1.0 - CHUNK_MIN_IMPROVEMENT_FRAC) * worst_now:
        return None
    return int(grid[best]), "no chunk size meets both targets; this one comes closest", "low"


def _chunk_explanation(ctx: Context, itl_side: bool) -> str:
    """Which target the current chunk misses, with both latencies against their targets."""
    metrics, scenario = ctx.metrics, ctx.scenario
    ttft, itl = fmt_seconds(metrics["chunked_ttft_s"]), fmt_seconds(metrics["chunked_max_itl_s"])
    slo = Slo.of(scenario)
    slo_ttft = f"{fmt_seconds(slo.ttft_s)} TTFT" if slo.ttft_s is not None else "(unset) TTFT"
    gap = slo.gap_limit_s
    slo_tpot = f"{fmt_seconds(gap)} {slo.gap_limit_words}" if gap is not None else "(unset) ITL"
    if math.isinf(metrics["chunked_ttft_s"]):
        return (
            f"The {fmt_count(scenario.batch)} running streams take the whole {fmt_count(scenario.chunk)}-token step "
            "budget (one token each), so a newcomer's prompt never gets a prefill token while they run."
        )
    if itl_side:
        return (
            f"Chunks of {fmt_count(min(scenario.chunk, scenario.prompt))} prompt tokens stall the "
            f"{fmt_count(scenario.batch)} running streams for up to {itl} per step, above the {slo_tpot} "
            f"target, while a newcomer's TTFT is {ttft} of the {slo_ttft} target."
        )
    return (
        f"{fmt_count(metrics['chunked_steps'])} chunks of {fmt_count(scenario.chunk)} tokens take {ttft} to admit a "
        f"{fmt_count(scenario.prompt)}-token prompt, above the {slo_ttft} target, while steps take at most "
        f"{itl} of the {slo_tpot} target."
    )


def chunk_balance(ctx: Context) -> Finding | None:
    """``chunk-imbalance``: the prefill chunk makes the newcomer's TTFT or the running streams' ITL miss."""
    metrics, scenario = ctx.metrics, ctx.scenario
    slo = Slo.of(scenario)
    ttft_ratio = metrics["chunked_ttft_s"] / _limit(slo.ttft_s)
    itl_ratio = metrics["chunked_max_itl_s"] / _limit(slo.gap_limit_s)
    if not metrics["fits"] or (ttft_ratio <= 1 and itl_ratio <= 1):
        return None
    balanced = _balanced_chunk(ctx)
    if balanced is None or balanced[0] == scenario.chunk:
        return None
    chunk, how, severity = balanced
    itl_side = itl_ratio >= ttft_ratio
    metric = "chunked_max_itl_s" if itl_side else "chunked_ttft_s"
    # the chunks were swept at the batch in force: keep it where the engine lowered the default to fit the chunk
    batch = int(ctx.result.resolved.scenario.batch)
    changes = {"chunk": chunk} | ({"batch": batch} if batch != scenario.batch else {})
    said = f" at batch {fmt_count(batch)}" if "batch" in changes else ""
    got = ctx.option(f"Set the prefill chunk to {fmt_count(chunk)} tokens{said} ({how}).", changes, metric)
    if got is None:
        return None
    option, result = got
    effect = (
        f"TTFT under load {fmt_seconds(result.metrics['chunked_ttft_s'])}, worst inter-token gap "
        f"{fmt_seconds(result.metrics['chunked_max_itl_s'])}."
    )
    return ctx.finding(
        "chunk-imbalance",
        severity,
        f"Chunk size favours {'TTFT' if itl_side else 'ITL'} at the cost of the other target",
        _chunk_explanation(ctx, itl_side),
        metric,
        option,
        effect,
    )


# --------------------------------------------------------------------------- speculative decoding


def _spec_break_evens(ctx: Context) -> tuple[int | None, float | None]:
    """(largest batch ≤ the current one where speculation pays, smallest α above the current one where it pays)."""
    scenario = ctx.scenario
    batches = np.arange(1, scenario.batch + 1, dtype=float)
    pays_at_batch = speedup(ctx.inputs, batch=batches) >= 1.0
    batch_star = int(batches[pays_at_batch].max()) if pays_at_batch.any() else None
    alphas = np.linspace(scenario.alpha, 1.0, ALPHA_GRID_POINTS + 1)[1:]
    pays_at_alpha = speedup(ctx.inputs, alpha=alphas) >= 1.0
    alpha_star = float(alphas[np.argmax(pays_at_alpha)]) if pays_at_alpha.any() else None
    return batch_star, alpha_star


def _spec_options(ctx: Context, batch_star: int | None) -> list[Option]:
    """The best γ (when some γ ≥ 1 pays), speculation off, and the break-even batch; each re-run."""
    metrics, metric = ctx.metrics, "tpot_s"
    best_gamma = int(metrics["spec_best_gamma"])
    tries: list[tuple[str, dict, str]] = []
    if best_gamma >= 1 and metrics["spec_best_speedup"] > 1.0:
        action = f"Draft {fmt_count(best_gamma, 'token')} per step (gamma={best_gamma})."
        tries.append((action, {"gamma": best_gamma}, metric))
    tries.append(("Turn speculative decoding off.", {"spec": False}, metric))
    if batch_star is not None:
        action = f"Lower the batch to {fmt_count(batch_star)}, where it pays."
        tries.append((action, {"batch": batch_star}, "spec_speedup"))
    return [got[0] for action, changes, name in tries if (got := ctx.option(action, changes, name))]


def speculative(ctx: Context) -> Finding | None:
    """``spec-decoding-loses``: speculation is on and slower than plain decoding."""
    metrics, scenario = ctx.metrics, ctx.scenario
    spec_speedup = float(metrics["spec_speedup"])
    if not scenario.spec or spec_speedup >= 1.0 or not metrics["fits"]:
        return None
    batch_star, alpha_star = _spec_break_evens(ctx)
    where = []
    if batch_star is not None:
        where.append(f"below batch {fmt_count(batch_star + 1)}")
    if alpha_star is not None:
        where.append(f"above α={alpha_star:.2f}")
    pays = " or ".join(where) if where else "at no batch up to this one or α"
    explanation = (
        f"With α={scenario.alpha:.2f} and γ={scenario.gamma}, a pass verifying {scenario.gamma + 1} tokens for "
        f"{fmt_count(scenario.batch)} sequences yields {metrics['spec_expected_tokens_per_step']:.2f} tokens but costs "
        f"more, so speculative decoding runs at {spec_speedup:.2f}× (slower); it pays {pays}."
    )
    options = _spec_options(ctx, batch_star)
    chosen = options[0] if options else None
    effect = f"TPOT {fmt_seconds(chosen.after)} instead of {fmt_seconds(metrics['tpot_s'])}." if chosen else ""
    return ctx.finding(
        "spec-decoding-loses",
        "medium",
        f"Speculative decoding is slower here ({spec_speedup:.2f}×)",
        explanation,
        "tpot_s",
        chosen,
        effect,
        options=options,
    )


# --------------------------------------------------------------------------- TP communication


def _link_gb_per_s(bytes_per_s: float) -> str:
    return f"{fmt_num(bytes_per_s / GB)} GB/s"


def _faster_link_switch(ctx: Context, metric: str) -> Option | None:
    """The profile with a faster interconnect, at the same tp, with the smallest communication share."""
    best: tuple[float, Option] | None = None
    for key, gpu in sorted(ctx.catalog.gpus.items()):
        if key == ctx.scenario.gpu or gpu.interconnect_bytes_per_s <= ctx.gpu.interconnect_bytes_per_s:
            continue
        action = (
            f"Switch to {gpu.name} ({_link_gb_per_s(gpu.interconnect_bytes_per_s)} interconnect) "
            f"at tp={ctx.scenario.tp}."
        )
        got = ctx.option(action, ctx.scenario.gpu_switch(key), metric)
        if got and fits(got[1].metrics):
            share = metric_value(got[1].metrics, "decode_comm_frac")
            if best is None or share < best[0]:
                best = (share, got[0])
    return best[1] if best else None


def tp_comm(ctx: Context) -> Finding | None:
    """``tp-communication``: the all-reduces take more than ``COMM_MAX_FRAC`` of each decode step."""
    metrics, scenario = ctx.metrics, ctx.scenario
    if scenario.tp <= 1 or not metrics["fits"]:
        return None
    share = metric_value(metrics, "decode_comm_frac")
    if share <= COMM_MAX_FRAC:
        return None
    explanation = (
        f"At tp={scenario.tp} the all-reduces take {fmt_seconds(metrics['decode_comm_s'])} of each "
        f"{fmt_seconds(metrics['plain_tpot_s'])} decode step ({fmt_pct(share)}) over the {ctx.gpu.name}'s "
        f"{_link_gb_per_s(ctx.gpu.interconnect_bytes_per_s)} interconnect."
    )
    metric = "decode_tokens_per_s_per_gpu"
    options: list[Option] = []
    half = max(scenario.tp // 2, 1)
    got = ctx.option(f"Halve tensor parallelism to tp={half} (more, smaller replicas).", {"tp": half}, metric)
    if got and fits(got[1].metrics):
        options.append(got[0])
    switch = _faster_link_switch(ctx, metric)
    if switch:
        options.append(switch)
    now = fmt_tokens_per_s(metrics[metric])
    effect = "; ".join(
        f"{o.action.rstrip('.')}: {fmt_tokens_per_s(o.after)} {label(metric)} (now {now})" for o in options
    )
    return ctx.finding(
        "tp-communication",
        "medium" if share > COMM_MEDIUM_FRAC else "low",
        f"Tensor-parallel communication takes {fmt_pct(share)} of each decode step",
        explanation,
        metric,
        options[0] if options else None,
        effect,
        no_change="No smaller tp fits the batch and no profile has a faster interconnect.",
        options=options,
    )
