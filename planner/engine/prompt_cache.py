"""Prompt-caching cost per request (API pricing) and its effect on TTFT.

Prices per token: input p, output o; cache write w·p (w = 1.25 for a 5-minute
TTL, 2 for 1 hour), cache read r·p (r = 0.1) — Anthropic prompt-caching docs.
A prefix shorter than the model's minimum is not cached (silently: no write, no read).

cost with cache  = (h·r + (1−h)·w)·X·p + (P − X)·p + O·o        X = cacheable prefix
cost without     = P·p + O·o
break-even h*    = (w − 1) / (w − r)           (caching pays when h > h*)
TTFT with cache  = h · t_prefill(P − X after X cached) + (1 − h) · t_prefill(P)
Hit rate from traffic (optional): follow-ups on one prefix arrive as a Poisson
process of λ per second after the previous request *ends*; the TTL runs from that
request's *start*, so its own duration D (TTFT + O·TPOT) eats the window:
    h = 1 − exp(−λ · max(TTL − D, 0))
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.engine.roofline import StepCost, prefill
from planner.units import S_PER_MINUTE


def break_even_hit_rate(write_multiplier, read_multiplier=0.1) -> Array:
    w = np.asarray(write_multiplier, dtype=float)
    return (w - 1.0) / (w - read_multiplier)


def ttl_hit_rate(requests_per_min, ttl_s, request_duration_s) -> Array:
    lam = np.asarray(requests_per_min, dtype=float) / S_PER_MINUTE
    window = np.maximum(np.asarray(ttl_s, dtype=float) - request_duration_s, 0.0)
    return 1.0 - np.exp(-lam * window)


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


def effective_hit_rate(x: EngineInputs, request_duration_s) -> Array:
    """The slider's hit rate, or the TTL-implied one when requests/min per prefix is set."""
    implied = ttl_hit_rate(x.requests_per_min_per_prefix, x.ttl_s, request_duration_s)
    return np.where(x.requests_per_min_per_prefix > 0, implied, x.cache_hit_rate)


def cache_hit_prefill(x: EngineInputs) -> StepCost:
    """Prefill on a cache hit: the P − X new tokens after the X cached ones (at least one new token)."""
    cached = cacheable_prefix_tokens(x)
    return prefill(x, tokens=np.maximum(x.prompt_tokens - cached, 1.0), past=np.minimum(cached, x.prompt_tokens - 1.0))


def prompt_cache(x: EngineInputs, request_duration_s) -> dict[str, MetricValue]:
    h = effective_hit_rate(x, request_duration_s)
    cached = cacheable_prefix_tokens(x)
    with_cache = request_cost_usd(x, h)
    without = nocache_cost_usd(x)
    ttft_hit = cache_hit_prefill(x).time_s
    ttft_miss = prefill(x).time_s
    return {
        "cache_applies": cached > 0,
        "cache_hit_rate": h,
        "cache_cost_per_request_usd": with_cache,
        "nocache_cost_per_request_usd": without,
        "cache_saving_frac": np.where(without > 0, 1.0 - with_cache / np.where(without > 0, without, 1.0), 0.0),
        "cache_break_even_hit_rate": break_even_hit_rate(x.cache_write_multiplier, x.cache_read_multiplier),
        "cached_ttft_s": h * ttft_hit + (1.0 - h) * ttft_miss,
    }
