"""The engine: validated Scenario → every metric, in one vectorised call.

``compute`` is pure and broadcasts over arrays (a sweep of a million scenarios
is one call).  ``resolve`` looks the scenario's GPU, model and draft up in a
``Catalog`` and applies the shape overrides; ``evaluate`` does both for one
scenario and returns plain Python scalars.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from pydantic import ValidationError

from planner.engine import parallel
from planner.engine.chunked import chunked_prefill
from planner.engine.inputs import Array, EngineInputs, MetricValue, from_specs
from planner.engine.memory import kv_bytes_per_token_for_heads, memory_plan
from planner.engine.power import power_metrics
from planner.engine.prompt_cache import prompt_cache
from planner.engine.roofline import batched_prefill, decode, prefill, ridge_batch
from planner.engine.spec_rules import spec_defaults, spec_problems
from planner.engine.speculative import speculative
from planner.engine.validity import config_problems, fit_defaults, format_notes, format_problems, kv_replication_note
from planner.errors import ScenarioError, format_validation_error
from planner.model.catalog import Catalog
from planner.model.custom_model import decode_model
from planner.model.engine_profile import EngineProfile
from planner.model.engine_versions import known_text
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.units import S_PER_HOUR, TOKENS_PER_MTOK

CUSTOM_MODEL = "custom"
SHAPE_KEYS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab")


@dataclass(frozen=True)
class Resolved:
    """A scenario with its catalog entries looked up (and its shape overrides applied)."""

    scenario: Scenario
    gpu: GPU
    model: ModelSpec
    draft: ModelSpec | None
    engine: EngineProfile
    notes: tuple[str, ...] = ()  # defaults moved to fit what the user typed; KV heads replicated


def apply_overrides(model: ModelSpec, s: Scenario) -> ModelSpec:
    """The preset with the scenario's shape overrides; ScenarioError names the keys if inconsistent."""
    changes = {k: getattr(s, k) for k in SHAPE_KEYS if getattr(s, k) is not None}
    if not changes:
        return model
    if model.is_mla and {"kv_heads", "head_dim"} & changes.keys():
        raise ScenarioError(
            [f"{k}: not applicable to an MLA model ({model.name})" for k in ("kv_heads", "head_dim") if k in changes]
        )
    data = model.model_dump()
    data.update(changes)
    data["name"] = f"{model.name} (custom)"
    data["published_params"] = 0.0
    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError([f"shape override: {format_validation_error(exc)}"]) from None


def resolve(s: Scenario, catalog: Catalog) -> Resolved:
    """Look the scenario's GPU, model, draft and engine up; ScenarioError names every unknown key."""
    problems = []
    gpu = catalog.profile(s.gpu)
    if gpu is None:
        problems.append(f"gpu={s.gpu!r}: unknown GPU profile; choose one of {', '.join(catalog.profile_keys())}")
    model = catalog.models.get(s.model)
    if s.model == CUSTOM_MODEL:
        try:
            model = decode_model(s.custom, name=s.custom_name or "Custom model")
        except ValueError as exc:
            problems.append(str(exc))
    elif model is None:
        problems.append(f"model={s.model!r}: unknown model preset; choose one of {', '.join(sorted(catalog.models))}")
    draft = None
    if s.draft:
        draft = catalog.models.get(s.draft)
        if draft is None:
            problems.append(f"draft={s.draft!r}: unknown model preset")
    engine = catalog.engine(s.engine)
    if engine is None:
        problems.append(f"engine={s.engine!r}: unknown engine or version; choose one of {known_text(catalog.engines)}")
    if problems:
        raise ScenarioError(problems)
    return _checked(Resolved(s, gpu, apply_overrides(model, s), draft, engine))  # type: ignore[arg-type]


def _checked(r: Resolved) -> Resolved:
    """``r`` with its defaults fitted to what the user typed, or ScenarioError naming each rule the
    engine would refuse (``planner.engine.validity``)."""
    s, notes = fit_defaults(r.scenario, r.model)
    s, spec_notes = spec_defaults(s, r.model)
    notes += spec_notes
    problems = config_problems(r.model, s, r.draft if s.spec else None) + spec_problems(r.model, s)
    if not problems:
        problems = format_problems(r.model, s, r.gpu, r.engine.key, r.engine.version)
    if problems:
        raise ScenarioError(problems)
    replicated = kv_replication_note(r.model, s.tp)
    notes += format_notes(r.model, s, r.gpu, r.engine.key)
    return replace(r, scenario=s, notes=tuple(notes) + ((replicated,) if replicated else ()))


def inputs_for(r: Resolved) -> EngineInputs:
    return from_specs(r.gpu, r.model, r.scenario, r.draft, r.engine)


def compute(x: EngineInputs) -> dict[str, MetricValue]:
    """Every metric for every scenario in ``x`` (arrays broadcast).  Pure."""
    x = x.as_arrays()
    out: dict[str, MetricValue] = {}
    plan = memory_plan(x)
    layout = {k: plan.pop(k) for k in ("gpus_per_instance", "memory_stage_layers")}
    out.update(plan)
    out["kv_bytes_per_token_mha"] = kv_bytes_per_token_for_heads(x, x.heads)
    out["kv_bytes_per_token_mqa"] = kv_bytes_per_token_for_heads(x, 1.0)

    pre = prefill(x)
    ttft = pre.time_s
    out.update(
        ttft_s=ttft,
        prefill_compute_bound=pre.compute_bound,
        prefill_flop=pre.flop,
        prefill_bytes=pre.bytes,
        prefill_compute_s=pre.compute_s,
        prefill_memory_s=pre.memory_s,
        prefill_comm_s=pre.comm_s,
    )
    dec = decode(x)
    plain_tpot = dec.time_s
    out.update(
        plain_tpot_s=plain_tpot,
        decode_compute_bound=dec.compute_bound,
        decode_flop=dec.flop,
        decode_bytes=dec.bytes,
        decode_compute_s=dec.compute_s,
        decode_memory_s=dec.memory_s,
        decode_comm_s=dec.comm_s,
        ridge_batch=ridge_batch(x),
    )
    out.update(chunked_prefill(x, prefill_s=ttft, decode_s=plain_tpot))
    spec = speculative(x, plain_step_s=plain_tpot)
    out.update(spec)
    tpot = np.where(x.spec_on > 0, spec["spec_tpot_s"], plain_tpot)
    out.update(_rates(x, ttft, tpot))
    out.update(power_metrics(x, pre, dec, ttft, tpot, out["output_tokens_per_s"], _replica_gpus(x)))
    out.update(prompt_cache(x, prefill_s=ttft))
    out.update(
        decode_overhead_s=dec.overhead_s,  # the efficiency terms in force (docs/model.md §4)
        prefill_overhead_s=pre.overhead_s,
        matmul_frac=x.mfu,
        bandwidth_frac=x.mbu,
    )
    out.update(layout)
    out.update(_layout_metrics(x, dec, out))
    return out


def _layout_metrics(x: EngineInputs, dec, out: dict[str, MetricValue]) -> dict[str, MetricValue]:
    """The layout's time terms (docs/model.md "Parallelism") and the disaggregated KV transfer between two
    instances of this layout (``parallel.kv_transfer_s``: each GPU sends its share over its own NIC)."""
    return dict(
        decode_exchange_s=np.broadcast_to(dec.exchange_s, np.shape(dec.comm_s)).astype(float),
        decode_send_s=np.broadcast_to(dec.send_s, np.shape(dec.comm_s)).astype(float),
        decode_pipeline_s=np.broadcast_to(dec.pipeline_s, np.shape(dec.comm_s)).astype(float),
        decode_comm_frac=dec.comm_frac,
        kv_transfer_bytes_per_request=x.prompt_tokens * out["kv_bytes_per_token"],
        kv_transfer_s=parallel.kv_transfer_s(x, x, x.prompt_tokens),
    )


def _replica_gpus(x: EngineInputs) -> Array:
    """GPUs of one replica: tp, or tp × dp × pp for a parallel layout."""
    return x.tp if parallel.plain_layout(x) else parallel.gpus_per_instance(x)


def _rates(x: EngineInputs, ttft, tpot) -> dict[str, MetricValue]:
    """Throughput, cost and latency (docs/model.md §10).

    decode only          B / TPOT                                   (tokens/s while every stream decodes)
    serving (per replica) B·O / (B · TTFT + O · TPOT)               (each request's prefill takes the
                                                                    GPU for TTFT; its O tokens share
                                                                    O decode steps with B − 1 others;
                                                                    pp stages and dp ranks hold a prompt
                                                                    for TTFT · u / (pp · dp))
    static batch          B·O / (t_prefill(B prompts together) + (O − 1) · TPOT) / GPUs (tp · dp · pp)
    request latency       TTFT + (O − 1) · TPOT                     (the first token comes from the prefill)
    """
    decode_rate = x.batch / tpot
    plain = parallel.plain_layout(x)
    gpus = _replica_gpus(x)
    # a prompt holds the instance for TTFT; pipelined stages and dp ranks prefill several at once
    held = ttft if plain else ttft * parallel.layer_imbalance(x) / (x.pp * x.dp)
    serving_rate = x.batch * x.output_tokens / (x.batch * held + x.output_tokens * tpot)
    static_s = batched_prefill(x).time_s + (x.output_tokens - 1.0) * tpot
    return dict(
        tpot_s=tpot,
        decode_tokens_per_s=decode_rate,
        decode_tokens_per_s_per_gpu=decode_rate / gpus,
        output_tokens_per_s=serving_rate,
        output_tokens_per_s_per_gpu=serving_rate / gpus,
        static_batch_latency_s=static_s,
        static_batch_output_tokens_per_s_per_gpu=x.batch * x.output_tokens / static_s / gpus,
        price_per_replica_hour_usd=x.price_per_gpu_hour_usd * gpus,
        cost_per_million_output_tokens_usd=x.price_per_gpu_hour_usd
        * gpus
        / S_PER_HOUR
        / serving_rate
        * TOKENS_PER_MTOK,
        request_latency_s=ttft + (x.output_tokens - 1.0) * tpot,
    )


@dataclass(frozen=True)
class Result:
    resolved: Resolved
    inputs: EngineInputs
    metrics: dict[str, float | bool]


def _scalar(v: MetricValue) -> float | bool:
    v = np.asarray(v)
    return bool(v) if v.dtype == bool else float(v)


def evaluate(s: Scenario, catalog: Catalog) -> Result:
    r = resolve(s, catalog)
    x = inputs_for(r)
    metrics = {k: _scalar(v) for k, v in compute(x).items()}
    return Result(r, x, metrics)
