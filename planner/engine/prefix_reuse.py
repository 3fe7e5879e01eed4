"""Self-hosted prefix caching: what a prefix-cache hit saves your GPUs (vLLM automatic prefix caching,
SGLang's radix cache, TensorRT-LLM's KV-cache reuse).  The API's billing for its prompt cache is
another model, in ``prompt_cache``.

What a hit finds (vLLM v1 ``kv_cache_manager.get_computed_blocks``, 0.19 to 0.33 alike): the request's
prompt is looked up block by block; only whole KV blocks are found (``find_longest_cache_hit``:
``max_num_blocks = max_length // block_size``) and at most P − 1 tokens (``max_cache_hit_length =
request.num_tokens - 1``: "when all tokens hit the cache, we must recompute the last token to obtain
logits").  SGLang's ``_compute_max_prefix_len`` is the same P − 1, rounded down to its page:

    X_hit = block · ⌊min(X, P − 1) / block⌋           X = the shared prefix (``prefix``), block = ``block``

A hit's KV is read, not written: its prefill computes only the P − X_hit new tokens (their attention
still reads all P):  t_hit = t_prefill(P − X_hit after X_hit).  With h the share of requests that find
their prefix in the GPUs' cache (``gpu_hit``, else ``hit``; 0 with ``prefix_cache=off``):

    TTFT (idle replica)         = h · t_hit + (1 − h) · t_prefill(P)
    prefill time a request holds = the same (the serving throughput and the GPU cost read it)
    prefill time the cache saves = h · (t_prefill(P) − t_hit) per request

The shared blocks are also held once in the KV pool however many requests use them; the memory plan
does not count that saving (vLLM's "Maximum concurrency" does not either; the simulator does).
"""

from __future__ import annotations

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.engine.roofline import StepCost, prefill
from planner.engine.step_times import step_times_s


def gpu_cached_tokens(x: EngineInputs) -> Array:
    """X_hit: the prompt tokens a prefix-cache hit reads (module doc): whole blocks, at most P − 1."""
    reach = np.minimum(x.prefix_tokens, x.prompt_tokens - 1.0)
    return np.maximum(np.floor(reach / x.block_tokens), 0.0) * x.block_tokens


def any_hit(x: EngineInputs) -> bool:
    """Whether any scenario of ``x`` has a prefix-cache hit that saves a token (else every hit formula is
    the plain prefill's and the engine skips them)."""
    return bool(np.any((x.gpu_hit_rate > 0) & (gpu_cached_tokens(x) > 0)))


def hit_prefill(x: EngineInputs) -> StepCost:
    """The prefill of a request whose prefix is found: P − X_hit new tokens after X_hit cached."""
    cached = gpu_cached_tokens(x)
    return prefill(x, tokens=x.prompt_tokens - cached, past=cached)


def expected(x: EngineInputs, on_hit, on_miss) -> Array:
    """h · on_hit + (1 − h) · on_miss, h the GPUs' prefix-cache hit rate (an infinite miss stays infinite
    only where h < 1)."""
    h = x.gpu_hit_rate
    with np.errstate(invalid="ignore"):  # 0 · ∞ where h is 0 or 1: that branch is not taken
        mixed = h * on_hit + (1.0 - h) * on_miss
    return np.where(h >= 1.0, on_hit, np.where(h <= 0.0, on_miss, mixed))


def hit_or_miss_prefill_s(x: EngineInputs, miss_s) -> Array:
    """``hit_prefill(x).time_s`` (``step_times``: the time alone), or ``miss_s`` (the whole prompt's prefill)
    where no scenario's hit finds a cached token."""
    cached = gpu_cached_tokens(x)
    if not bool(np.any(cached > 0)):
        return miss_s
    return step_times_s(x, 0.0, 0.0, [(x.prompt_tokens - cached, cached, None)])[0]


def prefix_cache_metrics(x: EngineInputs, miss: StepCost, hit_s=None) -> dict[str, MetricValue]:
    """The idle TTFT with the prefix cache, on a hit and without it, the hit's cached tokens and the
    prefill time the cache saves per request (module doc).  ``miss``: the whole prompt's prefill; ``hit_s``:
    ``hit_or_miss_prefill_s`` when already computed."""
    cached = gpu_cached_tokens(x)
    miss_s = miss.time_s
    hit_s = hit_or_miss_prefill_s(x, miss_s) if hit_s is None else hit_s  # the hit's own time, whatever the hit rate
    shape = np.broadcast_shapes(np.shape(miss_s), np.shape(hit_s), np.shape(cached), np.shape(x.gpu_hit_rate))
    return {
        "ttft_s": np.broadcast_to(expected(x, hit_s, miss_s), shape),
        "ttft_nocache_s": np.broadcast_to(miss_s, shape),
        "ttft_hit_s": np.broadcast_to(hit_s, shape),
        "gpu_cache_hit_rate": np.broadcast_to(x.gpu_hit_rate, shape).astype(float),
        "gpu_cached_tokens": np.broadcast_to(cached, shape).astype(float),
        "prefill_saved_per_request_s": np.broadcast_to(x.gpu_hit_rate * (miss_s - hit_s), shape),
    }
