"""Validators for written deployment files, each a maintained tool or a published schema (tests/data/deploy):

* Kubernetes manifests: ``kubernetes-validate`` (the API's JSON schemas bundled per release, offline), strict
  (an unknown field is an error), against the oldest release LeaderWorkerSet supports and the newest bundled;
* LeaderWorkerSet: its CRD's openAPIV3Schema (kubernetes-sigs/lws v0.10.0, descriptions stripped), with
  ``jsonschema``;
* compose files: the compose-spec JSON schema (compose-spec/compose-spec schema/compose-spec.json);
* shell scripts: ``bash -n``;
* every command line: each ``--flag`` is one the tool's release defines, with a value from its choices
  (tests/data/deploy/flags.json, read from the tools' sources by extract_flags.py).
"""

from __future__ import annotations

import gzip
import json
import shlex
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

DATA = Path(__file__).resolve().parent.parent / "data" / "deploy"
#: LeaderWorkerSet v0.10.0 needs Kubernetes ≥ 1.26 (its README); the newest release kubernetes-validate bundles.
K8S_RELEASES = ("1.26", kubernetes_validate.latest_version())


@cache
def lws_schema() -> dict[str, Any]:
    return json.loads(gzip.decompress((DATA / "lws-v0.10.0-leaderworkerset-v1.schema.json.gz").read_bytes()))


@cache
def compose_schema() -> dict[str, Any]:
    return json.loads((DATA / "compose-spec.json").read_text(encoding="utf-8"))


@cache
def flag_table() -> dict[str, dict[str, Any]]:
    return json.loads((DATA / "flags.json").read_text(encoding="utf-8"))


def yaml_docs(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d is not None]


def validate_manifest(doc: dict[str, Any]) -> None:
    """Raises (jsonschema / kubernetes_validate ValidationError) when ``doc`` is not a valid object."""
    if doc["kind"] == "LeaderWorkerSet":
        jsonschema.Draft7Validator(lws_schema()).validate(doc)
        return
    for release in K8S_RELEASES:
        kubernetes_validate.validate(doc, release, strict=True)


def validate_compose(doc: dict[str, Any]) -> None:
    jsonschema.Draft7Validator(compose_schema()).validate(doc)


def bash_syntax_errors(path: Path) -> str:
    p = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    return p.stderr if p.returncode else ""


def flags_of(argv: list[str]) -> dict[str, list[str]]:
    """--flag → the words after it up to the next flag."""
    out: dict[str, list[str]] = {}
    current = None
    for w in argv:
        if w.startswith("--"):
            current = w
            out[current] = []
        elif current is not None:
            out[current].append(w)
    return out


def bad_flags(tool: str, argv: list[str]) -> list[str]:
    """Every flag of ``argv`` the tool's release does not define, or whose value is not one of its choices."""
    table = flag_table()[tool]["flags"]
    problems = []
    for flag, values in flags_of(argv).items():
        name = flag.split("=", 1)[0]
        if name not in table:
            problems.append(f"{tool}: unknown flag {name}")
            continue
        choices = table[name]["choices"]
        if choices and values and not all(v in [str(c) for c in choices] for v in values):
            problems.append(f"{tool}: {name} {values} not in {choices}")
    return problems


def tool_of(argv: list[str]) -> str:
    """Which tool a command line runs (its first words)."""
    head = " ".join(argv[:3])
    for prefix, tool in (
        ("vllm serve", "vllm_serve"),
        ("vllm bench serve", "vllm_bench_serve"),
        ("python -m sglang.launch_server", "sglang_launch_server"),
        ("python -m sglang.benchmark.serving", "sglang_bench_serving"),
        ("python3 -m sglang_router.launch_router", "sglang_router"),
        ("vllm-router", "vllm_router"),
    ):
        if head.startswith(prefix):
            return tool
    raise AssertionError(f"no flag table for {head!r}")


def shell_commands(text: str) -> list[list[str]]:
    """The command lines of a kvplan script: each line that starts a command (``exec …`` or a tool name) with
    its continuation lines, split as the shell would (variables left as their names)."""
    commands, current = [], ""
    for line in text.splitlines():
        if line.startswith(("#", "set ", ":", "export ", "NODE", "mkdir ")) or not line.strip():
            continue
        current += line.rstrip("\\") + " "
        if not line.endswith("\\"):
            words = shlex.split(current)
            commands.append(words[1:] if words[0] == "exec" else words)
            current = ""
    return commands
