"""The advisor's checks: each takes the re-run ``Context`` and returns a ``Finding`` or None.

memory      weights fit, KV cache holds the batch, weights leave room for KV
throughput  decode regime, chunk size, speculative decoding, TP communication
cost        prompt caching (prefix below the minimum, surcharge), a cheaper GPU
"""
