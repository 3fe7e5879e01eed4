"""Advisor: a scenario's results as a ranked list of plain-language findings.

Each ``Finding`` states one fact about the scenario with its numbers, proposes
one concrete change (``changed_keys``: Scenario fields) and gives that change's
effect, computed by **re-running the engine** on the changed, re-validated
scenario — never a canned estimate.  Searches for the change (batch, chunk,
α, tp, GPU) are vectorised engine calls over a grid; the chosen point is then
re-evaluated with ``engine.evaluate`` so the reported number is exactly what
the dashboard would show after "apply".

context   the re-run context (scenario, result, catalog), Option, Finding, derived metrics
checks/   one function per check: memory, throughput, cost
findings  CHECKS in order, rank, findings(), and the table / record / text forms

Checks, thresholds and grids: docs/advisor.md.  Pure: no I/O, no UI import.
"""

from planner.studies.advisor.checks.cost import (
    CACHE_MEDIUM_SURCHARGE_FRAC,
    CHEAPER_MEDIUM_SAVING_FRAC,
    CHEAPER_MIN_SAVING_FRAC,
)
from planner.studies.advisor.checks.memory import KV_ROOM_MIN_FRAC, PROMPT_GRID_POINTS
from planner.studies.advisor.checks.throughput import (
    ALPHA_GRID_POINTS,
    COMM_MAX_FRAC,
    COMM_MEDIUM_FRAC,
    THROUGHPUT_LOW_GAIN,
    THROUGHPUT_MEDIUM_GAIN,
)
from planner.studies.advisor.context import (
    DERIVED_METRICS,
    MAX_BATCH,
    MAX_TP,
    MIN_CHUNK,
    SEVERITY_RANK,
    WARNING_SEVERITIES,
    Context,
    Finding,
    Option,
    Severity,
    meets_slos,
    metric_value,
)
from planner.studies.advisor.findings import (
    CHECKS,
    FRAME_COLUMNS,
    finding_record,
    findings,
    findings_frame,
    findings_text,
    rank,
)

__all__ = [
    "ALPHA_GRID_POINTS",
    "CACHE_MEDIUM_SURCHARGE_FRAC",
    "CHEAPER_MEDIUM_SAVING_FRAC",
    "CHEAPER_MIN_SAVING_FRAC",
    "CHECKS",
    "COMM_MAX_FRAC",
    "COMM_MEDIUM_FRAC",
    "DERIVED_METRICS",
    "FRAME_COLUMNS",
    "KV_ROOM_MIN_FRAC",
    "MAX_BATCH",
    "MAX_TP",
    "MIN_CHUNK",
    "PROMPT_GRID_POINTS",
    "SEVERITY_RANK",
    "THROUGHPUT_LOW_GAIN",
    "THROUGHPUT_MEDIUM_GAIN",
    "WARNING_SEVERITIES",
    "Context",
    "Finding",
    "Option",
    "Severity",
    "finding_record",
    "findings",
    "findings_frame",
    "findings_text",
    "meets_slos",
    "metric_value",
    "rank",
]
