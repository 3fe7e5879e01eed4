"""The headline row: eight numbers with units, each against its natural baseline.

* KV bytes/token, max concurrency, TTFT, TPOT, tokens/s per GPU and $/M output
  tokens: against the same scenario with multi-head attention (kv_heads = heads);
* speculative speedup: against plain decoding (it *is* that ratio);
* prompt-cache saving: against no cache, in dollars per request;
* every one against the pinned baseline instead, when the link pins one (``base``).

``headline_items`` and ``notices`` are pure (tests call them); ``render`` draws
them with the injected streamlit module.  Every number goes through
``planner.format``, so a headline value reads like the same quantity anywhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from planner.engine.evaluate import Result
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_tokens_per_s, fmt_usd
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec
from planner.studies.baseline import pinned_scenario
from ui.format import md_text


@dataclass(frozen=True)
class Headline:
    label: str
    value: str
    delta: str | None = None
    delta_color: str = "normal"  # "inverse": lower is better
    delta_description: str | None = None
    help: str = ""


@dataclass(frozen=True)
class Notice:
    level: str  # "error" | "warning" | "info"
    text: str


def mha_baseline(scenario: Scenario, model: ModelSpec) -> Scenario | None:
    """The same scenario with multi-head attention (kv_heads = heads); None for MHA and MLA models.
    When the link pins a baseline (``base``, ``planner.studies.baseline``) that scenario instead:
    every headline delta is then against it."""
    pinned, _ = pinned_scenario(scenario)
    if pinned is not None:
        return pinned
    if model.is_mla or model.kv_heads == model.heads:
        return None
    return scenario.model_copy(update={"kv_heads": model.heads})


def _rel(value: float, base: float) -> float:
    return value / base - 1.0 if base else math.inf


def _vs_pinned(result: Result, pinned: Result | None, key: str, inverse: bool) -> dict[str, Any]:
    """Delta fields of one metric against the pinned baseline (a share's change in points)."""
    if pinned is None:
        return dict(delta_description="the pinned baseline cannot be evaluated")
    v, b = float(result.metrics[key]), float(pinned.metrics[key])
    color = "inverse" if inverse else "normal"
    if key == "cache_saving_frac":
        return dict(delta=f"{(v - b) * 100:+.1f} pts", delta_color=color, delta_description="vs pinned")
    delta = fmt_pct(v / b - 1.0, signed=True) if b else "n/a"
    return dict(delta=delta, delta_color=color, delta_description="vs pinned")


def _vs_mha(result: Result, mha: Result | None, key: str, inverse: bool) -> dict[str, Any]:
    """Delta fields of one metric against the MHA baseline (none when the model is MHA or MLA), or
    against the pinned baseline when the link pins one (``mha`` is then that scenario's result)."""
    if result.resolved.scenario.base:
        return _vs_pinned(result, mha, key, inverse)
    model = result.resolved.model
    if model.is_mla:
        return dict(delta_description="MLA: compressed latent cache, no MHA baseline")
    if mha is None or model.kv_heads == model.heads:
        return dict(delta_description="model uses MHA (kv_heads = heads)")
    color = "inverse" if inverse else "normal"
    if not mha.metrics["fits"] and key != "kv_bytes_per_token":
        return dict(delta_description="MHA would not fit")
    v, b = float(result.metrics[key]), float(mha.metrics[key])
    if key == "max_concurrent_sequences":
        more = ("+" if v >= b else "") + fmt_count(v - b)
        return dict(delta=more, delta_color=color, delta_description=f"vs MHA ({fmt_count(b)})")
    return dict(delta=fmt_pct(_rel(v, b), signed=True), delta_color=color, delta_description="vs MHA")


def feasible_scenario(result: Result) -> Scenario | None:
    """The scenario at its feasible batch (``memory.feasible_batch``) when the batch does not fit the
    KV cache but a smaller one does; None otherwise.  Headline TPOT, tokens/s and $ are shown there."""
    m = result.metrics
    if not m["fits"] or m["batch_fits_memory"] or m["feasible_batch"] < 1:
        return None
    return result.resolved.scenario.with_changes(batch=int(m["feasible_batch"]))


def _at_feasible(result: Result, feasible: Result | None) -> tuple[Result, str]:
    """Where the rate figures come from, and the words saying so."""
    if feasible is None:
        return result, ""
    b, asked = fmt_count(feasible.resolved.scenario.batch), fmt_count(result.resolved.scenario.batch)
    return feasible, f" Shown at batch {b}, the most the KV cache holds (batch {asked} does not fit)."


def headline_items(result: Result, mha: Result | None, feasible: Result | None = None) -> list[Headline]:
    """The eight headline numbers of ``result``; ``mha`` is the same scenario with kv_heads = heads;
    ``feasible`` the scenario at its feasible batch (``feasible_scenario``), where TPOT, tokens/s and
    the cost are then read."""
    m = result.metrics
    s = result.resolved.scenario
    fits = bool(m["fits"])
    no_fit = "does not fit"
    tp = int(s.tp)
    sequence_tokens = fmt_count(s.prompt + s.output)
    rate, said = _at_feasible(result, feasible)
    if feasible is not None:
        return _items_at_feasible(result, mha, rate, said)
    items = [
        Headline(
            "KV cache per token",
            fmt_bytes(m["kv_bytes_per_token"]),
            help="Bytes one token adds to the KV cache, all layers, all GPUs of the replica.",
            **_vs_mha(result, mha, "kv_bytes_per_token", inverse=True),
        ),
        Headline(
            "Max concurrency",
            f"{fmt_num(m['max_concurrent_sequences'])} seqs" if fits else no_fit,
            help=f"Sequences of {sequence_tokens} tokens (prompt + output) the paged KV cache holds per replica.",
            **(_vs_mha(result, mha, "max_concurrent_sequences", inverse=False) if fits else {}),
        ),
        Headline(
            "TTFT",
            fmt_seconds(m["ttft_s"]) if fits else no_fit,
            help=f"Time to first token: prefill of a {fmt_count(s.prompt)}-token prompt on an idle replica "
            f"({s.engine} engine profile).",
            **(_vs_mha(result, mha, "ttft_s", inverse=True) if fits else {}),
        ),
        Headline(
            "TPOT",
            fmt_seconds(m["tpot_s"]) if fits else no_fit,
            help=f"Time per output token at batch {fmt_count(s.batch)}"
            + (" with speculative decoding." if s.spec else "."),
            **(_vs_mha(result, mha, "tpot_s", inverse=True) if fits else {}),
        ),
        Headline(
            "Tokens/s per GPU",
            fmt_tokens_per_s(m["output_tokens_per_s_per_gpu"]) if fits else no_fit,
            help=f"Output tokens/s of the replica, the GPU time of each request's prefill included "
            f"(B · O / (B · TTFT + O · TPOT)), divided by its {tp} GPU(s); decode alone: "
            f"{fmt_tokens_per_s(m['decode_tokens_per_s_per_gpu'])}.",
            **(_vs_mha(result, mha, "output_tokens_per_s_per_gpu", inverse=False) if fits else {}),
        ),
        _cost_item(result, mha, fits, no_fit),
        _speculative_item(result, fits),
        _cache_item(result),
    ]
    if s.base:  # the pinned baseline's deltas replace the speedup's and the saving's own baselines
        items[6] = replace(items[6], **_vs_pinned(result, mha, "spec_speedup", inverse=False))
        items[7] = replace(items[7], **_vs_pinned(result, mha, "cache_saving_frac", inverse=False))
    return items


def _items_at_feasible(result: Result, mha: Result | None, rate: Result, said: str) -> list[Headline]:
    """The headline when the batch does not fit: TPOT, tokens/s and $ at the feasible batch (no MHA delta)."""
    items = headline_items(result, mha)
    rm = rate.metrics
    b = f"at batch {fmt_count(rate.resolved.scenario.batch)}"
    replaced = {
        "TPOT": fmt_seconds(rm["tpot_s"]),
        "Tokens/s per GPU": fmt_tokens_per_s(rm["decode_tokens_per_s_per_gpu"]),
        "Cost per M output tokens": fmt_usd(rm["cost_per_million_output_tokens_usd"])
        if float(rm["price_per_replica_hour_usd"]) > 0
        else "not priced",
    }
    return [
        Headline(i.label, replaced[i.label], None, "normal", b, i.help + said) if i.label in replaced else i
        for i in items
    ]


def _cost_item(result: Result, mha: Result | None, fits: bool, no_fit: str) -> Headline:
    m = result.metrics
    if float(m["price_per_replica_hour_usd"]) <= 0:  # a measured machine carries no price
        return Headline(
            "Cost per M output tokens",
            "not priced",
            help="This profile has no price (a machine measured by the benchmark): set a GPU price under Advanced.",
        )
    return Headline(
        "Cost per M output tokens",
        fmt_usd(m["cost_per_million_output_tokens_usd"]) if fits else no_fit,
        help=f"GPU rental ({fmt_usd(m['price_per_replica_hour_usd'])}/h per replica) / output tokens per hour × 10⁶, "
        "the prefill's GPU time included.",
        **(_vs_mha(result, mha, "cost_per_million_output_tokens_usd", inverse=True) if fits else {}),
    )


def _speculative_item(result: Result, fits: bool) -> Headline:
    m = result.metrics
    s = result.resolved.scenario
    label = "Speculative speedup" + ("" if s.spec else " (off)")
    helptext = (
        f"Decode tokens/s with speculative decoding (γ = {fmt_count(s.gamma)}, α = {fmt_num(s.alpha)}) "
        "over plain decoding; "
        f"best γ here is {fmt_count(m['spec_best_gamma'])} ({fmt_num(m['spec_best_speedup'])}×)."
        + ("" if s.spec else " Off: the figure is what it would give.")
    )
    if not fits:
        return Headline(label, "does not fit", help=helptext)
    speedup = float(m["spec_speedup"])
    return Headline(
        label,
        f"{fmt_num(speedup)}×",
        delta=fmt_pct(speedup - 1.0, signed=True),
        delta_description="tokens/s vs plain decoding",
        help=helptext,
    )


def _cache_item(result: Result) -> Headline:
    m = result.metrics
    with_cache = float(m["cache_cost_per_request_usd"])
    without = float(m["nocache_cost_per_request_usd"])
    helptext = (
        f"API cost per request with prompt caching at hit rate {fmt_num(m['cache_hit_rate'])} "
        f"(break-even {fmt_num(m['cache_break_even_hit_rate'])}) vs none: "
        f"{fmt_usd(with_cache)} vs {fmt_usd(without)}."
    )
    if not m["cache_applies"]:
        return Headline(
            "Prompt-cache saving",
            fmt_pct(0.0),
            delta_description="prefix below the model's cacheable minimum",
            help=helptext,
        )
    return Headline(
        "Prompt-cache saving",
        fmt_pct(float(m["cache_saving_frac"])),
        delta=fmt_usd(with_cache - without),
        delta_color="inverse",
        delta_description="per request vs no cache",
        help=helptext,
    )


def notices(result: Result) -> list[Notice]:
    """Plain-words warnings: does not fit (with the smallest tp that does), batch above
    the concurrency limit, and where decode turns compute-bound."""
    m = result.metrics
    r = result.resolved
    s = r.scenario
    out: list[Notice] = []
    if not m["fits"]:
        min_tp = int(m["min_tp_that_fits"])
        where = f"smallest tp that fits: **{min_tp}**" if min_tp else "it does not fit at any tp up to 64"
        total = fmt_bytes(m["memory_total_bytes_per_gpu"])
        if m["memory_headroom_bytes_per_gpu"] < 0:
            why = (
                f"the start-up baseline, the {fmt_pct(s.mem_util)} budget and the CUDA graphs need "
                f"{fmt_bytes(-m['memory_headroom_bytes_per_gpu'])} more than the {total} a {r.gpu.name} reports"
            )
        elif m["kv_budget_bytes_per_gpu"] <= 0:
            why = (
                f"{fmt_bytes(m['weight_bytes_per_gpu'])} of weights + {fmt_bytes(m['reserve_bytes_per_gpu'])} of "
                f"activation peak and non-torch memory per GPU exceed the {fmt_bytes(m['usable_bytes_per_gpu'])} "
                f"{r.engine.name} budgets on a {r.gpu.name} ({fmt_pct(s.mem_util)} of the {total} it reports)"
            )
        else:
            why = (
                f"after weights and reserve only {fmt_bytes(m['kv_budget_bytes_per_gpu'])} per GPU is left for KV, "
                f"less than one {fmt_count(s.prompt + s.output)}-token sequence needs"
            )
        out.append(Notice("error", f"**Does not fit** at tp={s.tp}: {why}; {where}."))
    elif not m["batch_fits_memory"]:
        limit = fmt_num(m["max_concurrent_sequences"])
        feasible = fmt_count(m["feasible_batch"])
        out.append(
            Notice(
                "warning",
                f"Batch {fmt_count(s.batch)} > max concurrency {limit}: the KV cache holds only {limit} sequences "
                f"of {fmt_count(s.prompt + s.output)} tokens; the rest would queue or be preempted. "
                f"TPOT, tokens/s and cost are shown at batch {feasible}, the most that fit.",
            )
        )
    ridge = float(m["ridge_batch"])
    bound = "compute-bound" if m["decode_compute_bound"] else "memory-bound"
    turn = (
        "it **never** turns compute-bound: each sequence's KV reads and activation traffic take longer than its "
        "arithmetic"
        if math.isinf(ridge)
        else f"it turns compute-bound from batch ≈ {fmt_num(ridge)}"
    )
    prefill = "compute-bound" if m["prefill_compute_bound"] else "memory-bound"
    out.append(Notice("info", f"Prefill is {prefill}; decode at batch {fmt_count(s.batch)} is {bound} and {turn}."))
    return out


def render(st: Any, items: list[Headline], notes: list[Notice]) -> None:
    """Two rows of four ``st.metric`` and the notices under them."""
    for row in (items[:4], items[4:]):
        for col, item in zip(st.columns(len(row)), row, strict=True):
            col.metric(
                md_text(item.label),
                item.value,
                delta=None if item.delta is None else md_text(item.delta),
                delta_color=item.delta_color,
                delta_description=None if item.delta_description is None else md_text(item.delta_description),
                help=md_text(item.help),
                border=True,
            )
    for note in notes:
        draw = st.caption if note.level == "info" else getattr(st, note.level)
        draw(md_text(note.text))
