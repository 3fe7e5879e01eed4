"""kvplan's pure analytical engine: LLM inference capacity planning from first principles.

The public API::

    from planner import Scenario, load_catalog, evaluate, from_query, to_query
    result = evaluate(Scenario(gpu="h200", model="llama-3.1-70b", tp=2), load_catalog())
    result.metrics["tpot_s"]

``compute(EngineInputs)`` is the vectorised core (every field may be a numpy array);
``evaluate`` resolves one scenario against the catalog and returns plain numbers.
The names load on first use, so importing one planner module (``planner.units``,
``planner.prompts.layout``) does not pull in the whole engine.
"""

from __future__ import annotations

import importlib
from typing import Any

_PUBLIC = {
    "Result": "planner.engine.evaluate",
    "compute": "planner.engine.evaluate",
    "evaluate": "planner.engine.evaluate",
    "from_query": "planner.links",
    "to_query": "planner.links",
    "load_catalog": "planner.model.catalog",
    "Scenario": "planner.model.scenario",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
