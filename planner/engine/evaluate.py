"""The engine: validated Scenario → every metric, in one vectorised call.

``compute`` is pure and broadcasts over arrays (a sweep of a million scenarios
is one call).  ``resolve`` looks the scenario's GPU, model and draft up in a
``Catalog`` and applies the shape overrides; ``evaluate`` does both for one
scenario and returns plain Python scalars.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np
from pydantic import ValidationError

from planner.engine import parallel
from planner.engine.chunked import chunked_prefill
from planner.engine.inputs import Array, EngineInputs, MetricValue, broadcast_shape, from_specs
from planner.engine.kernel_basis import basis_for
from planner.engine.memory import kv_bytes_per_token_for_heads, memory_plan
from planner.engine.power import power_metrics
from planner.engine.prefix_reuse import hit_or_miss_prefill_s, prefix_cache_metrics
from planner.engine.prompt_cache import prompt_cache
from planner.engine.roofline import decode, prefill, ridge_batch
from planner.engine.saturation import max_throughput
from planner.engine.spec_rules import spec_defaults, spec_problems
from planner.engine.speculative import speculative
from planner.engine.step_times import step_times_s
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


#: Scenarios per piece when a large grid is computed piece by piece (``compute``): each array of a piece
#: (256 KiB) stays in the core's cache through the ~2,000 array operations, instead of streaming 8 MB
#: arrays from memory each time — 3–5 × faster on this VM for a million scenarios.
CHUNK_SCENARIOS = 32_768
#: The inputs the formulas branch on as a whole (``np.any``/``np.all`` over the grid picks a formula):
#: a grid is cut into pieces only where each is one value, so every piece takes the branches the whole
#: grid would, and every metric is the same to the bit (tests/engine/test_evaluate.py).
BRANCH_FIELDS = (
    "tp",
    "pp",
    "dp",
    "ep",
    "gpus_per_node",
    "experts",
    "window_layers",
    "compute_memory_overlap",
    "tbo",
    "has_draft_model",
    "replicated_linear_bytes",
)


def compute(x: EngineInputs) -> dict[str, MetricValue]:
    """Every metric for every scenario in ``x`` (arrays broadcast).  Pure.  A grid of more than
    ``CHUNK_SCENARIOS`` scenarios whose ``BRANCH_FIELDS`` are single values is computed piece by piece."""
    x = x.as_arrays()
    shape = broadcast_shape(x)
    size = int(np.prod(shape, dtype=np.int64))
    if size > CHUNK_SCENARIOS and all(np.size(getattr(x, f)) == 1 for f in BRANCH_FIELDS):
        return _in_pieces(x, shape, size)
    return _compute(x)


def _in_pieces(x: EngineInputs, shape: tuple[int, ...], size: int) -> dict[str, MetricValue]:
    """``_compute`` over flat pieces of ``CHUNK_SCENARIOS`` scenarios, put back in the grid's shape."""
    flat = {
        f.name: np.broadcast_to(a, shape).reshape(-1)
        for f in fields(x)
        if (a := np.asarray(getattr(x, f.name))).size > 1
    }
    pieces = [
        _compute(x.with_(**{k: v[a : a + CHUNK_SCENARIOS] for k, v in flat.items()}))
        for a in range(0, size, CHUNK_SCENARIOS)
    ]
    out: dict[str, MetricValue] = {}
    for key, first in pieces[0].items():
        if np.ndim(first) == 0:  # a metric of the shared inputs only: the same in every piece
            out[key] = first
        else:
            out[key] = np.concatenate([np.broadcast_to(p[key], np.shape(p[key])) for p in pieces]).reshape(shape)
    return out


def _compute(x: EngineInputs) -> dict[str, MetricValue]:
    out: dict[str, MetricValue] = {}
    plan = memory_plan(x)
    layout = {k: plan.pop(k) for k in ("gpus_per_instance", "memory_stage_layers")}
    out.update(plan)
    out["kv_bytes_per_token_mha"] = kv_bytes_per_token_for_heads(x, x.heads)
    out["kv_bytes_per_token_mqa"] = kv_bytes_per_token_for_heads(x, 1.0)

    pre = prefill(x)  # the whole prompt (a prefix-cache miss): the roofline's prefill point
    ttft = pre.time_s
    hit_s = hit_or_miss_prefill_s(x, ttft)  # a prefix-cache hit's prefill (the miss's where no hit finds a token)
    out.update(prefix_cache_metrics(x, pre, hit_s))
    out.update(
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
    out.update(chunked_prefill(x, prefill_s=ttft, decode_s=plain_tpot, hit_prefill_s=hit_s))
    spec = speculative(x, plain_step_s=plain_tpot)
    out.update(spec)
    tpot = np.where(x.spec_on > 0, spec["spec_tpot_s"], plain_tpot)
    out.update(_rates(x, out["ttft_s"], tpot))
    # power: the step mix of the same times as the rates (the headline TTFT, prefix-cache hits included)
    out.update(power_metrics(x, pre, dec, out["ttft_s"], tpot, out["output_tokens_per_s"], _replica_gpus(x)))
    out.update(prompt_cache(x))
    out.update(
        decode_overhead_s=dec.overhead_s,  # the efficiency terms in force (docs/model.md §4)
        prefill_overhead_s=pre.overhead_s,
        matmul_frac=x.mfu,
        bandwidth_frac=x.mbu,
    )
    out.update(layout)
    out.update(_layout_metrics(x, dec, out))
    out.update(max_throughput(x, out["max_concurrent_sequences"]))
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
    """Throughput, cost and latency (docs/model.md §10); ``ttft``: the idle prefill expected over the GPUs'
    prefix-cache hits (``prefix_reuse``), the time each request's prefill holds the replica.

    decode only          B / TPOT                                   (tokens/s while every stream decodes)
    serving (per replica) B·O / (B · TTFT + O · TPOT)               (each request's prefill takes the
                                                                    GPU for TTFT; its O tokens share
                                                                    O decode steps with B − 1 others;
                                                                    pp stages and dp ranks hold a prompt
                                                                    for TTFT · u / (pp · dp))
    replica time per request  t_req = t_pre + O · TPOT / B          (= O / serving rate; t_pre the prefill's)
    GPU cost                  per request = price per replica-second · t_req; per million output tokens
                              = that / O (prefill included: beside the serving rate); per million input
                              tokens = price · t_pre / P (the prefill's share); decode-only per million
                              output tokens = price · TPOT / B (beside the decode-only rate; the two shares
                              add up: P · input + O · decode-only = per request); per million tokens
                              = per request / (P + O)
    static batch          B·O / (t_prefill(B prompts together) + (O − 1) · TPOT) / GPUs (tp · dp · pp)
    request latency       TTFT + (O − 1) · TPOT                     (the first token comes from the prefill)
    """
    decode_rate = x.batch / tpot
    plain = parallel.plain_layout(x)
    gpus = _replica_gpus(x)
    # a prompt holds the instance for TTFT; pipelined stages and dp ranks prefill several at once
    held = ttft if plain else ttft * parallel.layer_imbalance(x) / (x.pp * x.dp)
    decode_share_s = x.output_tokens * tpot / x.batch
    serving_rate = x.output_tokens / (held + decode_share_s)
    # batched_prefill(x).time_s: every prompt of the batch in one step
    static_s = (
        step_times_s(x, 0.0, 0.0, [(x.batch * x.prompt_tokens, 0.0, x.batch)])[0] + (x.output_tokens - 1.0) * tpot
    )
    per_s = x.price_per_gpu_hour_usd * gpus / S_PER_HOUR
    per_request = per_s * (held + decode_share_s)
    return dict(
        tpot_s=tpot,
        decode_tokens_per_s=decode_rate,
        decode_tokens_per_s_per_gpu=decode_rate / gpus,
        output_tokens_per_s=serving_rate,
        output_tokens_per_s_per_gpu=serving_rate / gpus,
        prefill_time_per_request_s=held,
        static_batch_latency_s=static_s,
        static_batch_output_tokens_per_s_per_gpu=x.batch * x.output_tokens / static_s / gpus,
        price_per_replica_hour_usd=x.price_per_gpu_hour_usd * gpus,
        cost_per_million_output_tokens_usd=per_request / x.output_tokens * TOKENS_PER_MTOK,
        decode_cost_per_million_output_tokens_usd=per_s * tpot / x.batch * TOKENS_PER_MTOK,
        cost_per_million_input_tokens_usd=per_s * held / x.prompt_tokens * TOKENS_PER_MTOK,
        cost_per_million_tokens_usd=per_request / (x.prompt_tokens + x.output_tokens) * TOKENS_PER_MTOK,
        cost_per_request_usd=per_request,
        request_latency_s=ttft + (x.output_tokens - 1.0) * tpot,
    )


@dataclass(frozen=True)
class Result:
    resolved: Resolved
    inputs: EngineInputs
    metrics: dict[str, float | bool]
    time_basis: str = ""  # what every time figure rests on (kernel_basis.basis_for: measured kernels or roofline)


def _scalar(v: MetricValue) -> float | bool:
    v = np.asarray(v)
    return bool(v) if v.dtype == bool else float(v)


def time_basis(r: Resolved) -> str:
    """ "measured kernels (vLLM 0.24.0, NVIDIA H100 SXM)" or "fitted roofline (vLLM 0.19.0 profile, …)"."""
    return basis_for(r.gpu, r.model, r.scenario, r.engine).label


def evaluate(s: Scenario, catalog: Catalog) -> Result:
    r = resolve(s, catalog)
    x = inputs_for(r)
    metrics = {k: _scalar(v) for k, v in compute(x).items()}
    return Result(r, x, metrics, time_basis(r))
