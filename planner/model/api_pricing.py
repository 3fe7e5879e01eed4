"""API prompt-caching price sheet: the constants the billing model uses.

Anthropic, "Prompt caching" (docs.anthropic.com, build-with-claude/prompt-caching):
cache writes cost 1.25× the base input price with the default 5-minute TTL and
2× with the 1-hour TTL; cache reads cost 0.1×; most models cache prefixes of at
least 1,024 tokens (the per-model minimum lives in each model preset as
``min_cacheable_prompt_tokens``).
"""

from __future__ import annotations

from planner.units import S_PER_HOUR, S_PER_MINUTE

TTL_SECONDS = {"5m": 5 * S_PER_MINUTE, "1h": S_PER_HOUR}
#: Cache-write price multipliers per TTL, and the read multiplier.
CACHE_WRITE_MULTIPLIER = {"5m": 1.25, "1h": 2.0}
CACHE_READ_MULTIPLIER = 0.1
#: Used when neither the scenario nor the model preset names a minimum cacheable prefix.
DEFAULT_MIN_CACHEABLE_TOKENS = 1024
