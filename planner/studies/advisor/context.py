"""The advisor's re-run context: one scenario, its engine result, the catalog.

Every effect a finding reports is an engine answer: ``Context.rerun`` applies a
change with ``Scenario.with_changes`` (re-validated as a whole) and evaluates it
with ``engine.evaluate``; ``Context.option`` turns that into an ``Option`` with
the changed scenario's ``metric``.  Searches over tp and GPU profiles are one
vectorised ``engine.compute`` call per profile (``smallest_tp``).  A switch to
another GPU goes through ``Scenario.gpu_switch`` (the one home of the rule that a
``gpu_price`` override prices only the scenario's own GPU).  Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np

from planner.engine.evaluate import Result, compute, evaluate, inputs_for, resolve
from planner.engine.inputs import EngineInputs
from planner.engine.memory import TP_CANDIDATES
from planner.errors import ScenarioError
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.sim.slo import Slo, meets_single_request

Severity = Literal["high", "medium", "low", "info"]
SEVERITY_RANK: dict[str, int] = {"high": 0, "medium": 1, "low": 2, "info": 3}
WARNING_SEVERITIES = frozenset({"high", "medium", "low"})


def _field_bound(name: str, bound: Literal["ge", "le"]) -> float:
    """A Scenario field's ``ge``/``le`` limit, so the searches never propose an invalid value."""
    return next(getattr(m, bound) for m in Scenario.model_fields[name].metadata if getattr(m, bound, None) is not None)


MAX_BATCH = int(_field_bound("batch", "le"))
MAX_TP = int(_field_bound("tp", "le"))
MIN_CHUNK = int(_field_bound("chunk", "ge"))

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
        if self.before <= 0 or self.after <= 0 or not math.isfinite(self.before * self.after):
            return math.inf  # a change from or to nothing, or to or from never (an inf TTFT)
        return abs(math.log(self.after / self.before))


#: ``ok(metrics, scenario)``: a vectorised test over a grid of engine metrics.
GridTest = Callable[[Mapping[str, np.ndarray], Scenario], np.ndarray]
#: ``accept(option, result)``: whether a re-run change is worth proposing.
Accept = Callable[[Option, Result], bool]


def fits(metrics: Mapping[str, Any]) -> bool:
    """The weights fit and the KV cache holds the whole batch."""
    return bool(metrics["fits"]) and bool(metrics["batch_fits_memory"])


def meets_slos(metrics: Mapping[str, Any], scenario: Scenario) -> bool:
    """TTFT of a prompt arriving under load (chunked), the decode step and the request latency within the
    set targets (``slo.meets_single_request``)."""
    return bool(
        meets_single_request(
            Slo.of(scenario),
            np.asarray(metrics["chunked_ttft_s"]),
            np.asarray(metrics["tpot_s"]),
            np.asarray(metrics["request_latency_s"]),
        )
    )


def _grid_cell(v: Any, row: int, rows: int) -> float | bool:
    """Row ``row`` of a metric of a ``rows``-row grid (a 0-d metric is every row's)."""
    a = np.asarray(v)
    cell = a if a.ndim == 0 else np.broadcast_to(a, (rows,))[row]
    return bool(cell) if cell.dtype == bool else float(cell)


def _replica_price(_option: Option, result: Result) -> float:
    return float(result.metrics["price_per_replica_hour_usd"])


@dataclass(frozen=True)
class Context:
    """One evaluated scenario, and the means to re-run it with a change."""

    scenario: Scenario
    result: Result
    catalog: Catalog

    @property
    def metrics(self) -> Mapping[str, Any]:
        return self.result.metrics

    @property
    def inputs(self) -> EngineInputs:
        """The engine inputs as arrays (for vectorised searches with ``with_``)."""
        return self.result.inputs.as_arrays()

    @property
    def gpu(self) -> GPU:
        return self.result.resolved.gpu

    @property
    def model(self) -> ModelSpec:
        return self.result.resolved.model

    def changed(self, changes: Mapping[str, Any]) -> Scenario | None:
        """The scenario with ``changes``, re-validated; None when a value is out of range.  A new tp keeps
        expert parallelism on where the scenario has it: ep spans the new tp · dp (vLLM's grid)."""
        if "tp" in changes and "ep" not in changes and self.scenario.ep > 1:
            changes = {**changes, "ep": int(changes["tp"]) * self.scenario.dp}
        try:
            return self.scenario.with_changes(**changes)
        except ScenarioError:
            return None

    def rerun(self, changes: Mapping[str, Any]) -> Result | None:
        """The engine's result for the changed scenario; None when it is invalid or cannot be evaluated."""
        changed = self.changed(changes)
        if changed is None:
            return None
        try:
            return evaluate(changed, self.catalog)
        except ScenarioError:
            return None

    def option(self, action: str, changes: Mapping[str, Any], metric: str) -> tuple[Option, Result] | None:
        """``changes`` re-run: the option (its ``metric`` after the change) and the full result."""
        result = self.rerun(changes)
        if result is None:
            return None
        return Option(action, dict(changes), metric, metric_value(result.metrics, metric)), result

    def smallest_tp(self, gpu_key: str, ok: GridTest) -> int | None:
        """Smallest tp in 1, 2, 4 … 64 on ``gpu_key`` where ``ok(metrics, scenario)`` holds (one vectorised call)."""
        on_gpu = self.changed(self.scenario.gpu_switch(gpu_key))
        if on_gpu is None:
            return None
        try:
            inputs = inputs_for(resolve(on_gpu, self.catalog))
        except ScenarioError:
            return None
        tps = TP_CANDIDATES[TP_CANDIDATES <= MAX_TP]
        eps = tps * on_gpu.dp if on_gpu.ep > 1 else np.ones_like(tps)  # expert parallelism stays on (``changed``)
        grid = compute(inputs.with_(tp=tps, ep=eps))
        good = np.asarray(ok(grid, on_gpu)) & np.asarray(grid["config_valid"])  # only tps the engine accepts
        return int(tps[np.argmax(good)]) if good.any() else None

    def cheapest_gpu_switch(
        self,
        ok: GridTest,
        metric: str,
        accept: Accept,
        cost: Callable[[Option, Result], float] = _replica_price,
    ) -> Option | None:
        """Among the other GPU profiles, each at its smallest tp where ``ok`` holds, the
        switch that ``accept`` takes with the lowest ``cost`` (default: price per replica-hour;
        the first profile in key order wins a tie).

        One vectorised ``compute`` over every profile × tp (``ok`` sees the grid and this scenario:
        the tests read its targets, which a GPU switch keeps); each profile's option is its row at
        the smallest tp that passes — the metrics ``evaluate`` gives the switched scenario
        (tests/studies/test_advisor.py holds the two equal)."""
        tps = TP_CANDIDATES[TP_CANDIDATES <= MAX_TP]
        keys, stacked = self._switch_inputs(tps)
        if not keys:
            return None
        grid = compute(EngineInputs(**stacked))
        good = (np.asarray(ok(grid, self.scenario)) & np.asarray(grid["config_valid"])).reshape(len(keys), tps.size)
        best: tuple[float, Option] | None = None
        for i, (key, resolved, inputs) in enumerate(keys):
            if not good[i].any():
                continue
            j = int(np.argmax(good[i]))
            tp = int(tps[j])
            row = i * tps.size + j
            metrics = {k: _grid_cell(v, row, good.size) for k, v in grid.items()}
            action = f"Switch to {self.catalog.gpus[key].name} at tp={tp}."
            changes = self.scenario.gpu_switch(key, tp)
            option = Option(action, dict(changes), metric, metric_value(metrics, metric))
            result = Result(resolved, inputs, metrics)
            if accept(option, result):
                price = cost(option, result)
                if best is None or price < best[0]:
                    best = (price, option)
        return best[1] if best else None

    def _switch_inputs(self, tps: np.ndarray) -> tuple[list[tuple[str, Any, EngineInputs]], dict[str, np.ndarray]]:
        """(key, resolved, inputs) of every other priced profile the scenario can move to, and their inputs
        stacked as profile-major rows × ``tps`` (tp, and ep where expert parallelism is on, set per row)."""
        keys: list[tuple[str, Any, EngineInputs]] = []
        for key in sorted(self.catalog.gpus):
            if key == self.scenario.gpu or self.catalog.gpus[key].price_per_gpu_hour_usd <= 0:
                continue  # an unpriced profile (no published price) is never "the cheaper switch"
            on_gpu = self.changed(self.scenario.gpu_switch(key))
            if on_gpu is None:
                continue
            try:
                resolved = resolve(on_gpu, self.catalog)
            except ScenarioError:
                continue
            keys.append((key, resolved, inputs_for(resolved)))
        if not keys:
            return keys, {}
        n = tps.size
        stacked = {
            f.name: np.concatenate([np.broadcast_to(np.asarray(getattr(x, f.name), float), (n,)) for _, _, x in keys])
            for f in fields(EngineInputs)
        }
        stacked["tp"] = np.tile(tps, len(keys))
        eps = [tps * r.scenario.dp if r.scenario.ep > 1 else np.ones_like(tps) for _, r, _ in keys]
        stacked["ep"] = np.concatenate(eps)  # expert parallelism stays on (``changed``)
        return keys, stacked

    def finding(
        self,
        id: str,
        severity: Severity,
        title: str,
        explanation: str,
        metric: str,
        chosen: Option | None,
        effect: str,
        no_change: str = "",
        options: Sequence[Option] = (),
    ) -> Finding:
        """A finding proposing ``chosen`` (``metric`` before from this scenario, after from the re-run),
        the other ``options`` as alternatives; with no ``chosen`` change, ``no_change`` is the action."""
        if chosen is None:
            before = metric_value(self.metrics, metric)
            return Finding(id, severity, title, explanation, no_change, effect, metric, before, before, {}, ())
        return Finding(
            id,
            severity,
            title,
            explanation,
            chosen.action,
            effect,
            chosen.metric,
            metric_value(self.metrics, chosen.metric),
            chosen.after,
            dict(chosen.changed_keys),
            tuple(o for o in options if o is not chosen),
        )
