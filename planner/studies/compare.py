"""The scenario on every GPU profile: one table for the "Compare GPUs" tab.

All profiles are stacked into one ``EngineInputs`` (one array element per GPU)
and evaluated in two ``engine.compute`` calls: first at the scenario's tp (does
it fit? smallest tp that fits?), then at ``tp_used`` — the scenario's tp where
it fits, otherwise the smallest tp that does, or the tp the caller chose for that GPU
(``tp_by_gpu``) — so an unfit GPU is shown at the tp where it would run (its pp and dp kept; expert
parallelism, when on, spanning tp · dp; a layout
the engine would refuse is no row's answer).  A GPU that fits at no tp ≤ 64 keeps empty metrics and a
``note``; no cell is NaN or inf.

meets_slo            = one request's figures within the set targets (``slo.meets_single_request``:
                       idle TTFT ≤ slo_ttft_s, the decode step ≤ slo_tpot_s and slo_itl_s, the
                       request latency ≤ slo_e2e_s; no queue, so no statistic), and memory holds the
                       batch (``batch_fits_memory``: a TPOT at a batch the KV cache cannot hold is not
                       one the GPU can deliver)
cheapest_meeting_slo = the lowest $/M output tokens among the priced rows meeting the SLO
tp_text              = the tp shown and why: "tp4 (yours)", "tp2 (smallest that fits)", "tp8 (chosen)";
                       "does not fit" where the GPU holds no whole sequence at any tp up to 64 (or at the
                       chosen one) — its metrics are then empty: nobody deploys a GPU that serves nothing
vendor               = the profile's vendor (the tab's filter)
Price: each profile's own $/GPU-hour; the scenario's ``gpu_price`` override applies
only to the scenario's own GPU.  A profile priced at 0 (a measured machine,
``price_source`` "not priced") has no cost: its cost cell is empty and it is never
the cheapest.  A measured profile is a row only when it is the scenario's GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from planner.engine.evaluate import compute, resolve
from planner.engine.inputs import from_specs, stack_inputs
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario
from planner.sim.slo import Slo, meets_single_request

METRIC_COLUMNS = (
    "max_concurrent_sequences",
    "ttft_s",
    "tpot_s",
    "output_tokens_per_s_per_gpu",
    "cost_per_million_output_tokens_usd",
    "decode_tokens_per_s_per_gpu",
    "decode_cost_per_million_output_tokens_usd",
)
#: Costs: empty on a GPU without a price.
COST_COLUMNS = ("cost_per_million_output_tokens_usd", "decode_cost_per_million_output_tokens_usd")


def compare_gpus(scenario: Scenario, catalog: Catalog, tp_by_gpu: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per GPU profile (catalog order); see the module doc for the columns' meaning.  ``tp_by_gpu``:
    a tp chosen per GPU profile key (others: the scenario's where it fits, else the smallest that fits).

    Raises ``engine.ScenarioError`` when the scenario's model cannot be resolved.
    """
    chosen = dict(tp_by_gpu or {})
    r = resolve(scenario, catalog)
    scenario = r.scenario  # with its defaults fitted to the model (engine.validity.fit_defaults)
    keys = list(catalog.gpus) + ([scenario.gpu] if scenario.gpu in catalog.measured else [])
    profiles = [catalog.gpus.get(k) or catalog.measured[k] for k in keys]
    # Scenario.on_gpu holds the price rule: a gpu_price override prices only the scenario's own GPU
    on_each = [scenario if k == scenario.gpu else scenario.on_gpu(k) for k in keys]
    x = stack_inputs([from_specs(gpu, r.model, s, r.draft, r.engine) for gpu, s in zip(profiles, on_each, strict=True)])
    at_tp = compute(x)
    fits = np.asarray(at_tp["fits"], dtype=bool)
    min_tp = np.asarray(at_tp["min_tp_that_fits"])
    tp_used = np.where(fits, float(scenario.tp), min_tp)
    picked = np.array([float(chosen.get(k, 0)) for k in keys])
    tp_used = np.where(picked > 0, picked, tp_used)
    runs = tp_used > 0
    shown_tp = np.where(runs, tp_used, float(scenario.tp))
    # expert parallelism stays on at another tp: ep spans tp · dp (the layout min_tp_that_fits searched)
    shown_ep = shown_tp * scenario.dp if scenario.ep > 1 else np.ones_like(shown_tp)
    out = compute(x.with_(tp=shown_tp, ep=np.where(fits, float(scenario.ep), shown_ep)))
    runs = runs & np.asarray(out["config_valid"], dtype=bool)  # only layouts the engine accepts
    holds = np.nan_to_num(np.asarray(out["max_concurrent_sequences"], dtype=float), nan=0.0) >= 1.0
    runs = runs & holds  # a GPU that holds no whole sequence at the tp shown serves nothing there
    price = np.asarray(x.price_per_gpu_hour_usd)

    priced = price > 0

    def metric(name: str) -> list[float | None]:
        """The metric where the GPU runs (and, for the cost, is priced); empty otherwise."""
        v = np.asarray(out[name], dtype=float)
        ok = runs & np.isfinite(v) & (priced if name in COST_COLUMNS else True)
        return [float(v[i]) if ok[i] else None for i in range(len(keys))]

    frame = pd.DataFrame(
        {
            "gpu": keys,
            "name": [g.name for g in profiles],
            "fits": fits,
            "min_tp_that_fits": pd.array([int(t) if t > 0 else None for t in min_tp], dtype="Int64"),
            "tp_used": pd.array([int(t) if t > 0 else None for t in tp_used], dtype="Int64"),
            **{name: pd.array(metric(name), dtype="Float64") for name in METRIC_COLUMNS},
            "price_per_gpu_hour_usd": price,
        }
    )
    batch_fits = runs & np.asarray(out["batch_fits_memory"], dtype=bool)
    frame["batch_fits_memory"] = batch_fits
    meets = batch_fits & meets_single_request(
        Slo.of(scenario), np.asarray(out["ttft_s"]), np.asarray(out["tpot_s"]), np.asarray(out["request_latency_s"])
    )
    frame["meets_slo"] = meets
    cheapest = np.zeros(len(keys), dtype=bool)
    if (meets & priced).any():
        cost = np.where(meets & priced, np.asarray(out["cost_per_million_output_tokens_usd"], dtype=float), np.inf)
        cheapest[int(np.argmin(cost))] = True
    frame["cheapest_meeting_slo"] = cheapest
    frame["note"] = [_note(scenario, fits[i], tp_used[i], out, i, bool(priced[i])) for i in range(len(keys))]
    frame["tp_text"] = [
        _tp_text(scenario.tp, int(tp_used[i]), bool(runs[i]), bool(fits[i]), keys[i] in chosen)
        for i in range(len(keys))
    ]
    frame["vendor"] = [g.vendor for g in profiles]
    return frame


def _tp_text(own_tp: int, tp: int, runs: bool, fits: bool, chosen: bool) -> str:
    """The tp column in words (module doc)."""
    if not runs:
        return "does not fit" + (f" at tp{tp} (chosen)" if chosen and tp > 0 else "")
    if chosen:
        return f"tp{tp} (chosen)"
    return f"tp{tp} (yours)" if fits and tp == own_tp else f"tp{tp} (smallest that fits)"


def _note(s: Scenario, fits: bool, tp_used: float, out: dict, i: int, priced: bool = True) -> str:
    if tp_used == 0:
        return "does not fit at any tp up to 64"
    notes = [] if fits else [f"does not fit at tp={s.tp}; shown at tp={int(tp_used)}"]
    if not priced:
        notes.append("not priced (set a GPU price)")
    if not bool(np.asarray(out["batch_fits_memory"])[i]):
        held = np.floor(np.asarray(out["max_concurrent_sequences"])[i])
        notes.append(f"batch {s.batch} exceeds the {held:.0f} sequences that fit")
    return "; ".join(notes)
