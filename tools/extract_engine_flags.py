#!/usr/bin/env python3
"""Write an engine version's flag table from the engine's own argument parser (no GPU needed).

Run it where the engine is installed (its own environment, not kvplan's), one engine per process:

    python tools/extract_engine_flags.py vllm 0.33.0 engine_profiles/vllm/0.33-flags.json
    python tools/extract_engine_flags.py vllm 0.19.0 engine_profiles/vllm/0.19-flags.json
    python tools/extract_engine_flags.py sglang 0.5.23 engine_profiles/sglang/0.5.23-flags.json

``PYTHONPATH=<unpacked wheel>`` selects a release without installing it (the import is checked against the
version asked for).  Nothing of the engine is copied into kvplan: the table lists, per flag, what its
parser accepts — type, choices, default, aliases (visible and hidden), deprecation, and for the values an
engine checks outside argparse the list it checks against (vLLM ``--kv-cache-dtype``, ``--quantization``,
``--attention-backend``; SGLang ``--speculative-algorithm``).  ``planner.model.engine_flags`` reads it and
``tests/launch/test_flag_tables.py`` holds every flag ``kvplan launch`` writes to it.

How each parser is built (what ``vllm serve`` and ``python -m sglang.launch_server`` build):
  vLLM    ``ServeSubcommand().subparser_init`` (``make_arg_parser``: FrontendArgs + AsyncEngineArgs).  Without a
          GPU vLLM finds no platform and ``DeviceConfig()`` (built for the defaults) fails, so a stand-in
          platform with ``device_type = "cuda"`` is installed first; the parser's defaults are the config
          classes' static ones, unchanged by it (values resolved from the hardware later show as null).
  SGLang  ``ServerArgs.add_cli_args(argparse.ArgumentParser())``, what ``prepare_server_args`` does.
"""

from __future__ import annotations

import argparse
import enum
import json
import math
import os
import sys
from typing import Any

DEPRECATION_WORDS = ("deprecated:", "deprecated;", " is deprecated", "[deprecated]")


def plain(value: Any, depth: int = 0) -> Any:
    """A parser default or choice as JSON (enums by value, configs by their fields, the rest by repr)."""
    if depth > 6:
        return repr(value)
    if value is argparse.SUPPRESS:
        return "==SUPPRESS=="
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return plain(value.value, depth + 1)
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(v, depth + 1) for v in value]
        return sorted(items, key=json.dumps) if isinstance(value, set | frozenset) else items
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if hasattr(value, "__dataclass_fields__"):
        return {
            k: plain(getattr(value, k, None), depth + 1) for k in value.__dataclass_fields__ if not k.startswith("_")
        }
    return repr(value)


def type_name(action: argparse.Action) -> str:
    """``int``, ``float``, ``str``, ``bool`` (a switch), ``json`` (parsed JSON) or the callable's name."""
    if action.nargs == 0 or "Boolean" in type(action).__name__ or "EnableDisable" in type(action).__name__:
        return "bool"
    t = action.type
    if t is None:
        return "str"
    name = getattr(t, "__name__", type(t).__name__)
    inner = []
    for cell in getattr(t, "__closure__", None) or ():
        try:
            inner.append(getattr(cell.cell_contents, "__name__", ""))
        except ValueError:
            continue
    if name == "_optional_type" and inner:  # vLLM's optional_type(int)
        name = inner[0]
    if name in ("loads", "json_loads"):
        return "json"
    return name


def deprecated(action: argparse.Action, parser: argparse.ArgumentParser) -> bool:
    """argparse's own mark, vLLM's parser list, SGLang's Deprecated*Action, or the help saying so."""
    if getattr(action, "deprecated", False) or action in getattr(parser, "_deprecated", ()):
        return True
    if "Deprecated" in type(action).__name__:
        return True
    text = (action.help or "").strip().lower() if action.help is not argparse.SUPPRESS else ""
    return text.startswith(("deprecated", "(deprecated")) or any(w in text for w in DEPRECATION_WORDS)


def table(parser: argparse.ArgumentParser) -> dict[str, dict[str, Any]]:
    """Every option of ``parser`` under its first long spelling (``--no-x`` forms listed as aliases)."""
    accepted: dict[int, set[str]] = {}
    for option, action in parser._option_string_actions.items():
        accepted.setdefault(id(action), set()).add(option)
    skip = (argparse._HelpAction, argparse._SubParsersAction, argparse._VersionAction)
    flags: dict[str, dict[str, Any]] = {}
    for action in parser._actions:
        longs = [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, skip) or not longs:
            continue
        key = next((o for o in longs if not o.startswith("--no-")), longs[0])
        flags[key] = {
            "type": type_name(action),
            "choices": None if action.choices is None else plain(list(action.choices)),
            "default": plain(action.default),
            "deprecated": deprecated(action, parser),
            "aliases": [o for o in action.option_strings if o != key],
            "hidden_aliases": sorted(accepted.get(id(action), set()) - set(action.option_strings)),
            "nargs": action.nargs,
        }
    return flags


def vllm_parser(version: str) -> tuple[argparse.ArgumentParser, dict[str, dict[str, Any]]]:
    import vllm
    import vllm.platforms as platforms
    from vllm.platforms.interface import UnspecifiedPlatform

    _check(vllm.__version__, version, vllm.__file__)

    class HostlessCuda(UnspecifiedPlatform):  # the extraction host has no GPU
        device_type = "cuda"
        device_name = "cuda"

    platforms._current_platform = HostlessCuda()
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = ServeSubcommand().subparser_init(FlexibleArgumentParser(prog="vllm").add_subparsers())
    checked: dict[str, dict[str, Any]] = {}
    try:  # ≥ 0.20: validated against this list, not argparse choices (0.19 has choices)
        from vllm.config.cache import KV_CACHE_DTYPES

        checked["--kv-cache-dtype"] = {"validated_values": list(KV_CACHE_DTYPES)}
    except ImportError:
        pass
    from vllm.model_executor.layers import quantization

    checked["--quantization"] = {
        "validated_values": list(quantization.QUANTIZATION_METHODS),
        "deprecated_values": list(getattr(quantization, "DEPRECATED_QUANTIZATION_METHODS", [])),
    }
    try:
        from vllm.v1.attention.backends.registry import AttentionBackendEnum
    except ImportError:  # older layouts
        return parser, checked
    checked["--attention-backend"] = {"validated_values": [m.name for m in AttentionBackendEnum]}
    return parser, checked


def sglang_parser(version: str) -> tuple[argparse.ArgumentParser, dict[str, dict[str, Any]]]:
    import sglang
    from sglang.srt.server_args import ServerArgs

    _check(getattr(sglang, "__version__", "?"), version, sglang.__file__)
    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    checked: dict[str, dict[str, Any]] = {}
    try:
        from sglang.srt.speculative.spec_info import SpeculativeAlgorithm
    except ImportError:
        return parser, checked
    names = [m.name for m in SpeculativeAlgorithm if m.name != "NONE"]
    checked["--speculative-algorithm"] = {"validated_values": names}
    return parser, checked


def _check(found: str, wanted: str, where: str) -> None:
    if found.split("+")[0] != wanted:
        raise SystemExit(f"imported {found} from {where}, not {wanted}: set PYTHONPATH or the environment")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("engine", choices=("vllm", "sglang"))
    ap.add_argument("version", help="the release, as the package reports it (0.33.0)")
    ap.add_argument("out", help="the JSON file to write")
    args = ap.parse_args()
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    build = vllm_parser if args.engine == "vllm" else sglang_parser
    parser, checked = build(args.version)
    flags = table(parser)
    for flag, extra in checked.items():
        if flag in flags:
            flags[flag].update(extra)
    doc = {
        "engine": args.engine,
        "version": args.version,
        "extracted_with": f"tools/extract_engine_flags.py on Python {sys.version.split()[0]}: the {args.engine} "
        f"{args.version} parser ({'vllm serve' if args.engine == 'vllm' else 'sglang ServerArgs.add_cli_args'})",
        "flags": dict(sorted(flags.items())),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{args.engine} {args.version}: {len(flags)} flags -> {args.out}")


if __name__ == "__main__":
    main()
