"""Sweeps: a base Scenario plus value lists per key → one long-form DataFrame.

Numeric keys broadcast as arrays into one ``compute`` call per combination of
categorical keys (GPU, model, dtypes, TTL, …).  Each row holds the scenario's
inputs (link keys) followed by every metric: the CSV schema shared by the CLI
and the dashboard.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from planner.engine.evaluate import compute, inputs_for, resolve, time_basis
from planner.errors import ScenarioError, SweepError, format_validation_error
from planner.executors import Executor
from planner.export import present_frame
from planner.links import FIELDS, _coerce, _field_ok, allowed_range
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.model.weight_plan import resolve_weights
from planner.units import GB, TOKENS_PER_MTOK

#: Scenario key → (EngineInputs field, scale from the key's unit to SI).
NUMERIC_KEYS: dict[str, tuple[str, float]] = {
    "tp": ("tp", 1.0),
    "batch": ("batch", 1.0),
    "prompt": ("prompt_tokens", 1.0),
    "output": ("output_tokens", 1.0),
    "chunk": ("chunk_tokens", 1.0),
    "hit": ("cache_hit_rate", 1.0),
    "prefix": ("prefix_tokens", 1.0),
    "rpm": ("requests_per_min_per_prefix", 1.0),
    "gamma": ("gamma", 1.0),
    "alpha": ("alpha", 1.0),
    "draft_ratio": ("draft_ratio", 1.0),
    "mfu": ("mfu", 1.0),
    "mbu": ("mbu", 1.0),
    "mem_util": ("mem_util", 1.0),
    "block": ("block_tokens", 1.0),
    "price_in": ("price_in_per_token_usd", 1 / TOKENS_PER_MTOK),
    "price_out": ("price_out_per_token_usd", 1 / TOKENS_PER_MTOK),
    "gpu_price": ("price_per_gpu_hour_usd", 1.0),
}
#: Largest sweep: ≈ 80 s and ≈ 0.9 GB of CSV on this machine (see ROW_*_ESTIMATE).
MAX_SWEEP_ROWS = 1_000_000


def parse_axis(key: str, spec: str) -> list:
    """Values for one key: ``a,b,c``; ``start:stop:step`` (inclusive); ``start:stop:xF`` (geometric)."""
    if key not in FIELDS:
        raise SweepError([f"{key!r}: unknown key; allowed keys: {', '.join(FIELDS)}"])
    parts = spec.split(":")
    if len(parts) == 3 and key in NUMERIC_KEYS:
        try:
            start, stop = float(parts[0]), float(parts[1])
            geometric = parts[2].startswith("x")
            step = float(parts[2][1:] if geometric else parts[2])
        except ValueError:
            raise SweepError([f"{key}={spec!r}: range must be start:stop:step or start:stop:xFACTOR"]) from None
        if (
            not all(np.isfinite([start, stop, step]))
            or (step <= 1 if geometric else step <= 0)
            or start > stop
            or (geometric and start <= 0)
        ):
            raise SweepError([f"{key}={spec!r}: need start ≤ stop, step > 0 (or factor > 1 with start > 0)"])
        n = (
            int(np.floor(np.log(stop / start) / np.log(step) + 1e-9)) + 1
            if geometric
            else int(np.floor((stop - start) / step + 1e-9)) + 1
        )
        if n > MAX_SWEEP_ROWS:
            raise SweepError([f"{key}={spec!r}: {n:,} values; a sweep has at most {MAX_SWEEP_ROWS:,} rows"])
        raws = [repr(start * step**i) if geometric else repr(start + i * step) for i in range(n)]
        if FIELDS[key].annotation in (int, int | None):
            raws = [str(int(round(float(r)))) for r in raws]
    else:
        raws = [p.strip() for p in spec.split(",")]
    values, problems = [], []
    for raw in raws:
        try:
            v = _coerce(key, raw)
        except ValueError as exc:
            problems.append(f"{key}={raw!r}: {exc}; allowed: {allowed_range(key)}")
            continue
        reason = _field_ok(key, v)
        if reason:
            problems.append(f"{key}={raw!r}: {reason.lower()}; allowed: {allowed_range(key)}")
            continue
        values.append(v)
    if problems:
        raise SweepError(problems)
    return list(dict.fromkeys(values))


#: Rows computed and presented at a time: bounds the memory of a long sweep.
CHUNK_ROWS = 20_000
#: Measured on this 2-core machine (benchmarks/sweep_bench.py): presenting and writing one row of
#: inputs + metrics as CSV takes ≈ 80 µs and ≈ 0.9 kB; used to state a sweep's cost before it runs.
ROW_SECONDS_ESTIMATE = 80e-6
ROW_CSV_BYTES_ESTIMATE = 900


def sweep_rows(axes: Mapping[str, Sequence]) -> int:
    """Rows a sweep over ``axes`` produces (the product of the axes' lengths)."""
    return int(np.prod([len(v) for v in axes.values()], dtype=np.float64)) if axes else 1


def check_sweep_budget(axes: Mapping[str, Sequence]) -> int:
    """The sweep's row count, or SweepError stating its estimated time and size against the limit."""
    n_rows = sweep_rows(axes)
    if n_rows > MAX_SWEEP_ROWS:
        raise SweepError(
            [
                f"sweep has {n_rows:,} rows (≈ {n_rows * ROW_SECONDS_ESTIMATE:,.0f} s and "
                f"≈ {n_rows * ROW_CSV_BYTES_ESTIMATE / GB:,.1f} GB of CSV); the limit is {MAX_SWEEP_ROWS:,} rows: "
                "narrow a range or use a coarser step"
            ]
        )
    return n_rows


def _combination(base: Scenario, update: dict[str, Any], prefix_swept: bool, catalog: Catalog) -> Scenario:
    """The base scenario with one combination of categorical values (validated, resolvable)."""
    try:
        s = Scenario.model_validate({**base.model_dump(), **update, **({"prefix": 0} if prefix_swept else {})})
    except ValidationError as exc:
        raise SweepError([f"{update}: {format_validation_error(exc)}"]) from None
    r = resolve(s, catalog)  # ScenarioError names an unknown GPU, model or engine
    return s.with_changes(engine=r.engine.key)  # the engine version in force, named (vllm → vllm@0.19)


def _chunk_frame(s: Scenario, base: Scenario, catalog: Catalog, flat: dict[str, np.ndarray]) -> pd.DataFrame:
    """Inputs (link keys) then every metric for one categorical combination × a slice of the numeric grid."""
    x = inputs_for(resolve(s, catalog))
    changes = {NUMERIC_KEYS[k][0]: v * NUMERIC_KEYS[k][1] for k, v in flat.items()}
    if "prefix" in flat or "prompt" in flat:
        prompt = flat.get("prompt", s.prompt)
        prefix = flat.get("prefix", base.prefix)
        changes["prefix_tokens"] = np.minimum(prefix, prompt)
    metrics = compute(x.with_(**changes).as_arrays())
    n = max([len(v) for v in flat.values()], default=1)
    cols: dict[str, Any] = {k: np.broadcast_to(np.asarray(getattr(s, k), dtype=object), (n,)) for k in FIELDS}
    for k, v in flat.items():
        cols[k] = v.astype(int) if FIELDS[k].annotation in (int, int | None) else v
    if "prefix" in flat or "prompt" in flat:
        cols["prefix"] = np.asarray(changes["prefix_tokens"]).astype(int)
    for k, v in metrics.items():
        cols[k] = np.broadcast_to(v, (n,))
    r = resolve(s, catalog)
    cols["time_basis"] = np.broadcast_to(np.asarray(time_basis(r), dtype=object), (n,))
    formats = resolve_weights(r.model, r.scenario).describe()  # kvdtype / wdtype are categorical: one per chunk
    cols["weight_formats"] = np.broadcast_to(np.asarray(formats, dtype=object), (n,))
    return pd.DataFrame(cols)


def _chunk_task(shared: tuple[Scenario, Catalog], task: tuple[Scenario, dict[str, np.ndarray]]) -> pd.DataFrame:
    """One chunk of a sweep as an executor task (``planner.executors``)."""
    base, catalog = shared
    s, flat = task
    return _chunk_frame(s, base, catalog, flat)


def _in_order(executor: Executor, tasks: list, shared: tuple) -> Iterator[pd.DataFrame]:
    """The tasks' frames in task order, each as soon as every one before it is done (the others wait)."""
    waiting: dict[int, pd.DataFrame] = {}
    nxt = 0
    for event in executor.run(_chunk_task, tasks, shared):
        if event is None:
            continue
        waiting[event[0]] = event[1]
        while nxt in waiting:
            yield waiting.pop(nxt)
            nxt += 1


def sweep_chunks(
    base: Scenario,
    axes: Mapping[str, Sequence],
    catalog: Catalog,
    chunk_rows: int = CHUNK_ROWS,
    executor: Executor | None = None,
) -> Iterator[pd.DataFrame]:
    """``sweep``'s rows, ``chunk_rows`` at a time (raw SI values; present them with ``present_frame``),
    computed here or, with ``executor``, as its tasks (the local pool, Ray) and yielded in the same order.

    The budget is checked and every categorical combination validated before the first row is
    computed, so a sweep that cannot run fails at once."""
    check_sweep_budget(axes)
    numeric = {k: np.asarray(v, dtype=float) for k, v in axes.items() if k in NUMERIC_KEYS}
    categorical = {k: list(v) for k, v in axes.items() if k not in NUMERIC_KEYS}
    grids = np.meshgrid(*numeric.values(), indexing="ij") if numeric else []
    flat = {k: g.ravel() for k, g in zip(numeric, grids, strict=True)}
    n = max([len(v) for v in flat.values()], default=1)
    combos, problems = [], []
    for combo in itertools.product(*categorical.values()):
        try:
            combos.append(_combination(base, dict(zip(categorical, combo, strict=True)), "prefix" in flat, catalog))
        except (SweepError, ScenarioError) as exc:
            problems.extend(exc.problems)
    if problems:
        raise SweepError(problems)
    tasks = [(s, {k: v[a : a + chunk_rows] for k, v in flat.items()}) for s in combos for a in range(0, n, chunk_rows)]
    if executor is not None:
        yield from _in_order(executor, tasks, (base, catalog))
        return
    for s, part in tasks:
        yield _chunk_frame(s, base, catalog, part)


def sweep(base: Scenario, axes: Mapping[str, Sequence], catalog: Catalog) -> pd.DataFrame:
    """Every combination of ``axes`` values over ``base``: inputs + metrics, one row each."""
    return pd.concat(list(sweep_chunks(base, axes, catalog)), ignore_index=True)


def scenario_frame(scenario: Scenario, catalog: Catalog) -> pd.DataFrame:
    """The one-row inputs + metrics table, presented (the CSV the CLI and the dashboard export)."""
    return present_frame(sweep(scenario, {}, catalog))
