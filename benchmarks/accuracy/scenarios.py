"""A published row as the kvplan scenario that describes the same deployment."""

from __future__ import annotations

from typing import Any

from benchmarks.accuracy.rows import ENGINE_PROFILE, Row, dtype_key, engine_key, gpu_key, model_key
from planner.model.scenario import Scenario


def scenario_for(row: Row, **overrides: Any) -> Scenario:
    """The row's GPU, model, tp, dtypes, lengths and server limits as a Scenario.

    ``prefix=0`` (no prompt caching in these runs); the batch is the row's (static batch) or 1;
    a zero-token prompt (a fitted zero-context intercept) is one token; the engine is the
    row's shipped profile, else the default."""
    fields: dict[str, Any] = dict(
        gpu=gpu_key(row),
        model=model_key(row),
        tp=row.tp,
        wdtype=dtype_key(row.wdtype),
        kvdtype=dtype_key(row.kvdtype),
        prompt=max(row.prompt or 1, 1),
        output=row.output or 1,
        prefix=0,
        batch=row.batch or 1,
        engine=ENGINE_PROFILE.get(engine_key(row), ENGINE_PROFILE["vllm"]),
    )
    if row.mem_util is not None:
        fields["mem_util"] = row.mem_util
    if row.max_num_batched_tokens is not None:
        fields["chunk"] = row.max_num_batched_tokens
    if row.block_size is not None:
        fields["block"] = row.block_size
    fields.update(overrides)
    return Scenario(**fields)
