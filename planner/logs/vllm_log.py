"""A vLLM start-up log → its memory terms and settings (``VllmStartup``).  Pure; nothing is executed.

The lines read and the format strings that print them (vLLM 0.19.0, V1 engine; file:line):

  ``non-default args: {...}``                                           entrypoints/utils.py:233
  ``Initializing a V1 LLM engine (v0.19.0) with config: model='…', dtype=…, max_seq_len=…,
  tensor_parallel_size=…, quantization=…, kv_cache_dtype=…, enable_prefix_caching=…``   v1/engine/core.py:105
  ``Defaulting max_num_batched_tokens to 8192`` / ``Defaulting max_num_seqs to 1024``   engine/arg_utils.py:2232/2242
  ``Chunked prefill is enabled with max_num_batched_tokens=8192.``      config/scheduler.py:238
  ``worker init memory snapshot: … total_memory=79.19GiB …``  (DEBUG)   v1/worker/gpu_worker.py:284
  ``worker requested memory: 75.23GiB``  (DEBUG)                        v1/worker/gpu_worker.py:285
  ``Requested memory: 0.950000 (util), 75.23 GiB``  (DEBUG)             v1/worker/gpu_worker.py:424
  ``Model loading took 14.99 GiB memory and 14.43 seconds``             v1/worker/gpu_model_runner.py:4820
  ``torch peak memory increase: 1.89GiB; non-torch forward increase memory: 0.25GiB``  (DEBUG)  gpu_worker.py:435
  ``Available KV cache memory: 58.11 GiB``                              v1/worker/gpu_worker.py:436
  ``GPU KV cache size: 476,016 tokens``                                 v1/core/kv_cache_utils.py:1319
  ``Maximum concurrency for 8,192 tokens per request: 58.11x``          v1/core/kv_cache_utils.py:1324
  ``Estimated CUDA graph memory: 0.84 GiB total``                       v1/worker/gpu_model_runner.py:5955
  ``Graph capturing finished in 3 secs, took 0.91 GiB``                 v1/worker/gpu_model_runner.py:6046
  ``Actual usage is … GiB for weight, … for peak activation, … for non-torch memory, and … for
  CUDAGraph memory``  (DEBUG)                                           v1/worker/gpu_worker.py:630-661

vLLM 0.33.0 (and what changed since 0.19; file:line of the 0.33.0 wheel, the release the line appeared in):

  ``Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (u, R GiB). Actual usage is C
  GiB for consumed memory (weights + non-torch), P GiB for peak activation, and G GiB for CUDAGraph memory. …
  Current kv cache memory in use is K GiB.``  INFO since 0.26.0, this wording since 0.27.0 (gpu_worker.py:1041-1066):
  C = weights + non-torch growth + torch buffers kept (no non-torch figure of its own any more), P = the transient
  peak + the CUDA-graph estimate subtracted, G = the graphs captured after sizing
  ``CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization=u is
  equivalent to --gpu-memory-utilization=u′ …``  the estimate E = (u − u′) · T was subtracted (gpu_worker.py:777-795;
  "… is disabled" when it was not)
  ``CUDA graph pool memory: A GiB (actual), E GiB (estimated), …``   gpu_worker.py:1003
  ``GPU KV cache size: N tokens, Maximum concurrency for L tokens per request: Xx``  one line since 0.28.0
  (kv_cache_utils.py:1147; "%s KV cache size" since 0.30.0); N = ⌊X · L⌋ since 0.21.0
  ``Graph capturing finished in N secs, took X GiB``  twice with the V2 model runner (its profiling pass too): the
  last is the capture
  ``… torch peak memory increase: X GiB …``  (DEBUG) still printed, no longer subtracted (since 0.27.0)

and the V0 engine's (≤ 0.10) ``Memory profiling results: total_gpu_memory=… peak_torch_memory=…
non_torch_memory=… kv_cache_size=… gpu_memory_utilization=…``, ``# GPU blocks: N`` and
``Loading model weights took X GB``.  Every GiB figure vLLM prints is rounded to 0.01 GiB.
With tensor parallelism each rank prints its own lines: the smallest "Available KV cache
memory" is the one that sizes the cache (vLLM takes the minimum over workers).
"""

from __future__ import annotations

import ast
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import ProblemsError, format_validation_error

#: Largest log text read (a DEBUG start-up log is ~1 MB; only its start-up part is needed).
MAX_LOG_CHARS = 8_000_000
MAX_ARGS_CHARS = 20_000


class LogError(ProblemsError):
    """A log that cannot be read as a vLLM start-up log (one line per problem)."""


class StartupSettings(BaseModel):
    """The engine settings a start-up log states, by vLLM's names (an SGLang log's too: ``sglang_log``), so
    ``planner.logs.check`` reads both kinds of log alike; ``None`` where the log does not say."""

    model_config = ConfigDict(frozen=True, allow_inf_nan=False)  # a number too long for a float is refused by name

    model: str | None = None
    tp: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    dtype: str | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    max_model_len: int | None = Field(default=None, ge=1)
    max_num_batched_tokens: int | None = Field(default=None, ge=1)
    max_num_seqs: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    block_size: int | None = Field(default=None, ge=1)
    enable_prefix_caching: bool | None = None


class VllmStartup(StartupSettings):
    """What a vLLM start-up log says (GiB as printed; ``None`` where the log does not say)."""

    engine_version: str | None = None
    v0_engine: bool = False
    total_memory_gib: float | None = None
    requested_memory_gib: float | None = None
    weights_gib: float | None = None
    activation_gib: float | None = None
    non_torch_gib: float | None = None
    kv_cache_gib: float | None = None
    kv_cache_tokens: int | None = None
    num_gpu_blocks: int | None = None
    concurrency_tokens: int | None = None
    concurrency: float | None = None
    cuda_graph_gib: float | None = None
    cuda_graph_estimate_gib: float | None = None
    graphs_in_budget: bool | None = None  # "CUDA graph memory profiling is enabled" (the estimate was subtracted)
    consumed_gib: float | None = None  # ≥ 0.27: weights + non-torch + torch buffers kept
    peak_activation_gib: float | None = None  # ≥ 0.27: transient peak + the CUDA-graph estimate
    torch_peak_increase_gib: float | None = None  # ≥ 0.27 DEBUG: printed, not subtracted
    one_line_kv_size: bool = False  # "… KV cache size: N tokens, Maximum concurrency …" (≥ 0.28)
    startup_baseline_gib: float | None = None
    ranks_reporting: int = 0
    errors: tuple[str, ...] = ()

    def memory_terms(self) -> dict[str, float]:
        """The memory terms the log states, GiB (see ``TERM_LABELS``)."""
        return {k: v for k in TERM_LABELS if (v := getattr(self, k)) is not None}

    def release(self) -> tuple[int, ...] | None:
        """The vLLM release the log is from: its banner's version, else the oldest release that prints its
        format (the one-line KV size 0.28, the "consumed memory" summary 0.27), else None (0.19's format)."""
        if self.engine_version:
            parts = _DIGITS.findall(self.engine_version)[:3]
            return tuple(int(p) for p in parts) or None
        if self.one_line_kv_size:
            return (0, 28, 0)
        if self.consumed_gib is not None:
            return (0, 27, 0)
        return None


#: Every memory term a log may state, with the words the comparison uses.
TERM_LABELS: dict[str, str] = {
    "total_memory_gib": "total device memory (driver)",
    "requested_memory_gib": "requested: ⌈total × gpu_memory_utilization⌉",
    "weights_gib": "weights",
    "activation_gib": "peak activation (profile run)",
    "non_torch_gib": "non-torch increase (NCCL, cuBLAS …)",
    "consumed_gib": "consumed (weights + non-torch)",
    "peak_activation_gib": "peak activation (+ the CUDA-graph estimate)",
    "cuda_graph_estimate_gib": "CUDA-graph estimate (in the KV budget)",
    "kv_cache_gib": "available KV cache memory",
    "cuda_graph_gib": "CUDA graphs captured",
}

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"


class OnOneLine:
    """``head.*?tail`` on one line, found in one pass over the text (``re`` would rescan the rest of a line
    from every repetition of ``head``: quadratic on a line that repeats it).  ``search`` returns the tail's
    match: the first line where ``tail`` follows ``head``.  A line whose first ``head`` has no ``tail`` after it
    has none after a later ``head`` either, so each line is read at most twice."""

    def __init__(self, head: re.Pattern[str], tail: re.Pattern[str]):
        self.head, self.tail = head, tail

    def search(self, text: str) -> re.Match[str] | None:
        pos = 0
        while (h := self.head.search(text, pos)) is not None:
            end = text.find("\n", h.end())
            end = len(text) if end < 0 else end
            if (t := self.tail.search(text, h.end(), end)) is not None:
                return t
            pos = end + 1
        return None


_DIGITS = re.compile(r"[0-9]+")
_GIB_PATTERNS: dict[str, tuple[re.Pattern[str] | OnOneLine, ...]] = {
    "total_memory_gib": (
        re.compile(r"total_memory=" + _NUM + r"\s*GiB"),
        re.compile(r"Free memory on device \([0-9.]+/" + _NUM + r" GiB\)"),
    ),
    "requested_memory_gib": (
        re.compile(r"worker requested memory: " + _NUM + r"\s*GiB"),
        re.compile(r"\(util\), " + _NUM + r" GiB"),
    ),
    "weights_gib": (
        re.compile(r"Model loading took " + _NUM + r" GiB"),
        re.compile(r"weights memory: " + _NUM + r"\s*GiB"),
        re.compile(r"Loading model weights took " + _NUM + r" GB"),
        re.compile(r"model weights take " + _NUM + r"\s*GiB"),
    ),
    "activation_gib": (
        re.compile(r"torch peak memory increase: " + _NUM + r"\s*GiB"),
        re.compile(r"GiB for weight, " + _NUM + r" GiB for peak activation"),
        re.compile(r"PyTorch activation peak memory takes " + _NUM + r"\s*GiB"),
    ),
    "non_torch_gib": (
        re.compile(r"non-torch forward increase memory: " + _NUM + r"\s*GiB"),
        re.compile(r"GiB for peak activation, " + _NUM + r" GiB for non-torch memory"),
        re.compile(r"non_torch_memory takes " + _NUM + r"\s*GiB"),
    ),
    "cuda_graph_gib": (re.compile(r"Graph capturing finished in [0-9.]+ secs?, took " + _NUM + r" GiB"),),
    "cuda_graph_estimate_gib": (re.compile(r"Estimated CUDA graph memory: " + _NUM + r" GiB total"),),
    "startup_baseline_gib": (
        OnOneLine(re.compile(r"worker init memory snapshot: "), re.compile(r"non_torch_memory=" + _NUM + r"\s*GiB")),
    ),
}
_KV_GIB = (
    re.compile(r"Available KV cache memory: " + _NUM + r" GiB"),
    re.compile(r"the rest of the memory reserved for KV Cache is " + _NUM + r"\s*GiB"),
    re.compile(r"kv_cache_size=" + _NUM + r"\s*GiB"),
)
_V0_PROFILE = OnOneLine(
    re.compile(r"Memory profiling results: total_gpu_memory=" + _NUM + r"GiB"), re.compile(r"kv_cache_size=" + _NUM)
)
_V0_SHORT = re.compile(
    r"total_gpu_memory \(" + _NUM + r"GiB\) x gpu_memory_utilization \(" + _NUM + r"\)",
)
_V0_TOTAL = re.compile(r"total_gpu_memory=" + _NUM + r"GiB")
_V0_UTIL = re.compile(r"gpu_memory_utilization=" + _NUM)
_V0_PEAK = re.compile(r"peak_torch_memory=" + _NUM + r"GiB")
_V0_INITIAL = re.compile(r"initial_memory_usage=" + _NUM + r"GiB")
_V0_NONTORCH = re.compile(r"non_torch_memory=" + _NUM + r"GiB")
_TOKENS = re.compile(r"KV cache size: " + _NUM + r" tokens")
_ONE_LINE_KV = re.compile(r"KV cache size: [0-9][0-9,]* tokens, Maximum concurrency")
_SUMMARY = re.compile(
    r"Actual usage is " + _NUM + r" GiB for consumed memory \(weights \+ non-torch\), " + _NUM + r" GiB for peak "
    r"activation, and " + _NUM + r" GiB for CUDAGraph memory"
)
_DESIRED = re.compile(r"Desired GPU memory utilization is \(" + _NUM + r", " + _NUM + r" GiB\)")
_POOL = re.compile(r"CUDA graph pool memory: " + _NUM + r" GiB \(actual\), " + _NUM + r" GiB \(estimated\)")
_PROFILING = re.compile(r"CUDA graph memory profiling is (enabled|disabled)")
_EQUIVALENT = re.compile(
    r"The current --gpu-memory-utilization=" + _NUM + r" is equivalent to --gpu-memory-utilization=" + _NUM
)
_KV_IN_USE = re.compile(r"Current kv cache memory in use is " + _NUM + r" GiB")
_GRAPHS_TOOK = re.compile(r"Graph capturing finished in [0-9.]+ secs?, took " + _NUM + r" GiB")
_BLOCKS = (re.compile(r"num_gpu_blocks is: " + _NUM), re.compile(r"# GPU blocks: " + _NUM))
_CONCURRENCY = re.compile(r"Maximum concurrency for " + _NUM + r" tokens per request: " + _NUM + r"x")
_VERSION = (
    re.compile(r"Initializing a V1 LLM engine \(v([0-9][^)\s]{0,40})\)"),
    re.compile(r"Initializing an LLM engine \(v([0-9][^)\s]{0,40})\)"),
    re.compile(r"\bversion ([0-9]+\.[0-9]+\.[0-9][^\s]{0,30})"),
)
#: ``non-default args: {`` — the dict runs to the line's last ``}`` (``_literal_args``: one pass, not ``\{.*\}``).
_ARGS = re.compile(r"non-default args: (\{)")
#: The version in ``LLM engine (v…)`` is at most 80 characters (a bounded repeat: linear).
_ENGINE_CONFIG = re.compile(r"LLM engine \(v[^)\n]{0,80}\) with config: (.*)")
_CONFIG_PAIR = re.compile(r"(?:^|, )(\w+)=('[^']*'|[^,{}\[\]()]*)")
_DEFAULTING = re.compile(r"Defaulting (max_num_batched_tokens|max_num_seqs) to ([0-9]+)")
_CHUNKED = re.compile(r"Chunked prefill is enabled with max_num_batched_tokens=([0-9]+)")
_UTIL = re.compile(r"Requested memory: ([0-9.]+) \(util\)")
_ERROR = re.compile(
    r"((?:ValueError|RuntimeError|AssertionError|NotImplementedError|torch\.OutOfMemoryError|"
    r"torch\.cuda\.OutOfMemoryError|pydantic[\w.]{0,80}ValidationError|Value error)[:,].{0,300})"
)
_RANK_AVAIL = re.compile(r"^\((\w+) pid=\d+\).*Available KV cache memory", re.MULTILINE)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _whole(text: str) -> int | float:
    """A count as printed; a number past a float's range stays inf, for the model to refuse by name."""
    value = _number(text)
    return int(value) if math.isfinite(value) else value


def _first(patterns: tuple[re.Pattern[str] | OnOneLine, ...], text: str) -> float | None:
    for p in patterns:
        m = p.search(text)
        if m:
            return _number(m.group(1))
    return None


def _literal_args(text: str) -> dict[str, Any]:
    """The ``non-default args`` dict (literals only: ``ast.literal_eval``, never ``eval``)."""
    pos, body = 0, None
    while (m := _ARGS.search(text, pos)) is not None:  # ``non-default args: (\{.*\})`` in one pass
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        close = text.rfind("}", m.start(1), end)
        if close >= 0:
            body = text[m.start(1) : close + 1]
            break
        pos = end + 1
    if body is None or len(body) > MAX_ARGS_CHARS:
        return {}
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _config_pairs(text: str) -> dict[str, str]:
    """``key=value`` pairs of the ``Initializing … with config:`` line (top level only)."""
    m = _ENGINE_CONFIG.search(text)
    if not m:
        return {}
    out: dict[str, str] = {}
    for key, value in _CONFIG_PAIR.findall(m.group(1)[:MAX_ARGS_CHARS]):
        out.setdefault(key, value.strip("'"))
    return out


def _int(value: Any) -> int | None:
    try:
        v = int(value)
    except (TypeError, ValueError):
        return None
    return v if v >= 1 else None


def _settings(text: str) -> dict[str, Any]:
    """The serving settings the log states: non-default args first, then the engine config line."""
    args, cfg = _literal_args(text), _config_pairs(text)
    defaults = dict(_DEFAULTING.findall(text))
    chunked = _CHUNKED.search(text)
    util = args.get("gpu_memory_utilization")
    if util is None and (m := _UTIL.search(text)):
        util = float(m.group(1))
    dtype = str(args.get("dtype") or cfg.get("dtype", "")).removeprefix("torch.") or None
    quant = args.get("quantization") or cfg.get("quantization")
    kv = args.get("kv_cache_dtype") or cfg.get("kv_cache_dtype")
    prefix = args.get("enable_prefix_caching", cfg.get("enable_prefix_caching"))
    mnbt = args.get("max_num_batched_tokens") or (chunked.group(1) if chunked else None)
    return {
        "model": str(args.get("model") or cfg.get("model") or "") or None,
        "tp": _int(args.get("tensor_parallel_size", cfg.get("tensor_parallel_size"))),
        "pp": _int(args.get("pipeline_parallel_size", cfg.get("pipeline_parallel_size"))),
        "dtype": dtype,
        "quantization": None if quant in (None, "None", "") else str(quant),
        "kv_cache_dtype": None if kv in (None, "") else str(kv),
        "max_model_len": _int(args.get("max_model_len", cfg.get("max_seq_len"))),
        "max_num_batched_tokens": _int(mnbt or defaults.get("max_num_batched_tokens")),
        "max_num_seqs": _int(args.get("max_num_seqs") or defaults.get("max_num_seqs")),
        "gpu_memory_utilization": float(util)
        if isinstance(util, (int, float)) and not isinstance(util, bool)
        else None,
        "block_size": _int(args.get("block_size")),
        "enable_prefix_caching": None if prefix is None else str(prefix) == "True",
    }


def _v0_terms(text: str) -> dict[str, Any]:
    """The V0 engine's one-line memory summary (``Memory profiling results: …``)."""
    out: dict[str, Any] = {}
    if _V0_PROFILE.search(text) is not None or _V0_SHORT.search(text):
        out["v0_engine"] = True
        total = _V0_TOTAL.search(text) or _V0_SHORT.search(text)
        if total:
            out["total_memory_gib"] = _number(total.group(1))
        util = _V0_UTIL.search(text) or _V0_SHORT.search(text)
        if util:
            out["gpu_memory_utilization"] = _number(util.group(1) if util.re is _V0_UTIL else util.group(2))
        peak, initial = _V0_PEAK.search(text), _V0_INITIAL.search(text)
        if peak and initial:
            out["activation_gib"] = round(_number(peak.group(1)) - _number(initial.group(1)), 2)
        nt = _V0_NONTORCH.search(text)
        if nt:
            out["non_torch_gib"] = _number(nt.group(1))
    return out


def _kv_cache_gib(text: str) -> tuple[float | None, int]:
    """The smallest "Available KV cache memory" over the ranks that print it, and how many do."""
    values = [_number(v) for v in _KV_GIB[0].findall(text)]
    if values:
        ranks = len(set(_RANK_AVAIL.findall(text))) or 1
        return min(values), ranks
    return _first(_KV_GIB[1:], text), 0


def _errors(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for m in _ERROR.finditer(text):
        line = m.group(1).strip()
        if line not in found:
            found.append(line)
        if len(found) >= 3:
            break
    return tuple(found)


def _current_terms(text: str, found: dict[str, Any]) -> None:
    """The 0.2x/0.3x lines (module doc) into ``found``: the summary's consumed and peak, the requested memory,
    whether the graph estimate was subtracted and its figure, the last graph capture; a ≥ 0.27 DEBUG
    "torch peak memory increase" moves to ``torch_peak_increase_gib`` (it is not what 0.27+ subtracts)."""
    if (m := _SUMMARY.search(text)) is not None:
        found["consumed_gib"], found["peak_activation_gib"] = _number(m.group(1)), _number(m.group(2))
        found["cuda_graph_gib"] = _number(m.group(3))
        if found.get("activation_gib") is not None:
            found["torch_peak_increase_gib"], found["activation_gib"] = found["activation_gib"], None
    if (m := _DESIRED.search(text)) is not None:
        found.setdefault("gpu_memory_utilization", _number(m.group(1)))
        found["requested_memory_gib"] = found.get("requested_memory_gib") or _number(m.group(2))
    if (m := _PROFILING.search(text)) is not None:
        found["graphs_in_budget"] = m.group(1) == "enabled"
    took = _GRAPHS_TOOK.findall(text)
    if took:
        found["cuda_graph_gib"] = _number(took[-1])
    if (m := _POOL.search(text)) is not None:
        found["cuda_graph_gib"], found["cuda_graph_estimate_gib"] = _number(m.group(1)), _number(m.group(2))
    elif found.get("cuda_graph_estimate_gib") is None and (m := _EQUIVALENT.search(text)) and found["total"]:
        found["cuda_graph_estimate_gib"] = round((_number(m.group(1)) - _number(m.group(2))) * found["total"], 2)
    if found.get("kv_cache_gib") is None and (m := _KV_IN_USE.search(text)) is not None:
        found["kv_cache_gib"] = _number(m.group(1))
    found["one_line_kv_size"] = _ONE_LINE_KV.search(text) is not None


def parse_vllm_log(text: str | bytes) -> VllmStartup:
    """Every memory term and setting ``text`` states.  ``LogError`` when it is not a vLLM start-up log."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        raise LogError([f"expected the log's text, not {type(text).__name__}"])
    if not text.strip():
        raise LogError(["the log is empty: paste the start-up output of `vllm serve` (stdout/stderr)"])
    text = text[:MAX_LOG_CHARS].replace("\r\n", "\n")
    found: dict[str, Any] = {k: _first(v, text) for k, v in _GIB_PATTERNS.items()}
    found.update({k: v for k, v in _v0_terms(text).items() if v is not None})
    found["kv_cache_gib"], found["ranks_reporting"] = _kv_cache_gib(text)
    found["total"] = found.get("total_memory_gib")
    _current_terms(text, found)
    del found["total"]
    if (m := _TOKENS.search(text)) is not None:
        found["kv_cache_tokens"] = _whole(m.group(1))
    for pattern in _BLOCKS:
        if (m := pattern.search(text)) is not None:
            found["num_gpu_blocks"] = _whole(m.group(1))
            break
    if (m := _CONCURRENCY.search(text)) is not None:
        found["concurrency_tokens"], found["concurrency"] = _whole(m.group(1)), _number(m.group(2))
    for pattern in _VERSION:
        if (m := pattern.search(text)) is not None:
            found["engine_version"] = m.group(1)
            break
    settings = _settings(text)
    for key, value in settings.items():
        if value is not None and found.get(key) is None:
            found[key] = value
    found["errors"] = _errors(text)
    terms = [k for k in (*TERM_LABELS, "kv_cache_tokens", "concurrency", "num_gpu_blocks") if found.get(k) is not None]
    if not terms:
        hint = f" It ends in an error: {found['errors'][0]}" if found["errors"] else ""
        raise LogError(
            [
                "no vLLM start-up memory line found: expected lines such as 'Model loading took 14.99 GiB memory', "
                "'Available KV cache memory: 58.11 GiB' or 'GPU KV cache size: 476,016 tokens' "
                "(vLLM prints them at INFO level while the engine starts)." + hint
            ]
        )
    try:
        return VllmStartup.model_validate({k: v for k, v in found.items() if v is not None})
    except ValidationError as exc:
        raise LogError([f"the log states a value outside what vLLM accepts: {format_validation_error(exc)}"]) from None
