"""Edge package: read a serving engine's start-up log (text pasted or uploaded by a person).

``vllm_log.parse_vllm_log`` turns a vLLM start-up log into ``VllmStartup`` (its memory terms
and settings); ``check.check_log`` sets them beside the plan's prediction, term by term.
Nothing in the text is executed; bad or foreign text raises ``LogError`` naming what was
expected, never a traceback."""
