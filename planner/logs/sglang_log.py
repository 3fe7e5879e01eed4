"""An SGLang start-up log → its memory terms and settings (``SglangStartup``).  Pure; nothing is executed.

The lines read and the format strings that print them (sglang 0.5.23; file:line, "GB" there is GiB:
``get_available_gpu_memory`` divides by 2**30):

  ``server_args={'model_path': …, 'tp_size': 1, 'mem_fraction_static': 0.83, …}``   entrypoints/engine.py:311
    (older releases: ``server_args=ServerArgs(model_path='…', …)``)
  ``Load weight begin. avail mem=A GB``                                         model_executor/model_runner.py:1274
  ``Load weight end. elapsed=…, type=…, avail mem=B GB, mem usage=W GB.``       model_executor/model_runner.py:1373
  ``KV Cache is allocated. dtype: …, #tokens: N, K size: k GB, V size: v GB``   mem_cache/memory_pool.py:2087-2098
  ``Use sliding window memory pool. full_layer_tokens=F, swa_layer_tokens=S``   model_executor/pool_configurator.py:889
  ``max_total_num_tokens=N, chunked_prefill_size=C, max_prefill_tokens=…, max_running_requests=R,
  context_len=L, available_gpu_mem=M GB``                                      managers/scheduler.py:1269

SGLang's KV budget is rest = B − A · (1 − mem_fraction_static) (kv_cache_configurator.py:2990-3060): W = A − B is
what it subtracts for the weights.  Each tensor-parallel rank logs its own pool; the first is read.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic import ValidationError

from planner.errors import format_validation_error
from planner.logs.vllm_log import MAX_ARGS_CHARS, MAX_LOG_CHARS, LogError, OnOneLine, StartupSettings

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
#: ``server_args={`` or ``server_args=ServerArgs(``: the body runs to the line's last ``}`` / ``)`` (``_args_body``:
#: one pass, not ``\{.*\}``, which rescans the line from every repetition of its head).
_ARGS = re.compile(r"server_args=(\{|ServerArgs\()")
#: ``key=value`` pairs; a key of at most 64 characters, so a failed try costs a bounded scan (linear in the body).
_PAIR = re.compile(r"'?([A-Za-z_][A-Za-z0-9_]{0,63})'?[=:] ?('[^']*'|[^,{}()\[\]]*)")
_LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=" + _NUM + r" GB")
# head-then-tail on one line (``vllm_log.OnOneLine``: one pass; ``head[^\n]*tail`` is quadratic on a line that
# repeats the head)
_LOAD_END = OnOneLine(
    re.compile(r"Load weight end\."), re.compile(r"avail mem=" + _NUM + r" GB, mem usage=" + _NUM + r" GB")
)
_KV_HEAD = re.compile(r"KV Cache is allocated\.")
_KV_POOL = OnOneLine(_KV_HEAD, re.compile(r"#tokens: " + _NUM + r", K size: " + _NUM + r" GB, V size: " + _NUM))
_KV_POOL_ONE = OnOneLine(_KV_HEAD, re.compile(r"#tokens: " + _NUM + r", KV size: " + _NUM + r" GB"))
_SWA = re.compile(r"full_layer_tokens=" + _NUM + r", swa_layer_tokens=" + _NUM)
_SCHEDULER = re.compile(
    r"max_total_num_tokens=" + _NUM + r", chunked_prefill_size=(-?[0-9]+), max_prefill_tokens=[0-9]+, "
    r"max_running_requests=" + _NUM + r", context_len=" + _NUM
)
_ERROR = re.compile(r"((?:ValueError|RuntimeError|AssertionError|torch\.OutOfMemoryError)[:,][^\n]{0,300})")
#: A text is an SGLang log when it has one of these (and no vLLM engine banner).
MARKERS = ("sglang", "Load weight end.", "max_total_num_tokens=", "KV Cache is allocated.")
#: SGLang term → (label, unit, the plan's metric) for ``planner.logs.check``.
SGLANG_TERMS: dict[str, tuple[str, str, str]] = {
    "weights_gib": ("weights (free memory lost to loading)", "GiB", "weight_bytes_per_gpu"),
    "kv_cache_gib": ("KV pool (K + V sizes)", "GiB", "kv_budget_bytes_per_gpu"),
    "kv_cache_tokens": ("max_total_num_tokens", "tokens", "kv_capacity_tokens"),
    "gpu_memory_utilization": ("mem_fraction_static", "1", "mem_util_frac"),
}


class SglangStartup(StartupSettings):
    """What an SGLang start-up log says (GiB as printed; ``None`` where the log does not say).  The setting
    fields carry vLLM's names (``StartupSettings``), so ``planner.logs.check`` reads both kinds of log alike."""

    free_before_load_gib: float | None = None
    free_after_load_gib: float | None = None
    weights_gib: float | None = None
    kv_cache_gib: float | None = None
    kv_cache_tokens: int | None = None
    swa_layer_tokens: int | None = None
    max_running_requests: int | None = None
    errors: tuple[str, ...] = ()

    def release(self) -> tuple[int, ...] | None:
        """SGLang prints no version at start-up: None (the newest SGLang profile)."""
        return None


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _args_body(text: str) -> str | None:
    r"""``server_args=(\{.*\}|ServerArgs\(.*\))`` on the first line that has one, in one pass."""
    pos = 0
    while (m := _ARGS.search(text, pos)) is not None:
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        close = text.rfind("}" if m.group(1) == "{" else ")", m.start(1), end)
        if close >= 0:
            return text[m.start(1) : close + 1]
        pos = end + 1
    return None


def _args(text: str) -> dict[str, Any]:
    """The server_args dict (``ast.literal_eval``, never ``eval``), else its ``key=value`` pairs."""
    body = _args_body(text)
    if body is None or len(body) > MAX_ARGS_CHARS:
        return {}
    if body.startswith("{"):
        try:
            value = ast.literal_eval(body)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            value = None
        if isinstance(value, dict):
            return value
    out: dict[str, Any] = {}
    for key, raw in _PAIR.findall(body):
        out.setdefault(key, raw.strip().strip("'"))
    return out


def _int(value: Any) -> int | None:
    try:
        v = int(value)
    except (TypeError, ValueError):
        return None
    return v if v >= 1 else None


def _float(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _settings(args: dict[str, Any]) -> dict[str, Any]:
    """Its server arguments under vLLM's names (``--tp-size`` → tp; the chunk per dp rank)."""
    dp = _int(args.get("attn_dp_size")) or _int(args.get("dp_size")) or 1
    chunk = _int(args.get("chunked_prefill_size"))
    radix_off = str(args.get("disable_radix_cache", "")) == "True"
    return {
        "model": str(args["model_path"]) if args.get("model_path") else None,
        "tp": None if _int(args.get("tp_size")) is None else max(1, (_int(args.get("tp_size")) or 1) // dp),
        "pp": _int(args.get("pp_size")),
        "dtype": None if args.get("dtype") in (None, "auto", "None") else str(args["dtype"]),
        "quantization": None if args.get("quantization") in (None, "None", "") else str(args["quantization"]),
        "kv_cache_dtype": None if args.get("kv_cache_dtype") in (None, "None") else str(args["kv_cache_dtype"]),
        "max_model_len": _int(args.get("context_length")),
        "max_num_batched_tokens": None if chunk is None else max(1, chunk // dp),
        "max_num_seqs": _int(args.get("max_running_requests")),
        "gpu_memory_utilization": _float(args.get("mem_fraction_static")),
        "block_size": _int(args.get("page_size")),
        "enable_prefix_caching": None if "disable_radix_cache" not in args else not radix_off,
    }


def is_sglang_log(text: str) -> bool:
    """``text`` reads as an SGLang start-up log (``MARKERS``) and not as a vLLM one."""
    head = text[:MAX_LOG_CHARS]
    return "LLM engine (v" not in head and any(marker in head for marker in MARKERS)


def parse_sglang_log(text: str) -> SglangStartup:
    """Every memory term and setting an SGLang log states; ``LogError`` when it states none."""
    text = text[:MAX_LOG_CHARS].replace("\r\n", "\n")
    found: dict[str, Any] = {k: v for k, v in _settings(_args(text)).items() if v is not None}
    if (m := _LOAD_BEGIN.search(text)) is not None:
        found["free_before_load_gib"] = _number(m.group(1))
    if (m := _LOAD_END.search(text)) is not None:
        found["free_after_load_gib"], found["weights_gib"] = _number(m.group(1)), _number(m.group(2))
    if (m := _KV_POOL.search(text)) is not None:
        found["kv_cache_tokens"] = int(_number(m.group(1)))
        found["kv_cache_gib"] = round(_number(m.group(2)) + _number(m.group(3)), 2)
    elif (m := _KV_POOL_ONE.search(text)) is not None:
        found["kv_cache_tokens"], found["kv_cache_gib"] = int(_number(m.group(1))), _number(m.group(2))
    if (m := _SWA.search(text)) is not None:
        found["swa_layer_tokens"] = int(_number(m.group(2)))
    if (m := _SCHEDULER.search(text)) is not None:
        found.setdefault("kv_cache_tokens", int(_number(m.group(1))))
        found["max_running_requests"] = int(_number(m.group(3)))
        found.setdefault("max_model_len", int(_number(m.group(4))))
    found["errors"] = tuple(dict.fromkeys(e.strip() for e in _ERROR.findall(text)))[:3]
    terms = ("weights_gib", "kv_cache_gib", "kv_cache_tokens", "max_running_requests")
    if not any(found.get(k) is not None for k in terms):
        raise LogError(
            [
                "no SGLang start-up memory line found: expected lines such as 'Load weight end. … mem usage=15.07 GB', "
                "'KV Cache is allocated. … #tokens: 440545' or 'max_total_num_tokens=440545, …'"
            ]
        )
    try:
        return SglangStartup.model_validate(found)
    except ValidationError as exc:
        problem = format_validation_error(exc)
        raise LogError([f"the log states a value outside what SGLang accepts: {problem}"]) from None
