"""A config.json's ``quantization_config`` → the scenario's ``wdtype``, ``quant`` and ``qgroup``.

What vLLM 0.19 reads (``vllm/model_executor/layers/quantization/*``) and how it maps:

  quant_method          fields read                                        → wdtype / quant
  gptq                  bits = 4, group_size (-1: per channel)             int4 / gptq
  awq                   bits = 4, group_size                               int4 / awq
  fp8                   weight_block_size [128, 128] (DeepSeek), else none fp8 / fp8-block | fp8
  compressed-tensors    config_groups.*.weights: num_bits, type int|float,  8 float channel → fp8 / fp8-channel
                        strategy tensor|channel|group|block, group_size,    8 float tensor → fp8 / fp8
                        symmetric                                           8 float block → fp8 / fp8-block
                                                                            8 int → int8 / w8a8
                                                                            4 int group, symmetric → int4 / w4a16
                                                                            4 int group, asymmetric → int4 / gptq
                                                                            4 float, group 16 → fp4 / nvfp4
  modelopt              quant_algo NVFP4 | FP8 (or hf_quant_config.json)   fp4 / nvfp4 | fp8 / fp8
  mxfp4                 (gpt-oss: the routed experts)                      fp4 / mxfp4

Per component: the config's list of modules left unquantised — ``modules_to_not_convert`` (fp8, mxfp4, AWQ),
``ignore`` (compressed-tensors), ModelOpt's ``exclude_modules`` — is matched against each linear matrix's module
name (``model.layers.N.self_attn.q_a_proj`` …, at a middle layer N): a component all of whose matrices are excluded
keeps 16 bit (gpt-oss's ``model.layers.*.self_attn``), single excluded matrices are ``quant_keep`` (NVIDIA's DeepSeek
NVFP4: the MLA q/kv projections).  Patterns are globs (``*``), ``re:`` regular expressions (compressed-tensors), or
module-name prefixes.  ModelOpt's ``kv_cache_quant_algo: FP8`` sets an fp8 KV cache.  The result is the link keys
``quant_attn``, ``quant_mlp``, ``quant_experts``, ``quant_keep``, ``qgroup`` and ``kvdtype``
(``planner.model.weight_plan``).

Any other method (bitsandbytes, gguf, …) or shape is reported naming the field, never guessed.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field, replace
from typing import Any

from planner.model.dtypes import MATRIX_NAMES

SUPPORTED = "gptq, awq, fp8, compressed-tensors, modelopt (NVFP4, FP8), mxfp4"


#: Each matrix's module names in the checkpoints' own naming (a middle layer N), for the exclusion lists.
MODULES: dict[str, tuple[str, ...]] = {
    "qkv_proj": ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"),
    "q_proj": ("self_attn.q_proj",),
    "q_a_proj": ("self_attn.q_a_proj",),
    "q_b_proj": ("self_attn.q_b_proj",),
    "kv_a_proj_with_mqa": ("self_attn.kv_a_proj_with_mqa",),
    "kv_b_proj": ("self_attn.kv_b_proj",),
    "o_proj": ("self_attn.o_proj",),
    "gate_up_proj": ("mlp.gate_proj", "mlp.up_proj"),
    "down_proj": ("mlp.down_proj",),
    "shared_experts.gate_up_proj": ("mlp.shared_experts.gate_proj", "mlp.shared_expert.gate_proj"),
    "shared_experts.down_proj": ("mlp.shared_experts.down_proj", "mlp.shared_expert.down_proj"),
    "experts.gate_up_proj": ("mlp.experts.0.gate_proj", "mlp.experts.gate_up_proj", "block_sparse_moe.experts.0.w1"),
    "experts.down_proj": ("mlp.experts.0.down_proj", "mlp.experts.down_proj", "block_sparse_moe.experts.0.w2"),
}
COMPONENT_OF = {
    name: (
        "experts"
        if name.startswith("experts.")
        else "mlp"
        if "proj" in name and (name.startswith("shared_experts.") or name in ("gate_up_proj", "down_proj"))
        else "attention"
    )
    for name in MATRIX_NAMES
}
#: The layer index the lists are matched at (a middle layer: not DeepSeek's first dense ones, not an MTP layer).
PROBE_LAYER = 30


@dataclass(frozen=True)
class WeightQuant:
    """The scenario keys a quantised checkpoint sets, and a label for messages.  ``wdtype``/``quant`` name the
    checkpoint's one scheme; ``excluded`` the matrices its lists leave in 16 bit (module doc)."""

    wdtype: str
    quant: str
    qgroup: int = 128
    label: str = ""
    excluded: tuple[str, ...] = field(default=())
    kvdtype: str = ""

    def components(self) -> dict[str, str]:
        """The scheme of each component: 'none' where every matrix of it is excluded; MXFP4 is experts-only."""
        out = {}
        for component in ("attention", "mlp", "experts"):
            names = [n for n, c in COMPONENT_OF.items() if c == component]
            all_out = all(n in self.excluded for n in names)
            experts_only = self.quant == "mxfp4" and component != "experts"
            out[component] = "none" if all_out or experts_only else self.quant
        return out

    def keep(self) -> tuple[str, ...]:
        """Matrices excluded one by one (their component otherwise quantised)."""
        comps = self.components()
        return tuple(n for n in MATRIX_NAMES if n in self.excluded and comps[COMPONENT_OF[n]] != "none")

    def changes(self) -> dict[str, Any]:
        """The link keys: one scheme for every layer as ``wdtype``/``quant`` (what such a link always said), else one
        per component (``quant_attn`` …, ``quant_keep``)."""
        comps = self.components()
        uniform = {c: ("none" if self.quant == "mxfp4" and c != "experts" else self.quant) for c in comps}
        group = self.qgroup if self.quant in ("gptq", "awq", "w4a16", "w4a8") else 128
        if comps == uniform and not self.keep():
            blank = {"quant_attn": "", "quant_mlp": "", "quant_experts": "", "quant_keep": ""}
            return {"wdtype": self.wdtype, "quant": self.quant, "qgroup": self.qgroup, **blank, "kvdtype": self.kvdtype}
        return {
            "wdtype": "",
            "quant": "",
            "quant_attn": comps["attention"],
            "quant_mlp": comps["mlp"],
            "quant_experts": comps["experts"],
            "quant_keep": ",".join(self.keep()),
            "qgroup": group,
            "kvdtype": self.kvdtype,
        }


#: A ``re:`` pattern kvplan runs: literal module-name characters, ``.``, ``\.`` ``\d`` ``\w``, a character class of
#: name characters, a group of literal alternatives, each with at most one ``*``/``+``/``?``, anchors at the ends
#: (``_RE_TOKENS``) — no repetition inside a group, so no catastrophic backtracking — with at most
#: ``MAX_RE_REPEATS`` repeated tokens in ``MAX_RE_CHARS`` characters (at most n³ steps on a ≤ 200-character name).
_RE_ATOM = (
    r"(?:[A-Za-z0-9_:/-]|\\[.dw]|\.|\[[A-Za-z0-9_.-]+\]|\((?:[A-Za-z0-9_-]|\\\.)+(?:\|(?:[A-Za-z0-9_-]|\\\.)+)*\))"
)
_RE_TOKENS = re.compile(r"\^?(?:" + _RE_ATOM + r"[*+?]?)*\$?")
_RE_REPEAT = re.compile(r"(?<!\\)[*+?]")
MAX_RE_REPEATS = 3
MAX_RE_CHARS = 200


def _regex(pattern: str, where: str) -> re.Pattern[str]:
    """A config's ``re:`` pattern compiled once it passes ``_RE_TOKENS``; ValueError naming ``where`` otherwise."""
    body = pattern[3:]
    if len(body) > MAX_RE_CHARS or not _RE_TOKENS.fullmatch(body) or len(_RE_REPEAT.findall(body)) > MAX_RE_REPEATS:
        raise ValueError(
            f"quantization_config.{where}: the pattern {pattern[:60]!r} uses more of regular expressions than kvplan "
            f"runs on an uploaded file (module-name characters, '.', '\\.', '\\d', a [class], a (a|b) group, at "
            f"most {MAX_RE_REPEATS} of '*', '+', '?', {MAX_RE_CHARS} characters): list the modules instead"
        )
    return re.compile(body)  # admitted by _RE_TOKENS: no nested repetition (tests/test_linear_regex.py)


def _excludes(pattern: str | re.Pattern[str], module: str) -> bool:
    """Whether one list entry leaves ``module`` unquantised (module doc); a ``re:`` entry comes compiled."""
    if isinstance(pattern, re.Pattern):
        return pattern.search(module) is not None
    if "*" in pattern or "?" in pattern:
        return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")
    return (
        module == pattern
        or module.startswith(pattern + ".")
        or module.endswith("." + pattern)
        or ("." + pattern + "." in "." + module + ".")
    )


def excluded_matrices(patterns: Any, where: str) -> tuple[str, ...]:
    """The matrices (``MATRIX_NAMES``) a config's exclusion list leaves in 16 bit; ValueError naming ``where``."""
    if patterns is None:
        return ()
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise ValueError(f"quantization_config.{where}: expected a list of module names")
    if len(patterns) > 100_000:
        raise ValueError(f"quantization_config.{where}: {len(patterns)} entries (at most 100,000)")
    entries = [_regex(p, where) if p.startswith("re:") else p for p in patterns]
    out = []
    for name, modules in MODULES.items():
        full = [f"model.layers.{PROBE_LAYER}.{m}" for m in modules]
        if any(any(_excludes(p, f) for p in entries) for f in full[:1]) or all(
            any(_excludes(p, f) for p in entries) for f in full
        ):
            out.append(name)
    return tuple(out)


def _group(value: Any, where: str) -> int:
    """A group size: -1 or None → 0 (one group per output channel), else a positive integer ≤ 1024."""
    if value is None or value == -1:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not (0 < value <= 1024):
        raise ValueError(f"quantization_config.{where}: group_size {value!r} is not -1 or an integer in 1…1024")
    return value


def _bits(cfg: dict[str, Any], key: str, where: str) -> int:
    bits = cfg.get(key)
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise ValueError(f"quantization_config.{where}{key}: expected an integer number of bits, got {bits!r}")
    return bits


def _gptq_awq(cfg: dict[str, Any], method: str) -> WeightQuant:
    bits = _bits(cfg, "bits" if "bits" in cfg else "w_bit", "")
    if bits != 4:
        raise ValueError(f"quantization_config.bits: {method} with {bits} bits is not modelled (4-bit only)")
    group = _group(cfg.get("group_size", cfg.get("q_group_size", 128)), "group_size")
    return WeightQuant("int4", method, group or 0, f"{method.upper()} INT4, group {group or 'per channel'}")


def _fp8(cfg: dict[str, Any]) -> WeightQuant:
    block = cfg.get("weight_block_size")
    if block is None:
        return WeightQuant("fp8", "fp8", 128, "FP8, per-tensor scales")
    if block != [128, 128]:
        raise ValueError(f"quantization_config.weight_block_size: {block!r}; only [128, 128] blocks are modelled")
    return WeightQuant("fp8", "fp8-block", 128, "FP8, 128×128 block scales")


def _compressed_weights(cfg: dict[str, Any]) -> dict[str, Any]:
    groups = cfg.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise ValueError("quantization_config.config_groups: missing; compressed-tensors needs at least one group")
    weights: list[dict[str, Any]] = [
        g["weights"] for g in groups.values() if isinstance(g, dict) and isinstance(g.get("weights"), dict)
    ]
    if not weights:
        raise ValueError("quantization_config.config_groups: no group quantises weights")
    first = weights[0]
    if any(w.get("num_bits") != first.get("num_bits") or w.get("type") != first.get("type") for w in weights[1:]):
        raise ValueError("quantization_config.config_groups: groups with different weight schemes are not modelled")
    return first


def _compressed(cfg: dict[str, Any]) -> WeightQuant:
    w = _compressed_weights(cfg)
    bits, kind = _bits(w, "num_bits", "config_groups.*.weights."), w.get("type", "int")
    strategy = w.get("strategy", "tensor")
    if bits == 8 and kind == "float":
        quant = {"channel": "fp8-channel", "tensor": "fp8", "block": "fp8-block"}.get(strategy)
        if quant is None:
            raise ValueError(f"quantization_config: FP8 weights with strategy {strategy!r} are not modelled")
        return WeightQuant("fp8", quant, 128, f"compressed-tensors FP8 ({strategy})")
    if bits == 8 and kind == "int":
        return WeightQuant("int8", "w8a8", 128, "compressed-tensors INT8")
    if bits == 4 and kind == "float":
        return WeightQuant("fp4", "nvfp4", 16, "compressed-tensors NVFP4")
    if bits == 4 and kind == "int":
        group = _group(w.get("group_size"), "config_groups.*.weights.group_size")
        quant = "w4a16" if w.get("symmetric", True) else "gptq"
        return WeightQuant("int4", quant, group, f"compressed-tensors INT4 W4A16, group {group or 'per channel'}")
    raise ValueError(f"quantization_config: {bits}-bit {kind} weights are not modelled ({SUPPORTED})")


def _modelopt(cfg: dict[str, Any]) -> WeightQuant:
    algo = str(cfg.get("quant_algo", "")).upper()
    kv = "fp8" if str(cfg.get("kv_cache_quant_algo") or "").upper() == "FP8" else ""
    if algo == "NVFP4":
        return WeightQuant("fp4", "nvfp4", 16, "ModelOpt NVFP4", kvdtype=kv)
    if algo == "FP8":
        return WeightQuant("fp8", "fp8", 128, "ModelOpt FP8", kvdtype=kv)
    raise ValueError(f"quantization_config.quant_algo: {algo or 'missing'!r}; modelled: NVFP4, FP8")


def quantization_from_config(config: dict[str, Any]) -> WeightQuant | None:
    """The weight quantisation a parsed config.json declares (per component, module doc), or None for a 16-bit
    checkpoint.

    ``ValueError`` names the field when the scheme is one kvplan does not model."""
    cfg = config.get("quantization_config")
    if cfg is None and isinstance(config.get("quantization"), dict):  # an hf_quant_config.json
        q = config["quantization"]
        return replace(_modelopt(q), excluded=excluded_matrices(q.get("exclude_modules"), "exclude_modules"))
    if cfg is None:
        return None
    if not isinstance(cfg, dict):
        raise ValueError("quantization_config: expected an object")
    quant = _method(cfg)
    for key in ("modules_to_not_convert", "ignore", "exclude_modules"):
        if cfg.get(key) is not None:
            quant = replace(quant, excluded=quant.excluded + excluded_matrices(cfg.get(key), key))
    return quant


def _method(cfg: dict[str, Any]) -> WeightQuant:
    method = str(cfg.get("quant_method", "")).lower()
    if method in ("gptq", "awq"):
        return _gptq_awq(cfg, method)
    if method == "fp8":
        return _fp8(cfg)
    if method == "compressed-tensors":
        return _compressed(cfg)
    if method == "modelopt":
        return _modelopt(cfg)
    if method == "mxfp4":
        return WeightQuant("fp4", "mxfp4", 32, "MXFP4 experts (gpt-oss)")
    raise ValueError(f"quantization_config.quant_method: {method or 'missing'!r}; kvplan models {SUPPORTED}")
