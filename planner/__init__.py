"""kvplan's pure analytical engine: LLM inference capacity planning from first principles.

The public API::

    from planner import Scenario, load_catalog, evaluate, from_query, to_query
    result = evaluate(Scenario(gpu="h200", model="llama-3.1-70b", tp=2), load_catalog())
    result.metrics["tpot_s"]

``compute(EngineInputs)`` is the vectorised core (every field may be a numpy array);
``evaluate`` resolves one scenario against the catalog and returns plain numbers.
"""

from planner.engine.evaluate import Result, compute, evaluate
from planner.links import from_query, to_query
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario

__all__ = ["Result", "Scenario", "compute", "evaluate", "from_query", "load_catalog", "to_query"]
