"""The layouts fleet sizing tries on one GPU profile (``sizing.size_fleet``; module doc there).

Besides tp in ``tps``: the layouts of at most ``SIZING_MAX_INSTANCE_GPUS`` GPUs the engine accepts
(``engine.parallel.valid_layouts``) whose memory plan fits, at up to twice the smallest instance that fits —
for a dense model only when no tp of ``tps`` fits; for an MoE model also its expert-parallel and
data-parallel-attention layouts — one per kind (pp, dp, ep, tp beyond ``tps``, and their combinations): the
fewest GPUs and nodes, the attention's tp inside a node (dp layouts: the smallest tp).
``grid_layouts`` makes the same choice for many GPU profiles at once (the sizing search's grid).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

import numpy as np

from planner.engine import parallel
from planner.engine.evaluate import Resolved, inputs_for, resolve
from planner.engine.inputs import EngineInputs, stack_inputs
from planner.engine.kv_fit import kv_fit
from planner.engine.memory import memory_plan
from planner.engine.validity import quant_block, quant_group
from planner.errors import ScenarioError
from planner.model.catalog import Catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.sim.simulate import sim_inputs

#: The largest instance sizing tries, and how many layouts beyond ``tps`` it tries per GPU profile.
SIZING_MAX_INSTANCE_GPUS = 64
SIZING_MAX_EXTRA_LAYOUTS = 6
#: The scenario's batch bound (``Scenario.batch``).
MAX_BATCH = 65_536


def on_layout(s: Scenario, gpu: str, lay: Layout) -> Scenario:
    """The scenario on ``gpu`` in layout ``lay`` (each of its dp engines keeps the scenario's batch)."""
    moved = s.on_gpu(gpu, lay.tp)
    per_engine = s.batch // max(s.dp, 1) or 1
    return moved.with_changes(pp=lay.pp, ep=lay.ep, dp=lay.dp, batch=min(per_engine * lay.dp, MAX_BATCH))


def _kind(lay: Layout, tps: Sequence[int]) -> tuple[bool, bool, bool, bool]:
    return (lay.pp > 1, lay.dp > 1, lay.ep > 1, lay.pp == lay.dp == lay.ep == 1 and lay.tp not in tps)


def sizing_layouts(s: Scenario, catalog: Catalog, gpu: str, tps: Sequence[int]) -> list[Layout]:
    """The layouts sized on ``gpu``: every tp of ``tps``, then the multi-node and expert-parallel ones of the
    module doc (valid, fitting, one per kind), and the scenario's own layout when it has one."""
    found = layout_candidates(s, catalog, gpu)
    if found is None:
        return [Layout(tp=t) for t in tps]
    candidates, r = found
    fitting = [lay for lay in candidates if _fits(s, catalog, gpu, lay)]
    return choose_layouts(s, fitting, tps, r.model.is_moe, r.gpu.gpus_per_node)


def layout_candidates(s: Scenario, catalog: Catalog, gpu: str) -> tuple[list[Layout], Resolved] | None:
    """The valid layouts of at most ``SIZING_MAX_INSTANCE_GPUS`` GPUs on ``gpu`` (``parallel.valid_layouts``)
    and the scenario resolved there at one GPU; None when it cannot be resolved."""
    try:
        r = resolve(s.on_gpu(gpu, 1).with_changes(pp=1, ep=1, dp=1), catalog)
    except ScenarioError:
        return None
    candidates = parallel.valid_layouts(
        r.model,
        r.gpu,
        SIZING_MAX_INSTANCE_GPUS,
        s.engine,
        group=quant_group(r.scenario, r.model),
        block=quant_block(r.scenario, r.model),
        eplb=s.eplb,
        draft=r.draft if s.spec else None,
        redundant_experts=s.redundant_experts,
    )
    return list(candidates), r


def choose_layouts(s: Scenario, fitting: Sequence[Layout], tps: Sequence[int], moe: bool, g: int) -> list[Layout]:
    """The module doc's choice among the valid layouts ``fitting`` whose memory plan fits (``g``: GPUs per node):
    the tps of ``tps``, the extra kinds, and the scenario's own layout."""
    plain = [Layout(tp=t) for t in tps]
    own = Layout(tp=s.tp, pp=s.pp, ep=s.ep, dp=s.dp)
    plain_set = set(plain)
    plain_fits = [lay for lay in fitting if lay in plain_set]
    if not fitting or (plain_fits and not moe):
        return plain + ([own] if own.gpus > 1 and own not in plain_set else [])
    smallest = min(lay.gpus for lay in fitting)
    pool = [lay for lay in fitting if lay not in plain_set and lay.gpus <= 2 * smallest]
    if plain_fits:  # an MoE model that fits on tp alone: its expert-parallel and dp-attention layouts
        pool = [lay for lay in pool if lay.ep > 1 or lay.dp > 1]
    best: dict[tuple[bool, bool, bool, bool], Layout] = {}
    for lay in sorted(pool, key=lambda x: (x.gpus, x.nodes(g), x.tp if x.dp > 1 else abs(x.tp - g), x.pp)):
        best.setdefault(_kind(lay, tps), lay)
    extra = sorted(best.values(), key=lambda x: (x.gpus, x.nodes(g), x.pp, x.dp, x.tp))[:SIZING_MAX_EXTRA_LAYOUTS]
    chosen = plain + extra
    return chosen + ([own] if own.gpus > 1 and own not in chosen else [])


def grid_layouts(
    s: Scenario, catalog: Catalog, gpus: Sequence[str], tps: Sequence[int]
) -> dict[str, tuple[Layout, ...]]:
    """``sizing_layouts`` on every GPU of ``gpus`` at once (the sizing search's grid): each GPU's candidate layouts
    (``layout_candidates``) checked in two ``kv_fit.kv_fit`` calls over all GPUs — the scenario on
    that GPU in each layout (``on_layout``: tp, pp, ep, dp and batch are the fields a layout sets) —
    then ``choose_layouts``.  First the layouts without pipeline stages; then only the pipelined
    ones the choice can take: at most twice the GPUs of the smallest instance that fits, none for a dense
    model a tp of ``tps`` fits (each pipeline stage costs ``kv_fit`` one pass)."""
    accepted = tuple(tps)
    found = {g: f for g in gpus if (f := layout_candidates(s, catalog, g)) is not None}
    xs = {g: inputs_for(f[1]) for g, f in found.items()}
    flat = [(g, lay) for g, f in found.items() for lay in f[0] if lay.pp == 1]
    fitting: dict[str, list[Layout]] = {g: [] for g in found} | _fitting(s, xs, flat)
    second = []
    for g, (cands, r) in found.items():
        smallest = min((lay.gpus for lay in fitting[g]), default=float("inf"))
        if r.model.is_moe or not any(lay == Layout(tp=lay.tp) and lay.tp in accepted for lay in fitting[g]):
            second += [(g, lay) for lay in cands if lay.pp > 1 and lay.gpus <= 2 * smallest]
    for g, more in _fitting(s, xs, second).items():
        fitting[g] += more
    out = {g: tuple(Layout(tp=t) for t in accepted) for g in gpus}
    for g, (cands, r) in found.items():
        fits = set(fitting[g])
        chosen = [lay for lay in cands if lay in fits]  # the candidates' order
        out[g] = tuple(choose_layouts(s, chosen, accepted, r.model.is_moe, r.gpu.gpus_per_node))
    return out


def _fitting(s: Scenario, xs: dict[str, EngineInputs], items: list[tuple[str, Layout]]) -> dict[str, list[Layout]]:
    """The layouts of ``items`` (GPU, layout) whose memory plan fits, by GPU (one ``kv_fit`` over them all)."""
    out: dict[str, list[Layout]] = {}
    if not items:
        return out
    keys = list(xs)
    stacked = stack_inputs([xs[g] for g in keys])
    rows = np.array([keys.index(g) for g, _ in items])
    x = EngineInputs(**{f.name: getattr(stacked, f.name)[rows] for f in fields(EngineInputs)})
    per_engine = s.batch // max(s.dp, 1) or 1
    tp, pp, ep, dp = (np.array([getattr(lay, k) for _, lay in items], dtype=float) for k in ("tp", "pp", "ep", "dp"))
    fits = np.asarray(kv_fit(x.with_(tp=tp, pp=pp, ep=ep, dp=dp, batch=np.minimum(per_engine * dp, MAX_BATCH)))[1])
    for (g, lay), ok in zip(items, fits.ravel(), strict=True):
        if ok:
            out.setdefault(g, []).append(lay)
    return out


def _fits(s: Scenario, catalog: Catalog, gpu: str, lay: Layout) -> bool:
    try:
        _, x = sim_inputs(on_layout(s, gpu, lay), catalog)
    except ScenarioError:
        return False
    return bool(memory_plan(x)["fits"])
