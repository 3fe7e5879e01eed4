"""Advisor: a scenario's results as a ranked list of plain-language findings.

Each ``Finding`` states one fact about the scenario with its numbers, proposes
one concrete change (``changed_keys``: Scenario fields) and gives that change's
effect, computed by **re-running the engine** on the changed, re-validated
scenario — never a canned estimate.  Searches for the change (batch, chunk,
α, tp, GPU) are vectorised engine calls over a grid; the chosen point is then
re-evaluated with ``engine.evaluate`` so the reported number is exactly what
the dashboard would show after "apply".

Checks, thresholds and grids: docs/advisor.md.  Pure: no I/O, no UI import.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ValidationError

from planner.engine.chunked import chunked_prefill
from planner.engine.evaluate import Result, compute, evaluate, inputs_for, resolve
from planner.engine.inputs import EngineInputs
from planner.engine.memory import (
    TP_CANDIDATES,
    kv_bytes_per_sequence,
    memory_plan,
    paged_context_tokens,
)
from planner.engine.speculative import speedup
from planner.errors import ScenarioError
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.units import MS_PER_S, GiB, MiB

Severity = Literal["high", "medium", "low", "info"]
SEVERITY_RANK: dict[str, int] = {"high": 0, "medium": 1, "low": 2, "info": 3}
WARNING_SEVERITIES = frozenset({"high", "medium", "low"})

#: "Weights leave little room for KV" below this share of usable memory per GPU.
KV_ROOM_MIN_FRAC = 0.25
#: "TP communication eats the step" above this share of the decode step.
COMM_MAX_FRAC = 0.20
COMM_MEDIUM_FRAC = 0.40
#: Another GPU is reported when it is at least this much cheaper per output token.
CHEAPER_MIN_SAVING_FRAC = 0.10
CHEAPER_MEDIUM_SAVING_FRAC = 0.30
#: Decode throughput gain (×) from a larger batch that makes the finding low / medium.
THROUGHPUT_LOW_GAIN = 1.25
THROUGHPUT_MEDIUM_GAIN = 2.0
#: A prompt-cache surcharge above this share of the request cost is medium, else low.
CACHE_MEDIUM_SURCHARGE_FRAC = 0.10
#: Points in the shorter-prompt and α searches.
PROMPT_GRID_POINTS = 2048
ALPHA_GRID_POINTS = 200


def _field_max(name: str) -> float:
    return next(m.le for m in Scenario.model_fields[name].metadata if getattr(m, "le", None) is not None)


MAX_BATCH = int(_field_max("batch"))
MAX_TP = int(_field_max("tp"))
MIN_CHUNK = 16

#: Metrics the advisor reports that are ratios of two engine metrics.
DERIVED_METRICS: dict[str, Callable[[Mapping[str, Any]], float]] = {
    "kv_budget_frac": lambda m: m["kv_budget_bytes_per_gpu"] / m["usable_bytes_per_gpu"],
    "decode_comm_frac": lambda m: m["decode_comm_s"] / m["plain_tpot_s"],
}


def metric_value(metrics: Mapping[str, Any], name: str) -> float:
    """An engine metric, or a ratio from ``DERIVED_METRICS``, as a float."""
    return float(DERIVED_METRICS[name](metrics) if name in DERIVED_METRICS else metrics[name])


@dataclass(frozen=True)
class Option:
    """One change and its re-run effect on ``metric``."""

    action: str
    changed_keys: Mapping[str, Any] = field(hash=False)
    metric: str
    after: float


@dataclass(frozen=True)
class Finding:
    """One fact about the scenario, one change, and the engine's answer to that change.

    ``before``/``after``: ``metric`` now and after applying ``changed_keys``
    (equal, with ``changed_keys`` empty, when no change is proposed).
    ``alternatives``: other changes considered, each re-run too.
    """

    id: str
    severity: Severity
    title: str
    explanation: str
    action: str
    predicted_effect: str
    metric: str
    before: float
    after: float
    changed_keys: Mapping[str, Any] = field(default_factory=dict, hash=False)
    alternatives: tuple[Option, ...] = ()

    @property
    def effect_magnitude(self) -> float:
        """|ln(after / before)|: a unit-free size of the change, for ranking."""
        if self.before == self.after:
            return 0.0
        if self.before <= 0 or self.after <= 0:
            return math.inf
        return abs(math.log(self.after / self.before))


# --------------------------------------------------------------------------- formatting


def _n(v: float) -> str:
    return f"{v:,.0f}"


def _count(v: float, noun: str) -> str:
    """``1 sequence`` / ``3 sequences``."""
    return f"{_n(v)} {noun}" + ("" if round(v) == 1 else "s")


def _time(s: float) -> str:
    return f"{s * MS_PER_S:,.1f} ms" if s < 1.0 else f"{s:,.2f} s"


def _gib(b: float) -> str:
    """Binary bytes: GiB from 1 GiB up, MiB below."""
    return f"{b / GiB:,.1f} GiB" if b >= GiB else f"{b / MiB:,.0f} MiB"


def _pct(frac: float) -> str:
    return f"{frac * 100:.0f} %"


def _rate(tokens_per_s: float) -> str:
    return f"{tokens_per_s:,.0f} tokens/s"


# --------------------------------------------------------------------------- re-running


@dataclass(frozen=True)
class _Ctx:
    s: Scenario
    r: Result
    catalog: Catalog

    @property
    def m(self) -> Mapping[str, Any]:
        return self.r.metrics

    @property
    def x(self) -> EngineInputs:
        return self.r.inputs.as_arrays()

    @property
    def gpu(self):
        return self.r.resolved.gpu

    @property
    def model(self):
        return self.r.resolved.model

    def changed(self, changes: Mapping[str, Any]) -> Scenario | None:
        """The scenario with ``changes``, re-validated; None when a value is out of range."""
        try:
            return Scenario.model_validate({**self.s.model_dump(), **changes})
        except ValidationError:
            return None

    def rerun(self, changes: Mapping[str, Any]) -> Result | None:
        s2 = self.changed(changes)
        if s2 is None:
            return None
        try:
            return evaluate(s2, self.catalog)
        except ScenarioError:
            return None

    def option(self, action: str, changes: Mapping[str, Any], metric: str) -> tuple[Option, Result] | None:
        res = self.rerun(changes)
        if res is None:
            return None
        return Option(action, dict(changes), metric, metric_value(res.metrics, metric)), res

    def gpu_changes(self, key: str, tp: int | None = None) -> dict[str, Any]:
        """Switch to GPU ``key`` (its catalog price, not the user's price override)."""
        ch: dict[str, Any] = {"gpu": key}
        if tp is not None and tp != self.s.tp:
            ch["tp"] = tp
        if self.s.gpu_price is not None:
            ch["gpu_price"] = None
        return ch

    def smallest_tp(self, gpu_key: str, ok: Callable[[Mapping[str, np.ndarray], Scenario], np.ndarray]) -> int | None:
        """Smallest tp in 1, 2, 4 … 64 on ``gpu_key`` where ``ok(metrics, scenario)`` holds (one vectorised call)."""
        s2 = self.changed(self.gpu_changes(gpu_key))
        if s2 is None:
            return None
        try:
            x = inputs_for(resolve(s2, self.catalog))
        except ScenarioError:
            return None
        tps = TP_CANDIDATES[TP_CANDIDATES <= MAX_TP]
        good = np.asarray(ok(compute(x.with_(tp=tps)), s2))
        return int(tps[np.argmax(good)]) if good.any() else None

    def cheapest_gpu_switch(
        self,
        ok: Callable[[Mapping[str, np.ndarray], Scenario], np.ndarray],
        metric: str,
        accept: Callable[[Option, Result], bool],
    ) -> Option | None:
        """Among the other GPU profiles, each at its smallest tp where ``ok`` holds, the
        switch that ``accept`` takes with the lowest price per replica-hour."""
        best: tuple[float, Option] | None = None
        for key in sorted(self.catalog.gpus):
            if key == self.s.gpu:
                continue
            tp = self.smallest_tp(key, ok)
            if tp is None:
                continue
            got = self.option(f"Switch to {self.catalog.gpus[key].name} at tp={tp}.", self.gpu_changes(key, tp), metric)
            if got and accept(*got):
                price = got[1].metrics["price_usd_per_hour_per_replica"]
                if best is None or price < best[0]:
                    best = (price, got[0])
        return best[1] if best else None


def _finding(
    c: _Ctx,
    id: str,
    severity: Severity,
    title: str,
    explanation: str,
    metric: str,
    chosen: Option | None,
    effect: str,
    no_change: str = "",
    alternatives: tuple[Option, ...] = (),
) -> Finding:
    metric = chosen.metric if chosen is not None else metric
    before = metric_value(c.m, metric)
    if chosen is None:
        return Finding(id, severity, title, explanation, no_change, effect, metric, before, before, {}, alternatives)
    return Finding(
        id,
        severity,
        title,
        explanation,
        chosen.action,
        effect,
        metric,
        before,
        chosen.after,
        dict(chosen.changed_keys),
        alternatives,
    )


def _others(chosen: Option, options: list[Option]) -> tuple[Option, ...]:
    return tuple(o for o in options if o is not chosen)


def _fits(m: Mapping[str, Any]) -> bool:
    return bool(m["fits"]) and bool(m["batch_fits_memory"])


def meets_slos(m: Mapping[str, Any], s: Scenario) -> bool:
    """TTFT of a prompt arriving under load (chunked) and mean TPOT within the targets."""
    return m["chunked_ttft_s"] <= s.slo_ttft_s and m["tpot_s"] <= s.slo_tpot_s


# --------------------------------------------------------------------------- checks


def _weights_fit(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    if m["fits"]:
        return None
    explanation = (
        f"At tp={s.tp} the {c.model.name} weights take {_gib(m['weight_bytes_per_gpu'])} per GPU and the reserve "
        f"{_gib(m['reserve_bytes_per_gpu'])}, of the {_gib(m['usable_bytes_per_gpu'])} usable on a {c.gpu.name}, "
        f"leaving no room for even one {_n(s.prompt + s.output)}-token sequence's KV cache."
    )
    options: list[Option] = []
    min_tp = int(m["min_tp_that_fits"])
    if 0 < min_tp <= MAX_TP and min_tp != s.tp:
        got = c.option(
            f"Run each replica on {min_tp} GPUs (tp={min_tp}), the smallest tensor-parallel size that fits.",
            {"tp": min_tp},
            "max_concurrent_sequences",
        )
        if got:
            options.append(got[0])
    switch = c.cheapest_gpu_switch(
        lambda mm, _s: mm["fits"], "max_concurrent_sequences", lambda _o, res: bool(res.metrics["fits"])
    )
    if switch:
        options.append(switch)
    chosen = options[0] if options else None
    effect = (
        "; ".join(f"{o.action.rstrip('.')}: {_count(o.after, 'sequence')} fit" for o in options)
        or "No change tried fits."
    )
    return _finding(
        c,
        "weights-dont-fit",
        "high",
        "The model does not fit on this GPU setup",
        explanation,
        "max_concurrent_sequences",
        chosen,
        effect,
        no_change="No GPU profile in the catalog holds this model at tp ≤ 64: quantise the weights (wdtype) or shorten the context.",
        alternatives=_others(chosen, options) if chosen else (),
    )


def _next_kv_heads_down(heads: int, kv_heads: int) -> int | None:
    """Largest divisor of ``heads`` below ``kv_heads`` (GQA with fewer groups), if any."""
    for d in range(kv_heads - 1, 0, -1):
        if heads % d == 0:
            return d
    return None


def _longest_prompt_that_fits(c: _Ctx) -> int | None:
    """Longest prompt < the current one at which the batch fits in memory (vectorised over a grid)."""
    s = c.s
    if s.prompt <= 1:
        return None
    grid = np.unique(np.floor(np.linspace(1, s.prompt - 1, min(PROMPT_GRID_POINTS, s.prompt - 1))))
    x = c.x.with_(prompt_tokens=grid, prefix_tokens=np.minimum(s.prefix, grid))
    plan = memory_plan(x)
    ok = plan["fits"] & plan["batch_fits_memory"]
    return int(grid[ok].max()) if ok.any() else None


def _kv_concurrency(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    k = int(m["max_concurrent_sequences"])
    if not m["fits"] or k >= s.batch:
        return None
    ctx = s.prompt + s.output
    explanation = (
        f"At {_n(ctx)} tokens of context each sequence needs {_gib(float(kv_bytes_per_sequence(c.x, paged_context_tokens(c.x))))} "
        f"of KV cache per GPU, so only {_count(k, 'sequence')} fit in the {_gib(m['kv_budget_bytes_per_gpu'])} KV budget — "
        f"fewer than the batch of {_n(s.batch)}; the model's {_n(c.model.context_window_tokens)}-token context window is not the limit."
    )
    metric = "max_concurrent_sequences"
    tries: list[tuple[str, dict[str, Any]]] = []
    if s.kvdtype in ("bf16", "fp16"):
        tries.append(("Store the KV cache in fp8 (kvdtype=fp8).", {"kvdtype": "fp8"}))
    if s.tp * 2 <= MAX_TP:
        tries.append((f"Double the GPUs per replica (tp={s.tp * 2}).", {"tp": s.tp * 2}))
    p = _longest_prompt_that_fits(c)
    if p is not None:
        ch: dict[str, Any] = {"prompt": p}
        if s.prefix > p:
            ch["prefix"] = p
        tries.append((f"Cap prompts at {_n(p)} tokens.", ch))
    if not c.model.is_mla:
        g = _next_kv_heads_down(c.model.heads, c.model.kv_heads)
        if g is not None:
            tries.append(
                (
                    f"Use a model variant with {g} KV heads instead of {c.model.kv_heads} (kv_heads={g}).",
                    {"kv_heads": g},
                )
            )
    options = [got[0] for action, ch in tries if (got := c.option(action, ch, metric))]
    if not options:
        return _finding(
            c,
            "kv-caps-concurrency",
            "high",
            f"The KV cache caps concurrency at {_count(k, 'sequence')}",
            explanation,
            metric,
            None,
            "No change tried.",
            "Lower the batch.",
        )
    chosen = next((o for o in options if o.after >= s.batch), max(options, key=lambda o: o.after))
    effect = "; ".join(
        f"{o.action.rstrip('.')}: {_count(o.after, 'sequence')} fit" for o in [chosen, *_others(chosen, options)]
    )
    return _finding(
        c,
        "kv-caps-concurrency",
        "high",
        f"The KV cache caps concurrency at {_count(k, 'sequence')}, below the batch of {_n(s.batch)}",
        explanation,
        metric,
        chosen,
        effect,
        alternatives=_others(chosen, options),
    )


def _kv_room(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    metric = "kv_budget_frac"
    frac = metric_value(m, metric)
    if not m["fits"] or frac >= KV_ROOM_MIN_FRAC:
        return None
    explanation = (
        f"The weights take {_gib(m['weight_bytes_per_gpu'])} of the {_gib(m['usable_bytes_per_gpu'])} usable per GPU, "
        f"leaving {_gib(m['kv_budget_bytes_per_gpu'])} ({_pct(frac)}) for the KV cache, under the {_pct(KV_ROOM_MIN_FRAC)} that leaves room to batch."
    )

    def roomy(mm, _s):
        return mm["fits"] & (mm["kv_budget_bytes_per_gpu"] >= KV_ROOM_MIN_FRAC * mm["usable_bytes_per_gpu"])

    options: list[Option] = []
    tp = c.smallest_tp(s.gpu, roomy)
    if tp is not None and tp > s.tp:
        got = c.option(f"Run each replica on {tp} GPUs (tp={tp}).", {"tp": tp}, metric)
        if got:
            options.append(got[0])
    switch = c.cheapest_gpu_switch(roomy, metric, lambda o, _res: o.after >= KV_ROOM_MIN_FRAC)
    if switch:
        options.append(switch)
    chosen = options[0] if options else None
    effect = (
        "; ".join(f"{o.action.rstrip('.')}: {_pct(o.after)} of usable memory for KV" for o in options)
        or "No change tried reaches the threshold."
    )
    return _finding(
        c,
        "weights-leave-little-kv",
        "medium",
        f"Weights leave only {_pct(frac)} of memory for the KV cache",
        explanation,
        metric,
        chosen,
        effect,
        no_change="No tp ≤ 64 or GPU profile in the catalog changes this: quantise the weights (wdtype).",
        alternatives=_others(chosen, options) if chosen else (),
    )


def _decode_regime(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    if not m["fits"]:
        return None
    ridge = float(m["ridge_batch"])
    k = int(m["max_concurrent_sequences"])
    now = float(m["decode_tokens_per_s"])
    if math.isinf(ridge):
        where = (
            "Decode's weight matmuls stay memory-bound at every batch (one token's activation traffic takes longer than "
            f"its FLOPs at this MFU and MBU), and batch {_n(s.batch)} produces {_rate(now)}"
        )
        ridge_cap = MAX_BATCH
        regime_title = "Decode is memory-bound at every batch"
    else:
        regime = "compute" if s.batch >= ridge else "memory"
        where = (
            f"Decode is memory-bound below batch {_n(ridge)} and compute-bound above it; batch {_n(s.batch)} is {regime}-bound "
            f"and produces {_rate(now)}"
        )
        ridge_cap = max(math.floor(ridge), 0)
        regime_title = f"Decode is memory-bound below batch {_n(ridge)}, compute-bound above"
    cap = min(k, MAX_BATCH, ridge_cap)
    target = None
    if cap > s.batch:
        grid = np.arange(s.batch + 1, cap + 1, dtype=float)
        mm = compute(c.x.with_(batch=grid))
        ok = mm["batch_fits_memory"] & (mm["tpot_s"] <= s.slo_tpot_s)
        if ok.any():
            target = int(grid[ok].max())
    metric = "decode_tokens_per_s"
    got = c.option("", {"batch": target}, metric) if target else None
    if got is None:
        if s.batch >= ridge_cap and not math.isinf(ridge):
            reason = "the batch is at or past the ridge, so a larger one adds latency, not throughput"
        elif s.batch >= k:
            reason = "the KV cache holds no more sequences"
        else:
            reason = f"a larger batch would push TPOT past the {_time(s.slo_tpot_s)} target"
        return _finding(
            c,
            "decode-regime",
            "info",
            regime_title,
            where + ".",
            metric,
            None,
            f"Throughput stays at {_rate(now)}.",
            no_change=f"No change: {reason}.",
        )
    opt, res = got
    limit = (
        f"the KV-cache limit of {_n(k)} sequences"
        if target == k
        else "the ridge"
        if target == ridge_cap and not math.isinf(ridge)
        else "the largest batch a scenario allows"
        if target == MAX_BATCH
        else f"the {_time(s.slo_tpot_s)} TPOT target"
    )
    gain = opt.after / now
    severity: Severity = (
        "medium" if gain >= THROUGHPUT_MEDIUM_GAIN else "low" if gain >= THROUGHPUT_LOW_GAIN else "info"
    )
    opt = Option(f"Raise the batch to {_n(target)} (limited by {limit}).", opt.changed_keys, metric, opt.after)
    effect = f"{_rate(opt.after)} ({gain:.2f}× now) at a TPOT of {_time(res.metrics['tpot_s'])}."
    title = f"{gain:.1f}× decode throughput left on the table" if severity != "info" else regime_title
    return _finding(c, "decode-regime", severity, title, f"{where}.", metric, opt, effect)


def _chunk_grid(prompt: int) -> np.ndarray:
    """16·2^k and 24·2^k up to the prompt, plus the prompt itself (one chunk)."""
    powers = 2.0 ** np.arange(0, 24)
    grid = np.concatenate([MIN_CHUNK * powers, 1.5 * MIN_CHUNK * powers])
    top = max(prompt, MIN_CHUNK)
    return np.unique(np.append(grid[grid <= top], top))


def _chunk_balance(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    ttft, itl = float(m["chunked_ttft_s"]), float(m["chunked_max_itl_s"])
    r_ttft, r_itl = ttft / s.slo_ttft_s, itl / s.slo_tpot_s
    if not m["fits"] or (r_ttft <= 1 and r_itl <= 1):
        return None
    grid = _chunk_grid(s.prompt)
    cc = chunked_prefill(c.x, chunk_tokens=grid)
    g_ttft = cc["chunked_ttft_s"] / s.slo_ttft_s
    g_itl = cc["chunked_max_itl_s"] / s.slo_tpot_s
    feasible = (g_ttft <= 1) & (g_itl <= 1)
    if feasible.any():
        dist = np.where(feasible, np.abs(np.log(grid / s.chunk)), np.inf)
        best = int(grid[np.argmin(dist)])
        how, severity = "meets both targets", "medium"
    else:
        # Only when each target is reachable alone (plain decode meets TPOT, an idle prefill
        # meets TTFT): otherwise the chunk size is not the lever.
        if m["tpot_s"] > s.slo_tpot_s or m["ttft_s"] > s.slo_ttft_s:
            return None
        worst = np.maximum(g_ttft, g_itl)
        i = int(np.argmin(worst))
        if worst[i] >= 0.9 * max(r_ttft, r_itl):
            return None
        best = int(grid[i])
        how, severity = "no chunk size meets both targets; this one comes closest", "low"
    if best == s.chunk:
        return None
    if r_itl >= r_ttft:
        metric = "chunked_max_itl_s"
        side = "TTFT"
        explanation = (
            f"Chunks of {_n(min(s.chunk, s.prompt))} prompt tokens stall the {_n(s.batch)} running streams for up to {_time(itl)} per step, "
            f"above the {_time(s.slo_tpot_s)} TPOT target, while a newcomer's TTFT is {_time(ttft)} of the {_time(s.slo_ttft_s)} target."
        )
    else:
        metric = "chunked_ttft_s"
        side = "ITL"
        explanation = (
            f"{_n(m['chunked_steps'])} chunks of {_n(s.chunk)} tokens take {_time(ttft)} to admit a {_n(s.prompt)}-token prompt, "
            f"above the {_time(s.slo_ttft_s)} TTFT target, while steps take at most {_time(itl)} of the {_time(s.slo_tpot_s)} TPOT target."
        )
    got = c.option(f"Set the prefill chunk to {_n(best)} tokens ({how}).", {"chunk": best}, metric)
    if got is None:
        return None
    opt, res = got
    effect = f"TTFT under load {_time(res.metrics['chunked_ttft_s'])}, worst inter-token gap {_time(res.metrics['chunked_max_itl_s'])}."
    return _finding(
        c,
        "chunk-imbalance",
        severity,
        f"Chunk size favours {side} at the cost of the other target",
        explanation,
        metric,
        opt,
        effect,
    )


def _speculative(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    sp = float(m["spec_speedup"])
    if not s.spec or sp >= 1.0 or not m["fits"]:
        return None
    x = c.x
    batches = np.arange(1, s.batch + 1, dtype=float)
    pays_b = speedup(x, batch=batches) >= 1.0
    b_star = int(batches[pays_b].max()) if pays_b.any() else None
    alphas = np.linspace(s.alpha, 1.0, ALPHA_GRID_POINTS + 1)[1:]
    pays_a = speedup(x, alpha=alphas) >= 1.0
    a_star = float(alphas[np.argmax(pays_a)]) if pays_a.any() else None
    where = []
    if b_star is not None:
        where.append(f"below batch {_n(b_star + 1)}")
    if a_star is not None:
        where.append(f"above α={a_star:.2f}")
    pays = " or ".join(where) if where else "at no batch up to this one or α"
    explanation = (
        f"With α={s.alpha:.2f} and γ={s.gamma}, a pass verifying {s.gamma + 1} tokens for {_n(s.batch)} sequences yields "
        f"{m['spec_expected_tokens_per_step']:.2f} tokens but costs more, so speculative decoding runs at {sp:.2f}× "
        f"(slower); it pays {pays}."
    )
    metric = "tpot_s"
    options: list[Option] = []
    best_g = int(m["spec_best_gamma"])
    if best_g >= 1 and m["spec_best_speedup"] > 1.0:
        got = c.option(f"Draft {_count(best_g, 'token')} per step (gamma={best_g}).", {"gamma": best_g}, metric)
        if got:
            options.append(got[0])
    got = c.option("Turn speculative decoding off.", {"spec": False}, metric)
    if got:
        options.append(got[0])
    if b_star is not None:
        got = c.option(f"Lower the batch to {_n(b_star)}, where it pays.", {"batch": b_star}, "spec_speedup")
        if got:
            options.append(got[0])
    chosen = options[0] if options else None
    effect = f"TPOT {_time(chosen.after)} instead of {_time(m['tpot_s'])}." if chosen else ""
    return _finding(
        c,
        "spec-decoding-loses",
        "medium",
        f"Speculative decoding is slower here ({sp:.2f}×)",
        explanation,
        metric,
        chosen,
        effect,
        alternatives=_others(chosen, options) if chosen else (),
    )


def _prompt_cache(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    metric = "cache_cost_per_request_usd"
    before = float(m[metric])
    h, h_star = float(m["cache_hit_rate"]), float(m["cache_break_even_hit_rate"])
    min_tokens = int(c.r.inputs.min_cacheable_tokens)
    if s.prefix > 0 and not m["cache_applies"]:
        if min_tokens > s.prompt:
            return _finding(
                c,
                "cache-prefix-below-minimum",
                "info",
                "Prompts are too short to cache",
                f"The {_n(s.prompt)}-token prompts are shorter than the {_n(min_tokens)}-token minimum cacheable prefix, so nothing is cached.",
                metric,
                None,
                "Requests are billed as uncached.",
                no_change="No change: caching cannot apply to prompts this short.",
            )
        got = c.option(
            f"Grow the shared prefix to {_n(min_tokens)} tokens (move stable instructions and documents to the front).",
            {"prefix": min_tokens},
            metric,
        )
        explanation = f"The {_n(s.prefix)}-token prefix is below the {_n(min_tokens)}-token minimum, so it is never cached and every request pays full input price."
        if got is None or got[0].after >= before:
            return _finding(
                c,
                "cache-prefix-below-minimum",
                "info",
                "The prefix is too short to be cached",
                explanation,
                metric,
                None,
                f"At a {_pct(h)} hit rate (break-even {_pct(h_star)}) a longer cached prefix would not pay either.",
                no_change="No change: caching would not pay at this hit rate.",
            )
        opt = got[0]
        return _finding(
            c,
            "cache-prefix-below-minimum",
            "low",
            "The prefix is too short to be cached",
            explanation,
            metric,
            opt,
            f"${opt.after:.5f} per request instead of ${before:.5f}.",
        )
    if not m["cache_applies"] or m["cache_saving_frac"] >= 0:
        return None
    surcharge = -float(m["cache_saving_frac"])
    source = f"{s.rpm:g} requests/min per prefix with a {s.ttl} TTL" if s.rpm > 0 else "the given hit rate"
    explanation = (
        f"With {source} the cache hit rate is {_pct(h)}, below the {_pct(h_star)} break-even for a {s.ttl} TTL, so caching the "
        f"{_n(s.prefix)}-token prefix adds {_pct(surcharge)} to each request's cost."
    )
    options: list[Option] = []
    got = c.option("Stop marking the prefix as cacheable.", {"prefix": 0}, metric)
    if got:
        options.append(got[0])
    if s.rpm > 0:
        other = "1h" if s.ttl == "5m" else "5m"
        got = c.option(f"Use the {other} cache TTL.", {"ttl": other}, metric)
        if got and got[0].after < before:
            options.append(got[0])
    if not options:
        return None
    chosen = min(options, key=lambda o: o.after)
    severity: Severity = "medium" if surcharge > CACHE_MEDIUM_SURCHARGE_FRAC else "low"
    return _finding(
        c,
        "cache-surcharge",
        severity,
        f"Prompt caching is a {_pct(surcharge)} surcharge at this hit rate",
        explanation,
        metric,
        chosen,
        f"${chosen.after:.5f} per request instead of ${before:.5f}.",
        alternatives=_others(chosen, options),
    )


def _tp_comm(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    if s.tp <= 1 or not m["fits"]:
        return None
    share = metric_value(m, "decode_comm_frac")
    if share <= COMM_MAX_FRAC:
        return None
    explanation = (
        f"At tp={s.tp} the all-reduces take {_time(m['decode_comm_s'])} of each {_time(m['plain_tpot_s'])} decode step "
        f"({_pct(share)}) over the {c.gpu.name}'s {c.gpu.interconnect_bytes_per_s / 1e9:,.0f} GB/s interconnect."
    )
    metric = "decode_tokens_per_s_per_gpu"
    options: list[Option] = []
    half = max(s.tp // 2, 1)
    got = c.option(f"Halve tensor parallelism to tp={half} (more, smaller replicas).", {"tp": half}, metric)
    if got and _fits(got[1].metrics):
        options.append(got[0])
    best: tuple[float, Option] | None = None
    for key, g in sorted(c.catalog.gpus.items()):
        if key == s.gpu or g.interconnect_bytes_per_s <= c.gpu.interconnect_bytes_per_s:
            continue
        got = c.option(
            f"Switch to {g.name} ({g.interconnect_bytes_per_s / 1e9:,.0f} GB/s interconnect) at tp={s.tp}.",
            c.gpu_changes(key),
            metric,
        )
        if got and _fits(got[1].metrics):
            comm = metric_value(got[1].metrics, "decode_comm_frac")
            if best is None or comm < best[0]:
                best = (comm, got[0])
    if best:
        options.append(best[1])
    chosen = options[0] if options else None
    now = float(m[metric])
    effect = "; ".join(f"{o.action.rstrip('.')}: {_rate(o.after)} per GPU (now {_rate(now)})" for o in options) or ""
    severity: Severity = "medium" if share > COMM_MEDIUM_FRAC else "low"
    return _finding(
        c,
        "tp-communication",
        severity,
        f"Tensor-parallel communication takes {_pct(share)} of each decode step",
        explanation,
        metric,
        chosen,
        effect,
        no_change="No smaller tp fits the batch and no profile has a faster interconnect.",
        alternatives=_others(chosen, options) if chosen else (),
    )


def _cheaper_gpu(c: _Ctx) -> Finding | None:
    m, s = c.m, c.s
    metric = "cost_per_million_output_tokens_usd"
    now = float(m[metric])
    if not m["fits"]:
        return None  # the weights-dont-fit finding proposes GPUs that hold the model

    def serves(mm, s2):
        return (
            mm["fits"]
            & mm["batch_fits_memory"]
            & (mm["chunked_ttft_s"] <= s2.slo_ttft_s)
            & (mm["tpot_s"] <= s2.slo_tpot_s)
        )

    best: Option | None = None
    for key in sorted(c.catalog.gpus):
        if key == s.gpu:
            continue
        tp = c.smallest_tp(key, serves)
        if tp is None:
            continue
        got = c.option(f"Switch to {c.catalog.gpus[key].name} at tp={tp}.", c.gpu_changes(key, tp), metric)
        if (
            got
            and _fits(got[1].metrics)
            and meets_slos(got[1].metrics, s)
            and (best is None or got[0].after < best.after)
        ):
            best = got[0]
    if best is None or best.after > (1.0 - CHEAPER_MIN_SAVING_FRAC) * now:
        return None
    saving = 1.0 - best.after / now
    note = (
        ""
        if _fits(m) and meets_slos(m, s)
        else " (and, unlike the current setup, holds the whole batch and meets the TTFT and TPOT targets)"
        if not _fits(m)
        else " (and, unlike the current setup, meets the TTFT and TPOT targets)"
    )
    explanation = (
        f"On {c.gpu.name} at tp={s.tp} output costs ${now:,.3f} per million tokens; "
        f"{best.action.removeprefix('Switch to ').rstrip('.')} serves the same batch for ${best.after:,.3f}{note}."
    )
    severity: Severity = "medium" if saving >= CHEAPER_MEDIUM_SAVING_FRAC else "low"
    return _finding(
        c,
        "cheaper-gpu",
        severity,
        f"Another GPU is {_pct(saving)} cheaper per token",
        explanation,
        metric,
        best,
        f"${best.after:,.3f} per million output tokens instead of ${now:,.3f}.",
    )


CHECKS: tuple[Callable[[_Ctx], Finding | None], ...] = (
    _weights_fit,
    _kv_concurrency,
    _kv_room,
    _decode_regime,
    _chunk_balance,
    _speculative,
    _prompt_cache,
    _tp_comm,
    _cheaper_gpu,
)


def rank(items: list[Finding]) -> list[Finding]:
    """Severity first (high → info), then the size of the predicted effect, largest first."""
    return sorted(items, key=lambda f: (SEVERITY_RANK[f.severity], -f.effect_magnitude, f.id))


def findings(scenario: Scenario, catalog: Catalog) -> list[Finding]:
    """Every finding for ``scenario``, ranked.  Raises ScenarioError if it cannot be evaluated."""
    c = _Ctx(scenario, evaluate(scenario, catalog), catalog)
    return rank([f for check in CHECKS if (f := check(c)) is not None])


FRAME_COLUMNS = (
    "rank",
    "id",
    "severity",
    "title",
    "explanation",
    "action",
    "predicted_effect",
    "metric",
    "before",
    "after",
)


def findings_frame(items: list[Finding]) -> pd.DataFrame:
    """One row per finding in rank order (the findings CSV; export with ``export.frame_to_csv``)."""
    rows = [{"rank": i, **{k: getattr(f, k) for k in FRAME_COLUMNS[1:]}} for i, f in enumerate(items, start=1)]
    return pd.DataFrame(rows, columns=list(FRAME_COLUMNS))


def finding_record(f: Finding) -> dict[str, Any]:
    """A finding as plain JSON-ready data (alternatives included)."""
    return {
        "id": f.id,
        "severity": f.severity,
        "title": f.title,
        "explanation": f.explanation,
        "action": f.action,
        "predicted_effect": f.predicted_effect,
        "metric": f.metric,
        "before": f.before,
        "after": f.after,
        "changed_keys": dict(f.changed_keys),
        "alternatives": [
            {"action": o.action, "changed_keys": dict(o.changed_keys), "metric": o.metric, "after": o.after}
            for o in f.alternatives
        ],
    }


def findings_text(items: list[Finding]) -> str:
    """The ranked findings as plain text, one block per finding."""
    if not items:
        return "No findings.\n"
    lines = []
    for i, f in enumerate(items, start=1):
        lines += [
            f"{i}. [{f.severity.upper()}] {f.title}",
            f"   {f.explanation}",
            f"   Action: {f.action}",
            f"   Effect: {f.predicted_effect}",
        ]
        lines += [f"   Also:   {o.action}" for o in f.alternatives]
    return "\n".join(lines) + "\n"
