"""Prompt-caching cost per request as an API bills it (the GPUs' own prefix cache: ``prefix_reuse``).

Prices per token: input p, output o; cache write w·p (w = 1.25 for a 5-minute
TTL, 2 for 1 hour), cache read r·p (r = 0.1) — Anthropic prompt-caching docs.
A prefix shorter than the model's minimum is not cached (silently: no write, no read).

cost with cache  = (h·r + (1−h)·w)·X·p + (P − X)·p + O·o        X = cacheable prefix
cost without     = P·p + O·o
break-even h*    = (w − 1) / (w − r)           (caching pays when h > h*)
Hit rate from traffic (optional, λ = requests/min per prefix ÷ 60):
  arrivals   requests on one prefix arrive independently (Poisson, λ per second); every
             request, hit or miss, writes or refreshes the entry, so a request hits when
             the previous one came less than a TTL before it:   h = 1 − exp(−λ · TTL)
  follow-ups each request is sent after the previous *response* ends: the API takes D
             seconds to answer (``response_s``, the API's time, not this GPU's), then the
             user waits Exp(λ); the entry was refreshed when the previous request was read,
             so D eats the window:                                h = 1 − exp(−λ · max(TTL − D, 0))
(Anthropic prompt caching: "the cache is refreshed for no additional cost each time the
cached content is used".)
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.units import S_PER_MINUTE


def break_even_hit_rate(write_multiplier, read_multiplier=0.1) -> Array:
    w = np.asarray(write_multiplier, dtype=float)
    return (w - 1.0) / (w - read_multiplier)


def ttl_hit_rate(requests_per_min, ttl_s, response_s=0.0) -> Array:
    """h = 1 − exp(−λ · max(TTL − D, 0)); D = 0 for independent arrivals (module doc)."""
    lam = np.asarray(requests_per_min, dtype=float) / S_PER_MINUTE
    window = np.maximum(np.asarray(ttl_s, dtype=float) - response_s, 0.0)
    return 1.0 - np.exp(-lam * window)


def followup_wait_s(x: EngineInputs) -> Array:
    """D in the hit rate: the API's response time in follow-up mode, 0 for independent arrivals."""
    return np.where(x.followup_mode > 0, x.response_s, 0.0)


def cacheable_prefix_tokens(x: EngineInputs) -> Array:
    """The prefix that is actually cached: 0 below the model's minimum."""
    return np.where(x.prefix_tokens >= x.min_cacheable_tokens, x.prefix_tokens, 0.0)


def request_cost_usd(x: EngineInputs, cache_hit_rate, write_multiplier=None) -> Array:
    w = x.cache_write_multiplier if write_multiplier is None else write_multiplier
    cached = cacheable_prefix_tokens(x)
    prefix_price = cache_hit_rate * x.cache_read_multiplier + (1.0 - cache_hit_rate) * w
    return (
        prefix_price * cached + (x.prompt_tokens - cached)
    ) * x.price_in_per_token_usd + x.output_tokens * x.price_out_per_token_usd


def nocache_cost_usd(x: EngineInputs) -> Array:
    return x.prompt_tokens * x.price_in_per_token_usd + x.output_tokens * x.price_out_per_token_usd


def effective_hit_rate(x: EngineInputs) -> Array:
    """The slider's hit rate, or the TTL-implied one when requests/min per prefix is set."""
    implied = ttl_hit_rate(x.requests_per_min_per_prefix, x.ttl_s, followup_wait_s(x))
    return np.where(x.requests_per_min_per_prefix > 0, implied, x.cache_hit_rate)


def prompt_cache(x: EngineInputs) -> dict[str, MetricValue]:
    """API cost with and without the prompt cache, and its hit rate."""
    h = effective_hit_rate(x)
    cached = cacheable_prefix_tokens(x)
    with_cache = request_cost_usd(x, h)
    without = nocache_cost_usd(x)
    return {
        "cache_applies": cached > 0,
        "cache_hit_rate": h,
        "cache_cost_per_request_usd": with_cache,
        "nocache_cost_per_request_usd": without,
        "cache_saving_frac": np.where(without > 0, 1.0 - with_cache / np.where(without > 0, without, 1.0), 0.0),
        "cache_break_even_hit_rate": break_even_hit_rate(x.cache_write_multiplier, x.cache_read_multiplier),
    }
