"""The efficiency model fitted to published measurements: engines × GPU families, partially pooled.

Each latency row of ``benchmarks/data/published-serving.json`` is a ``Point`` (its
deployment as a kvplan scenario, its measured figure).  Every efficiency parameter p of a
row on engine e and GPU family f is, in the fit's unbounded space (``planner.calibration.fit``),

    u_p(e, f) = g_p + δ_p(e) + φ_p(f)      (φ only for the per-family parameters)

g: the pooled value over every engine and GPU; δ: the engine's departure; φ: the GPU
family's.  Priors: g near a physically plausible centre (``PRIORS``, wide), δ and φ near 0
(``ENGINE_SD``, ``FAMILY_SD``) — an engine or family with few rows stays near the pool,
one with many moves as far as its rows demand.  An engine with no row is the pool itself;
so is a held-out source's engine when no other source has it (leave-one-source-out).

The fitted values are written as each engine profile's ``[timing]`` section by
``benchmarks/fit_timing.py``; ``benchmarks/published_accuracy.py`` prints the in-sample,
leave-one-source-out and leave-one-GPU-out errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from benchmarks.accuracy.rows import Row, engine_key
from benchmarks.accuracy.scenarios import scenario_for
from planner.calibration.fit import Transform, from_u, levenberg_marquardt, to_u
from planner.calibration.points import Point, PointSet
from planner.model.catalog import Catalog
from planner.model.engine_timing import EngineTiming, FamilyTiming
from planner.units import US_PER_S

#: category of a published row → the point kind that predicts it
KIND_OF = {"ttft": "ttft", "tpot": "tpot", "throughput": "throughput", "e2e_latency": "e2e_latency"}


@dataclass(frozen=True)
class Prior:
    """How one parameter is fitted: its transform, the pool's prior centre (SI) and sd (u units),
    and the sd of an engine's and a GPU family's departure (None: no such departure)."""

    transform: Transform
    centre: float
    pool_sd: float
    engine_sd: float | None
    family_sd: float | None


#: Prior centres: plausible for a tuned engine (docs/model.md §4); wide (sd 2 in u ≈ ×7 odds).
PRIORS: dict[str, Prior] = {
    "step_overhead_s": Prior("positive", 50e-6, 2.5, 0.8, None),
    "layer_overhead_s": Prior("positive", 20e-6, 2.0, 0.8, None),
    "decode_layer_overhead_s": Prior("positive", 3e-6, 1.5, 1.0, None),
    "matmul_half_tokens": Prior("positive", 64.0, 2.0, 0.6, None),
    "attention_compute_frac": Prior("frac", 0.5, 2.0, 0.6, None),
    "attention_bandwidth_frac": Prior("frac", 0.75, 1.0, 0.5, None),
    # grouped decode kernels (FlashAttention, FlashInfer, XQA) load a GQA group's KV once: the
    # pool stays at ~0 and only an engine whose rows demand it departs
    "gqa_reread_frac": Prior("frac", 0.01, 0.01, 2.5, None),
    "allreduce_overhead_s": Prior("positive", 10e-6, 2.5, 0.8, None),
    "nvlink_bus_frac": Prior("frac", 0.7, 2.0, 0.6, None),
    "pcie_bus_frac": Prior("frac", 0.7, 2.0, 0.6, None),
    "matmul_frac": Prior("frac", 0.7, 2.0, 0.6, 0.5),
    "matmul_frac_8bit": Prior("frac", 0.6, 2.0, 0.6, 0.5),
    "bandwidth_frac": Prior("frac", 0.8, 1.0, 0.5, 0.5),
    "moe_matmul_frac": Prior("frac", 0.6, 2.0, 0.6, 0.8),
}
NAMES = tuple(PRIORS)
ENGINE_PARAMS = tuple(n for n in NAMES if PRIORS[n].engine_sd is not None)
FAMILY_PARAMS = tuple(n for n in NAMES if PRIORS[n].family_sd is not None)
MEASUREMENT_SD = 0.08  # log error of one published figure


@dataclass(frozen=True)
class Fit:
    """Fitted u values: the pool, each engine's departure, each family's."""

    pool: dict[str, float]
    engine: dict[str, dict[str, float]]
    family: dict[str, dict[str, float]]
    rows: int
    cost: float

    def u(self, name: str, engine: str, family: str) -> float:
        return self.pool[name] + self.engine.get(engine, {}).get(name, 0.0) + self.family.get(family, {}).get(name, 0.0)

    def value(self, name: str, engine: str, family: str) -> float:
        return float(from_u(PRIORS[name].transform, self.u(name, engine, family)))

    def timing(self, engine: str, source: str) -> EngineTiming:
        """The engine's profile section: engine-wide values, one entry per fitted family, ``other`` = the pool."""
        v = {n: self.value(n, engine, "other") for n in NAMES}
        families = {
            f: FamilyTiming(
                matmul_frac=self.value("matmul_frac", engine, f),
                matmul_frac_8bit=self.value("matmul_frac_8bit", engine, f),
                bandwidth_frac=self.value("bandwidth_frac", engine, f),
                moe_matmul_frac=self.value("moe_matmul_frac", engine, f),
            )
            for f in sorted(self.family) + ["other"]
        }
        return EngineTiming(
            source=source,
            fitted_rows=self.rows,
            step_overhead_us=v["step_overhead_s"] * US_PER_S,
            layer_overhead_us=v["layer_overhead_s"] * US_PER_S,
            decode_layer_overhead_us=v["decode_layer_overhead_s"] * US_PER_S,
            matmul_half_tokens=v["matmul_half_tokens"],
            attention_compute_frac=v["attention_compute_frac"],
            attention_bandwidth_frac=v["attention_bandwidth_frac"],
            gqa_reread_frac=v["gqa_reread_frac"],
            allreduce_overhead_us=v["allreduce_overhead_s"] * US_PER_S,
            nvlink_bus_frac=v["nvlink_bus_frac"],
            pcie_bus_frac=v["pcie_bus_frac"],
            families=families,  # type: ignore[arg-type]
        )


def _sd(group: str, name: str) -> float:
    p = PRIORS[name]
    sd = p.pool_sd if group == "pool" else p.engine_sd if group == "engine" else p.family_sd
    assert sd is not None
    return sd


def points_for(rows: Sequence[Row]) -> list[Point]:
    return [Point(scenario_for(r), KIND_OF[r.category], r.measured, r.id) for r in rows]  # type: ignore[arg-type]


class Problem:
    """The rows to fit, resolved once; ``u_layout`` maps the flat vector to (pool, δ, φ)."""

    def __init__(self, rows: Sequence[Row], catalog: Catalog, points: PointSet | None = None):
        self.rows = list(rows)
        self.points = points or PointSet(points_for(self.rows), catalog)
        self.engines = sorted({engine_key(r) for r in self.rows})
        self.families = sorted(set(self.points.family.tolist()))
        self.row_engine = np.array([self.engines.index(engine_key(r)) for r in self.rows])
        self.row_family = np.array([self.families.index(f) for f in self.points.family])
        self.layout: list[tuple[str, str, str]] = [("pool", "", n) for n in NAMES]
        self.layout += [("engine", e, n) for e in self.engines for n in ENGINE_PARAMS]
        self.layout += [("family", f, n) for f in self.families for n in FAMILY_PARAMS]
        self.prior_u = np.array(
            [float(to_u(PRIORS[n].transform, PRIORS[n].centre)) if g == "pool" else 0.0 for g, _, n in self.layout]
        )
        self.prior_sd = np.array([_sd(g, n) for g, _, n in self.layout])
        self.log_measured = np.log(self.points.measured)
        counts = {g: sum(1 for r in self.rows if r.source_group == g) for g in {r.source_group for r in self.rows}}
        typical = float(np.median(list(counts.values())))
        #: each publication weighs about the same: a row of a source with n rows weighs √(typical / n)
        self.weight = np.array([np.sqrt(typical / counts[r.source_group]) for r in self.rows])

    def row_params(self, u: np.ndarray) -> dict[str, np.ndarray]:
        """Each parameter's SI value per row."""
        n_names, n_eng, n_ep = len(NAMES), len(self.engines), len(ENGINE_PARAMS)
        pool = u[:n_names]
        eng = u[n_names : n_names + n_eng * n_ep].reshape(n_eng, n_ep)
        fam = u[n_names + n_eng * n_ep :].reshape(len(self.families), len(FAMILY_PARAMS))
        out: dict[str, np.ndarray] = {}
        for j, n in enumerate(NAMES):
            v = pool[j] + np.zeros(len(self.rows))
            if n in ENGINE_PARAMS:
                v = v + eng[self.row_engine, ENGINE_PARAMS.index(n)]
            if n in FAMILY_PARAMS:
                v = v + fam[self.row_family, FAMILY_PARAMS.index(n)]
            out[n] = from_u(PRIORS[n].transform, v)
        out["bus_frac"] = np.where(self.points.pcie, out["pcie_bus_frac"], out["nvlink_bus_frac"])
        return out

    def residuals(self, u: np.ndarray) -> np.ndarray:
        pred = self.points.predict(self.row_params(u))
        data = (np.log(np.maximum(pred, 1e-30)) - self.log_measured) / MEASUREMENT_SD * self.weight
        return np.concatenate([data, (u - self.prior_u) / self.prior_sd])

    def fit(self) -> Fit:
        res = levenberg_marquardt(self.residuals, self.prior_u.copy())
        pool = {n: float(res.u[j]) for j, n in enumerate(NAMES)}
        engine: dict[str, dict[str, float]] = {e: {} for e in self.engines}
        family: dict[str, dict[str, float]] = {f: {} for f in self.families}
        for (group, key, name), v in zip(self.layout, res.u, strict=True):
            if group == "engine":
                engine[key][name] = float(v)
            elif group == "family":
                family[key][name] = float(v)
        return Fit(pool, engine, family, len(self.rows), res.cost)


def predict_with(fit: Fit, rows: Sequence[Row], catalog: Catalog, points: PointSet | None = None) -> np.ndarray:
    """The rows' figures under ``fit`` (each row at its engine's and family's values)."""
    ps = points or PointSet(points_for(rows), catalog)
    t: dict[str, np.ndarray] = {}
    for n in NAMES:
        t[n] = np.array(
            [fit.value(n, engine_key(r), f) for r, f in zip(rows, ps.family.tolist(), strict=True)], dtype=float
        )
    t["bus_frac"] = np.where(ps.pcie, t["pcie_bus_frac"], t["nvlink_bus_frac"])
    return ps.predict(t)


def fit_rows(rows: Sequence[Row], catalog: Catalog) -> Fit:
    return Problem(rows, catalog).fit()


def leave_one_out(rows: Sequence[Row], catalog: Catalog, key) -> np.ndarray:
    """Each row predicted by a fit without every row that shares ``key(row)`` (a source, a GPU)."""
    rows = list(rows)
    out = np.empty(len(rows))
    groups = sorted({key(r) for r in rows})
    for g in groups:
        held = np.array([key(r) == g for r in rows])
        train = [r for r, h in zip(rows, held, strict=True) if not h]
        fit = fit_rows(train, catalog)
        test = [r for r, h in zip(rows, held, strict=True) if h]
        out[held] = predict_with(fit, test, catalog)
    return out
