"""The sizing search's wall-clock budget (no heavy imports: the CLI reads it for its ``--help``)."""

#: The whole search's budget by default, seconds: under the dashboard's per-run limit (120 s, ui/jobs.py),
#: with room for the table to be built and sent back.
SEARCH_TIME_BUDGET_S = 90.0
