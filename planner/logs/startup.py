"""A start-up log of either engine: which it is, read by its own parser (``vllm_log``, ``sglang_log``).  Pure."""

from __future__ import annotations

from planner.logs.sglang_log import SglangStartup, is_sglang_log, parse_sglang_log
from planner.logs.vllm_log import LogError, VllmStartup, parse_vllm_log


def parse_startup_log(text: str | bytes) -> VllmStartup | SglangStartup:
    """An SGLang log (``sglang_log.MARKERS``, no vLLM engine banner) by SGLang's parser, anything else by vLLM's;
    ``LogError`` naming what was expected when neither finds its lines."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise LogError([f"expected the log's text, not {type(text).__name__}"])
    if text.strip() and is_sglang_log(text):
        return parse_sglang_log(text)
    return parse_vllm_log(text)
