"""``kvplan predict``: one benchmark run of the scenario's deployment, simulated.

The scenario (a link) is the server — model, GPU, layout, dtypes, engine version, and its scheduler
limits ``batch`` (vLLM ``--max-num-seqs``) and ``chunk`` (``--max-num-batched-tokens``); the options
(``PredictOptions``) are the benchmark client's.  The requests (``workload.bench_workload``) go through
the simulator with the engine's scheduler — decodes first, then prefill chunks in the rest of the
step's token budget, so chunks and decodes share steps as they do in the engine — one replica, with a
closed loop of clients for ``--max-concurrency`` (``planner.sim.closed_loop``).  What it reports is
``planner.sim.serve_metrics``'s (vLLM's definitions) and, for ``--max-throughput``,
``planner.predict.trtllm``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engine.evaluate import Resolved, time_basis
from planner.engine.step_time import RooflineStepTime, StepTime
from planner.errors import ScenarioError
from planner.model.catalog import Catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.predict.options import PredictOptions
from planner.predict.workload import bench_workload
from planner.sim.config import SimConfig
from planner.sim.results import REJECTED_CONTEXT, REJECTED_KV, SimResult
from planner.sim.serve_metrics import ServeStats, serve_stats
from planner.sim.simulate import fit_problems, sim_inputs, simulate
from planner.sim.workload import Workload


@dataclass(frozen=True)
class Prediction:
    """A simulated benchmark run: its settings, the simulation and vLLM's statistics of it."""

    scenario: Scenario
    resolved: Resolved
    options: PredictOptions
    result: SimResult
    stats: ServeStats
    traffic: str  # "random" or the trace's name
    notes: tuple[str, ...]
    time_basis: str  # what the step times rest on (engine.evaluate.time_basis), or the caller's step model

    @property
    def gpus(self) -> int:
        """GPUs of the one server benchmarked (tp · pp · dp)."""
        s = self.scenario
        return Layout(s.tp, s.pp, s.ep, s.dp).gpus

    @property
    def engine_label(self) -> str:
        return f"{self.resolved.engine.label} (engine={self.resolved.engine.key})"


def _notes(s: Scenario, o: PredictOptions, r: SimResult) -> list[str]:
    """What the reader of the numbers should know about this run (limits that bind, refusals)."""
    notes = []
    if o.max_concurrency is not None and o.max_concurrency > s.batch:
        notes.append(
            f"--max-concurrency {o.max_concurrency} > batch {s.batch} (the server's max_num_seqs): "
            f"the server runs at most {s.batch} at once, the rest queue inside it (their TTFT includes the wait)"
        )
    refusals = ((REJECTED_CONTEXT, "longer than the context window"), (REJECTED_KV, "larger than the KV cache"))
    for status, why in refusals:
        count = int((r.status == status).sum())
        if count:
            notes.append(f"{count} request(s) {why}: the server refuses them (Failed requests)")
    if r.summary.get("preemptions", 0.0) > 0:
        notes.append(f"{int(r.summary['preemptions'])} preemption(s): the KV cache filled and requests were recomputed")
    return notes


def predict(
    s: Scenario,
    catalog: Catalog,
    o: PredictOptions,
    trace: Workload | None = None,
    step_time: StepTime | None = None,
) -> Prediction:
    """Simulate the benchmark run ``o`` against the scenario's server (module doc).

    ``trace``: the requests' lengths (and shared prefixes) come from it.  ``step_time``: inject a step
    model (tests); by default the engine's roofline with the scenario's engine profile.  Raises
    ScenarioError when the deployment cannot run or is a fleet (the benchmark targets one server)."""
    if s.replicas > 1:
        raise ScenarioError(
            [f"replicas={s.replicas}: kvplan predict benchmarks one server, as vllm bench serve does; use replicas=1"]
        )
    r, x = sim_inputs(s, catalog)
    problems = fit_problems(s, r, x)
    if problems:
        raise ScenarioError(problems)
    w = bench_workload(o, trace)
    result = simulate(
        w,
        SimConfig.from_inputs(x, s),
        RooflineStepTime.from_inputs(x) if step_time is None else step_time,
        detail=False,
        max_concurrency=o.max_concurrency,
    )
    stats = serve_stats(result, o.metric_percentiles, o.percentile_metrics)
    traffic = "random" if trace is None else (trace.name or trace.source)
    basis = time_basis(r) if step_time is None else "a step model the caller gave (not the engine's)"
    return Prediction(s, r, o, result, stats, traffic, tuple(_notes(s, o, result)), basis)
