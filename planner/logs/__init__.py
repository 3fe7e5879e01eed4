"""Edge package: read a serving engine's start-up log (text pasted or uploaded by a person).

``startup.parse_startup_log`` tells a vLLM log from an SGLang one and reads it (``vllm_log.parse_vllm_log`` →
``VllmStartup``, ``sglang_log.parse_sglang_log`` → ``SglangStartup``: memory terms and settings);
``check.check_log`` sets them beside the plan's prediction, term by term, on the log's engine version.
Nothing in the text is executed; bad or foreign text raises ``LogError`` naming what was expected,
never a traceback."""
