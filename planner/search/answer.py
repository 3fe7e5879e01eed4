"""The search's answer: the table of candidates — each either confirmed by simulation or, until it is (or
when the time budget ran out first), the screening model's estimate — and the answer in words.

Every row carries its ``basis``: ``simulated`` (its replica count passed in simulation and the count
below it failed) or ``screened`` (the screening model's count, cost and latencies, ``analytic``); a simulated
row's ``confirmed_on`` says what ran: one replica at its share of r, or behind a load-aware router a bounded
sample of the fleet ('8 of 270 replicas (least_tokens)', ``fleet_sample``).  The
answer is the cheapest *simulated* row meeting the SLO; while none is, the cheapest screened one, said to
be screened.  A screened row cheaper than the simulated answer is named beside it (it might win).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from planner.format import fmt_count, fmt_num, fmt_usd
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec
from planner.model.weight_plan import format_labels
from planner.search.confirm import Candidate, Confirmation
from planner.search.grid import COLOCATED, DISAGGREGATED
from planner.search.pools import PoolSizing
from planner.search.power_limit import OVER_POWER, POWER_UNKNOWN
from planner.sim.slo import LATENCIES, Slo
from planner.units import S_PER_HOUR, TOKENS_PER_MTOK

MEETS = "meets SLOs"
SIMULATED, SCREENED = "simulated", "screened"
#: The basis of a candidate shown unable to win by its price alone: one replica costs more than the answer (no run).
PRICED = "price"
#: A screened row's status: still waiting for its simulation, or left by the time budget or a cancel.
PENDING = "screened: confirming by simulation…"
UNCONFIRMED = "screened: not confirmed by simulation in time"
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
    "time_basis",
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
    "tpot_q_s",
    "itl_q_s",
    "e2e_q_s",
    "goodput_frac",
    "output_tokens_per_s_per_gpu",
    "power_per_gpu_w",
    "fleet_power_kw",
    "binding",
    "binding_analytic",
    "analytic_gpus",
    "basis",
    "confirmed_on",
    "status",
    "simulations",
    "simulated_requests",
    "best",
)
#: What a candidate not (yet) simulated shows: the screening model's fleet, cost, latencies and power (the
#: table's value columns from ``replicas`` to ``fleet_power_kw``; goodput is the simulation's alone).
_SCREENED_VALUES = tuple(
    c
    for c in TABLE_COLUMNS[TABLE_COLUMNS.index("replicas") : TABLE_COLUMNS.index("fleet_power_kw") + 1]
    if c != "goodput_frac"
)


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


def _base_row(row: pd.Series) -> dict[str, Any]:
    out: dict[str, Any] = {k: row[k] for k in CONFIG_COLUMNS if k in row}
    return out | dict(analytic_gpus=row["gpus"], binding_analytic=row["binding"])


def screened_row(row: pd.Series, status: str = PENDING) -> dict[str, Any]:
    """A candidate not (yet) simulated: the screening model's fleet, cost and latencies."""
    out = _base_row(row) | {k: row[k] for k in _SCREENED_VALUES if k in row}
    return out | dict(
        basis=SCREENED, confirmed_on="", status=status, binding=row["binding"], simulations=0, simulated_requests=0
    )


def confirmed_row(
    row: pd.Series, conf: Confirmation, rate: float, mean_out: float, limit_kw: float = 0.0
) -> dict[str, Any]:
    """One table row: the point's configuration and what the simulation found (a timed-out one: screened); the
    fleet's IT power at the screened board power per GPU (``grid.colocated_power_w``), held to ``power_limit_kw``
    when one is set."""
    runs = dict(
        simulations=sum(p.simulations for p in conf.pools), simulated_requests=sum(p.requests for p in conf.pools)
    )
    if conf.timed_out:
        return screened_row(row, UNCONFIRMED) | runs
    out = _base_row(row) | runs | dict(basis=SIMULATED, confirmed_on=confirmed_on(conf))
    failed = [p for p in conf.pools if p.replicas is None]
    if failed and failed[0].cannot_win:
        return out | cannot_win_cells(row, failed[0])
    if failed:
        return out | dict(status=failed[0].problem or "misses the SLO in simulation", binding="")
    if row["mode"] == COLOCATED:
        (p,) = conf.pools
        assert p.at is not None and p.replicas is not None
        gpus = p.replicas * int(row["gpus_per_replica"])
        at = p.at.worst
        out |= dict(replicas=p.replicas, binding=_binding(p))
        lat = {n: at.value(n) for n in LATENCIES}
        goodput = at.goodput_frac
    else:
        pre, dec = conf.pools
        assert pre.at is not None and dec.at is not None and pre.replicas and dec.replicas
        gpus = pre.replicas * int(row["prefill_gpus_per_replica"]) + dec.replicas * int(row["gpus_per_replica"])
        first = pre.at.worst.ttft_q_s + conf.kv_transfer_s
        lat = {n: dec.at.worst.value(n) for n in LATENCIES} | {"ttft": first}
        lat["e2e"] = first + dec.at.worst.e2e_q_s  # the decode pool's E2EL starts at its first token
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
        status=(POWER_UNKNOWN if math.isnan(power_kw) else f"{OVER_POWER} ({power_kw:,.1f} kW > {limit_kw:,.1f} kW)")
        if over
        else MEETS,
        power_per_gpu_w=row["power_per_gpu_w"],
        fleet_power_kw=power_kw,
        gpus=gpus,
        cost_per_hour_usd=cost,
        cost_per_million_output_tokens_usd=cost / per_hour * TOKENS_PER_MTOK if per_hour > 0 else float("nan"),
        **{f"{n}_q_s": v for n, v in lat.items()},
        goodput_frac=goodput,
        output_tokens_per_s_per_gpu=rate * mean_out / gpus,
    )


def confirmed_on(conf: Confirmation) -> str:
    """What the simulation behind a row ran (``pools.PoolRun.basis``): the passing count's fleet, else the count
    that failed — '8 of 136 replicas (least_tokens)', '1 of 136 replicas (its share, round_robin)'; a disaggregated
    row's two pools, decode first; '' where nothing ran."""

    def one(p: PoolSizing) -> str:
        run = p.at if p.at is not None else p.below
        return run.basis if run is not None else ""

    if len(conf.pools) == 1:
        return one(conf.pools[0])
    pre, dec = conf.pools
    return f"decode {one(dec)}; prefill {one(pre)}" if one(dec) and one(pre) else ""


def cannot_win_cells(row: pd.Series, p: PoolSizing) -> dict[str, Any]:
    """A candidate that missed the SLO at the most replicas costing no more than the answer (``pools.size_pool``'s
    ``ceiling``), or whose one replica costs more: its status says so, with the fleet it missed at and what bound
    it there; its fleet columns stay empty (it was not sized)."""
    per_replica = float(row["gpus_per_replica"]) * float(row["price_per_gpu_hour_usd"])
    if p.below is None:
        status = f"cannot win: one replica costs {fmt_usd(per_replica)}/h, more than the answer"
        return dict(status=status, binding="", basis=PRICED)
    r = p.below.replicas
    gpus = r * int(row["gpus_per_replica"])
    return dict(
        status=(
            f"cannot win: misses the SLO in simulation at {fmt_count(r, 'replica')} ({fmt_count(gpus, 'GPU')}, "
            f"{fmt_usd(r * per_replica)}/h: the most costing no more than the answer)"
        ),
        binding=p.below.worst.binding_text(),
    )


def answer_table(
    points: pd.DataFrame,
    cands: list[Candidate],
    confs: dict[int, Confirmation],
    rate: float,
    mean_out: float,
    left: str = PENDING,
    limit_kw: float = 0.0,
) -> pd.DataFrame:
    """One row per candidate (module doc): the simulated ones meeting the SLO cheapest first, then the
    screened ones cheapest first (status ``left`` for those not simulated), then those that failed.
    ``best`` marks the answer: the first simulated row meeting the SLO, else the first screened one.  ``limit_kw``:
    the power limit a simulated fleet is held to (0: none; the screening already holds the screened points)."""
    rows = []
    for c in cands:
        row = points.iloc[int(c.point)]
        conf = confs.get(c.point)
        rows.append(screened_row(row, left) if conf is None else confirmed_row(row, conf, rate, mean_out, limit_kw))
    table = pd.DataFrame(rows).reindex(columns=list(TABLE_COLUMNS))
    group = np.where(table["status"] == MEETS, 0, np.where(table["basis"] == SCREENED, 1, 2))
    table = table.assign(_group=group).sort_values(["_group", "cost_per_hour_usd", "gpus", "ttft_q_s"], kind="stable")
    table = table.drop(columns="_group").reset_index(drop=True)
    table["best"] = False
    if len(table) and (table.loc[0, "status"] == MEETS or table.loc[0, "basis"] == SCREENED):
        table.loc[0, "best"] = True
    return table


def _own_knobs(s: Scenario, points: pd.DataFrame, model: ModelSpec) -> pd.Series | None:
    """The cheapest screened point with the scenario's own knobs on its own GPU (any layout; its formats as the
    table names them, ``weight_plan.format_labels``)."""
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


def _fleet_words(row: pd.Series) -> str:
    if row["mode"] == DISAGGREGATED:
        return (
            f"{int(row['prefill_replicas'])} prefill + {int(row['decode_replicas'])} decode replicas of {row['name']}"
        )
    return f"{int(row['replicas'])} × {row['name']}"


def _cost_words(row: pd.Series) -> str:
    return (
        f"{fmt_count(int(row['gpus']), 'GPU')}, {fmt_usd(row['cost_per_hour_usd'])}/h, "
        f"{fmt_usd(row['cost_per_million_output_tokens_usd'])} per million output tokens"
    )


def reason_text(s: Scenario, table: pd.DataFrame, points: pd.DataFrame, rate: float, model: ModelSpec) -> str:
    """The answer in one paragraph (module doc): the cheapest fleet, its basis, what binds it, the next one,
    a cheaper screened one not yet simulated, and what the scenario's own knobs would need."""
    slo = Slo.of(s)
    targets = f"{slo.text()} at {fmt_num(rate)} requests/s"
    best = table[table["best"]]
    if not len(best):
        return f"No configuration searched meets {targets}."
    row = best.iloc[0]
    if row["basis"] == SCREENED:
        text = (
            f"Screening model (not confirmed by simulation yet): the cheapest way to meet {targets} is "
            f"{_fleet_words(row)} ({describe(row)}): {_cost_words(row)}; binding: {row['binding_analytic']}."
        )
    else:
        text = (
            f"Cheapest way to meet {targets}: {_fleet_words(row)} ({describe(row)}): {_cost_words(row)}; binding: "
            f"{row['binding']} (confirmed by simulation; screening model: {row['binding_analytic']})."
        )
        ok = table[table["status"] == MEETS]
        if len(ok) > 1:
            nxt = ok.iloc[1]
            base = row["cost_per_hour_usd"]
            extra = nxt["cost_per_hour_usd"] / base - 1.0 if base > 0 else np.nan
            text += f" Next: {_fleet_words(nxt)} ({describe(nxt)}), {int(nxt['gpus'])} GPUs, {extra:+.0%}."
        cheaper = table[(table["basis"] == SCREENED) & (table["cost_per_hour_usd"] < row["cost_per_hour_usd"])]
        if len(cheaper):
            c = cheaper.iloc[0]
            text += (
                f" Not simulated: {_fleet_words(c)} ({describe(c)}) might cost less, ≈ {_cost_words(c)} by the "
                "screening model."
            )
    if np.isfinite(row.get("fleet_power_kw", np.nan)):
        limit = f" (limit {s.power_limit_kw:,.1f} kW)" if s.power_limit_kw > 0 else ""
        text += f" Fleet IT power ≈ {row['fleet_power_kw']:,.1f} kW at the configured batch{limit}."
    own = _own_knobs(s, points, model)
    if own is not None and own["meets_slo"] and int(own["point"]) != int(row["point"]):
        text += (
            f" With this scenario's own knobs (batch {fmt_count(s.batch)}, chunk {fmt_count(s.chunk)}) a "
            f"{own['name']} fleet needs ≈ {fmt_count(own['gpus'], 'GPU')} (screening model, {own['layout']})."
        )
    return text
