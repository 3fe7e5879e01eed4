"""The shapes the benchmark measures, sized to the device.

CPU (fp32): a 4-layer d = 2048 GQA decoder (~197 M parameters, ~750 MiB),
grown by whole layers until the weights are ≥ 2 × the last-level cache, so a
decode step streams its weights from DRAM (bandwidth-bound) rather than cache.
GPU (bf16): 16 Llama-3-8B-shaped layers (d = 4096, 32 heads, 8 KV heads, f = 14336;
~3.6 B parameters, ~7 GiB), large enough that a decode step reads GiB.
``--quick``: tiny shapes on either device, for the test suite (seconds).

Decode cases whose KV cache would not fit the memory budget (``run.KV_MEMORY_SHARE``
of what the device has free, less the weights) are skipped and listed in the results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from planner.bench.decoder import DecoderShape
from planner.units import GiB, MiB

Phase = Literal["prefill", "decode", "mixed", "verify"]
PHASES: tuple[Phase, ...] = ("prefill", "decode", "mixed", "verify")

#: speculative draft length verified in one target pass of γ + 1 tokens per sequence
GAMMA = 4
#: weights must exceed this many last-level caches on the CPU: a cyclic pass over a working set larger
#: than the cache misses on nearly every line under LRU-like replacement; 2× leaves room for adaptive
#: policies.  (It was 16×: on a server CPU that reports its socket's 260 MiB L3 to a 2-core VM that grew
#: the decoder to 23 layers, 4.1 GB, and the run to 992 s, with no change in what a step streams.)
CPU_WEIGHTS_PER_LLC = 2
#: streaming buffers are at least this many last-level caches, and at least STREAM_BUFFER_MIN
BANDWIDTH_BUFFER_PER_LLC = 2
STREAM_BUFFER_MIN = 512 * MiB


@dataclass(frozen=True)
class Case:
    """One timed step: ``seqs`` sequences × ``q`` tokens after ``ctx`` cached, plus
    ``n`` prompt tokens after ``past`` cached — the arguments of ``roofline.step_cost``."""

    phase: Phase
    seqs: int = 0
    q: int = 1
    ctx: int = 0
    n: int = 0
    past: int = 0

    @property
    def tokens(self) -> int:
        return self.seqs * self.q + self.n


@dataclass(frozen=True)
class Plan:
    shape: DecoderShape
    matmul_sizes: tuple[int, ...]
    bandwidth_buffer_bytes: float
    cases: tuple[Case, ...]
    warmup: int
    repeats: int
    target_s: float = 0.0  # short steps are repeated to fill about this long (see backend.timed)
    micro_target_s: float = 0.0  # the same for the calibration rounds' measurements (run several times)
    attention_keys: int = 16  # KV length of the decode-attention calibration (micro.measure_attention)
    attention_prompt_tokens: int = 16  # prompt length of the prefill-attention calibration

    @property
    def max_positions(self) -> int:
        return max(max(c.ctx + c.q, c.past + c.n) for c in self.cases)


def _cases(prompts, batches, contexts, mixed, verify_seqs, verify_ctx) -> tuple[Case, ...]:
    out = [Case("prefill", n=p) for p in prompts]
    out += [Case("decode", seqs=b, ctx=c) for c in contexts for b in batches]
    out += [Case("mixed", seqs=b, ctx=c, n=n, past=p) for b, c, n, p in mixed]
    out += [Case("verify", seqs=b, q=GAMMA + 1, ctx=verify_ctx) for b in verify_seqs]
    return tuple(out)


BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)

CPU_SHAPE = DecoderShape(layers=4, hidden=2048, heads=16, kv_heads=4, head_dim=128, ffn=5632, vocab=8192)
GPU_SHAPE = DecoderShape(layers=16, hidden=4096, heads=32, kv_heads=8, head_dim=128, ffn=14336, vocab=32768)
QUICK_SHAPE = DecoderShape(layers=2, hidden=128, heads=4, kv_heads=2, head_dim=32, ffn=256, vocab=512)


def cpu_shape(llc_bytes: float | None, bytes_per_element: float) -> DecoderShape:
    """CPU_SHAPE with layers added until weights ≥ CPU_WEIGHTS_PER_LLC × LLC (at most 32 layers)."""
    if not llc_bytes:
        return CPU_SHAPE
    s = CPU_SHAPE
    per_layer = (s.params - s.vocab * s.hidden) / s.layers * bytes_per_element
    fixed = s.vocab * s.hidden * bytes_per_element
    need = math.ceil((CPU_WEIGHTS_PER_LLC * llc_bytes - fixed) / per_layer)
    layers = min(max(s.layers, need), 32)
    return DecoderShape(**{**s.__dict__, "layers": layers})


def make_plan(device: str, quick: bool, llc_bytes: float | None, bytes_per_element: float) -> Plan:
    buffer = max(BANDWIDTH_BUFFER_PER_LLC * (llc_bytes or 0.0), STREAM_BUFFER_MIN)
    if quick:
        return Plan(
            shape=QUICK_SHAPE,
            matmul_sizes=(64, 128),
            bandwidth_buffer_bytes=8 * MiB,
            cases=_cases((16, 32), (1, 4), (16, 32), ((2, 16, 8, 8),), (2,), 16),
            warmup=1,
            repeats=2,
            attention_keys=32,
            attention_prompt_tokens=32,
        )
    if device == "cuda":
        return Plan(
            shape=GPU_SHAPE,
            matmul_sizes=(2048, 4096, 8192),
            bandwidth_buffer_bytes=max(buffer, 2 * GiB),
            cases=_cases(
                (256, 512, 1024, 2048, 4096, 8192),
                BATCHES,
                (512, 2048, 8192),
                ((32, 2048, 512, 1024), (128, 2048, 2048, 0)),
                (1, 16, 64),
                2048,
            ),
            warmup=3,
            repeats=10,
            target_s=0.2,
            micro_target_s=0.1,
            attention_keys=2048,
            attention_prompt_tokens=4096,
        )
    return Plan(
        shape=cpu_shape(llc_bytes, bytes_per_element),
        matmul_sizes=(256, 512, 1024, 2048),
        bandwidth_buffer_bytes=buffer,
        cases=_cases(
            (64, 128, 256, 512, 1024, 2048),
            BATCHES,
            (128, 512, 1024),
            ((16, 512, 256, 256), (64, 512, 512, 0)),
            (1, 16, 64),
            512,
        ),
        warmup=1,
        repeats=3,
        target_s=1.0,
        micro_target_s=0.3,
        attention_keys=1024,
        attention_prompt_tokens=1024,
    )
