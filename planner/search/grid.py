"""The sizing search's grid, scored analytically in one vectorised pass per deployment kind.

Axes (``Space``; the scenario's ``search`` key says which knobs move, the rest keep its values):
  GPU profile    every priced datasheet profile (or those asked for)
  layout         ``parallel_layouts``: per GPU profile the layouts fleet sizing tries (``layouts.sizing_layouts``;
                 all GPUs at once: ``layouts.grid_layouts``):
                 tp in 1, 2, 4, 8 that vLLM accepts for the model, and the pipeline, expert-parallel and
                 data-parallel-attention layouts (multi-node ones included) that are valid and fit — for a
                 dense model only when no tp of a node fits; for an MoE model also its ep / dp layouts
  batch          max_num_seqs in ``BATCHES``            chunk  max_num_batched_tokens in ``CHUNKS``
  kvdtype        the scenario's, and fp8                wdtype the scenario's, and fp8 (its usual layout)
  spec           speculative decoding off and on (the scenario's γ, α and draft)
  disagg         colocated replicas, and prefill/decode pools (``analytic`` module doc)
Only configurations the engine accepts are points (``validity.config_valid``: tp and layout rules,
batch / dp ≤ chunk, context ≤ window).  Each point gets the per-replica capacity λ* within the SLO, its
binding constraint, replicas r = ⌈rate / λ*⌉, GPUs = r · tp · dp · pp, nodes per replica, cost, and at
that load the modelled TTFT and ITL percentiles, tokens/s per GPU (rate · O / GPUs) and per user
(1 / mean ITL), and the decode step's communication share at the point's batch (``decode_comm_frac``:
t_comm / t_step of ``roofline.decode``, the metric of that name).
Batch of a dp layout: each of its dp engines runs max_num_seqs = the batch axis's value, so the
instance's (the scenario's) batch is that × dp, as ``layouts.on_layout`` keeps it; chunk stays the
engine's max_num_batched_tokens.  A replica's memory is ``memory.memory_plan``'s (per pipeline stage,
KV × dp engines) and its step ``roofline.step_cost`` (``step_grid.LayoutStepModel``) for every layout
beyond one node's tensor parallelism.
A disaggregated point is a decode-pool configuration with the prefill pool that needs the fewest
GPUs for the same GPU, weight and KV dtypes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from planner.engine import parallel
from planner.engine.inputs import Array, EngineInputs
from planner.engine.roofline import decode
from planner.engine.validity import config_valid
from planner.model.catalog import Catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import PREFILL_POOL_BATCH, Scenario
from planner.search.analytic import (
    PrefillModel,
    ceil_replicas,
    colocated_screen,
    colocated_state,
    decode_screen,
    decode_stats,
    mean_step_s,
    operating_x,
    prefill_screen,
    screen_where,
)
from planner.search.at_capacity import capacity_columns, per_user_at_capacity, pools_per_gpu
from planner.search.grid_bases import (
    BATCHES,
    CHUNKS,
    COLOCATED,
    DISAGGREGATED,
    LAYOUT_TPS,
    Base,
    Space,
    bases,
    parallel_layouts,
)
from planner.search.kv_plan import kv_plan
from planner.search.layouts import MAX_BATCH, grid_layouts
from planner.search.power_limit import OVER_POWER, POWER_UNKNOWN, with_power
from planner.search.step_grid import ReplicaGrid, TrafficStats
from planner.sim.slo import CONSTRAINTS, LATENCIES, Slo
from planner.units import S_PER_HOUR, TOKENS_PER_MTOK


def _take(x: EngineInputs, rows: np.ndarray, ndim: int) -> EngineInputs:
    """Rows ``rows`` of a stacked ``x``, shaped (rows, 1, …) for ``ndim`` grid axes."""
    shape = (-1,) + (1,) * (ndim - 1)
    return EngineInputs(**{f.name: getattr(x, f.name)[rows].reshape(shape) for f in fields(EngineInputs)})


def instance_batch(per_engine: Array, x: EngineInputs) -> Array:
    """The instance's batch (the scenario's): each of its dp engines runs ``per_engine`` (module doc)."""
    return np.minimum(per_engine * x.dp, MAX_BATCH)


def decode_comm_frac(x: EngineInputs) -> Array:
    """The decode step's communication share at ``x.batch`` (``StepCost.comm_frac``, as the metric)."""
    return np.asarray(decode(x).comm_frac, dtype=float)


MEETS_SLO, NO_FIT, REFUSED, PREFILL_MISSES = (
    "meets the SLO",
    "does not fit in memory",
    "the engine refuses it",
    "prefill pool plus KV transfer misses the TTFT (or E2EL) target at every layout",
)
STATUSES = (
    (MEETS_SLO, NO_FIT, REFUSED, PREFILL_MISSES)
    + tuple(f"misses the SLO even at low load: {c}" for c in CONSTRAINTS)
    + (OVER_POWER, POWER_UNKNOWN)
)
MODES = (COLOCATED, DISAGGREGATED)


def _status(valid: np.ndarray, fits: np.ndarray, low_ok: np.ndarray, binding: np.ndarray) -> np.ndarray:
    """Codes into ``STATUSES``."""
    out = np.where(low_ok, 0, 4 + binding)
    out = np.where(fits, out, 1)
    return np.where(valid, out, 2)


def _cat(codes, categories: Sequence[str]) -> pd.Categorical[str]:
    """A categorical column from codes (fast to build, sort and compare; written as its strings)."""
    return pd.Categorical.from_codes(np.asarray(codes, dtype=np.int64), categories=pd.Index(list(categories)))


@dataclass(frozen=True)
class Scored:
    """The analytic points (one row each, module doc) and how many configurations were scored."""

    points: pd.DataFrame
    scored: int  # grid elements scored (colocated + prefill pool + decode pool)
    valid: int  # of them, configurations the engine accepts
    bases: list[Base]  # ``points["base"]`` indexes these


def _fleet_columns(rate: float, mean_out: float, replicas: Array, gpus: Array, price: Array) -> dict[str, Array]:
    cost = gpus * price
    tokens_per_hour = rate * mean_out * S_PER_HOUR
    with np.errstate(invalid="ignore", divide="ignore"):
        return dict(
            replicas=replicas,
            gpus=gpus,
            cost_per_hour_usd=cost,
            cost_per_million_output_tokens_usd=cost / tokens_per_hour * TOKENS_PER_MTOK,
            output_tokens_per_s_per_gpu=rate * mean_out / gpus,
        )


def _colocated(xb: EngineInputs, rows: np.ndarray, space: Space, t: TrafficStats, slo: Slo) -> dict[str, Array]:
    """Every colocated point of the bases ``rows``: base × batch × chunk (module doc).  The step times and
    the bisection run over base × chunk (the batch cap changes neither); the modelled latencies at each
    point's load once per distinct (base, chunk, replicas).  A dp layout's batch is the engines' × dp."""
    c = np.asarray(space.chunks, dtype=float)[None, None, :]
    x0 = _take(xb, rows, 3)
    b = instance_batch(np.asarray(space.batches, dtype=float)[None, :, None], x0)
    xa = x0.with_(chunk_tokens=c)
    x = xa.with_(batch=b)
    shape, shape_a = (rows.size, len(space.batches), c.size), (rows.size, 1, c.size)
    valid = np.broadcast_to(config_valid(x), shape)
    kv_tokens, fits = kv_plan(x)
    fits = np.broadcast_to(fits, shape)
    g = ReplicaGrid.of(xa, np.full((), np.inf))
    screen = screen_where(colocated_screen, g, t, slo, shape_a, b, kv_tokens, valid & fits)
    ok = valid & fits & screen.low_ok
    cap = np.where(ok, screen.capacity_per_s, 0.0)
    replicas = ceil_replicas(t.rate_per_s, cap)
    out = dict(
        base=np.broadcast_to(rows[:, None, None], shape),
        batch=np.broadcast_to(b, shape),
        chunk=np.broadcast_to(c, shape),
        comm=np.broadcast_to(decode_comm_frac(x0.with_(batch=b)), shape),
        valid=valid,
        fits=fits,
        low_ok=np.broadcast_to(screen.low_ok, shape),
        capacity=cap,
        binding=screen.binding,
        replicas=replicas,
        per_user_at_capacity=per_user_at_capacity(g, shape_a, ok, cap, t, slo),
    )
    return out | _operating(g, shape_a, ok, replicas, t, slo)


def _operating(
    g: ReplicaGrid, shape_a: tuple[int, ...], ok: np.ndarray, replicas: Array, t: TrafficStats, slo: Slo
) -> dict[str, Array]:
    """The SLO's statistic of TTFT, TPOT, ITL and E2EL, the mean TPOT and tokens/s per user at each feasible
    point's own load (rate / replicas), computed once per distinct (base, chunk, replicas)."""
    where = np.nonzero(ok)
    r = replicas[where].astype(np.int64)
    top = int(r.max()) + 1 if r.size else 1
    uniq, inverse = np.unique((where[0] * shape_a[2] + where[2]) * top + r, return_inverse=True)
    base, chunk, r_u = uniq // top // shape_a[2], uniq // top % shape_a[2], uniq % top
    sub = g.take(shape_a, (base, np.zeros_like(base), chunk))  # base: the index into this call's rows
    lam = t.rate_per_s / r_u
    x_op = operating_x(lambda v: mean_step_s(sub, t, v)[0], lam, lam * sub.step_s(1.0, t.decode_context_tokens))
    st = colocated_state(sub, t, slo, x_op)
    accept = sub.acceptance()
    values = {f"{n}_q": st.value(n, slo, accept) for n in LATENCIES} | dict(tpot=st.mean_step_s / sub.tokens_per_step)
    out = {}
    for name, v in values.items():
        full = np.full(ok.shape, np.nan)
        full[where] = np.broadcast_to(v, uniq.shape)[inverse.ravel()]
        out[name] = full
    out["per_user"] = 1.0 / out["tpot"]
    return out


def _prefill_pool(xb: EngineInputs, rows: np.ndarray, space: Space, t: TrafficStats, slo: Slo) -> dict[str, Array]:
    """Prefill-pool points: base × chunk, without speculation (module doc)."""
    c = np.asarray(space.chunks, dtype=float)[None, :]
    x0 = _take(xb, rows, 2)
    batch = instance_batch(np.minimum(c, PREFILL_POOL_BATCH), x0)
    x = x0.with_(chunk_tokens=c, batch=batch, spec_on=np.zeros((1, 1)))
    shape = (rows.size, c.size)
    kv_tokens, fits = kv_plan(x)
    m = PrefillModel.of(ReplicaGrid.of(x, kv_tokens), t)
    screen = prefill_screen(m, slo, shape)
    valid = np.broadcast_to(config_valid(x), shape)
    ok = valid & np.broadcast_to(fits, shape) & screen.low_ok
    capacity = np.where(ok, screen.capacity_per_s, 0.0)
    replicas = ceil_replicas(t.rate_per_s, capacity)
    rate = t.rate_per_s / np.where(np.isfinite(replicas), replicas, 1.0)
    return dict(
        base=np.broadcast_to(rows[:, None], shape),
        ok=ok,
        replicas=replicas,
        capacity=np.broadcast_to(capacity, shape),
        binding=screen.binding,
        ttft_q=m.ttft_stat(rate, slo),
        chunk=np.broadcast_to(c, shape),
    )


def _decode_pool(xb: EngineInputs, rows: np.ndarray, space: Space, t: TrafficStats, slo: Slo) -> dict[str, Array]:
    """Decode-pool points: base × batch, chunk = batch · (γ + 1) (module doc)."""
    per_engine = np.asarray(space.batches, dtype=float)[None, :]
    x0 = _take(xb, rows, 2)
    b = instance_batch(per_engine, x0)
    q = np.where(x0.spec_on > 0, x0.gamma + 1.0, 1.0)
    x = x0.with_(batch=b, chunk_tokens=np.maximum(per_engine * q, 16.0))
    shape = (rows.size, per_engine.size)
    kv_tokens, fits = kv_plan(x)
    g = ReplicaGrid.of(x0, np.full((), np.inf))
    valid = np.broadcast_to(config_valid(x), shape)
    fits = np.broadcast_to(fits, shape)
    screen = screen_where(decode_screen, g, t, slo, (rows.size, 1), b, kv_tokens, valid & fits)
    ok = valid & fits & screen.low_ok
    capacity = np.where(ok, screen.capacity_per_s, 0.0)
    replicas = ceil_replicas(t.rate_per_s, capacity)
    stats, step = decode_stats(g, t, slo, t.rate_per_s / np.where(np.isfinite(replicas), replicas, 1.0))
    step_at_capacity = decode_stats(g, t, slo, capacity)[1]
    with np.errstate(divide="ignore", invalid="ignore"):  # capacity 0 (not ok): no step, masked by ``ok``
        per_user_at_capacity = g.tokens_per_step / step_at_capacity
    return dict(
        base=np.broadcast_to(rows[:, None], shape),
        valid=valid,
        fits=fits,
        low_ok=np.broadcast_to(screen.low_ok, shape),
        ok=ok,
        replicas=replicas,
        binding=screen.binding,
        itl_q=np.broadcast_to(stats["itl"], shape),
        tpot_q=np.broadcast_to(stats["tpot"], shape),
        per_user=np.broadcast_to(g.tokens_per_step / step, shape),
        capacity=np.broadcast_to(capacity, shape),
        per_user_at_capacity=np.broadcast_to(per_user_at_capacity, shape),
        batch=np.broadcast_to(b, shape),
        chunk=np.broadcast_to(x.chunk_tokens, shape),
        comm=np.broadcast_to(decode_comm_frac(x), shape),
    )


def _base_columns(base_list: list[Base], idx: np.ndarray) -> dict[str, Any]:
    """The columns a point takes from its base; the strings as categoricals over every base's values."""
    out: dict[str, Any] = {}
    for name, values in (
        ("gpu", [b.gpu for b in base_list]),
        ("name", [b.name for b in base_list]),
        ("layout", [b.layout.label for b in base_list]),
        ("kvdtype", [b.kvdtype for b in base_list]),
        ("wdtype", [b.wdtype for b in base_list]),
        ("time_basis", [b.time_basis for b in base_list]),
    ):
        cats = list(dict.fromkeys(values))
        codes = np.array([cats.index(v) for v in values], dtype=np.int64)
        out[name] = _cat(codes[idx], cats)
    for name in ("tp", "pp", "ep", "dp", "gpus"):
        column = np.array([getattr(b.layout, name) for b in base_list])
        out["gpus_per_replica" if name == "gpus" else name] = column[idx]
    out["nodes"] = np.array([b.nodes for b in base_list])[idx]
    out["spec"] = np.array([b.spec for b in base_list])[idx]
    out["price_per_gpu_hour_usd"] = np.array([b.price_per_gpu_hour_usd for b in base_list])[idx]
    return out


def _colocated_columns(base_list: list[Base], d: dict[str, Array], t: TrafficStats) -> dict[str, Any]:
    keep = d["valid"]
    base = d["base"][keep]
    cols = _base_columns(base_list, base)
    ok = d["fits"][keep] & d["low_ok"][keep]
    replicas = np.where(ok, d["replicas"][keep], np.nan)
    gpus = replicas * cols["gpus_per_replica"]
    status = _status(keep[keep], d["fits"][keep], d["low_ok"][keep], d["binding"][keep])
    return dict(
        mode=_cat(np.zeros(base.size, dtype=np.int64), MODES),
        base=base,
        **cols,
        batch=d["batch"][keep].astype(int),
        chunk=d["chunk"][keep].astype(int),
        **_fleet_columns(t.rate_per_s, t.output_mean_tokens, replicas, gpus, cols["price_per_gpu_hour_usd"]),
        capacity_per_replica_per_s=d["capacity"][keep],
        **capacity_columns(
            np.where(ok, d["capacity"][keep] * t.output_mean_tokens / cols["gpus_per_replica"], np.nan),
            np.where(ok, d["per_user_at_capacity"][keep], np.nan),
        ),
        binding=_cat(d["binding"][keep], CONSTRAINTS),
        meets_slo=ok,
        status=_cat(status, STATUSES),
        **{f"{n}_q_s": np.where(ok, d[f"{n}_q"][keep], np.nan) for n in LATENCIES},
        output_tokens_per_s_per_user=np.where(ok, d["per_user"][keep], np.nan),
        request_latency_s=np.where(ok, d["ttft_q"][keep] + (t.output_mean_tokens - 1.0) * d["tpot"][keep], np.nan),
        decode_comm_frac=d["comm"][keep],
    )


def transfer_prompt_tokens(t: TrafficStats) -> float:
    """The prompt whose KV transfer the TTFT percentile carries: the mean prompt plus the uncached
    prompt's excess at the percentile over its mean (the whole prompt's KV moves, cached prefix too)."""
    return t.prompt_mean_tokens + max(t.uncached_q_tokens - t.uncached_mean_tokens, 0.0)


def _rows(x: EngineInputs, rows: np.ndarray) -> EngineInputs:
    return EngineInputs(**{f.name: getattr(x, f.name)[rows] for f in fields(EngineInputs)})


def _disaggregated_columns(
    base_list: list[Base],
    pre: dict[str, Array],
    dec: dict[str, Array],
    t: TrafficStats,
    xb: EngineInputs,
    slo: Slo,
) -> dict[str, Any]:
    """Each decode-pool point with the prefill pool needing the fewest GPUs for its GPU and dtypes; its
    TTFT is the prefill pool's plus the prompt's KV transfer to the decode pool (``parallel.kv_transfer_s``
    over the scale-out network), and it meets the SLO only if that sum does."""
    per_replica = np.array([b.layout.gpus for b in base_list], dtype=float)
    groups: dict[tuple[str, str, str], int] = {}
    group_of = np.array([groups.setdefault((b.gpu, b.wdtype, b.kvdtype), len(groups)) for b in base_list])
    pb, pok = pre["base"].ravel(), pre["ok"].ravel()
    pgpus = np.where(pok, pre["replicas"].ravel() * per_replica[pb], np.inf)
    pttft = pre["ttft_q"].ravel()
    # per GPU × dtypes group: the prefill point with the fewest GPUs, then the lowest TTFT (first in order)
    cand = np.flatnonzero(np.isfinite(pgpus))
    order = cand[np.lexsort((cand, pttft[cand], pgpus[cand], group_of[pb[cand]]))]
    first = order[np.r_[True, np.diff(group_of[pb[order]]) != 0]] if order.size else order
    table = np.full((len(groups) + 1, 7), np.nan)  # the last row: no prefill pool for the group
    table[:, 2], table[:, 3], table[:, 5] = -1, 0, 0
    rows = group_of[pb[first]]
    table[rows] = np.column_stack(
        (
            pgpus[first],
            pttft[first],
            pb[first],
            pre["chunk"].ravel()[first],
            pre["replicas"].ravel()[first],
            pre["binding"].ravel()[first],
            pre["capacity"].ravel()[first],
        )
    )
    keep = dec["valid"]
    base = dec["base"][keep]
    cols = _base_columns(base_list, base)
    p = table[group_of[base]] if base.size else table[:0]
    found = np.isfinite(p[:, 0])
    sender = np.where(found, p[:, 2], base).astype(np.int64)
    # one transfer per (prefill base, decode base) pair: the points of a pair differ only in batch and chunk
    pairs, back = np.unique(np.stack([sender, np.asarray(base, dtype=np.int64)]), axis=1, return_inverse=True)
    per_pair = parallel.kv_transfer_s(_rows(xb, pairs[0]), _rows(xb, pairs[1]), transfer_prompt_tokens(t))
    kv_s = np.where(found, np.asarray(per_pair)[back.ravel()], np.nan)
    ttft = p[:, 1] + np.nan_to_num(kv_s, nan=np.inf)
    tpot_mean = 1.0 / dec["per_user"][keep]
    # E2EL: the prefill pool's TTFT, the transfer and the decode pool's O − 1 gaps (its TPOT statistic)
    e2e = ttft + max(t.output_mean_tokens - 1.0, 0.0) * (dec["tpot_q"][keep])
    reaches = found & (ttft <= (np.inf if slo.ttft_s is None else slo.ttft_s))
    reaches = reaches & (e2e <= (np.inf if slo.e2e_s is None else slo.e2e_s))
    ok = dec["fits"][keep] & dec["low_ok"][keep] & reaches
    replicas_d = np.where(ok, dec["replicas"][keep], np.nan)
    gpus = np.where(ok, replicas_d * cols["gpus_per_replica"] + p[:, 0], np.nan)
    pre_base = np.where(ok, p[:, 2], -1).astype(np.int64)
    labels = [b.layout.label for b in base_list] + [""]
    pre_layout = pd.Categorical([labels[i] for i in pre_base], categories=list(dict.fromkeys(labels)))
    pre_tp = np.array([b.layout.tp for b in base_list] + [np.nan], dtype=float)[pre_base]
    pre_gpus = np.append(per_replica, np.nan)[pre_base]
    status = _status(keep[keep], dec["fits"][keep], dec["low_ok"][keep], dec["binding"][keep])
    status = np.where(reaches | (status != 0), status, STATUSES.index(PREFILL_MISSES))
    per_gpu_at_capacity = np.where(
        ok,
        pools_per_gpu(t.output_mean_tokens, cols["gpus_per_replica"], dec["capacity"][keep], pre_gpus, p[:, 6]),
        np.nan,
    )
    return dict(
        mode=_cat(np.ones(base.size, dtype=np.int64), MODES),
        base=base,
        **cols,
        batch=dec["batch"][keep].astype(int),
        chunk=dec["chunk"][keep].astype(int),
        **_fleet_columns(t.rate_per_s, t.output_mean_tokens, replicas_d, gpus, cols["price_per_gpu_hour_usd"]),
        binding=_cat(dec["binding"][keep], CONSTRAINTS),
        prefill_binding=_cat(p[:, 5].astype(np.int64), CONSTRAINTS),
        meets_slo=ok,
        status=_cat(status, STATUSES),
        ttft_q_s=np.where(ok, p[:, 1] + kv_s, np.nan),
        tpot_q_s=np.where(ok, dec["tpot_q"][keep], np.nan),
        itl_q_s=np.where(ok, dec["itl_q"][keep], np.nan),
        e2e_q_s=np.where(ok, e2e, np.nan),
        output_tokens_per_s_per_user=np.where(ok, dec["per_user"][keep], np.nan),
        request_latency_s=np.where(ok, p[:, 1] + kv_s + (t.output_mean_tokens - 1.0) * tpot_mean, np.nan),
        **capacity_columns(per_gpu_at_capacity, np.where(ok, dec["per_user_at_capacity"][keep], np.nan)),
        kv_transfer_s=kv_s,
        decode_comm_frac=dec["comm"][keep],
        prefill_base=pre_base,
        prefill_layout=pre_layout,
        prefill_tp=pre_tp,
        prefill_gpus_per_replica=pre_gpus,
        prefill_chunk=np.where(ok, p[:, 3], np.nan),
        prefill_replicas=np.where(ok, p[:, 4], np.nan),
        decode_replicas=replicas_d,
    )


def _by_kind(pool, xb: EngineInputs, rows: np.ndarray, space: Space, t: TrafficStats, slo: Slo) -> dict[str, Array]:
    """``pool``'s points of the bases ``rows``, run apart for plain tensor-parallel bases without and with
    speculation and for those with a layout (``step_grid.step_model``: the plain coefficient form is the
    cheaper; a grid without speculation has no draft steps and one acceptance class), put back in base order."""
    simple = np.asarray((xb.pp == 1) & (xb.dp == 1) & (xb.ep == 1) & (xb.tp <= xb.gpus_per_node), dtype=bool)[rows]
    spec = np.asarray(xb.spec_on > 0, dtype=bool)[rows]
    parts = [(m, pool(xb, rows[m], space, t, slo)) for m in (simple & ~spec, simple & spec, ~simple) if m.any()]
    if len(parts) == 1:
        return parts[0][1]
    out: dict[str, Array] = {}
    for k in parts[0][1]:
        values = [np.asarray(p[k]) for _, p in parts]
        joined = np.empty((rows.size, *values[0].shape[1:]), dtype=np.result_type(*values))
        for (m, _), v in zip(parts, values, strict=True):
            joined[m] = v
        out[k] = joined
    return out


def _points_frame(parts: list[dict[str, Any]]) -> pd.DataFrame:
    """The points of every mode in one frame, cheapest first (meeting the SLO first, then cost per hour,
    GPUs, TTFT; stable; NaN last), numbered ``point``.  A column one mode lacks is NaN (an empty category)
    in its rows.  Joined and ordered as arrays, one column at a time, and one frame built at the end
    (pandas' concat and sort cost more than the screening's arithmetic).  It empties ``parts`` as it goes
    (what is done with is freed at once: the frame is most of the search's memory)."""
    sizes = [len(next(iter(p.values()))) for p in parts]
    names = list(dict.fromkeys(name for p in parts for name in p))

    def joined(name: str) -> np.ndarray:
        """The column over every part (codes for a categorical, -1 where a part lacks it; else NaN there)."""
        present = [p[name] for p in parts if name in p]
        if isinstance(present[0], pd.Categorical):
            return np.concatenate(
                [np.asarray(p[name].codes) if name in p else np.full(n, -1) for p, n in zip(parts, sizes, strict=True)]
            )
        if len(present) == len(parts):
            return np.concatenate([np.asarray(v) for v in present])
        return np.concatenate(
            [
                np.asarray(p[name], dtype=float) if name in p else np.full(n, np.nan)
                for p, n in zip(parts, sizes, strict=True)
            ]
        )

    keys = [joined(k) for k in ("ttft_q_s", "gpus", "cost_per_hour_usd")]
    order = np.lexsort((*keys, ~joined("meets_slo")))
    del keys
    out: dict[str, Any] = {"point": np.arange(order.size)}
    for name in names:
        first = next(p[name] for p in parts if name in p)
        column = joined(name)[order]
        for p in parts:
            p.pop(name, None)
        out[name] = (
            pd.Categorical.from_codes(column, categories=first.categories)
            if isinstance(first, pd.Categorical)
            else column
        )
    return pd.DataFrame(out, copy=False)  # the columns are fresh arrays: no copy into consolidated blocks


def score(s: Scenario, catalog: Catalog, t: TrafficStats, gpus: Sequence[str]) -> Scored:
    """Every point of the scenario's search space on ``gpus`` (module doc), cheapest first."""
    space = Space.of(s)
    slo = Slo.of(s)
    base_list, xb, _ = bases(s, catalog, gpus, space)
    if xb is None:
        return Scored(pd.DataFrame(), 0, 0, [])
    rows = np.arange(len(base_list))
    col = _by_kind(_colocated, xb, rows, space, t, slo)
    parts = [_colocated_columns(base_list, col, t)]
    scored, valid = col["valid"].size, int(col["valid"].sum())
    if space.disagg:
        seen: dict[tuple[str, Layout, str, str], int] = {}
        for i, b in enumerate(base_list):
            seen.setdefault((b.gpu, b.layout, b.wdtype, b.kvdtype), i)
        pre = _by_kind(_prefill_pool, xb, np.array(list(seen.values())), space, t, slo)
        dec = _by_kind(_decode_pool, xb, rows, space, t, slo)
        parts.append(_disaggregated_columns(base_list, pre, dec, t, xb, slo))
        scored += pre["ok"].size + dec["valid"].size
        valid += int(dec["valid"].sum()) + int(np.sum(pre["ok"]))
        del pre, dec
    del col  # the grids' arrays: freed before the frame is built
    points = with_power(_points_frame(parts), xb, s.power_limit_kw, COLOCATED, STATUSES, PREFILL_POOL_BATCH)
    return Scored(points, scored, valid, base_list)


__all__ = [
    "BATCHES",
    "CHUNKS",
    "LAYOUT_TPS",
    "Base",
    "Scored",
    "Space",
    "bases",
    "grid_layouts",
    "kv_plan",
    "parallel_layouts",
    "score",
]
