"""Seeded iteration-level simulation of one serving replica with continuous batching.

Scheduler (vLLM with chunked prefill; Kwon et al. SOSP 2023, Agrawal et al. OSDI 2024):
each step
  1. runs every running sequence that has finished its prefill (a decode: q tokens,
     q = 1, or γ + 1 with speculative decoding); before the step each needs
     ⌈(ctx + q) / block⌉ KV blocks; while the free blocks do not cover that, the newest
     running request is preempted: its blocks are freed and it goes back to the head
     of the queue, to be recomputed (prefill of prompt + tokens generated so far);
  2. spends the rest of the token budget, chunk − decodes·q, on prefill chunks: first
     the running requests still prefilling, then waiting requests in arrival order,
     each admitted only while running < batch (max_num_seqs) and its prompt's
     ⌈(prompt + generated) / block⌉ blocks fit in the free blocks;
  3. lasts ``step_time.step_s(decodes, mean decode context, chunks)`` seconds.
The prefill's last step emits the first token (TTFT = its end − arrival); each decode
step emits 1 token, or a ~ min(Geometric(1 − α), γ + 1) tokens with speculative
decoding (P(a = j) = α^(j−1)(1 − α) for j ≤ γ, P(a = γ + 1) = α^γ, so E[a] =
(1 − α^(γ+1))/(1 − α) as in ``speculative.expected_tokens_per_step``).
Prefix-cache hits skip their cached tokens, rounded down to whole blocks and leaving
at least one prompt token to compute; cached blocks are still counted per request
(conservative: no sharing between requests).  KV capacity: ``memory_plan``'s KV budget
per GPU ÷ bytes of one block.  Requests longer than the model's context window, or
needing more blocks than the whole cache, are rejected (never run).

Runs of identical decode steps (no prefill, no admission possible) are advanced in one
vectorised jump up to the next completion, arrival or block shortage.

Inter-token latency (ITL): the time between a request's successive token emissions,
divided by the tokens emitted at once (speculative decoding), weighted per token;
a preempted request's gap until its recomputed prefill emits counts as one ITL.
Per request: TPOT = (e2e − TTFT) / (output − 1); it meets the SLOs when
TTFT ≤ slo_ttft_s and TPOT ≤ slo_tpot_s.  The replica meets the SLOs when the p99 of
TTFT and of ITL are within the targets and no request was rejected for KV capacity.
Percentiles are the inverse empirical CDF (numpy ``inverted_cdf``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from planner.engine.evaluate import Resolved, inputs_for, resolve
from planner.engine.inputs import EngineInputs
from planner.engine.memory import memory_plan
from planner.engine.step_time import RooflineStepTime, StepTime
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.serving.workload import Workload, scenario_workload

#: Longest run of decode steps advanced in one jump (bounds the arrays per jump).
MAX_JUMP_STEPS = 4096
#: With speculative decoding, acceptance draws per jump (per running sequence).
MAX_SPEC_JUMP_STEPS = 64
MAX_TIMELINE_POINTS = 2000
PERCENTILES = (50, 90, 99)

SERVED, REJECTED_CONTEXT, REJECTED_KV, NOT_RUN = 0, 1, 2, 3
STATUS_NAMES = {
    SERVED: "served",
    REJECTED_CONTEXT: "rejected: longer than the context window",
    REJECTED_KV: "rejected: larger than the KV cache",
    NOT_RUN: "not run (stopped early)",
}


@dataclass(frozen=True)
class SimConfig:
    """Scheduler limits and targets of one replica (SI units, token counts)."""

    batch: int  # max running sequences (vLLM max_num_seqs)
    chunk_tokens: int  # token budget per step
    block_tokens: int
    kv_capacity_blocks: int
    context_window_tokens: int
    gamma: int  # draft tokens per step; 0 = no speculative decoding
    alpha: float
    seed: int
    slo_ttft_s: float
    slo_tpot_s: float

    @classmethod
    def from_inputs(cls, x: EngineInputs, s: Scenario) -> SimConfig:
        plan = memory_plan(x)
        blocks = int(np.asarray(plan["kv_capacity_tokens"]).reshape(()) // s.block)
        return cls(
            batch=s.batch,
            chunk_tokens=s.chunk,
            block_tokens=s.block,
            kv_capacity_blocks=blocks,
            context_window_tokens=int(np.asarray(x.context_window_tokens).reshape(())),
            gamma=s.gamma if s.spec else 0,
            alpha=s.alpha,
            seed=s.seed,
            slo_ttft_s=s.slo_ttft_s,
            slo_tpot_s=s.slo_tpot_s,
        )


@dataclass(frozen=True)
class SimResult:
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

    @property
    def tpot_s(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.output_tokens > 1, (self.e2e_s - self.ttft_s) / (self.output_tokens - 1), np.nan)

    @property
    def meets_slo(self) -> np.ndarray:
        ok_tpot = (self.output_tokens <= 1) | (self.tpot_s <= self.config.slo_tpot_s)
        return (self.status == SERVED) & (self.ttft_s <= self.config.slo_ttft_s) & ok_tpot


def sim_inputs(s: Scenario, catalog: Catalog) -> tuple[Resolved, EngineInputs]:
    r = resolve(s, catalog)
    return r, inputs_for(r)


def percentiles(values: np.ndarray, pcts=PERCENTILES, weights: np.ndarray | None = None) -> list[float]:
    """Inverse-CDF percentiles: the smallest values with at least pct % of the weight at or below them."""
    if values.size == 0:
        return [float("nan")] * len(pcts)
    return np.quantile(values, np.asarray(pcts) / 100.0, method="inverted_cdf", weights=weights).tolist()


def _spec_draws(rng: np.random.Generator, alpha: float, q: int, shape: tuple[int, int]) -> np.ndarray:
    """Tokens emitted per verification: min(Geometric(1 − α), γ + 1)."""
    if alpha >= 1.0:
        return np.full(shape, q, dtype=np.int64)
    if alpha <= 0.0:
        return np.ones(shape, dtype=np.int64)
    return np.minimum(rng.geometric(1.0 - alpha, size=shape), q)


class _Draws:
    """``_spec_draws`` served from a pre-drawn buffer (one generator call per 2¹⁶ draws)."""

    SIZE = 1 << 16

    def __init__(self, rng: np.random.Generator, alpha: float, q: int):
        self.rng, self.alpha, self.q = rng, alpha, q
        self.buf = np.zeros(0, dtype=np.int64)
        self.pos = 0

    def take(self, rows: int, cols: int) -> np.ndarray:
        m = rows * cols
        if self.pos + m > self.buf.size:
            self.buf = np.concatenate(
                [self.buf[self.pos :], _spec_draws(self.rng, self.alpha, self.q, (max(self.SIZE, m), 1)).ravel()]
            )
            self.pos = 0
        out = self.buf[self.pos : self.pos + m].reshape(rows, cols)
        self.pos += m
        return out


def _per_request_p50_max(parts: list[list[np.ndarray]], n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each request's inverse-CDF median and maximum ITL, from one sort of all of them."""
    p50, pmax = np.full(n, np.nan), np.full(n, np.nan)
    counts = np.array([sum(a.shape[0] for a in p) for p in parts], dtype=np.int64)
    if counts.sum() == 0:
        return p50, pmax
    values = np.concatenate([a for p in parts for a in p])
    ordered = values[np.lexsort((values, np.repeat(np.arange(n), counts)))]
    starts = np.cumsum(counts) - counts
    has = counts > 0
    p50[has] = ordered[starts[has] + (counts[has] + 1) // 2 - 1]
    pmax[has] = ordered[starts[has] + counts[has] - 1]
    return p50, pmax


def _downsample(t: np.ndarray, *series: np.ndarray) -> tuple[np.ndarray, ...]:
    """≤ MAX_TIMELINE_POINTS points: the first time and the largest value of each run of records."""
    if t.size <= MAX_TIMELINE_POINTS:
        return (t, *series)
    edges = np.unique(np.linspace(0, t.size, MAX_TIMELINE_POINTS + 1).astype(int)[:-1])
    return (t[edges], *(np.maximum.reduceat(s, edges) for s in series))


def simulate(
    w: Workload,
    cfg: SimConfig,
    step_time: StepTime,
    *,
    stop_on_slo_miss: bool = False,
    detail: bool = True,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate ``w`` on one replica (module doc).  Pure and deterministic for a given seed.

    ``stop_on_slo_miss``: stop as soon as the p99 TTFT or ITL target is certainly missed
    (more than 1 % of requests or tokens over it) or a request does not fit the KV cache.
    ``detail=False`` skips the per-request ITL percentiles (sizing needs only the p99s).
    """
    n = len(w)
    B = cfg.block_tokens
    q = cfg.gamma + 1
    spec = cfg.gamma > 0
    batch, chunk, cap = cfg.batch, cfg.chunk_tokens, cfg.kv_capacity_blocks
    slo_ttft, slo_itl = cfg.slo_ttft_s, cfg.slo_tpot_s
    draws = _Draws(np.random.default_rng([cfg.seed, 1]), cfg.alpha, q)

    arrival = w.arrival_s.tolist()
    P = w.prompt_tokens.tolist()
    O = w.output_tokens.tolist()
    cached_arr = np.maximum(np.minimum(w.prefix_hit_tokens, w.prompt_tokens - 1), 0) // B * B
    C = cached_arr.tolist()
    status_arr = np.full(n, SERVED, dtype=np.int64)
    status_arr[w.prompt_tokens + w.output_tokens > cfg.context_window_tokens] = REJECTED_CONTEXT
    kv_need = -(-(w.prompt_tokens + w.output_tokens + q) // B)
    status_arr[(status_arr == SERVED) & (kv_need > cap)] = REJECTED_KV
    status = status_arr.tolist()
    servable = status_arr == SERVED
    ttft_limit = 0.01 * int(servable.sum())
    itl_limit = 0.01 * float(np.maximum(w.output_tokens[servable] - 1, 0).sum())

    nan = float("nan")
    gen = [0] * n
    ctx = [0] * n
    tgt = [0] * n
    held = [0] * n
    ttft = [nan] * n
    finish = [nan] * n
    last_emit = [0.0] * n
    preempts = [0] * n
    parts: list[list[np.ndarray]] = [[] for _ in range(n)] if detail else []
    itl_pieces: list[tuple[np.ndarray, object]] = []

    free = cap
    now = 0.0
    nxt = 0
    done = 0
    steps = 0
    ttft_bad = 0
    itl_bad = 0.0
    stopped = stop_on_slo_miss and bool((status_arr == REJECTED_KV).any())
    waiting: deque[int] = deque()
    running: list[int] = []
    tl_t: list[float] = []
    tl_q: list[int] = []
    tl_kv: list[int] = []
    iterations = 0

    def emit_decodes(decs: list[int], durs: np.ndarray, acc: np.ndarray | None) -> None:
        """Book ``len(durs)`` decode steps of ``decs`` (acc: tokens per sequence per step)."""
        nonlocal itl_bad
        k = durs.shape[0]
        if acc is None:
            itl_pieces.append((durs, len(decs)))
            itl_bad += len(decs) * int(np.count_nonzero(durs > slo_itl))
            for i in decs:
                ctx[i] += k
                gen[i] += k
            if detail:
                for i in decs:
                    parts[i].append(durs)
        else:
            vals = durs[None, :] / acc
            itl_pieces.append((vals.ravel(), acc.ravel()))
            itl_bad += float(acc[vals > slo_itl].sum())
            gained = acc.sum(axis=1).tolist()
            for row, i in enumerate(decs):
                ctx[i] += gained[row]
                gen[i] += gained[row]
                if detail:
                    parts[i].append(vals[row])

    while done < n and not stopped:
        while nxt < n and arrival[nxt] <= now:
            if status[nxt] == SERVED:
                waiting.append(nxt)
            else:
                done += 1
            nxt += 1
        if not running and not waiting:
            if nxt >= n:
                break
            now = arrival[nxt]
            continue

        # 1. decodes, with blocks for this step (preempting the newest while short)
        decs = [i for i in running if ctx[i] >= tgt[i]]
        grow = [i for i in decs if ctx[i] + q > held[i] * B]
        need = sum((ctx[i] + q + B - 1) // B - held[i] for i in grow)
        while need > free:
            v = running.pop()
            if ctx[v] >= tgt[v]:
                decs.remove(v)
                if v in grow:
                    grow.remove(v)
                    need -= (ctx[v] + q + B - 1) // B - held[v]
            free += held[v]
            held[v] = 0
            ctx[v] = 0
            preempts[v] += 1
            waiting.appendleft(v)
        for i in grow:
            held[i] = (ctx[i] + q + B - 1) // B
        free -= need

        # 2. prefill chunks within the remaining budget
        budget = chunk - len(decs) * q
        pre: list[int] = []
        new: list[int] = []
        past: list[int] = []
        if budget > 0:
            for i in running:
                if ctx[i] < tgt[i]:
                    m = min(tgt[i] - ctx[i], budget)
                    pre.append(i)
                    new.append(m)
                    past.append(ctx[i])
                    budget -= m
                    if budget <= 0:
                        break
            while budget > 0 and waiting and len(running) < batch:
                i = waiting[0]
                t = P[i] + gen[i]
                hb = (t + B - 1) // B
                if hb > free:
                    break
                waiting.popleft()
                running.append(i)
                held[i] = hb
                free -= hb
                tgt[i] = t
                ctx[i] = C[i]
                m = min(t - C[i], budget)
                pre.append(i)
                new.append(m)
                past.append(C[i])
                budget -= m

        nd = len(decs)
        finished: list[int] = []
        if pre:
            # 3a. one mixed step
            mean_ctx = sum(ctx[i] for i in decs) / nd if nd else 0.0
            dur = step_time.step_s(nd, mean_ctx, new, past)
            now += dur
            steps += 1
            if nd:
                acc = None
                if spec:
                    rem = np.array([O[i] - gen[i] for i in decs])
                    acc = np.minimum(draws.take(nd, 1), rem[:, None])
                emit_decodes(decs, np.array([dur]), acc)
                finished = [i for i in decs if gen[i] >= O[i]]
            for i, m in zip(pre, new):
                ctx[i] += m
                if ctx[i] >= tgt[i]:
                    gen[i] += 1
                    if ttft[i] != ttft[i]:  # first token
                        ttft[i] = now - arrival[i]
                        ttft_bad += ttft[i] > slo_ttft
                    else:  # recomputed after a preemption
                        gap = now - last_emit[i]
                        itl_pieces.append((np.array([gap]), 1))
                        itl_bad += gap > slo_itl
                        if detail:
                            parts[i].append(np.array([gap]))
                    last_emit[i] = now
                    if gen[i] >= O[i]:
                        finished.append(i)
        else:
            # 3b. a run of identical decode steps, up to the next event
            cl = [ctx[i] for i in decs]
            hl = [held[i] for i in decs]
            if spec:
                rem = np.array([O[i] - gen[i] for i in decs])
                k = int(min(rem.max(), MAX_SPEC_JUMP_STEPS))
                acc = draws.take(nd, k)
                cum = acc.cumsum(axis=1)
                reach = cum >= rem[:, None]
                first = np.where(reach.any(axis=1), reach.argmax(axis=1), k)
                k = int(min(first.min() + 1, k))
                # tokens gained before step j (j = 0 … k − 1)
                grown = np.concatenate([np.zeros((nd, 1), dtype=np.int64), cum[:, : k - 1]], axis=1)
                base = np.array(cl) + q + B - 1
                helds = np.array(hl)

                def blocks_needed(kk: int) -> int:
                    return int(np.maximum((base + grown[:, kk - 1]) // B - helds, 0).sum())

            else:
                acc = grown = None
                k = min(min(O[i] - gen[i] for i in decs), MAX_JUMP_STEPS)

                def blocks_needed(kk: int) -> int:
                    total = 0
                    for c, h in zip(cl, hl):
                        extra = (c + kk - 1 + q + B - 1) // B - h
                        if extra > 0:
                            total += extra
                    return total

            if blocks_needed(k) > free:
                lo, hi = 1, k  # blocks_needed(1) == 0: allocated above
                while lo < hi:
                    mid = (lo + hi + 1) // 2
                    if blocks_needed(mid) <= free:
                        lo = mid
                    else:
                        hi = mid - 1
                k = lo
            mean0 = sum(cl) / nd
            mean_ctx = mean0 + (np.arange(k, dtype=float) if grown is None else grown[:, :k].sum(axis=0) / nd)
            durs = np.asarray(step_time.decode_steps_s(nd, mean_ctx), dtype=float)
            if nxt < n and not waiting and len(running) < batch and chunk - nd * q > 0:
                # the next arrival can be admitted: stop after the step during which it arrives
                ends = np.cumsum(durs)
                k = min(int(np.searchsorted(ends, arrival[nxt] - now, side="left")) + 1, k)
                durs = durs[:k]
            if grown is None:
                for i in decs:
                    h = (ctx[i] + k - 1 + q + B - 1) // B
                    if h > held[i]:
                        free -= h - held[i]
                        held[i] = h
            else:
                acc = acc[:, :k].copy()
                before = grown[:, k - 1]
                acc[:, k - 1] = np.minimum(acc[:, k - 1], rem - before)
                final = ((base + before) // B).tolist()
                for row, i in enumerate(decs):
                    if final[row] > held[i]:
                        free -= final[row] - held[i]
                        held[i] = final[row]
            now += float(durs.sum())
            steps += k
            emit_decodes(decs, durs, acc)
            finished = [i for i in decs if gen[i] >= O[i]]

        if finished:
            gone = set(finished)
            running = [i for i in running if i not in gone]
            for i in finished:
                finish[i] = now
                free += held[i]
                held[i] = 0
                done += 1
        tl_t.append(now)
        tl_q.append(len(waiting))
        tl_kv.append(cap - free)
        iterations += 1
        if stop_on_slo_miss and (ttft_bad > ttft_limit or itl_bad > itl_limit):
            stopped = True
        if progress is not None and iterations % 2000 == 0:
            progress(done / n)

    status_arr[np.isnan(np.array(finish)) & (status_arr == SERVED)] = NOT_RUN
    ttft_arr = np.array(ttft)
    finish_arr = np.array(finish)
    p50, pmax = _per_request_p50_max(parts, n) if detail else (np.full(n, np.nan), np.full(n, np.nan))
    if itl_pieces:
        itl_s = np.concatenate([v for v, _ in itl_pieces])
        scalar = all(not isinstance(wt, np.ndarray) for _, wt in itl_pieces)
        if scalar:
            itl_w = np.repeat(np.array([wt for _, wt in itl_pieces], dtype=float), [v.shape[0] for v, _ in itl_pieces])
        else:
            itl_w = np.concatenate(
                [wt if isinstance(wt, np.ndarray) else np.full(v.shape[0], float(wt)) for v, wt in itl_pieces]
            ).astype(float)
    else:
        itl_s = itl_w = np.zeros(0)
    t_arr = np.array(tl_t)
    kv_arr = np.array(tl_kv, dtype=float) / max(cap, 1)
    q_arr = np.array(tl_q, dtype=float)
    if t_arr.size > 1:
        kv_mean = float(np.sum(kv_arr[:-1] * np.diff(t_arr)) / max(t_arr[-1] - t_arr[0], 1e-300))
    else:
        kv_mean = float(kv_arr.mean()) if kv_arr.size else 0.0
    t_ds, q_ds, kv_ds = _downsample(t_arr, q_arr, kv_arr)
    result = SimResult(
        config=cfg,
        arrival_s=w.arrival_s.copy(),
        prompt_tokens=w.prompt_tokens.copy(),
        output_tokens=w.output_tokens.copy(),
        cached_tokens=cached_arr,
        status=status_arr,
        ttft_s=ttft_arr,
        e2e_s=finish_arr - w.arrival_s,
        itl_p50_s=p50,
        itl_max_s=pmax,
        preemptions=np.array(preempts, dtype=np.int64),
        itl_s=itl_s,
        itl_weight=itl_w,
        timeline_s=t_ds,
        queue_len=q_ds,
        kv_used_frac=kv_ds,
        kv_used_time_mean_frac=kv_mean,
        steps=steps,
        stopped_early=stopped,
    )
    if progress is not None:
        progress(1.0)
    return _with_summary(result)


def _with_summary(r: SimResult) -> SimResult:
    served = r.status == SERVED
    out: dict[str, float | bool] = {}
    for name, values, weights in (
        ("ttft", r.ttft_s[served], None),
        ("itl", r.itl_s, r.itl_weight),
        ("e2e", r.e2e_s[served], None),
    ):
        for pct, v in zip(PERCENTILES, percentiles(values, PERCENTILES, weights)):
            out[f"{name}_p{pct}_s"] = v
    n_served = int(served.sum())
    span = float(np.nanmax(r.arrival_s + r.e2e_s) - r.arrival_s[0]) if n_served else float("nan")
    tokens = float(r.output_tokens[served].sum())
    good = r.meets_slo
    out.update(
        requests=float(r.status.size),
        served_requests=float(n_served),
        rejected_context=float((r.status == REJECTED_CONTEXT).sum()),
        rejected_kv=float((r.status == REJECTED_KV).sum()),
        duration_s=span,
        output_tokens_per_s=tokens / span if span > 0 else float("nan"),
        requests_per_s=n_served / span if span > 0 else float("nan"),
        goodput_frac=float(good.mean()) if good.size else float("nan"),
        goodput_requests_per_s=float(good.sum()) / span if span > 0 else float("nan"),
        mean_tpot_s=float(np.nanmean(r.tpot_s[served])) if np.isfinite(r.tpot_s[served]).any() else float("nan"),
        preemptions=float(r.preemptions.sum()),
        kv_capacity_blocks=float(r.config.kv_capacity_blocks),
        kv_used_mean_frac=r.kv_used_time_mean_frac,
        kv_used_max_frac=float(r.kv_used_frac.max()) if r.kv_used_frac.size else 0.0,
        queue_max=float(r.queue_len.max()) if r.queue_len.size else 0.0,
        steps=float(r.steps),
    )
    out["slo_met"] = bool(
        not r.stopped_early
        and out["rejected_kv"] == 0
        and n_served > 0
        and out["ttft_p99_s"] <= r.config.slo_ttft_s
        and (r.itl_s.size == 0 or out["itl_p99_s"] <= r.config.slo_tpot_s)
    )
    return replace(r, summary=out)


def simulate_scenario(
    s: Scenario,
    catalog: Catalog,
    workload: Workload | None = None,
    step_time: StepTime | None = None,
    progress: Callable[[float], None] | None = None,
) -> SimResult:
    """Simulate the scenario's workload (or ``workload``, e.g. a trace) on one replica."""
    _, x = sim_inputs(s, catalog)
    return simulate(
        scenario_workload(s) if workload is None else workload,
        SimConfig.from_inputs(x, s),
        RooflineStepTime.from_inputs(x) if step_time is None else step_time,
        progress=progress,
    )


def requests_frame(r: SimResult) -> pd.DataFrame:
    """One row per request (the per-request CSV), SI units."""
    return pd.DataFrame(
        {
            "request": np.arange(r.status.size),
            "arrival_s": r.arrival_s,
            "prompt_tokens": r.prompt_tokens,
            "cached_tokens": r.cached_tokens,
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


def summary_text(r: SimResult) -> str:
    """The summary for a terminal: latencies in ms, one line each."""
    sm = r.summary
    served = f"{int(sm['served_requests'])} served of {int(sm['requests'])}"
    if sm["rejected_context"] or sm["rejected_kv"]:
        served += (
            f" ({int(sm['rejected_context'])} over the context window, {int(sm['rejected_kv'])} over the KV cache)"
        )
    rows = [("requests", served)]
    for name, label in (("ttft", "TTFT"), ("itl", "inter-token latency"), ("e2e", "end-to-end latency")):
        rows.append((f"{label} (ms)", "  ".join(f"p{p} {sm[f'{name}_p{p}_s'] * 1e3:,.1f}" for p in PERCENTILES)))
    rows += [
        ("throughput", f"{sm['output_tokens_per_s']:,.0f} output tokens/s, {sm['requests_per_s']:.3g} requests/s"),
        (
            "goodput",
            f"{sm['goodput_frac']:.1%} of requests meet TTFT ≤ {r.config.slo_ttft_s:g} s and TPOT ≤ {r.config.slo_tpot_s * 1e3:g} ms",
        ),
        ("p99 SLOs met", "yes" if sm["slo_met"] else "no"),
        (
            "KV cache used",
            f"mean {sm['kv_used_mean_frac']:.1%}, max {sm['kv_used_max_frac']:.1%} of {int(sm['kv_capacity_blocks']):,} blocks",
        ),
        ("queue", f"max {int(sm['queue_max'])} waiting; {int(sm['preemptions'])} preemptions"),
    ]
    return "".join(f"{k:<26}{v}\n" for k, v in rows)
