"""Search the serving design space for the cheapest fleet meeting the SLO, in two stages.

1. Screen (``grid``): every GPU profile × layout × batch × chunk × KV dtype × weight dtype ×
   speculative decoding × colocated/disaggregated the scenario's ``search`` key opens, scored by the
   vectorised screening model (``analytic``) on the user's traffic: replicas, GPUs, cost, binding
   constraint, modelled latencies.  Every point is kept (the frontier and the CSV).
2. Confirm: on each GPU profile the ``CONFIRM_PER_GPU`` cheapest points of distinct layout, mode and
   chunk within ``CONFIRM_NEAR`` × the cheapest (only the cheapest on a GPU whose best costs more than
   ``CONFIRM_FAR`` × the best of all: it cannot win) are simulated on the same traffic — the scenario's
   Poisson arrivals or its trace, each replica its round-robin share — for the fewest replicas that
   meet the SLO on every one of ``CONFIRM_SEEDS`` seeds (``pools.size_pool``: the analytic count
   first, then steps and a bisection).  A disaggregated point sizes its prefill and decode pools
   apart (``pools`` module doc).  Candidates run in a process pool on every core.
The answer is the cheapest confirmed candidate; its binding constraint is what the simulation at one
replica fewer misses (the screening model's name for it beside).  Runs simulate
``min(sim_requests, SEARCH_MAX_REQUESTS)`` requests per replica and seed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from multiprocessing import get_all_start_methods, get_context
from typing import Any

import numpy as np
import pandas as pd

from planner.engine import parallel
from planner.engine.evaluate import resolve
from planner.errors import ScenarioError
from planner.format import fmt_count, fmt_num, fmt_usd
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec
from planner.model.weight_plan import format_labels
from planner.search.frontiers import FRONTIERS, frontier_points, with_frontiers
from planner.search.grid import COLOCATED, DISAGGREGATED, PREFILL_POOL_BATCH, Base, score
from planner.search.pools import PoolSizing, size_pool
from planner.search.power_limit import OVER_POWER
from planner.search.step_grid import TrafficStats
from planner.sim.simulate import sim_inputs
from planner.sim.slo import Slo
from planner.sim.workload import Workload, scenario_workload
from planner.units import MS_PER_S, S_PER_HOUR, TOKENS_PER_MTOK

SEARCH_MAX_REQUESTS = 2000
CONFIRM_SEEDS = 2
CONFIRM_PER_GPU = 2
#: A GPU's further candidates cost at most this × its cheapest (the others would not win).
CONFIRM_NEAR = 1.25
#: A GPU whose cheapest point costs more than this × the cheapest of all has only that point confirmed.
CONFIRM_FAR = 1.5
#: Requests of the workload sample the screening model reads (Poisson traffic).
STATS_REQUESTS = 4000

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class Candidate:
    """A point to confirm: the scenario changes of its replica (the decode pool's when disaggregated)."""

    point: int
    gpu: str
    mode: str
    changes: dict[str, Any]
    guess: int
    prefill_changes: dict[str, Any] = field(default_factory=dict)
    prefill_guess: int = 0


@dataclass(frozen=True)
class Confirmation:
    point: int
    pools: tuple[PoolSizing, ...]  # (colocated,) or (prefill, decode)
    kv_transfer_s: float = 0.0  # disaggregated: the prompt's KV from the prefill to the decode pool


@dataclass(frozen=True)
class SearchResult:
    """Both stages' results (module doc)."""

    points: pd.DataFrame  # every screened point, cheapest first (the frontier; the CSV)
    table: pd.DataFrame  # the confirmed candidates, cheapest first
    best: int | None  # row of ``table`` of the answer
    reason: str
    slo: Slo
    rate_per_s: float
    mean_output_tokens: float
    scored: int  # grid elements the screening model scored
    valid: int  # of them, configurations the engine accepts
    screen_s: float
    confirm_s: float
    simulations: int
    requests_per_simulation: int
    seeds: tuple[int, ...]
    bases: list[Base] = field(default_factory=list)

    def changes(self, point: int) -> dict[str, Any]:
        """The scenario changes that make point ``point`` the scenario: its replica's configuration (a
        disaggregated point's decode pool) and its replica count behind the router — the simulated
        count where the point was confirmed, else the screening model's."""
        out = point_changes(self.bases, self.points, [point])[point]
        row = self.table[(self.table["point"] == point) & (self.table["status"] == MEETS)]
        if len(row):
            out["replicas"] = int(row["replicas"].iloc[0])
        return out


def traffic_stats(s: Scenario, trace: Workload | None) -> TrafficStats:
    """The screening model's view of the traffic (``analytic.TrafficStats``)."""
    slo = Slo.of(s)
    if trace is None:
        return TrafficStats.of(scenario_workload(s, n=max(s.sim_requests, STATS_REQUESTS)), slo, s.rate, s.prefix_cache)
    return TrafficStats.of(trace, slo, trace.rate_per_s, s.prefix_cache)


def point_changes(base_list: Sequence[Base], points: pd.DataFrame, rows: Sequence[int]) -> dict[int, dict[str, Any]]:
    """Scenario changes of the points at index labels ``rows``: their base's, batch, chunk and
    replicas (the decode pool's for a disaggregated point)."""
    out = {}
    for i in rows:
        row: Any = points.loc[i]
        changes = base_list[int(row["base"])].changes | {"batch": int(row["batch"]), "chunk": int(row["chunk"])}
        replicas = row["decode_replicas"] if row["mode"] == DISAGGREGATED else row["replicas"]
        if np.isfinite(replicas):
            changes["replicas"] = int(replicas)
        out[int(row["point"])] = changes
    return out


def candidates(
    s: Scenario, base_list: Sequence[Base], points: pd.DataFrame, per_gpu: int = CONFIRM_PER_GPU
) -> list[Candidate]:
    """The points to confirm on each GPU (module doc), cheapest first; among equally cheap ones the one
    with the most capacity per replica (the most headroom), then the largest batch cap."""
    ok = points[points["meets_slo"] & np.isfinite(points["gpus"])].copy()
    ok["slack"] = -ok["capacity_per_replica_per_s"].fillna(0.0)
    ok["cap"] = -ok["batch"]
    ok = ok.sort_values(["cost_per_hour_usd", "gpus", "slack", "cap"], kind="stable")
    picked = []
    cheapest = ok["cost_per_hour_usd"].min() if len(ok) else 0.0
    for _, sub in ok.groupby("gpu", sort=False, observed=True):
        first = sub["cost_per_hour_usd"].iloc[0]
        near = sub[sub["cost_per_hour_usd"] <= CONFIRM_NEAR * first]
        count = per_gpu if first <= CONFIRM_FAR * cheapest else 1
        picked += list(near.drop_duplicates(["layout", "mode", "chunk"]).head(count).index)
    changes = point_changes(base_list, points, picked)
    out = []
    for i in picked:
        row = points.loc[i]
        c = changes[int(row["point"])]
        c.pop("replicas", None)
        if row["mode"] == DISAGGREGATED:
            lay = base_list[int(row["prefill_base"])].layout
            pre = c | {
                **lay.changes(),
                "chunk": int(row["prefill_chunk"]),
                "batch": min(int(row["prefill_chunk"]), PREFILL_POOL_BATCH) * lay.dp,
                "spec": False,
            }
            out.append(
                Candidate(
                    int(row["point"]),
                    row["gpu"],
                    DISAGGREGATED,
                    c,
                    int(row["decode_replicas"]),
                    pre,
                    int(row["prefill_replicas"]),
                )
            )
        else:
            out.append(Candidate(int(row["point"]), row["gpu"], COLOCATED, c, int(row["replicas"])))
    return out


_WORKER: dict[str, Any] = {}


def _init_worker(catalog: Catalog) -> None:
    _WORKER["catalog"] = catalog


def confirm(
    c: Candidate, s: Scenario, catalog: Catalog, trace: Workload | None, n: int, seeds: Sequence[int]
) -> Confirmation:
    """Simulate one candidate (module doc)."""
    slo = Slo.of(s)
    if c.mode == COLOCATED:
        return Confirmation(
            c.point, (size_pool(s.with_changes(**c.changes), catalog, trace, "colocated", c.guess, n, seeds, slo),)
        )
    prefill_s, decode_s = s.with_changes(**c.prefill_changes), s.with_changes(**c.changes)
    kv_s = transfer_s(prefill_s, decode_s, catalog, trace, slo)
    # the prefill pool's TTFT plus the transfer must meet the target: the pool is held to what is left of it
    pre_slo = replace(slo, ttft_s=max(slo.ttft_s - kv_s, 0.0))
    pre = size_pool(prefill_s, catalog, trace, "prefill", c.prefill_guess, n, seeds, pre_slo)
    dec = size_pool(decode_s, catalog, trace, "decode", c.guess, n, seeds, slo)
    return Confirmation(c.point, (pre, dec), kv_s)


def transfer_s(prefill: Scenario, decode: Scenario, catalog: Catalog, trace: Workload | None, slo: Slo) -> float:
    """The KV transfer of the prompt at the SLO's percentile (the scenario's prompt, or the trace's
    percentile prompt) from a prefill instance to a decode instance (``parallel.kv_transfer_s``)."""
    prompt = float(prefill.prompt) if trace is None else float(np.percentile(trace.prompt_tokens, slo.pct))
    _, xp = sim_inputs(prefill, catalog)
    _, xd = sim_inputs(decode, catalog)
    return float(np.asarray(parallel.kv_transfer_s(xp, xd, prompt)))


def _confirm_in_worker(args: tuple) -> Confirmation:
    c, s, trace, n, seeds = args
    return confirm(c, s, _WORKER["catalog"], trace, n, seeds)


def confirm_all(
    cands: Sequence[Candidate],
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None,
    n: int,
    seeds: Sequence[int],
    workers: int | None = None,
    progress: Progress | None = None,
) -> dict[int, Confirmation]:
    """Every candidate confirmed, in a process pool of ``workers`` (default: every core; 1: here)."""
    workers = min(workers or os.cpu_count() or 1, max(len(cands), 1))
    out: dict[int, Confirmation] = {}

    def report(done: int) -> None:
        if progress is not None:
            progress(
                done / max(len(cands), 1),
                f"Simulating candidates: {done} of {len(cands)} confirmed "
                f"({len(seeds)} seeds × {fmt_count(n)} requests per replica count tried)",
            )

    report(0)
    if workers <= 1:
        for k, c in enumerate(cands):
            out[c.point] = confirm(c, s, catalog, trace, n, seeds)
            report(k + 1)
        return out
    ctx = get_context("fork") if "fork" in get_all_start_methods() else get_context()
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker, initargs=(catalog,)) as pool:
        futures = [pool.submit(_confirm_in_worker, (c, s, trace, n, seeds)) for c in cands]
        for k, f in enumerate(as_completed(futures)):
            res = f.result()
            out[res.point] = res
            report(k + 1)
    return out


# ------------------------------------------------------------------ the confirmed table


def describe(row: pd.Series | dict, layout: bool = True) -> str:
    """A configuration in words: 'tp8·pp2, batch 256, chunk 2,048, KV fp8, fp8 weights, speculative'
    (``layout`` False: without the leading layout, for a table that has its own column)."""
    parts = [str(row["layout"])] if layout else []
    parts += [f"batch {fmt_count(row['batch'])}", f"chunk {fmt_count(row['chunk'])}"]
    if row["kvdtype"] == "fp8":
        parts.append("KV fp8")
    if row["wdtype"] == "fp8":
        parts.append("fp8 weights")
    if row["spec"]:
        parts.append("speculative decoding")
    text = ", ".join(parts)
    if row["mode"] == DISAGGREGATED:
        return f"decode pool {text}; prefill pool {row['prefill_layout']}, chunk {fmt_count(row['prefill_chunk'])}"
    return text


def _binding(p: PoolSizing) -> str:
    if p.replicas == 1:
        return "none (one replica suffices)"
    if p.below is None:
        return ""
    return p.below.worst.binding_text()


def _confirmed_row(
    row: pd.Series, conf: Confirmation, rate: float, mean_out: float, limit_kw: float = 0.0
) -> dict[str, Any]:
    """One table row: the point's configuration and what the simulation found; the fleet's IT power at the
    screened board power per GPU (``grid.colocated_power_w``), held to ``power_limit_kw`` when one is set."""
    out: dict[str, Any] = {k: row[k] for k in CONFIG_COLUMNS if k in row}
    out |= dict(
        analytic_gpus=row["gpus"], binding_analytic=row["binding"], simulations=sum(p.simulations for p in conf.pools)
    )
    failed = [p for p in conf.pools if p.replicas is None]
    if failed:
        return out | dict(status=failed[0].problem or "misses the SLO in simulation", binding="")
    if row["mode"] == COLOCATED:
        (p,) = conf.pools
        assert p.at is not None and p.replicas is not None
        gpus = p.replicas * int(row["gpus_per_replica"])
        at = p.at.worst
        out |= dict(replicas=p.replicas, binding=_binding(p))
        ttft, itl, goodput = at.ttft_q_s, at.itl_q_s, at.goodput_frac
    else:
        pre, dec = conf.pools
        assert pre.at is not None and dec.at is not None and pre.replicas and dec.replicas
        gpus = pre.replicas * int(row["prefill_gpus_per_replica"]) + dec.replicas * int(row["gpus_per_replica"])
        ttft, itl = pre.at.worst.ttft_q_s + conf.kv_transfer_s, dec.at.worst.itl_q_s
        goodput = min(pre.at.worst.goodput_frac, dec.at.worst.goodput_frac)
        out |= dict(
            replicas=dec.replicas,
            prefill_replicas=pre.replicas,
            decode_replicas=dec.replicas,
            kv_transfer_s=conf.kv_transfer_s,
            binding=f"decode pool: {_binding(dec)}; prefill pool: {_binding(pre)}",
        )
    cost = gpus * row["price_per_gpu_hour_usd"]
    per_hour = rate * mean_out * S_PER_HOUR
    power_kw = float(gpus * row["fleet_power_kw"] / row["gpus"])  # the screened IT power per GPU × confirmed GPUs
    over = limit_kw > 0 and not power_kw <= limit_kw
    return out | dict(
        status=f"{OVER_POWER} ({power_kw:,.1f} kW > {limit_kw:,.1f} kW)" if over else MEETS,
        power_per_gpu_w=row["power_per_gpu_w"],
        fleet_power_kw=power_kw,
        gpus=gpus,
        cost_per_hour_usd=cost,
        cost_per_million_output_tokens_usd=cost / per_hour * TOKENS_PER_MTOK if per_hour > 0 else float("nan"),
        ttft_q_s=ttft,
        itl_q_s=itl,
        goodput_frac=goodput,
        output_tokens_per_s_per_gpu=rate * mean_out / gpus,
    )


MEETS = "meets SLOs"
CONFIG_COLUMNS = (
    "point",
    "gpu",
    "name",
    "mode",
    "layout",
    "tp",
    "pp",
    "ep",
    "dp",
    "gpus_per_replica",
    "nodes",
    "batch",
    "chunk",
    "kvdtype",
    "wdtype",
    "spec",
    "prefill_layout",
    "prefill_tp",
    "prefill_gpus_per_replica",
    "prefill_chunk",
    "price_per_gpu_hour_usd",
    "decode_comm_frac",
)
TABLE_COLUMNS = CONFIG_COLUMNS + (
    "replicas",
    "prefill_replicas",
    "decode_replicas",
    "gpus",
    "cost_per_hour_usd",
    "cost_per_million_output_tokens_usd",
    "ttft_q_s",
    "kv_transfer_s",
    "itl_q_s",
    "goodput_frac",
    "output_tokens_per_s_per_gpu",
    "power_per_gpu_w",
    "fleet_power_kw",
    "binding",
    "binding_analytic",
    "analytic_gpus",
    "status",
    "simulations",
    "best",
)


def confirmed_table(
    points: pd.DataFrame, confs: dict[int, Confirmation], rate: float, mean_out: float, limit_kw: float = 0.0
) -> pd.DataFrame:
    """One row per confirmed candidate, those meeting the SLO (and the power limit) cheapest first."""
    rows = [_confirmed_row(points.iloc[int(p)], c, rate, mean_out, limit_kw) for p, c in confs.items()]
    table = pd.DataFrame(rows).reindex(columns=list(TABLE_COLUMNS))
    table["meets"] = table["status"] == MEETS
    table = table.sort_values(
        ["meets", "cost_per_hour_usd", "gpus", "ttft_q_s"], ascending=[False, True, True, True], kind="stable"
    )
    table = table.drop(columns="meets").reset_index(drop=True)
    table["best"] = False
    if len(table) and table.loc[0, "status"] == MEETS:
        table.loc[0, "best"] = True
    return table


def _own_knobs(s: Scenario, points: pd.DataFrame, model: ModelSpec) -> pd.Series | None:
    """The cheapest screened point with the scenario's own knobs on its own GPU (any layout)."""
    wd, kv = format_labels(model, s)
    own = points[
        (points["mode"] == COLOCATED)
        & (points["gpu"] == s.gpu)
        & (points["batch"] == s.batch)
        & (points["chunk"] == s.chunk)
        & (points["kvdtype"] == kv)
        & (points["wdtype"] == wd)
        & (points["spec"] == s.spec)
    ]
    return own.iloc[0] if len(own) else None


def reason_text(s: Scenario, table: pd.DataFrame, points: pd.DataFrame, rate: float, model: ModelSpec) -> str:
    """The answer in one paragraph: the cheapest confirmed fleet, what binds it, the next one, and
    what the scenario's own knobs would need."""
    slo = Slo.of(s)
    targets = f"{slo.text()} at {fmt_num(rate)} requests/s"
    ok = table[table["status"] == MEETS]
    if not len(ok):
        return f"No configuration searched meets {targets}."
    best = ok.iloc[0]
    gpus = int(best["gpus"])
    text = (
        f"Cheapest way to meet {targets}: {_fleet_words(best)} ({describe(best)}): "
        f"{fmt_count(gpus, 'GPU')}, {fmt_usd(best['cost_per_hour_usd'])}/h, "
        f"{fmt_usd(best['cost_per_million_output_tokens_usd'])} per million output tokens; binding: "
        f"{best['binding']} (confirmed by simulation; screening model: {best['binding_analytic']})."
    )
    if np.isfinite(best.get("fleet_power_kw", np.nan)):
        limit = f" (limit {s.power_limit_kw:,.1f} kW)" if s.power_limit_kw > 0 else ""
        text += f" Fleet IT power ≈ {best['fleet_power_kw']:,.1f} kW at the configured batch{limit}."
    if len(ok) > 1:
        nxt = ok.iloc[1]
        extra = nxt["cost_per_hour_usd"] / best["cost_per_hour_usd"] - 1.0 if best["cost_per_hour_usd"] > 0 else np.nan
        text += f" Next: {_fleet_words(nxt)} ({describe(nxt)}), {int(nxt['gpus'])} GPUs, {extra:+.0%}."
    own = _own_knobs(s, points, model)
    if own is not None and own["meets_slo"] and int(own["point"]) != int(best["point"]):
        text += (
            f" With this scenario's own knobs (batch {fmt_count(s.batch)}, chunk {fmt_count(s.chunk)}) a "
            f"{own['name']} fleet needs ≈ {fmt_count(own['gpus'])} GPUs (screening model, {own['layout']})."
        )
    return text


def _fleet_words(row: pd.Series) -> str:
    if row["mode"] == DISAGGREGATED:
        return (
            f"{int(row['prefill_replicas'])} prefill + {int(row['decode_replicas'])} decode replicas of {row['name']}"
        )
    return f"{int(row['replicas'])} × {row['name']}"


# ------------------------------------------------------------------ the search


def search_fleet(
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None = None,
    gpus: Sequence[str] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    per_gpu: int = CONFIRM_PER_GPU,
    seeds: int = CONFIRM_SEEDS,
    max_requests: int = SEARCH_MAX_REQUESTS,
) -> SearchResult:
    """Both stages of the module doc for every priced GPU profile (or ``gpus``); ScenarioError when the
    scenario's model cannot be resolved."""
    keys = [k for k, g in catalog.gpus.items() if g.price_per_gpu_hour_usd > 0] if gpus is None else list(gpus)
    slo = Slo.of(s)
    start = time.perf_counter()
    if progress is not None:
        progress(0.0, f"Scoring every configuration on {len(keys)} GPU profiles analytically…")
    stats = traffic_stats(s, trace)
    scored = score(s, catalog, stats, keys)
    screen_s = time.perf_counter() - start
    if not len(scored.points):
        raise ScenarioError(["no GPU profile to search"])
    cands = candidates(s, scored.bases, scored.points, per_gpu)
    n = min(s.sim_requests, max_requests)
    seed_list = tuple(s.seed + k for k in range(seeds)) if trace is None or s.spec or "spec" in s.search else (s.seed,)
    confs = confirm_all(cands, s, catalog, trace, n, seed_list, workers, progress)
    table = confirmed_table(scored.points, confs, stats.rate_per_s, stats.output_mean_tokens, s.power_limit_kw)
    ok = table.index[table["status"] == MEETS]
    return SearchResult(
        points=scored.points,
        table=table,
        best=int(ok[0]) if len(ok) else None,
        reason=reason_text(s, table, scored.points, stats.rate_per_s, resolve(s, catalog).model),
        slo=slo,
        rate_per_s=stats.rate_per_s,
        mean_output_tokens=stats.output_mean_tokens,
        scored=scored.scored,
        valid=scored.valid,
        screen_s=screen_s,
        confirm_s=time.perf_counter() - start - screen_s,
        simulations=int(table["simulations"].sum()) if len(table) else 0,
        requests_per_simulation=n,
        seeds=seed_list,
        bases=scored.bases,
    )


def _width(values, title: str) -> int:
    """A text column as wide as its longest cell or title, plus two spaces."""
    return max([len(title), *(len(str(v)) for v in values)]) + 2


def _kw(row: pd.Series) -> str:
    """The fleet's IT power column (8 wide; blank where unknown)."""
    kw = row.get("fleet_power_kw", np.nan)
    return f"{kw:>8,.1f}" if isinstance(kw, float) and np.isfinite(kw) else " " * 8


def search_text(z: SearchResult) -> str:
    """The answer and the confirmed table for a terminal: GPU, layout, nodes, mode and the other knobs (text
    columns as wide as their content), then the fleet, the latencies and the decode step's communication share."""
    q = z.slo.pct_label
    knobs = [describe(row, layout=False) for _, row in z.table.iterrows()]
    gw, lw = _width(z.table["gpu"], "GPU"), _width(z.table["layout"], "layout")
    mw, cw = _width(z.table["mode"], "mode"), _width(knobs, "configuration")
    lines = [
        z.reason,
        "",
        f"{'GPU':<{gw}}{'layout':<{lw}}{'nodes':>5}  {'mode':<{mw}}{'configuration':<{cw}}{'GPUs':>6}{'$/h':>10}"
        f"{'$/Mtok':>8}{q + ' TTFT':>11}{q + ' ITL':>10}{'kW':>8}{'comm':>6}  binding / status",
    ]
    for (_, row), text in zip(z.table.iterrows(), knobs, strict=True):
        comm = f"{row['decode_comm_frac']:>6.0%}" if np.isfinite(row["decode_comm_frac"]) else " " * 6
        if row["status"] == MEETS:
            nums = (
                f"{int(row['gpus']):>6}{row['cost_per_hour_usd']:>10,.2f}{row['cost_per_million_output_tokens_usd']:>8.3g}"
                f"{row['ttft_q_s'] * MS_PER_S:>9.0f}ms{row['itl_q_s'] * MS_PER_S:>8.1f}ms"
                f"{_kw(row)}{comm}  {row['binding']}"
            )
        else:
            nums = " " * 43 + f"{_kw(row)}{comm}  {row['status']}"
        mark = "  ← best" if row["best"] else ""
        where = f"{row['gpu']:<{gw}}{row['layout']:<{lw}}{int(row['nodes']):>5}  "
        lines.append(f"{where}{row['mode']:<{mw}}{text:<{cw}}{nums}{mark}")
    lines.append(
        f"(screened {fmt_count(z.scored)} configurations, {fmt_count(z.valid)} the engine accepts, in "
        f"{z.screen_s:.2f} s; confirmed {len(z.table)} by {fmt_count(z.simulations)} simulations of "
        f"{fmt_count(z.requests_per_simulation)} requests per replica on {len(z.seeds)} seed(s) in {z.confirm_s:.1f} s)"
    )
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the frontier (screen only)


@dataclass(frozen=True)
class Screened:
    """Stage 1 alone: every point with its Pareto-frontier flags (``search.frontiers``)."""

    points: pd.DataFrame
    bases: list[Base]
    slo: Slo

    def changes(self, point: int) -> dict[str, Any]:
        """The scenario changes that make point ``point`` the scenario (``SearchResult.changes``)."""
        return point_changes(self.bases, self.points, [point])[point]

    def export_frame(self) -> pd.DataFrame:
        """Every point for a CSV (without the internal base indexes)."""
        return self.points.drop(columns=["base", "prefill_base"], errors="ignore")


def screen_points(
    s: Scenario, catalog: Catalog, trace: Workload | None = None, gpus: Sequence[str] | None = None
) -> Screened:
    """Stage 1 of the module doc alone, on every priced GPU profile (or ``gpus``)."""
    keys = [k for k, g in catalog.gpus.items() if g.price_per_gpu_hour_usd > 0] if gpus is None else list(gpus)
    scored = score(s, catalog, traffic_stats(s, trace), keys)
    return Screened(with_frontiers(scored.points), scored.bases, Slo.of(s))


def pareto_text(points: pd.DataFrame, slo: Slo) -> str:
    """Each frontier's points for a terminal."""
    feasible = int(points["meets_slo"].sum())
    lines = [f"{fmt_count(len(points))} configurations scored, {fmt_count(feasible)} meet {slo.text()}."]
    for f in FRONTIERS:
        on = frontier_points(points, f)
        lines += ["", f"{f.title} ({len(on)} points on the frontier):"]
        lines.append(
            f"{'GPU':<14}{'mode':<14}{'configuration':<44}{'GPUs':>6}{'tok/s/GPU':>10}{'tok/s/user':>11}"
            f"{'$/Mtok':>8}{slo.pct_label + ' TTFT':>11}"
        )
        for _, row in on.iterrows():
            lines.append(
                f"{row['gpu']:<14}{row['mode']:<14}{describe(row)[:43]:<44}{int(row['gpus']):>6}"
                f"{row['output_tokens_per_s_per_gpu']:>10.0f}{row['output_tokens_per_s_per_user']:>11.1f}"
                f"{row['cost_per_million_output_tokens_usd']:>8.3g}{row['ttft_q_s'] * MS_PER_S:>9.0f}ms"
            )
    lines.append("(screening model; `kvplan size` confirms the cheapest by simulation)")
    return "\n".join(lines) + "\n"
