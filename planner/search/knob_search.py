"""Search the serving design space for the cheapest fleet meeting the SLO, in two stages.

1. Screen (``grid``): every GPU profile × layout × batch × chunk × KV dtype × weight dtype ×
   speculative decoding × colocated/disaggregated the scenario's ``search`` key opens, scored by the
   vectorised screening model (``analytic``) on the user's traffic: replicas, GPUs, cost, binding
   constraint, modelled latencies.  Every point is kept (the frontier and the CSV).  A fraction of a
   second: the answer it gives is shown at once, marked as screened (``answer``).
2. Confirm (``confirm``): on each GPU profile the ``CONFIRM_PER_GPU`` cheapest points of distinct layout,
   mode and chunk within ``CONFIRM_NEAR`` × the cheapest (only the cheapest on a GPU whose best costs more
   than ``CONFIRM_FAR`` × the best of all: it cannot win) are simulated on the same traffic — one
   representative replica at its share of it — for the fewest replicas that meet the SLO on a sample
   sized for the SLO's percentile (``confidence``); a disaggregated point sizes its prefill and decode
   pools apart (``pools``).  Candidates run through an executor (``planner.executors``: a process pool on
   every core by default, or Ray), cheapest first, in two rounds: each GPU's cheapest point where the GPU
   can win, then the rest, each first simulated at the most replicas costing no more than the first
   round's answer and shown unable to win when it misses there (``confirm`` module doc, "A bound");
   each confirmation replaces its screened row as it arrives (``on_update``).
The whole run has one time budget (``time_budget_s``, ``SEARCH_TIME_BUDGET_S`` by default: under the
dashboard's per-run limit); what is not confirmed when it runs out — or when the run is cancelled
(Ctrl-C, the dashboard's Cancel) — stays in the table as screened, never dropped.  The answer is the
cheapest confirmed candidate; its binding constraint is what the simulation at the count below misses
(the screening model's name for it beside).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from planner.engine.evaluate import resolve
from planner.errors import Cancelled, ScenarioError
from planner.executors import Executor, make_executor
from planner.format import fmt_count, fmt_seconds
from planner.model.catalog import Catalog
from planner.model.scenario import Router, Scenario
from planner.search.answer import (
    MEETS,
    PENDING,
    SCREENED,
    SIMULATED,
    UNCONFIRMED,
    answer_table,
    describe,
    reason_text,
)
from planner.search.confirm import (
    CONFIRM_PER_GPU,
    Candidate,
    Confirmation,
    Plan,
    candidates,
    confirm,
    confirm_stream,
    point_changes,
    pool_changes,
    timed_out,
    with_ceilings,
)
from planner.search.fleet_sample import FLEET_SAMPLE_REPLICAS, LOAD_AWARE
from planner.search.frontiers import FRONTIERS, frontier_points, with_frontiers
from planner.search.grid import Base, Scored, score
from planner.search.latency_text import LATENCY_WIDTH, latency_cells, latency_columns, latency_header
from planner.search.limits import SEARCH_TIME_BUDGET_S
from planner.search.step_grid import TrafficStats
from planner.sim.slo import Slo
from planner.sim.workload import Workload, scenario_workload
from planner.units import MS_PER_S

__all__ = [
    "CONFIRM_PER_GPU",
    "MEETS",
    "SCREENED",
    "SIMULATED",
    "Candidate",
    "Confirmation",
    "Cancelled",
    "SearchResult",
    "candidates",
    "confirm",
    "describe",
    "point_changes",
    "pool_changes",
    "search_fleet",
    "search_text",
    "screen_points",
    "traffic_stats",
]

#: The most requests one confirmation run simulates (the percentile's own count is usually fewer).
SEARCH_MAX_REQUESTS = 20_000
#: Requests of the workload sample the screening model reads (Poisson traffic).
STATS_REQUESTS = 4000

Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class SearchResult:
    """Both stages' results (module doc).  While confirmation runs (``on_update``) and when it stopped
    early (``stopped``: 'time budget' or 'cancelled'), rows not simulated are the screening model's."""

    points: pd.DataFrame  # every screened point, cheapest first (the frontier; the CSV)
    table: pd.DataFrame  # the candidates, the answer first (``answer.answer_table``)
    best: int | None  # row of ``table`` of the answer (simulated, or screened while none is)
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
    confirmed: int = 0  # candidates simulated so far
    candidates: int = 0
    stopped: str = ""  # '' (every candidate simulated), 'time budget', 'cancelled'; 'running' while it runs
    time_budget_s: float = SEARCH_TIME_BUDGET_S
    executor: str = "local"
    simulated_requests: int = 0
    far_requests: int = 0  # requests a run of a candidate that cannot win simulates (``confirm.Plan``)
    cannot_win: int = 0  # candidates shown unable to win at their ceiling (``confirm`` module doc), not sized
    router: Router = "round_robin"  # the scenario's: behind a load-aware one each run is a bounded sample of the fleet

    @property
    def complete(self) -> bool:
        return self.confirmed == self.candidates and not self.stopped

    @property
    def best_basis(self) -> str:
        return str(self.table.loc[self.best, "basis"]) if self.best is not None else ""

    def changes(self, point: int) -> dict[str, Any]:
        """The scenario changes that make point ``point`` the scenario: its replica's configuration (a
        disaggregated point's decode pool) and its replica count behind the router — the simulated
        count where the point was confirmed, else the screening model's."""
        out = point_changes(self.bases, self.points, [point])[point] | pool_changes(self.bases, self.points, point)
        row = self.table[(self.table["point"] == point) & (self.table["status"] == MEETS)]
        if len(row):
            out["replicas"] = int(row["replicas"].iloc[0])
            if "prefill_replicas" in row and np.isfinite(row["prefill_replicas"].iloc[0]):
                out["prefill_replicas"] = int(row["prefill_replicas"].iloc[0])
        return out


def traffic_stats(s: Scenario, trace: Workload | None) -> TrafficStats:
    """The screening model's view of the traffic (``analytic.TrafficStats``)."""
    slo = Slo.of(s)
    if trace is None:
        return TrafficStats.of(scenario_workload(s, n=max(s.sim_requests, STATS_REQUESTS)), slo, s.rate, s.prefix_cache)
    return TrafficStats.of(trace, slo, trace.rate_per_s, s.prefix_cache)


#: Seconds past the deadline the search waits for its workers to stop by themselves before stopping them.
DEADLINE_GRACE_S = 5.0


class _OutOfTime(Exception):
    pass


def search_fleet(
    s: Scenario,
    catalog: Catalog,
    trace: Workload | None = None,
    gpus: Sequence[str] | None = None,
    workers: int | None = None,
    progress: Progress | None = None,
    per_gpu: int = CONFIRM_PER_GPU,
    max_requests: int = SEARCH_MAX_REQUESTS,
    *,
    executor: Executor | None = None,
    time_budget_s: float | None = SEARCH_TIME_BUDGET_S,
    on_update: Callable[[SearchResult], None] | None = None,
    confirm: bool = True,
    bound: bool = True,
) -> SearchResult:
    """Both stages of the module doc for every priced GPU profile (or ``gpus``); ScenarioError when the
    scenario's model cannot be resolved.  ``on_update`` gets the screened answer at once and the table
    again as each candidate is confirmed; ``progress`` may raise ``Cancelled`` to stop.  ``confirm``
    False: the screened answer alone (stage 1; every candidate's row screened, stopped 'running').  ``bound``
    False: no second round's ceilings — every candidate sized whatever it costs (each GPU's own count, in
    more runs; the answer is the same)."""
    keys = [k for k, g in catalog.gpus.items() if g.price_per_gpu_hour_usd > 0] if gpus is None else list(gpus)
    slo = Slo.of(s)
    start = time.perf_counter()
    deadline = time.time() + time_budget_s if time_budget_s is not None else None
    stats, scored = _screen(s, catalog, trace, keys, progress)
    screen_s = time.perf_counter() - start
    cands = candidates(s, scored.bases, scored.points, per_gpu)
    plan = Plan.of(s, slo, deadline, max_requests)
    model = resolve(s, catalog).model  # the formats the answer names (``weight_plan.format_labels``)
    executor = executor or make_executor("local", workers=workers if confirm else 1)
    confs: dict[int, Confirmation] = {}
    bounded: set[int] = set()  # points confirmed under a ceiling (``confirm.with_ceilings``)

    def result(stopped: str, left: str) -> SearchResult:
        table = answer_table(
            scored.points, cands, confs, stats.rate_per_s, stats.output_mean_tokens, left, s.power_limit_kw
        )
        best = table.index[table["best"]]
        return SearchResult(
            points=scored.points,
            table=table,
            best=int(best[0]) if len(best) else None,
            reason=reason_text(s, table, scored.points, stats.rate_per_s, model),
            slo=slo,
            rate_per_s=stats.rate_per_s,
            mean_output_tokens=stats.output_mean_tokens,
            scored=scored.scored,
            valid=scored.valid,
            screen_s=screen_s,
            confirm_s=time.perf_counter() - start - screen_s,
            simulations=sum(p.simulations for c in confs.values() for p in c.pools),
            requests_per_simulation=plan.requests,
            seeds=plan.seeds,
            bases=scored.bases,
            confirmed=sum(not c.timed_out for c in confs.values()),
            candidates=len(cands),
            stopped=stopped,
            time_budget_s=time_budget_s if time_budget_s is not None else float("inf"),
            executor=executor.name,
            simulated_requests=sum(p.requests for c in confs.values() for p in c.pools),
            far_requests=plan.far_requests if any(c.far and c.point not in bounded for c in cands) else 0,
            cannot_win=sum(any(p.cannot_win for p in c.pools) for c in confs.values()),
            router=s.router,
        )

    def report() -> None:
        if progress is not None:
            progress(*_progress_note(confs, len(cands), plan.requests, deadline, time_budget_s))

    def tick() -> None:
        report()
        if deadline is not None and time.time() > deadline + DEADLINE_GRACE_S:
            raise _OutOfTime

    if not confirm:
        return result("running", PENDING)

    def update() -> None:
        report()
        if on_update is not None:
            on_update(result("running", PENDING))

    stopped = _two_rounds(
        cands,
        lambda round_: _collect(confirm_stream(round_, s, catalog, trace, plan, executor, tick), confs, update),
        lambda: result("running", PENDING).table,
        bounded if bound else None,
        first=update,
    )
    if not stopped and any(c.timed_out for c in confs.values()):
        stopped = "time budget"
    for c in cands:
        confs.setdefault(c.point, timed_out(c))
    return result(stopped, UNCONFIRMED)


def _screen(
    s: Scenario, catalog: Catalog, trace: Workload | None, keys: list[str], progress: Progress | None
) -> tuple[TrafficStats, Scored]:
    """Stage 1 (module doc): the traffic's statistics and every point scored; ScenarioError when no GPU is given."""
    if progress is not None:
        progress(0.0, f"Scoring every configuration on {len(keys)} GPU profiles analytically…")
    stats = traffic_stats(s, trace)
    scored = score(s, catalog, stats, keys)
    if not len(scored.points):
        raise ScenarioError(["no GPU profile to search"])
    return stats, scored


def _progress_note(
    confs: dict[int, Confirmation], candidates: int, requests: int, deadline: float | None, budget_s: float | None
) -> tuple[float, str]:
    """The progress bar's share and line while candidates are confirmed."""
    budget = f"; {max(deadline - time.time(), 0.0):.0f} s of the {budget_s:g} s budget left" if deadline else ""
    late = sum(c.timed_out for c in confs.values())
    done = f"{len(confs) - late} of {candidates} candidates confirmed"
    done += f", {late} out of time" if late else ""
    return (
        len(confs) / max(candidates, 1),
        f"Confirming by simulation: {done} ({fmt_count(requests)} requests per run{budget})",
    )


def _two_rounds(
    cands: Sequence[Candidate],
    run: Callable[[list[Candidate]], str],
    table_now: Callable[[], pd.DataFrame],
    bounded: set[int] | None,
    first: Callable[[], None],
) -> str:
    """The two rounds of ``confirm``'s module doc ("A bound"), each through ``run`` (why it stopped early, ''
    when it did not): the leads, then the rest under the ceilings of the cheapest row meeting the SLO in
    ``table_now()`` — ``bounded`` gets their points; None: the rest sized unbounded.  ``first`` (the
    screened answer's update) runs before them.  A Ctrl-C or a cancel anywhere in here — while the
    screened answer is shown, between two rounds — stops the search as one inside a round does
    ('cancelled'; tests/cli/test_terminal_progress.py sends it the moment the answer is on the terminal)."""
    try:
        first()
        return _rounds(cands, run, table_now, bounded)
    except (Cancelled, KeyboardInterrupt):
        return "cancelled"


def _rounds(
    cands: Sequence[Candidate],
    run: Callable[[list[Candidate]], str],
    table_now: Callable[[], pd.DataFrame],
    bounded: set[int] | None,
) -> str:
    """``_two_rounds``' rounds themselves."""
    lead, rest = [c for c in cands if c.lead], [c for c in cands if not c.lead]
    stopped = run(lead)
    if stopped or not rest:
        return stopped
    if bounded is not None:
        table = table_now()
        met = table.loc[table["status"] == MEETS, "cost_per_hour_usd"]
        if len(met):
            rest = with_ceilings(rest, float(met.min()))
            bounded.update(c.point for c in rest if c.ceiling is not None)
    return run(rest)


def _collect(stream: Any, confs: dict[int, Confirmation], update: Callable[[], None]) -> str:
    """Each confirmation into ``confs`` as it arrives; why the stream stopped early ('' when it did not)."""
    try:  # a cancel propagates to ``_two_rounds``, which stops both rounds
        for conf in stream:
            confs[conf.point] = conf
            update()
    except _OutOfTime:
        return "time budget"
    return ""


def _width(values, title: str) -> int:
    """A text column as wide as its longest cell or title, plus two spaces."""
    return max([len(title), *(len(str(v)) for v in values)]) + 2


def basis_text(z: SearchResult) -> str:
    """How the answer was reached, in one sentence: what was screened, simulated, and what was left."""
    done = (
        f"screened {fmt_count(z.scored)} configurations ({fmt_count(z.valid)} the engine accepts) in "
        f"{fmt_seconds(z.screen_s)}; simulated {z.confirmed} of {z.candidates} candidates in "
        f"{fmt_seconds(z.confirm_s)} ({fmt_count(z.simulations)} runs of {fmt_count(z.requests_per_simulation)} "
        + _replicas_words(z.router)
        + (
            f", {fmt_count(z.far_requests)} for a GPU that cannot win"
            if z.far_requests and z.far_requests != z.requests_per_simulation
            else ""
        )
        + f", {fmt_count(z.simulated_requests)} simulated in all, executor {z.executor})"
    )
    if z.cannot_win:
        done += (
            f"; {z.cannot_win} shown unable to win: they miss the SLO at the most replicas costing no more than "
            "the answer"
        )
    if z.stopped == "time budget":
        done += f"; the {z.time_budget_s:g} s time budget ran out: the rest are the screening model's estimates"
    elif z.stopped == "cancelled":
        done += "; cancelled: the rest are the screening model's estimates"
    elif z.stopped == "running":
        done += "; the rest are being simulated"
    return done + "."


def _basis_cell(row: pd.Series) -> str:
    """The text table's basis: 'screened', 'price', or 'simulated: 8 of 136 replicas (least_tokens)'."""
    on = row.get("confirmed_on")
    return f"{row['basis']}: {on}" if isinstance(on, str) and on else str(row["basis"])


def _replicas_words(router: Router) -> str:
    """Where a run's requests went: one replica, or a bounded sample of a load-aware fleet (``fleet_sample``)."""
    if router not in LOAD_AWARE:
        return "requests on one replica"
    return (
        f"requests on min(r, {FLEET_SAMPLE_REPLICAS}) of a fleet's r replicas behind the {router} router: "
        "a bounded sample of the fleet"
    )


def _kw(row: pd.Series) -> str:
    """The fleet's IT power column (8 wide; blank where unknown)."""
    kw = row.get("fleet_power_kw", np.nan)
    return f"{kw:>8,.1f}" if isinstance(kw, float) and np.isfinite(kw) else " " * 8


def _times_word(label: str) -> str:
    """The ``times`` column: 'kernels' (measured kernel tables) or 'roofline' (the fitted roofline); each
    row's whole basis is the ``time_basis`` column of --format csv/json, and the lines under the table."""
    return "kernels" if label.startswith("measured kernels") else "roofline" if label else ""


def search_text(z: SearchResult) -> str:
    """The answer and the candidates' table for a terminal: GPU, layout, nodes, mode and the other knobs (text
    columns as wide as their content), then the fleet, the latencies, the decode step's communication share,
    and each row's basis (simulated or screened)."""
    names = latency_columns(z.slo)
    knobs = [describe(row, layout=False) for _, row in z.table.iterrows()]
    gw, lw = _width(z.table["gpu"], "GPU"), _width(z.table["layout"], "layout")
    mw, cw = _width(z.table["mode"], "mode"), _width(knobs, "configuration")
    bases = [_basis_cell(row) for _, row in z.table.iterrows()]
    bw = _width(bases, "basis")
    lines = [
        z.reason,
        "",
        f"{'GPU':<{gw}}{'layout':<{lw}}{'nodes':>5}  {'mode':<{mw}}{'configuration':<{cw}}{'GPUs':>6}{'$/h':>10}"
        f"{'$/Mtok':>8}{latency_header(z.slo, names)}{'kW':>8}{'comm':>6}  {'times':<10}{'basis':<{bw}}"
        "binding / status",
    ]
    for (_, row), text, basis in zip(z.table.iterrows(), knobs, bases, strict=True):
        comm = f"{row['decode_comm_frac']:>6.0%}" if np.isfinite(row["decode_comm_frac"]) else " " * 6
        priced = np.isfinite(row["gpus"]) and (row["status"] == MEETS or row["basis"] == SCREENED)
        if priced:
            nums = (
                f"{int(row['gpus']):>6}{row['cost_per_hour_usd']:>10,.2f}{row['cost_per_million_output_tokens_usd']:>8.3g}"
                f"{latency_cells(row, names)}{_kw(row)}{comm}"
            )
        else:
            nums = " " * (24 + LATENCY_WIDTH * len(names)) + _kw(row) + comm
        note = row["binding"] if row["status"] == MEETS else row["status"]
        mark = "  ← best" if row["best"] else ""
        where = f"{row['gpu']:<{gw}}{row['layout']:<{lw}}{int(row['nodes']):>5}  "
        times = _times_word(row["time_basis"])
        lines.append(f"{where}{row['mode']:<{mw}}{text:<{cw}}{nums}  {times:<10}{basis:<{bw}}{note}{mark}")
    lines.append(f"({basis_text(z)})")
    lines += [f"times: {label}" for label in dict.fromkeys(z.table["time_basis"]) if label]
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
        return point_changes(self.bases, self.points, [point])[point] | pool_changes(self.bases, self.points, point)

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
            f"{'GPU':<14}{'mode':<14}{'configuration':<44}{'GPUs':>6}{'tok/s/GPU':>10}{'tok/s/user':>11}"  # at capacity
            f"{'$/Mtok':>8}{slo.ttft_label:>11}"
        )
        for _, row in on.iterrows():
            lines.append(
                f"{row['gpu']:<14}{row['mode']:<14}{describe(row)[:43]:<44}{int(row['gpus']):>6}"
                f"{row['capacity_output_tokens_per_s_per_gpu']:>10.0f}"
                f"{row['capacity_output_tokens_per_s_per_user']:>11.1f}"
                f"{row['cost_per_million_output_tokens_usd']:>8.3g}{row['ttft_q_s'] * MS_PER_S:>9.0f}ms"
            )
    lines.append("(screening model; `kvplan size` confirms the cheapest by simulation)")
    return "\n".join(lines) + "\n"
