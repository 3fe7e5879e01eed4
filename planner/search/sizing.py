"""Fleet sizing: the fewest replicas per GPU profile and tp that meet the latency SLOs.

Colocated (every replica prefills and decodes, as simulated):
  for each GPU profile and layout — tp in 1, 2, 4, 8 that the engine accepts for the model
  (``engine.validity``), and where needed the multi-node and expert-parallel layouts below — whose
  memory plan fits, replicas r is the
  smallest count for which one replica, fed rate / r (Poisson thinning; a trace is split
  round-robin), meets the SLO in ``simulate`` (``slo.verdict``: each set target's statistic);
  with a load-aware ``router`` (least_tokens, prefix_affinity) a bounded sample of the fleet
  is simulated instead: min(r, 8) replicas co-simulated on the traffic they receive, n requests
  each (``fleet_sample``; the answer is still r).
  Search: from the analytic guess r₀ = ⌈rate / capacity⌉, capacity = 1 / (O·t_dec(B)/B +
  t_prefill(P)) with B = min(batch, KV concurrency), exponential steps then bisection;
  the answer r was simulated to pass and r − 1 to fail (or r = 1).  A configuration that
  fails even at ≤ 1 % of its estimated capacity is reported as infeasible.
  GPUs = r · tp · dp · pp;  $/h = GPUs · price;  $/Mtok = $/h / 3600 / (rate · mean output) · 10⁶.
  The search simulates at most ``SIZING_MAX_REQUESTS`` requests per run.

Layouts (``sizing_layouts``, from ``engine.parallel.valid_layouts``: only layouts the engine accepts):
  besides tp in ``tps``, a GPU gets the layouts of at most ``SIZING_MAX_INSTANCE_GPUS`` GPUs whose memory
  plan fits, at up to twice the smallest instance that fits — for a dense model only when no tp of ``tps``
  fits; for an MoE model also the expert-parallel and data-parallel-attention ones — one per kind
  (pp, dp, ep, tp beyond ``tps``, and their combinations): the fewest GPUs and nodes, the attention's
  tp inside a node (dp layouts: the smallest tp).  A dp layout's engines each keep the scenario's batch
  (max_num_seqs is per DP engine).  Each row gives its decode step's communication share (collectives,
  MoE exchange and stage sends ÷ the step at the row's batch).

Disaggregated estimate (prefill and decode pools, DistServe-style, each with its own layout):
  decode:  streams per replica B* = the largest batch with t_dec(B)/E ≤ the TPOT and ITL targets and
           B ≤ KV concurrency (paged); concurrent streams = rate·O·t_dec(B*)/E (Little's law);
           decode GPUs = ⌈streams / B*⌉ · GPUs per instance; the layout needing the fewest GPUs.
  KV transfer: each prompt's KV moves from the prefill to the decode instance over the network after
           its prefill (vLLM NixlConnector: not layer by layer), t_kv = α + P · max(KV/token / senders,
           the decode GPU's KV/token) / scale-out (``engine.parallel.kv_transfer_s``); it adds to TTFT
           but not to the prefill GPUs' busy time (the NICs move it while the next prompt computes).
  prefill: one prompt takes S = t_prefill(P − cached); an instance serves c = dp · pp / u prompts at
           once (its dp ranks and pipelined stages); as c M/M/1 queues its time in system is
           k/(μ − λ/c), μ = 1/S, k = ln(1/(1 − p/100)) at percentile p (1 for the mean), so with the
           transfer an instance takes at most λ_p = c · (1/S − k/(slo_ttft − t_kv)) requests/s
           (c/S without a TTFT target; its prompt tokens/s at the TTFT
           target is λ_p·P); prefill GPUs = ⌈rate / λ_p⌉ · GPUs per instance; the layout needing the
           fewest, given the decode pool's layout (vLLM needs the decode tp to be a multiple of the
           prefill tp for grouped-query heads: "Local tensor parallel size … is not divisible by remote
           tensor parallel size", kv_connector/utils.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.engine import parallel
from planner.engine.inputs import EngineInputs
from planner.engine.memory import memory_plan
from planner.engine.roofline import decode
from planner.engine.speculative import expected_tokens_per_step
from planner.engine.step_time import RooflineStepTime
from planner.errors import ScenarioError
from planner.format import fmt_seconds
from planner.model.catalog import Catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import MAX_REPLICAS, Router, Scenario
from planner.search.fleet_sample import sample_workload, sampled_replicas, simulate_sample
from planner.search.knob_search import SearchResult, search_fleet, search_text
from planner.search.latency_text import LATENCY_WIDTH, latency_cells, latency_columns, latency_header
from planner.search.layouts import on_layout, sizing_layouts
from planner.search.limits import SEARCH_TIME_BUDGET_S
from planner.search.pools import OutOfTime, deadline_check
from planner.search.replicas import TP_OPTIONS, accepted_tps, fewest_passing
from planner.sim.budget import SimulationBudgetError
from planner.sim.config import P99_MISS_FRAC, SimConfig
from planner.sim.results import SimResult
from planner.sim.simulate import sim_inputs
from planner.sim.slo import LATENCIES, Slo
from planner.sim.steady import until_steady
from planner.sim.workload import Workload
from planner.units import MEGA, MS_PER_S, S_PER_HOUR, TOKENS_PER_MTOK

SIZING_MAX_REQUESTS = 1000
#: Requests per run while bracketing the answer, and for the low-load feasibility check.
COARSE_REQUESTS = 250
IDLE_REQUESTS = 200
#: An SLO missed at this share of the estimated capacity is treated as unreachable.
IDLE_LOAD_FRAC = 0.01
MAX_DECODE_BATCH = 65_536


@dataclass(frozen=True)
class Sizing:
    table: pd.DataFrame  # one row per GPU × tp, cheapest first
    best: int | None  # row of the cheapest configuration meeting the SLOs
    reason: str
    disaggregated: pd.DataFrame  # one row per GPU profile
    rate_per_s: float
    mean_output_tokens: float
    requests_per_simulation: int
    search: SearchResult | None = None  # the knob search behind the table (``size_fleet(search=True)``)
    slo: Slo = Slo()  # what the table's latency columns hold (``*_q_s``: each latency's statistic)


def _capacity_per_s(timer: RooflineStepTime, s: Scenario, concurrency: int, cached_tokens: float) -> float:
    """Analytic requests/s one replica sustains (the search's starting point, module doc)."""
    e = float(expected_tokens_per_step(s.alpha, timer.gamma))
    b = max(concurrency, 1)
    decode_s = float(timer.decode_steps_s(b, np.array([s.prompt + s.output / 2.0]))[0]) / e
    prefill_s = timer.step_s(0, 0.0, [max(s.prompt - cached_tokens, 1.0)], [min(cached_tokens, s.prompt - 1.0)])
    return 1.0 / (s.output * decode_s / b + prefill_s)


def _simulated(
    s: Scenario,
    trace: Workload | None,
    replicas: int,
    n: int,
    cfg: SimConfig,
    timer: RooflineStepTime,
    fleet: bool,
    deadline: float | None = None,
) -> SimResult:
    """One sizing run: one replica's share (round-robin), or behind a load-aware router a bounded sample of the
    fleet (``fleet``; ``fleet_sample``: min(r, 8) replicas, n requests in all; the low-load check needs no router:
    at 1 % load no queue forms).  ``OutOfTime`` once ``deadline`` has passed (``pools.deadline_check``)."""
    router: Router = s.router if fleet else "round_robin"
    w = sample_workload(s, trace, replicas, n, router)
    stop = cfg.slo.early_stop_valid
    return simulate_sample(w, cfg, timer, router, replicas, stop_on_slo_miss=stop, progress=deadline_check(deadline))


def _layout_row(s: Scenario, gpus_per_node: int) -> dict:
    lay = Layout(tp=s.tp, pp=s.pp, ep=s.ep, dp=s.dp)
    return dict(
        tp=s.tp, pp=s.pp, ep=s.ep, dp=s.dp, layout=lay.label, gpus_per_instance=lay.gpus, nodes=lay.nodes(gpus_per_node)
    )


def _comm_frac(x: EngineInputs, concurrency: int) -> float:
    """The decode step's communication share at the row's batch (module doc; ``StepCost.comm_frac``)."""
    return float(np.asarray(decode(x, batch=max(concurrency, 1)).comm_frac))


def _size_one(
    s: Scenario, catalog: Catalog, trace: Workload | None, max_requests: int, deadline: float | None = None
) -> dict:
    """Fewest replicas for one GPU × layout (a row of the table, before pricing)."""
    r, x = sim_inputs(s, catalog)
    row = dict(gpu=s.gpu, name=r.gpu.name, price_per_gpu_hour_usd=float(np.asarray(x.price_per_gpu_hour_usd)))
    row |= _layout_row(s, r.gpu.gpus_per_node)
    plan = memory_plan(x)
    if not bool(plan["fits"]):
        return row | dict(fits=False, status="does not fit: weights and reserve exceed memory")
    cfg = SimConfig.from_inputs(x, s)
    timer = RooflineStepTime.from_inputs(x)
    concurrency = int(min(s.batch, float(plan["max_concurrent_sequences"])))
    row["decode_comm_frac"] = _comm_frac(x, concurrency)
    rate = s.rate if trace is None else trace.rate_per_s
    cached = s.hit * s.prefix if trace is None else float(np.mean(trace.reusable_prefix_tokens()))
    capacity = _capacity_per_s(timer, s, concurrency, cached)
    n_full = min(s.sim_requests, max_requests)
    results: dict[tuple[int, int], SimResult] = {}

    def run(replicas: int, n: int, fleet: bool = True) -> SimResult:
        if (replicas, n) not in results:
            if deadline is not None and time.time() > deadline:
                raise OutOfTime
            k = sampled_replicas(s.router if fleet else "round_robin", replicas)
            res, _, steady = until_steady(
                lambda m: _simulated(s, trace, replicas, m, cfg, timer, fleet, deadline),
                (n if trace is not None else min(s.sim_requests, n)) * k,
                lambda r: bool(r.summary["slo_met"]),
                bool,
                k,
                cfg.slo.ttft_s,
            )
            if not steady:  # still growing at the most requests a run is extended to (``sim.steady``)
                res.summary["slo_met"] = False
            results[replicas, n] = res
        return results[replicas, n]

    def passes(n: int) -> Callable[[int], bool]:
        return lambda replicas: bool(run(replicas, n).summary["slo_met"])

    idle = max(1, math.ceil(rate / (IDLE_LOAD_FRAC * capacity))) if math.isfinite(rate) else 1
    if trace is not None:
        idle = min(idle, len(trace))
    idle = min(idle, MAX_REPLICAS)
    idle_run = run(idle, min(n_full, IDLE_REQUESTS), fleet=False)
    if not idle_run.summary["slo_met"]:
        sm = idle_run.summary
        if sm["rejected_kv"] > 0:
            why = "some requests need more KV blocks than one replica holds"
        elif sm["rejected_context"] > P99_MISS_FRAC * sm["requests"]:
            why = (
                f"{sm['rejected_context'] / sm['requests']:.1%} of requests are longer than the context window "
                "(rejected requests count as TTFT misses: more than the 1 % a p99 allows)"
            )
        else:
            slo = cfg.slo
            said = ", ".join(f"{slo.label(n)} {fmt_seconds(sm[f'{n}_slo_stat_s'])}" for n in slo.targets)
            why = f"misses the SLOs even at low load ({said or 'no request served'})"
        return row | dict(fits=True, status=why, simulations=len(results))
    guess = max(1, math.ceil(rate / capacity)) if math.isfinite(rate) else 1
    coarse = fewest_passing(passes(min(n_full, COARSE_REQUESTS)), min(guess, idle), idle)
    best = fewest_passing(passes(n_full), coarse or idle, min(max(idle, coarse or 1) * 4, MAX_REPLICAS))
    if best is None:
        return row | dict(fits=True, status="misses the SLOs at every replica count tried", simulations=len(results))
    res = results[best, n_full]
    return row | dict(
        fits=True,
        status="meets SLOs",
        replicas=best,
        **{f"{n}_q_s": res.summary[f"{n}_slo_stat_s"] for n in LATENCIES},
        goodput_frac=res.summary["goodput_frac"],
        kv_used_mean_frac=res.summary["kv_used_mean_frac"],
        simulations=len(results),
    )


COLUMNS = (
    "gpu",
    "name",
    "tp",
    "pp",
    "ep",
    "dp",
    "layout",
    "gpus_per_instance",
    "nodes",
    "fits",
    "status",
    "replicas",
    "gpus",
    "cost_per_hour_usd",
    "cost_per_million_output_tokens_usd",
    "ttft_q_s",
    "tpot_q_s",
    "itl_q_s",
    "e2e_q_s",
    "goodput_frac",
    "kv_used_mean_frac",
    "decode_comm_frac",
    "price_per_gpu_hour_usd",
    "simulations",
    "best",
)


def size_fleet(
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None = None,
    gpus: Sequence[str] | None = None,
    tps: Sequence[int] = TP_OPTIONS,
    max_requests: int = SIZING_MAX_REQUESTS,
    progress: Callable[..., None] | None = None,
    layouts: bool = True,
    search: bool = False,
    time_budget_s: float | None = SEARCH_TIME_BUDGET_S,
    **search_options: Any,
) -> Sizing:
    """The sizing table (module doc) for every GPU profile (or ``gpus``) × layout (``tps`` and, with
    ``layouts``, the multi-node and expert-parallel ones of ``sizing_layouts``); with ``search`` and a
    scenario whose ``search`` key is not ``none``, the knob search's (``planner.search.knob_search``;
    ``search_options``: ``searched_sizing``'s)."""
    if search and s.search != "none":
        return searched_sizing(s, catalog, trace, gpus, progress, time_budget_s=time_budget_s, **search_options)
    deadline = time.time() + time_budget_s if time_budget_s is not None else None
    # An unpriced profile (price 0: none published) would rank as free; it is sized only when asked for.
    keys = [k for k, g in catalog.gpus.items() if g.price_per_gpu_hour_usd > 0] if gpus is None else list(gpus)
    tps = accepted_tps(s, catalog, tps)
    rate = s.rate if trace is None else trace.rate_per_s
    mean_out = float(s.output) if trace is None else float(np.mean(trace.output_tokens))
    rows = []
    plans = {g: sizing_layouts(s, catalog, g, tps) if layouts else [Layout(tp=t) for t in tps] for g in keys}
    combos = [(g, lay) for g in keys for lay in plans[g]]
    for k, (g, lay) in enumerate(combos):
        here = dict(gpu=g, **lay.changes(), layout=lay.label, gpus_per_instance=lay.gpus)
        try:
            if deadline is not None and time.time() > deadline:
                raise OutOfTime
            rows.append(_size_one(on_layout(s, g, lay), catalog, trace, max_requests, deadline))
        except OutOfTime:
            rows.append(here | dict(fits=True, status=f"not sized: the {time_budget_s:g} s time budget ran out"))
        except SimulationBudgetError as exc:
            rows.append(here | dict(fits=True, status="not simulated: " + "; ".join(exc.problems)))
        except ScenarioError as exc:
            rows.append(here | dict(fits=False, status="; ".join(exc.problems)))
        if progress is not None:
            progress((k + 1) / len(combos))
    table = pd.DataFrame(rows).reindex(
        columns=[
            c for c in COLUMNS if c not in ("gpus", "cost_per_hour_usd", "cost_per_million_output_tokens_usd", "best")
        ]
    )
    table["gpus"] = table["replicas"] * table["gpus_per_instance"]
    table["cost_per_hour_usd"] = table["gpus"] * table["price_per_gpu_hour_usd"]
    tokens_per_hour = rate * mean_out * S_PER_HOUR
    table["cost_per_million_output_tokens_usd"] = (
        table["cost_per_hour_usd"] / tokens_per_hour * TOKENS_PER_MTOK if tokens_per_hour > 0 else np.nan
    )
    table = table.sort_values(["cost_per_hour_usd", "gpus", "ttft_q_s"], na_position="last", kind="stable").reset_index(
        drop=True
    )
    ok = table.index[table["status"] == "meets SLOs"]
    table["best"] = False
    best = int(ok[0]) if len(ok) else None
    if best is not None:
        table.loc[best, "best"] = True
    table = table.reindex(columns=list(COLUMNS))
    return Sizing(
        table=table,
        best=best,
        reason=best_reason(table, best, s, rate),
        disaggregated=disaggregated(s, catalog, keys, plans, table, rate, mean_out),
        rate_per_s=rate,
        mean_output_tokens=mean_out,
        requests_per_simulation=min(s.sim_requests, max_requests),
        slo=Slo.of(s),
    )


def searched_sizing(
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None = None,
    gpus: Sequence[str] | None = None,
    progress: Callable[..., None] | None = None,
    on_update: Callable[[Sizing], None] | None = None,
    **options: Any,
) -> Sizing:
    """``size_fleet`` through the knob search: its confirmed table (with this table's columns and the
    configuration's), its answer, and the disaggregated estimate beside it.  ``on_update`` gets the sizing
    each time the search's table changes (the screened answer first); ``options`` go to ``search_fleet``
    (``executor``, ``time_budget_s``, ``workers``)."""
    disagg: dict[str, pd.DataFrame] = {}

    def update(z: SearchResult) -> None:
        assert on_update is not None
        on_update(_sizing_of(s, catalog, z, disagg))

    z = search_fleet(
        s, catalog, trace, gpus, progress=progress, on_update=None if on_update is None else update, **options
    )
    return _sizing_of(s, catalog, z, {})


def screened_answer(
    s: Scenario, catalog: Catalog, trace: Workload | None = None, gpus: Sequence[str] | None = None
) -> Sizing:
    """The search's screened answer alone (no simulation, no disaggregated estimate): what the dashboard
    shows the moment *Size the fleet* is pressed, while its worker starts."""
    z = search_fleet(s, catalog, trace, gpus, confirm=False)
    return _sizing_of(s, catalog, z, {"frame": pd.DataFrame()})


def _sizing_of(s: Scenario, catalog: Catalog, z: SearchResult, disagg: dict[str, pd.DataFrame]) -> Sizing:
    """The sizing of a (finished or running) search; ``disagg`` keeps the disaggregated estimate between the
    updates of one run (it moves only with the colocated answers: recomputed when the run ends)."""
    table = z.table.assign(fits=True)
    keys = list(dict.fromkeys(z.points["gpu"].astype(str)))
    plans: dict[str, list[Layout]] = {g: [] for g in keys}  # the layouts the search tried on each GPU
    for b in z.bases:
        if b.layout not in plans.setdefault(b.gpu, []):
            plans[b.gpu].append(b.layout)
    if "frame" not in disagg:
        disagg["frame"] = disaggregated(s, catalog, keys, plans, table, z.rate_per_s, z.mean_output_tokens)
    return Sizing(
        table=table,
        best=z.best,
        reason=z.reason,
        disaggregated=disagg["frame"],
        rate_per_s=z.rate_per_s,
        mean_output_tokens=z.mean_output_tokens,
        requests_per_simulation=z.requests_per_simulation,
        search=z,
        slo=z.slo,
    )


def _describe(row: pd.Series) -> str:
    """A table row in words: replicas × GPU name at its layout (GPUs, $/h)."""
    gpus = int(row["gpus"])
    plural = "" if gpus == 1 else "s"
    cost = f"{gpus} GPU{plural}, ${row['cost_per_hour_usd']:,.2f}/h"
    at = f"tp {int(row['tp'])}" if row["layout"] == f"tp{int(row['tp'])}" else str(row["layout"])
    return f"{int(row['replicas'])} × {row['name']} at {at} ({cost})"


def best_reason(table: pd.DataFrame, best: int | None, s: Scenario, rate: float) -> str:
    """One sentence: the cheapest configuration meeting the targets, and how much more the next one costs."""
    targets = f"{Slo.of(s).text()} at {rate:.3g} requests/s"
    if best is None:
        return f"No configuration meets {targets}."
    row = table.iloc[best]  # the index is 0 … n − 1: best is a position and a label
    per_mtok = row["cost_per_million_output_tokens_usd"]
    text = f"Cheapest way to meet {targets}: {_describe(row)}, ${per_mtok:,.3g} per million output tokens."
    others = table[(table["status"] == "meets SLOs") & (table.index != best)]
    if len(others):
        nxt = others.iloc[0]
        extra = (
            nxt["cost_per_hour_usd"] / row["cost_per_hour_usd"] - 1.0 if row["cost_per_hour_usd"] > 0 else float("nan")
        )
        text += f" Next: {_describe(nxt)}, {extra:+.0%}."
    return text


def _decode_streams(timer: RooflineStepTime, s: Scenario, kv_limit: int) -> tuple[int, float]:
    """B* and its time per output token (module doc); (0, nan) when even one stream misses the target."""
    top = int(min(max(kv_limit, 0), MAX_DECODE_BATCH))
    if top < 1:
        return 0, float("nan")
    batches = np.arange(1, top + 1, dtype=float)
    e = float(expected_tokens_per_step(s.alpha, timer.gamma))
    mid_context = np.array([s.prompt + s.output / 2.0])
    # every batch size in one call: the roofline broadcasts seqs as an array (StepTime annotates the scalar use)
    tpot = np.asarray(timer.decode_steps_s(batches, mid_context), dtype=np.float64) / e  # type: ignore[arg-type]
    limit = Slo.of(s).step_limit_s
    ok = np.flatnonzero(tpot <= (np.inf if limit is None else limit))
    if ok.size == 0:
        return 0, float("nan")
    return int(batches[ok[-1]]), float(tpot[ok[-1]])


def disaggregated(
    s: Scenario,
    catalog: Catalog,
    keys: Sequence[str],
    plans: dict[str, list[Layout]],
    table: pd.DataFrame,
    rate: float,
    mean_out: float,
) -> pd.DataFrame:
    """Prefill and decode pools per GPU profile, each in its own layout, against the colocated answer
    (module doc)."""
    rows = []
    for g in keys:
        fits, prefill_best, decode_best = _best_pools(s, catalog, g, plans[g], rate, mean_out)
        price = float(np.asarray(sim_inputs(s.on_gpu(g, 1), catalog)[1].price_per_gpu_hour_usd))
        colo = table[(table["gpu"] == g) & (table["status"] == "meets SLOs")]
        colo_gpus = float(colo["gpus"].min()) if len(colo) else float("nan")
        row = dict(gpu=g, name=catalog.gpus[g].name, price_per_gpu_hour_usd=price, colocated_gpus=colo_gpus)
        if prefill_best and decode_best:
            total = prefill_best.gpus + decode_best.gpus
            row |= dict(
                prefill_tp=prefill_best.layout.tp,
                prefill_layout=prefill_best.layout.label,
                prefill_gpus=prefill_best.gpus,
                prefill_tokens_per_s_per_gpu=prefill_best.rate,
                decode_tp=decode_best.layout.tp,
                decode_layout=decode_best.layout.label,
                decode_gpus=decode_best.gpus,
                decode_streams_per_gpu=decode_best.rate,
                kv_transfer_bytes_per_request=prefill_best.kv_bytes,
                kv_transfer_s=prefill_best.kv_s,
                disaggregated_gpus=total,
                disaggregated_cost_per_hour_usd=total * price,
                colocated_cost_per_hour_usd=colo_gpus * price,
                gpu_saving_frac=1.0 - total / colo_gpus if colo_gpus > 0 else float("nan"),
                status="estimated",
            )
        else:
            row["status"] = _pool_status(fits, decode_best is not None)
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Pool:
    """One pool: its layout, its GPUs, its prefill tokens/s per GPU or decode streams per GPU (``rate``), and
    (prefill) the KV transfer to the decode pool per request."""

    layout: Layout
    gpus: int
    rate: float
    kv_s: float = 0.0
    kv_bytes: float = 0.0


def _pool_inputs(s: Scenario, catalog: Catalog, gpu: str, lay: Layout) -> tuple[EngineInputs, dict] | None:
    try:
        _, x = sim_inputs(on_layout(s, gpu, lay), catalog)
    except ScenarioError:
        return None
    plan = memory_plan(x)
    return (x, plan) if bool(plan["fits"]) else None


def _best_pools(
    s: Scenario, catalog: Catalog, gpu: str, layouts: Sequence[Layout], rate: float, mean_out: float
) -> tuple[bool, Pool | None, Pool | None]:
    """Whether any layout fits, and the decode pool, then the prefill pool (with the KV transfer to that
    decode pool) needing the fewest GPUs (module doc)."""
    ready = {lay: got for lay in layouts if (got := _pool_inputs(s, catalog, gpu, lay)) is not None}
    decode_best: Pool | None = None
    for lay, (x, plan) in ready.items():
        streams, tpot = _decode_streams(RooflineStepTime.from_inputs(x), s, int(plan["max_concurrent_sequences"]))
        if streams:
            n_gpus = math.ceil(rate * mean_out * tpot / streams) * lay.gpus
            if decode_best is None or n_gpus < decode_best.gpus:
                decode_best = Pool(lay, n_gpus, streams / lay.gpus)
    if decode_best is None:
        return bool(ready), None, None
    target = ready[decode_best.layout][0]
    cached = s.hit * s.prefix
    slo = Slo.of(s)
    k = 1.0 if slo.is_mean else math.log(1.0 / slo.miss_frac)
    prefill_best: Pool | None = None
    for lay, (x, _) in ready.items():
        if float(np.asarray(x.kv_sharded)) > 0 and decode_best.layout.tp % lay.tp:
            continue  # vLLM's NIXL transfer needs the decode tp to be a multiple of the prefill tp (GQA heads)
        kv_s = float(np.asarray(parallel.kv_transfer_s(x, target, s.prompt)))
        timer = RooflineStepTime.from_inputs(x)
        service_s = timer.step_s(0, 0.0, [max(s.prompt - cached, 1.0)], [min(cached, s.prompt - 1.0)])
        servers = lay.dp * lay.pp / float(np.asarray(parallel.layer_imbalance(x)))
        room = (math.inf if slo.ttft_s is None else slo.ttft_s) - kv_s
        per_replica = servers * (1.0 / service_s - k / room) if room > 0 else 0.0
        if per_replica > 0:
            n_gpus = math.ceil(rate / per_replica) * lay.gpus
            if prefill_best is None or n_gpus < prefill_best.gpus:
                moved = s.prompt * float(np.asarray(x.kv_elements_per_token_per_layer * x.kv_bytes_per_element))
                moved *= float(np.asarray(x.full_attention_layers + x.window_layers))
                prefill_best = Pool(lay, n_gpus, per_replica * s.prompt / lay.gpus, kv_s, moved)
    return True, prefill_best, decode_best


def _pool_status(fits: bool, decode: bool) -> str:
    if not fits:
        return "does not fit at any layout"
    return (
        "prefill misses the TTFT target at every layout"
        if decode
        else "decode misses the TPOT / ITL target at every layout"
    )


def _text_width(values, title: str) -> int:
    """A text column as wide as its longest cell or title, plus two spaces (long profile keys stay apart)."""
    return max([len(title), *(len(str(v)) for v in values)]) + 2


def sizing_text(z: Sizing) -> str:
    """The sizing table and the disaggregated estimate for a terminal (the GPU and layout columns as wide as
    their longest entry); a searched sizing's is the search's table (``search_text``)."""
    if z.search is not None:
        return search_text(z.search)
    gw = _text_width([*z.table.get("gpu", []), *z.disaggregated.get("gpu", [])], "GPU")
    lw = _text_width(z.table.get("layout", []), "layout")
    names = latency_columns(z.slo)
    lines = [
        z.reason,
        "",
        f"{'GPU':<{gw}}{'layout':<{lw}}{'nodes':>5}{'replicas':>9}{'GPUs':>6}{'$/h':>10}{'$/Mtok':>9}"
        f"{latency_header(z.slo, names)}{'comm':>6}  status",
    ]
    for _, row in z.table.iterrows():
        if row["status"] == "meets SLOs":
            nums = (
                f"{int(row['replicas']):>9}{int(row['gpus']):>6}{row['cost_per_hour_usd']:>10,.2f}"
                f"{row['cost_per_million_output_tokens_usd']:>9.3g}{latency_cells(row, names)}"
            )
        else:
            nums = " " * (9 + 6 + 10 + 9 + LATENCY_WIDTH * len(names))
        comm = f"{row['decode_comm_frac']:>6.0%}" if np.isfinite(row["decode_comm_frac"]) else " " * 6
        nodes = f"{int(row['nodes']):>5}" if np.isfinite(row["nodes"]) else " " * 5
        best = "  ← best" if row["best"] else ""
        lines.append(f"{row['gpu']:<{gw}}{row['layout']:<{lw}}{nodes}{nums}{comm}  {row['status']}{best}")
    lines += ["", "Disaggregated prefill/decode pools (estimate, KV transfer over the network in the TTFT):"]
    for _, row in z.disaggregated.iterrows():
        if row["status"] == "estimated":
            lines.append(
                f"{row['gpu']:<{gw}}prefill {int(row['prefill_gpus'])} GPUs ({row['prefill_layout']}) + decode "
                f"{int(row['decode_gpus'])} GPUs ({row['decode_layout']}) = {int(row['disaggregated_gpus'])} GPUs"
                + (f" vs {int(row['colocated_gpus'])} colocated" if np.isfinite(row["colocated_gpus"]) else "")
                + f"; KV {row['kv_transfer_bytes_per_request'] / MEGA:,.1f} MB a request in "
                f"{row['kv_transfer_s'] * MS_PER_S:.2f} ms"
            )
        else:
            lines.append(f"{row['gpu']:<{gw}}{row['status']}")
    lines.append(f"(each search run simulates {z.requests_per_simulation:,} requests)")
    return "\n".join(lines) + "\n"
