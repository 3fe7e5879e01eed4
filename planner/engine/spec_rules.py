"""Speculative-decoding methods the engine accepts for a model, and the defaults a method brings
(``planner.model.spec_methods``: published acceptance by workload, the MTP layers' draft length).

  mtp           needs MTP layers in the checkpoint (``num_nextn_predict_layers`` > 0: DeepSeek-V3/R1, Qwen3-Next;
                not Kimi-K2, whose config has 0); γ left at its default becomes the layers' count (vLLM defaults
                ``num_speculative_tokens`` to n_predict = num_nextn_predict_layers)
  draft_model   needs a draft preset (``draft=``)
  α left at its default (0.7) becomes the published acceptance of the method on ``spec_workload`` (the middle of the
  published range), with a note naming the figure and its source; where none is published α stays, and says so.
"""

from __future__ import annotations

from typing import Any

from planner.format import fmt_num
from planner.model.scenario import Scenario
from planner.model.spec_methods import LABELS, published_acceptance
from planner.model.specs import ModelSpec

_DEFAULTS = Scenario()


def spec_problems(m: ModelSpec, s: Scenario) -> list[str]:
    """One line per method rule the scenario breaks (module doc), with what passes."""
    if not s.spec or not s.spec_method:
        return []
    if s.spec_method == "mtp" and not m.mtp_layers:
        return [
            f"spec_method=mtp: {m.name} ships no multi-token-prediction layers (num_nextn_predict_layers = 0 in its "
            "config.json); valid methods for it: eagle, eagle3, ngram, draft_model (with draft=<preset>)"
        ]
    if s.spec_method == "draft_model" and not s.draft:
        return ["spec_method=draft_model: needs a draft preset (draft=<preset key>, e.g. llama-3.2-1b)"]
    return []


def spec_defaults(s: Scenario, m: ModelSpec) -> tuple[Scenario, list[str]]:
    """``s`` with α and γ left at their defaults set by the method (module doc); one note per move, and a note when no
    acceptance is published for the method on the workload."""
    if not s.spec or not s.spec_method:
        return s, []
    changes: dict[str, Any] = {}
    notes = []
    label = LABELS[s.spec_method]
    if s.spec_method == "mtp" and s.gamma == _DEFAULTS.gamma and m.mtp_layers:
        changes["gamma"] = m.mtp_layers
        notes.append(
            f"γ = {m.mtp_layers}: the checkpoint's MTP layers (vLLM's num_speculative_tokens defaults to "
            "num_nextn_predict_layers)"
        )
    if s.alpha == _DEFAULTS.alpha:
        acc = published_acceptance(s.spec_method, s.spec_workload)
        if acc is not None:
            changes["alpha"] = acc.alpha
            notes.append(
                f"α = {fmt_num(acc.alpha)}: the published acceptance of {label} on {s.spec_workload} "
                f"({acc.figures}: α {fmt_num(acc.low)}–{fmt_num(acc.high)} at γ = {acc.gamma}; {acc.source})"
            )
        else:
            notes.append(
                f"no acceptance of {label} on {s.spec_workload} was found published: α = {fmt_num(s.alpha)} is the "
                "default; set alpha to your own measurement (vLLM logs 'Mean acceptance length')"
            )
    return (s.with_changes(**changes) if changes else s), notes
