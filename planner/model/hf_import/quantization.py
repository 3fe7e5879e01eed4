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

Any other method (bitsandbytes, gguf, …) or shape is reported naming the field, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SUPPORTED = "gptq, awq, fp8, compressed-tensors, modelopt (NVFP4, FP8), mxfp4"


@dataclass(frozen=True)
class WeightQuant:
    """The scenario keys a quantised checkpoint sets, and a label for messages."""

    wdtype: str
    quant: str
    qgroup: int = 128
    label: str = ""

    def changes(self) -> dict[str, Any]:
        return {"wdtype": self.wdtype, "quant": self.quant, "qgroup": self.qgroup}


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
    if algo == "NVFP4":
        return WeightQuant("fp4", "nvfp4", 16, "ModelOpt NVFP4")
    if algo == "FP8":
        return WeightQuant("fp8", "fp8", 128, "ModelOpt FP8")
    raise ValueError(f"quantization_config.quant_algo: {algo or 'missing'!r}; modelled: NVFP4, FP8")


def quantization_from_config(config: dict[str, Any]) -> WeightQuant | None:
    """The weight quantisation a parsed config.json declares, or None for a 16-bit checkpoint.

    ``ValueError`` names the field when the scheme is one kvplan does not model."""
    cfg = config.get("quantization_config")
    if cfg is None and isinstance(config.get("quantization"), dict):  # an hf_quant_config.json
        return _modelopt(config["quantization"])
    if cfg is None:
        return None
    if not isinstance(cfg, dict):
        raise ValueError("quantization_config: expected an object")
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
