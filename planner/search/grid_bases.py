"""The sizing grid's axes and bases (``grid`` module doc): every GPU × layout × weight dtype × KV dtype ×
speculation the search tries, and their engine inputs stacked once (``bases``) — the layout, the KV dtype,
the memory share in force (``engine.defaults``) and the measured-kernel family of each base are fields of
the one stacked ``EngineInputs``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from planner.engine.defaults import mem_util_in_force
from planner.engine.evaluate import Resolved, resolve
from planner.engine.inputs import EngineInputs, from_specs, kv_element_bytes, stack_inputs
from planner.engine.kernel_basis import basis_for
from planner.errors import ScenarioError
from planner.model.catalog import Catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.model.specs import GPU
from planner.model.weight_plan import format_labels, resolve_weights
from planner.search.layouts import grid_layouts, sizing_layouts
from planner.search.replicas import accepted_tps

LAYOUT_TPS = (1, 2, 4, 8)
BATCHES = (8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
CHUNKS = (256, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384)
COLOCATED, DISAGGREGATED = "colocated", "disaggregated"


def parallel_layouts(s: Scenario, catalog: Catalog, gpu: str, tps: Sequence[int] = LAYOUT_TPS) -> tuple[Layout, ...]:
    """The layouts the search tries on ``gpu`` (module doc): ``layouts.sizing_layouts`` with the tps of ``tps``
    vLLM accepts for the model (``replicas.accepted_tps``)."""
    return tuple(sizing_layouts(s, catalog, gpu, accepted_tps(s, catalog, tps)))


@dataclass(frozen=True)
class Space:
    """The values each knob takes (module doc)."""

    batches: tuple[int, ...]
    chunks: tuple[int, ...]
    kvdtypes: tuple[str, ...]
    wdtypes: tuple[str, ...]
    specs: tuple[bool, ...]
    disagg: bool

    @classmethod
    def of(cls, s: Scenario) -> Space:
        axes = set(s.search.split(",")) if s.search != "none" else set()
        return cls(
            batches=BATCHES if "batch" in axes else (s.batch,),
            chunks=CHUNKS if "chunk" in axes else (s.chunk,),
            kvdtypes=tuple(dict.fromkeys((s.kvdtype, "fp8"))) if "kvdtype" in axes else (s.kvdtype,),
            wdtypes=tuple(dict.fromkeys((s.wdtype, "fp8"))) if "wdtype" in axes else (s.wdtype,),
            specs=(False, True) if "spec" in axes else (s.spec,),
            disagg="disagg" in axes,
        )


@dataclass(frozen=True)
class Base:
    """One GPU × layout × dtypes × speculation: the engine inputs a grid's batch and chunk axes vary."""

    gpu: str
    name: str
    layout: Layout
    wdtype: str  # the weights' format in words (``weight_plan.format_labels``)
    kvdtype: str  # the KV cache's dtype
    spec: bool
    changes: dict[str, Any]  # applied to the user's scenario (``Scenario.gpu_switch``'s price rule)
    price_per_gpu_hour_usd: float
    nodes: int  # nodes one replica spans (``Layout.nodes``)
    time_basis: str  # what its step times rest on (``engine.kernel_basis.basis_for``: kernels or roofline)


def _base_changes(s: Scenario, gpu: str, layout: Layout, wd: str, kv: str, spec: bool) -> dict[str, Any]:
    changes = s.gpu_switch(gpu) | {k: v for k, v in layout.changes().items() if getattr(s, k) != v}
    if wd != s.wdtype:
        changes |= {"wdtype": wd, "quant": ""}
    if kv != s.kvdtype:
        changes["kvdtype"] = kv
    if spec != s.spec:
        changes["spec"] = spec
    return changes


def bases(
    s: Scenario, catalog: Catalog, gpus: Sequence[str], space: Space
) -> tuple[list[Base], EngineInputs | None, Resolved]:
    """Every base of the grid and their engine inputs stacked (1-D arrays); ScenarioError when the
    scenario's model, draft or engine cannot be resolved.  ``from_specs`` runs once per GPU × weight
    dtype × speculation; the layout and the KV dtype are the ``tp``, ``pp``, ``ep``, ``dp`` and
    ``kv_bytes_per_element`` fields of its inputs (the only ones they set: ``inputs.from_specs``), and the memory
    share ``mem_util`` (SGLang's own follows the layout: ``engine.defaults``)."""
    r = resolve(s.with_changes(tp=1, pp=1, ep=1, dp=1), catalog)
    own = Layout(tp=s.tp, pp=s.pp, ep=s.ep, dp=s.dp)
    ok = [g for g in gpus if catalog.profile(g) is not None]
    per_gpu = grid_layouts(s, catalog, ok, accepted_tps(s, catalog, LAYOUT_TPS))
    out: list[Base] = []
    xs: list[EngineInputs] = []
    source, kv_bytes, lays, utils, kernel_sets = [], [], [], [], []
    kv_formats = _kv_formats(s, r, space)
    for g in gpus:
        gpu = catalog.profile(g)
        if gpu is None:
            raise ScenarioError([f"gpu={g!r}: unknown GPU profile"])
        layouts = per_gpu[g]
        shares: dict[tuple[int, int, int], float] = {}
        for wd in space.wdtypes:
            for spec in space.specs:
                sb = s.with_changes(**_base_changes(s, g, own, wd, s.kvdtype, spec))
                xs.append(from_specs(gpu, r.model, sb, r.draft if spec else None, r.engine))
                price = float(xs[-1].price_per_gpu_hour_usd)
                # the measured kernels of each KV dtype (its attention kernels; the family's curves per layout)
                sets = {kv: _kernel_sets(gpu, r, sb.with_changes(kvdtype=kv), spec) for kv, _ in kv_formats}
                wd_label = format_labels(r.model, sb)[0]
                for layout in layouts:
                    for kv, kv_bytes_one in kv_formats:
                        changes = _base_changes(s, g, layout, wd, kv, spec)
                        kernel_sets.append(sets[kv])
                        nodes = layout.nodes(gpu.gpus_per_node)
                        kv_label = format_labels(r.model, s.model_copy(update={"kvdtype": kv}))[1]
                        basis = basis_for(gpu, r.model, s.with_changes(**changes), r.engine).label
                        out.append(Base(g, gpu.name, layout, wd_label, kv_label, spec, changes, price, nodes, basis))
                        source.append(len(xs) - 1)
                        lays.append((layout.tp, layout.pp, layout.ep, layout.dp))
                        kv_bytes.append(kv_bytes_one)
                        utils.append(_mem_util(r, gpu, s, changes, shares))
    if not out:
        return out, None, r
    stacked = stack_inputs(xs)
    rows = np.asarray(source)
    x = EngineInputs(**{f.name: getattr(stacked, f.name)[rows] for f in fields(EngineInputs)})
    tp, pp, ep, dp = (np.asarray(v, dtype=float) for v in zip(*lays, strict=True))
    ks, draft_ks = (np.asarray(v, dtype=float) for v in zip(*kernel_sets, strict=True))
    layout_fields = dict(kv_bytes_per_element=np.asarray(kv_bytes), mem_util=np.asarray(utils))
    x = x.with_(tp=tp, pp=pp, ep=ep, dp=dp, **layout_fields)
    return out, x.with_(kernel_set=ks, draft_kernel_set=draft_ks), r


def _mem_util(
    r: Resolved, gpu: GPU, s: Scenario, changes: dict[str, Any], shares: dict[tuple[int, int, int], float]
) -> float:
    """The memory share at a base's layout: the scenario's, else the engine version's own (SGLang's rule moves
    with tp · dp and pp, once per layout of a GPU in ``shares``; vLLM's is one number)."""
    if s.mem_util is not None or r.engine.memory.static_fraction is None:
        return mem_util_in_force(r.engine, gpu, r.model, s)
    key = (changes.get("tp", s.tp), changes.get("pp", s.pp), changes.get("dp", s.dp))
    if key not in shares:
        at = s.with_changes(tp=key[0], pp=key[1], dp=key[2])
        shares[key] = mem_util_in_force(r.engine, gpu, r.model, at)
    return shares[key]


def _kernel_sets(gpu, r, s: Scenario, spec: bool) -> tuple[float, float]:
    """(kernel_set, draft_kernel_set) ``inputs.from_specs`` gives ``s`` (the ids of the measured-kernel families)."""
    x = from_specs(gpu, r.model, s, r.draft if spec else None, r.engine)
    return float(x.kernel_set), float(x.draft_kernel_set)


def _kv_formats(s: Scenario, r: Resolved, space: Space) -> list[tuple[str, float]]:
    """(the link's KV dtype, bytes per element: ``inputs.kv_element_bytes``, the engine version's scales) of each KV
    dtype of the space, one per stored format ('' is the checkpoint's: an fp8 alternative to a checkpoint that ships
    fp8 KV is the same row)."""
    out: dict[str, tuple[str, float]] = {}
    for kv in space.kvdtypes:
        stored = resolve_weights(r.model, s.model_copy(update={"kvdtype": kv})).kvdtype
        out.setdefault(stored, (kv, kv_element_bytes(stored, r.model, r.engine.memory)))
    return list(out.values())
