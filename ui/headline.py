"""The headline row: nine numbers with units, each against its natural baseline.

* KV bytes/token, max concurrency, TTFT, TPOT, tokens/s per GPU and GPU $/M output
  tokens: against the same scenario with multi-head attention (kv_heads = heads);
* TTFT is the scenario's own: a newcomer's, with its chunk size, beside the batch's running
  streams (``chunked_ttft_s``, what the Chunked prefill tab shows); the idle, unchunked
  prefill (``ttft_s``) is the secondary figure under it;
* speculative speedup: against plain decoding (it *is* that ratio); when speculation is
  off the card says "off" and shows, greyed, what it would give, and the best γ;
* API prompt-cache saving: against no cache, in dollars per request — from the scenario's
  prompt layout when it has one (the Prompt layout tab's verdict, ``ui.prompt_source``),
  else from the sidebar's prefix and hit rate;
* power per GPU: the board power at the scenario's load, with the energy and its electricity cost per million
  output tokens under it (``planner.engine.power``; "not published" where the profile has no board power);
* every one against the pinned baseline instead, when the link pins one (``base``).

The two money figures are two cost models and say so: "GPU $" is the rental of the
replica's GPUs per million output tokens; "API" is an API provider's token prices.

``headline_items`` and ``notices`` are pure (tests call them); ``render`` draws
them with the injected streamlit module.  Every number goes through
``planner.format``, so a headline value reads like the same quantity anywhere else,
and every text through ``ui.format.md_escape`` (names in it are data).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from planner.engine.evaluate import Result
from planner.engine.metrics import label
from planner.engine.validity import kv_replication_sentence
from planner.format import (
    fmt_bytes,
    fmt_count,
    fmt_num,
    fmt_pct,
    fmt_seconds,
    fmt_sequences,
    fmt_tokens_per_s,
    fmt_usd,
    whole_sequences,
)
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec
from planner.prompts.layout_report import LayoutReport
from planner.studies.baseline import pinned_scenario
from planner.studies.ridge import fmt_turn
from ui.format import md_escape, md_text

#: Keys of the nine cards (tests and the pinned-baseline hook find a card by its key, not its label).
KEYS = ("kv", "concurrency", "ttft", "tpot", "tokens", "cost", "speculative", "cache", "power")
#: Session key of the "use the best γ" button.
BEST_GAMMA_KEY = "headline-best-gamma"


@dataclass(frozen=True)
class Headline:
    label: str
    value: str
    delta: str | None = None
    delta_color: str = "normal"  # "inverse": lower is better; "off": grey
    delta_description: str | None = None
    help: str = ""
    key: str = ""
    muted: bool = False  # greyed: a figure of something that is off


@dataclass(frozen=True)
class Notice:
    level: str  # "error" | "warning" | "info"
    text: str  # data in it (names): escaped when drawn
    lead: str = ""  # program text shown in bold before it


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
        return dict(delta_description="pinned: cannot evaluate")
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
        return dict(delta_description="MLA: no MHA baseline")
    if mha is None or model.kv_heads == model.heads:
        return dict(delta_description="MHA model: no baseline")
    color = "inverse" if inverse else "normal"
    if not mha.metrics["fits"] and key != "kv_bytes_per_token":
        return dict(delta_description="MHA would not fit")
    v, b = float(result.metrics[key]), float(mha.metrics[key])
    if not (math.isfinite(v) and math.isfinite(b)):
        return dict(delta_description="vs MHA: n/a")
    if key == "max_concurrent_sequences":
        diff = whole_sequences(v) - whole_sequences(b)
        more = ("+" if diff >= 0 else "") + fmt_count(diff)
        return dict(delta=more, delta_color=color, delta_description=f"vs MHA ({fmt_sequences(b, None)})")
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


def ttft_text(seconds: float) -> str:
    """A newcomer's chunked TTFT: "never" when the running decodes fill every step's token budget."""
    return "never" if math.isinf(float(seconds)) else fmt_seconds(seconds)


def _prefix_cache_words(m) -> str:
    """How the GPUs' prefix cache enters the TTFT (and the tokens/s and cost), or '' when it saves nothing."""
    if not (m["gpu_cache_hit_rate"] > 0 and m["gpu_cached_tokens"] > 0):
        return " No prefix-cache hit (hit rate 0 or no whole block of prefix): every prompt is prefilled whole."
    return (
        f" Both are expected over the GPUs' prefix cache: {fmt_pct(m['gpu_cache_hit_rate'])} of requests find "
        f"{fmt_count(m['gpu_cached_tokens'])} cached tokens (whole KV blocks, vLLM/SGLang) and prefill the rest, "
        f"saving {fmt_seconds(m['prefill_saved_per_request_s'])} of prefill a request on average; a whole prompt "
        f"takes {fmt_seconds(m['ttft_nocache_s'])} idle. The tokens/s and GPU cost count the same prefill time."
    )


def _ttft_item(result: Result, mha: Result | None, fits: bool, no_fit: str) -> Headline:
    m, s = result.metrics, result.resolved.scenario
    idle = f"idle {fmt_seconds(m['nochunk_ttft_s'])}"
    never = math.isinf(float(m["chunked_ttft_s"]))
    helptext = (
        f"Time to first token of a {fmt_count(s.prompt)}-token prompt arriving beside {fmt_count(s.batch)} running "
        f"streams, prefilled in {fmt_count(s.chunk)}-token steps (the Chunked prefill tab); on an idle replica "
        f"without chunking it is {fmt_seconds(m['nochunk_ttft_s'])} ({s.engine} engine profile)."
        + _prefix_cache_words(m)
        + (
            f" Never: the {fmt_count(s.batch)} running decodes fill the {fmt_count(s.chunk)}-token step budget, "
            "so a newcomer's prefill gets no tokens (raise the chunk or lower the batch)."
            if never
            else ""
        )
    )
    if not fits:
        return Headline("TTFT", no_fit, help=helptext, key="ttft")
    delta = {} if never else _vs_mha(result, mha, "chunked_ttft_s", inverse=True)
    desc = delta.pop("delta_description", None)
    return Headline(
        "TTFT",
        ttft_text(m["chunked_ttft_s"]),
        delta_description=f"{desc}; {idle}" if desc and "delta" in delta else idle,
        help=helptext,
        key="ttft",
        **delta,
    )


def headline_items(
    result: Result, mha: Result | None, feasible: Result | None = None, layout: LayoutReport | None = None
) -> list[Headline]:
    """The eight headline numbers of ``result``; ``mha`` is the same scenario with kv_heads = heads;
    ``feasible`` the scenario at its feasible batch (``feasible_scenario``), where TPOT, tokens/s and the
    cost are then read; ``layout`` the report of the scenario's prompt layout, when it has one
    (``ui.prompt_source.link_layout_report``): the cache card shows its verdict."""
    m = result.metrics
    s = result.resolved.scenario
    fits = bool(m["fits"])
    no_fit = "does not fit"
    tp = int(s.tp)
    sequence_tokens = fmt_count(s.prompt + s.output)
    rate, said = _at_feasible(result, feasible)
    if feasible is not None:
        return _items_at_feasible(result, mha, rate, said, layout)
    items = [
        Headline(
            "KV cache per token",
            fmt_bytes(m["kv_bytes_per_token"]),
            help="Bytes one token adds to the KV cache, all layers, all GPUs of the replica.",
            key="kv",
            **_vs_mha(result, mha, "kv_bytes_per_token", inverse=True),
        ),
        Headline(
            "Max concurrency",
            fmt_sequences(m["max_concurrent_sequences"], "seq") if fits else no_fit,
            help=f"Whole sequences of {sequence_tokens} tokens (prompt + output) the paged KV cache holds per replica "
            f"(vLLM's 'Maximum concurrency': {fmt_num(m['max_concurrent_sequences'])}x)."
            + kv_replication_sentence(result.resolved.model, int(s.tp)),
            key="concurrency",
            **(_vs_mha(result, mha, "max_concurrent_sequences", inverse=False) if fits else {}),
        ),
        _ttft_item(result, mha, fits, no_fit),
        Headline(
            "TPOT",
            fmt_seconds(m["tpot_s"]) if fits else no_fit,
            help=f"Time per output token at batch {fmt_count(s.batch)}"
            + (" with speculative decoding." if s.spec else "."),
            key="tpot",
            **(_vs_mha(result, mha, "tpot_s", inverse=True) if fits else {}),
        ),
        Headline(
            TOKENS_LABEL,
            fmt_tokens_per_s(m["output_tokens_per_s_per_gpu"]) if fits else no_fit,
            help=f"{label('output_tokens_per_s_per_gpu', capital=True)}: output tokens/s of the replica, the GPU time "
            "of each request's prefill included "
            f"(B · O / (B · TTFT + O · TPOT), TTFT with the GPUs' prefix cache), divided by its {tp} GPU(s); "
            f"{label('decode_tokens_per_s_per_gpu')}: {fmt_tokens_per_s(m['decode_tokens_per_s_per_gpu'])}.",
            key="tokens",
            **(_vs_mha(result, mha, "output_tokens_per_s_per_gpu", inverse=False) if fits else {}),
        ),
        _cost_item(result, mha, fits, no_fit),
        _speculative_item(result, fits),
        _cache_item(result, layout),
        power_item(result, fits, no_fit, mha),
    ]
    if s.base:  # the pinned baseline's deltas replace the speedup's (when it runs) and the saving's own baselines
        if s.spec:
            items[6] = replace(items[6], **_vs_pinned(result, mha, "spec_speedup", inverse=False))
        items[7] = replace(items[7], **_vs_pinned(result, mha, "cache_saving_frac", inverse=False))
    return items


def _items_at_feasible(
    result: Result, mha: Result | None, rate: Result, said: str, layout: LayoutReport | None
) -> list[Headline]:
    """The headline when the batch does not fit: TPOT, tokens/s and $ at the feasible batch (no MHA delta)."""
    items = headline_items(result, mha, layout=layout)
    rm = rate.metrics
    b = f"at batch {fmt_count(rate.resolved.scenario.batch)}"
    replaced = {  # TTFT stays the scenario's own: a newcomer beside the batch asked for (the Chunked prefill tab)
        "tpot": fmt_seconds(rm["tpot_s"]),
        "tokens": fmt_tokens_per_s(rm["output_tokens_per_s_per_gpu"]),
        "cost": fmt_usd(rm["cost_per_million_output_tokens_usd"])
        if float(rm["price_per_replica_hour_usd"]) > 0
        else "not priced",
    }
    return [
        Headline(i.label, replaced[i.key], None, "normal", b, i.help + said, i.key) if i.key in replaced else i
        for i in items
    ]


COST_LABEL = "GPU $ / M output tokens"
#: The headline's throughput: the first words of its one name (``planner.engine.metrics.label``: what fits a
#: card); its help starts with the whole name.
TOKENS_LABEL = "Output tok/s per GPU"

POWER_LABEL = "Power per GPU"


def power_item(result: Result, fits: bool, no_fit: str, pinned: Result | None = None) -> Headline:
    """Board power per GPU at the scenario's load, with the energy and its cost per million output tokens
    (``planner.engine.power``); against the pinned baseline when the link pins one (``pinned``: its result)."""
    m = result.metrics
    s = result.resolved.scenario
    watts = float(m["power_per_gpu_w"])
    if not math.isfinite(watts):
        return Headline(
            POWER_LABEL,
            "not published",
            help="This GPU profile has no published board power (its tdp_source says so): give the board power "
            "under Advanced (gpu_power_w).",
            key="power",
            muted=True,
        )
    energy = (
        f"{fmt_num(m['kwh_per_million_output_tokens'])} kWh, "
        f"{fmt_usd(m['energy_cost_per_million_output_tokens_usd'])} / M tokens"
    )
    limit = ""
    if s.power_limit_kw > 0:
        within = fmt_count(m["replicas_within_power_limit"])
        limit = f" Within power_limit_kw = {fmt_num(s.power_limit_kw)}: {within} replicas."
    return Headline(
        POWER_LABEL,
        f"{fmt_num(round(watts))} W" if fits else no_fit,
        **(
            _vs_pinned(result, pinned, "power_per_gpu_w", inverse=True) | {"delta_description": f"vs pinned; {energy}"}
            if fits and s.base and pinned is not None
            else {"delta_description": energy if fits else None}
        ),
        help=f"Board power of one GPU at this load: idle + (TDP − idle) × utilisation, prefill "
        f"({fmt_num(round(float(m['prefill_power_per_gpu_w'])))} W, {fmt_pct(m['prefill_time_frac'])} of the time) and "
        f"decode ({fmt_num(round(float(m['decode_power_per_gpu_w'])))} W) time-weighted; fitted to ML.ENERGY's "
        f"measured vLLM runs (docs/model.md §13). Replica IT power {fmt_num(m['replica_power_kw'])} kW with the "
        f"server's share, site {fmt_num(m['replica_site_power_kw'])} kW at PUE {fmt_num(s.pue)}; "
        f"{fmt_num(m['energy_per_output_token_j'])} J per output token (GPU); electricity at "
        f"{fmt_usd(s.electricity_usd_per_kwh)}/kWh.{limit}",
        key="power",
    )


def _cost_item(result: Result, mha: Result | None, fits: bool, no_fit: str) -> Headline:
    m = result.metrics
    if float(m["price_per_replica_hour_usd"]) <= 0:  # a measured machine carries no price
        return Headline(
            COST_LABEL,
            "not priced",
            help="This profile has no price (a machine measured by the benchmark): set a GPU price under Advanced.",
            key="cost",
        )
    return Headline(
        COST_LABEL,
        fmt_usd(m["cost_per_million_output_tokens_usd"]) if fits else no_fit,
        help=f"GPU cost model: the rental of the replica's GPUs ({fmt_usd(m['price_per_replica_hour_usd'])}/h) over "
        f"the output tokens it serves per hour, × 10⁶: computed from the {label('output_tokens_per_s_per_gpu')} "
        f"beside it. Per million input tokens (the prefill's share) {fmt_usd(m['cost_per_million_input_tokens_usd'])}, "
        f"per million tokens {fmt_usd(m['cost_per_million_tokens_usd'])}, per request "
        f"{fmt_usd(m['cost_per_request_usd'])}. Not an API price (the prompt-cache card is).",
        key="cost",
        **(_vs_mha(result, mha, "cost_per_million_output_tokens_usd", inverse=True) if fits else {}),
    )


def _speculative_item(result: Result, fits: bool) -> Headline:
    m = result.metrics
    s = result.resolved.scenario
    label = "Speculative speedup" + ("" if s.spec else " (off)")
    best = f"best γ here is {fmt_count(m['spec_best_gamma'])} ({fmt_num(m['spec_best_speedup'])}×)"
    helptext = (
        f"Decode tokens/s with speculative decoding (γ = {fmt_count(s.gamma)}, α = {fmt_num(s.alpha)}) "
        f"over plain decoding; {best}."
        + ("" if s.spec else " Speculative decoding is off: the figure is what it would give, not what runs.")
    )
    if not fits:
        return Headline(label, "does not fit", help=helptext, key="speculative", muted=not s.spec)
    speedup = float(m["spec_speedup"])
    if not s.spec:
        return Headline(
            label,
            f"{fmt_num(speedup)}×",
            delta="off",
            delta_color="off",
            delta_description=f"would give; best γ {fmt_count(m['spec_best_gamma'])}",
            help=helptext,
            key="speculative",
            muted=True,
        )
    return Headline(
        label,
        f"{fmt_num(speedup)}×",
        delta=fmt_pct(speedup - 1.0, signed=True),
        delta_description=f"vs plain; best γ {fmt_count(m['spec_best_gamma'])}",
        help=helptext,
        key="speculative",
    )


def better_gamma(result: Result) -> int | None:
    """The engine's best γ when it beats the scenario's by a visible margin (0.5 %), else None."""
    m, s = result.metrics, result.resolved.scenario
    best = int(m["spec_best_gamma"])
    if best == s.gamma or best < 1 or not m["fits"]:
        return None
    return best if float(m["spec_best_speedup"]) > float(m["spec_speedup"]) * 1.005 else None


CACHE_LABEL = "API prompt-cache saving"


def _cache_item(result: Result, layout: LayoutReport | None = None) -> Headline:
    if layout is not None:
        return _layout_cache_item(layout)
    m = result.metrics
    with_cache = float(m["cache_cost_per_request_usd"])
    without = float(m["nocache_cost_per_request_usd"])
    helptext = (
        f"API cost model: an API's token prices ({fmt_usd(result.resolved.scenario.price_in)} / "
        f"{fmt_usd(result.resolved.scenario.price_out)} per M input / output tokens), not the GPU rental. "
        f"Cost per request with prompt caching at hit rate {fmt_num(m['cache_hit_rate'])} "
        f"(break-even {fmt_num(m['cache_break_even_hit_rate'])}) vs none: "
        f"{fmt_usd(with_cache)} vs {fmt_usd(without)}; from the sidebar's prefix and hit rate (no prompt layout set)."
    )
    if not m["cache_applies"]:
        return Headline(
            CACHE_LABEL,
            fmt_pct(0.0),
            delta_description="prefix too short to cache",
            help=helptext,
            key="cache",
        )
    return Headline(
        CACHE_LABEL,
        fmt_pct(float(m["cache_saving_frac"])),
        delta=fmt_usd(with_cache - without),
        delta_color="inverse",
        delta_description="per request",
        help=helptext,
        key="cache",
    )


def _layout_cache_item(rep: LayoutReport) -> Headline:
    """The cache card from the scenario's prompt layout: the Prompt layout tab's numbers."""
    helptext = (
        "API cost model: an API's token prices, not the GPU rental. From the scenario's prompt layout "
        f"(Prompt layout tab): {fmt_count(rep.total_tokens)} prompt tokens in {len(rep.blocks)} block(s); "
        f"no caching {fmt_usd(rep.nocache_cost_per_request_usd)} per request."
    )
    if rep.cost_per_request_usd is None or rep.saving_frac is None:
        return Headline(
            CACHE_LABEL, "rejected", delta_description="the API rejects this layout", help=helptext, key="cache"
        )
    return Headline(
        CACHE_LABEL,
        fmt_pct(rep.saving_frac),
        delta=fmt_usd(rep.cost_per_request_usd - rep.nocache_cost_per_request_usd),
        delta_color="inverse",
        delta_description="per request (layout)",
        help=helptext,
        key="cache",
    )


def _does_not_fit(result: Result) -> Notice:
    m, r = result.metrics, result.resolved
    s = r.scenario
    min_tp = int(m["min_tp_that_fits"])
    where = f"smallest tp that fits: {min_tp}" if min_tp else "it does not fit at any tp up to 64"
    total = fmt_bytes(m["memory_total_bytes_per_gpu"])
    if m["memory_headroom_bytes_per_gpu"] < 0:
        why = (
            f"the start-up baseline, the {fmt_pct(m['mem_util_frac'])} budget and the CUDA graphs need "
            f"{fmt_bytes(-m['memory_headroom_bytes_per_gpu'])} more than the {total} a {r.gpu.name} reports"
        )
    elif m["kv_budget_bytes_per_gpu"] <= 0:
        why = (
            f"{fmt_bytes(m['weight_bytes_per_gpu'])} of weights + {fmt_bytes(m['reserve_bytes_per_gpu'])} of "
            f"activation peak and non-torch memory per GPU exceed the {fmt_bytes(m['usable_bytes_per_gpu'])} "
            f"{r.engine.label} budgets on a {r.gpu.name} ({fmt_pct(m['mem_util_frac'])} of the {total} it reports)"
        )
    else:
        why = (
            f"after weights and reserve only {fmt_bytes(m['kv_budget_bytes_per_gpu'])} per GPU is left for KV, "
            f"less than one {fmt_count(s.prompt + s.output)}-token sequence needs"
        )
    return Notice("error", f"at tp={s.tp}: {why}; {where}.", lead="Does not fit")


def notices(result: Result) -> list[Notice]:
    """Plain-words warnings: does not fit (with the smallest tp that does), batch above
    the concurrency limit, and where decode turns compute-bound (``planner.studies.ridge``)."""
    m = result.metrics
    s = result.resolved.scenario
    out: list[Notice] = []
    if not m["fits"]:
        out.append(_does_not_fit(result))
    elif not m["batch_fits_memory"]:
        limit = fmt_sequences(m["max_concurrent_sequences"], None)
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
    outgrow = "each sequence's KV reads and activation traffic take longer than its arithmetic"
    if not math.isinf(ridge):
        turn = f"it turns compute-bound from batch {fmt_turn(ridge)}"
    elif m["decode_compute_bound"]:  # padded GEMMs bound the step now; the per-sequence reads win as it grows
        turn = f"it turns memory-bound at larger batches: {outgrow}"
    else:
        turn = f"it never turns compute-bound: {outgrow}"
    prefill = "compute-bound" if m["prefill_compute_bound"] else "memory-bound"
    out.append(Notice("info", f"Prefill is {prefill}; decode at batch {fmt_count(s.batch)} is {bound} and {turn}."))
    return out


def card_value(item: Headline) -> str:
    """The Markdown of a card's value: escaped, greyed when ``muted``."""
    text = md_escape(item.value)
    return f":gray[{text}]" if item.muted else text


def render(st: Any, items: list[Headline], notes: list[Notice]) -> None:
    """The cards in one wrapping row (as many per line as fit the width, so no value is cut), and the
    notices under them.  Every text is escaped: a GPU or model name in it is data."""
    st.html(CARD_CSS)
    row = st.container(horizontal=True, gap="small", key="headline")
    for item in items:
        row.metric(
            md_escape(item.label),
            card_value(item),
            delta=None if item.delta is None else md_text(item.delta),  # program text: its sign sets the arrow
            delta_color=item.delta_color,
            delta_arrow="off" if item.delta_color == "off" else "auto",
            delta_description=None if item.delta_description is None else md_escape(item.delta_description),
            help=md_escape(item.help),
            border=True,
            width=HEADLINE_CARD_WIDTH,
        )
    for note in notes:
        draw = st.caption if note.level == "info" else getattr(st, note.level)
        draw((f"**{note.lead}** " if note.lead else "") + md_escape(note.text))


#: Least card width, px: the longest value ("12,345 tok/s") and label fit at the metric font; the cards of a
#: line then share its width (three per line at 1280 px beside the sidebar, four from about 1,400 px).
HEADLINE_CARD_WIDTH = 205
#: The cards grow to fill their line (Streamlit fixes a sized element's flex basis; this lets it grow).
CARD_CSS = (
    "<style>.st-key-headline > [data-testid='stElementContainer'] "
    f"{{flex: 1 1 {HEADLINE_CARD_WIDTH}px !important; max-width: 100%;}}</style>"
)
