"""Write flags.json: the flags (and their choices) of every command the deployment files run, read from the
tools' own sources.  Run once per tool release; the tests read the JSON (no engine is installed here).

    # VLLM, SGLANG, VROUTER, SROUTER: the unzipped PyPI wheels vllm 0.33.0 (the images' release: a plan's engine
    # name alone is its newest version), sglang 0.5.23, vllm-router 0.1.17, sglang-router 0.3.2; FLAGS: the parser
    # tables of /work/research/engines/extract_flags.py
    python tests/data/deploy/extract_flags.py \
        --parser-json vllm_serve=$FLAGS/vllm-0.33.0.json --parser-json sglang_launch_server=$FLAGS/sglang-0.5.23.json \
        --source vllm_bench_serve=$VLLM/vllm/benchmarks/serve.py,$VLLM/vllm/benchmarks/datasets/datasets.py \
        --source sglang_bench_serving=$SGLANG/sglang/benchmark/serving.py \
        --source vllm_router=$VROUTER/vllm_router/router_args.py \
        --source sglang_router=$SROUTER/sglang_router/router_args.py

(then each tool's "source" line was rewritten to name the release, as flags.json shows).
``--parser-json``: a table extracted from the real argparse parser (``vllm serve``'s and SGLang's, by
/work/research/engines/extract_flags.py: the flag → {choices, nargs, …} map under "flags").  ``--source``: every
``add_argument("--name", …, choices=[…])`` in the files, read with ``ast`` (f-strings with a ``{prefix}``
are read with prefix ""), nothing imported or run.
"""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f"--{prefix}policy" → "--policy"
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


def source_flags(paths: list[Path]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
                continue
            names = [n for n in map(_name, node.args) if n and n.startswith("--")]
            choices = next((k.value for k in node.keywords if k.arg == "choices"), None)
            values = None
            if isinstance(choices, ast.List | ast.Tuple):
                values = [c.value for c in choices.elts if isinstance(c, ast.Constant)]
            for n in names:
                out[n] = {"choices": values}
    return dict(sorted(out.items()))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--parser-json", action="append", default=[], metavar="TOOL=FILE")
    p.add_argument("--source", action="append", default=[], metavar="TOOL=FILE[,FILE]")
    p.add_argument("--out", default=str(Path(__file__).with_name("flags.json")))
    args = p.parse_args()
    table: dict[str, dict] = {}
    for item in args.parser_json:
        tool, path = item.split("=", 1)
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        flags = {k: {"choices": v.get("choices")} for k, v in data["flags"].items()}
        for v in data["flags"].values():
            for alias in v.get("aliases", []) + v.get("hidden_aliases", []):
                if alias.startswith("--"):
                    flags.setdefault(alias, {"choices": v.get("choices")})
        table[tool] = {"source": f"{data['engine']} {data['version']}: {data['extracted_with']}", "flags": flags}
    for item in args.source:
        tool, paths = item.split("=", 1)
        files = [Path(x) for x in paths.split(",")]
        table[tool] = {"source": ", ".join(f.as_posix() for f in files), "flags": source_flags(files)}
    Path(args.out).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
