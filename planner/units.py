"""Unit constants: the one home of powers of ten and two.

Everything inside the engine is SI: bytes, seconds, FLOP, FLOP/s, bytes/s.
Human units (GB, GiB, TFLOP/s, ms) appear only in data files, labels and CSV
headers, and are converted with these constants.
"""

MEGA = 1e6
GIGA = 1e9
TERA = 1e12
PETA = 1e15

KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

GB = GIGA  # decimal gigabyte, as printed on datasheets

PERCENT = 100.0  # a fraction × PERCENT = per cent, for display
MS_PER_S = 1e3
US_PER_S = 1e6
S_PER_MINUTE = 60.0
S_PER_HOUR = 3600.0
S_PER_DAY = 86_400.0
TOKENS_PER_MTOK = 1e6

#: Bytes per element for weights and KV cache.  int4 and fp4 are the raw nibble; the scales
#: of each quantisation layout are added in ``planner.model.quantization``.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
    # vLLM's per-token-head KV payload (its inline scale: planner.model.quantization.kv_bytes_per_element)
    "int8_per_token_head": 1.0,
    "fp8_per_token_head": 1.0,
}

WEIGHT_DTYPES = ("bf16", "fp16", "fp8", "int8", "int4", "fp4")
KV_DTYPES = ("bf16", "fp16", "fp8", "int8", "int8_per_token_head", "fp8_per_token_head")

#: Activations are kept in 16-bit in every serving stack we model.
ACTIVATION_BYTES = 2.0
