"""Every regular expression that reads untrusted text is linear in its input (issue 31, F1).

Python's ``re`` backtracks: ``head.*?tail`` or ``\\{.*\\}`` on a line that repeats ``head`` many times
rescans the rest of the line from every repetition — quadratic, and a 1 MB log took minutes while it held
the server.  The rules, checked here:

* every module under planner/ and ui/ that imports ``re`` is classified: it reads untrusted text
  (``UNTRUSTED``: links, uploads, logs, traces, profile files, text shown in the page) or only the host's
  own files (``TRUSTED``, with the reason);
* in an untrusted-text module every pattern is compiled once at module level (no ``re.search(r"…", …)``
  in a function), so the probe below sees them all;
* every such pattern scans each of its adversarial lines (tests/regex_probe.py: ~1 MB lines built from
  the text before each of its unbounded repeats — F1's reproducers are lines of that shape) in under
  ``BOUND_S``.  That is a hang guard, not a timed performance claim: a linear scan of 1 MB takes
  milliseconds, the quadratic patterns took minutes.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from tests import regex_probe
from tests.paths import ROOT

BOUND_S = 2.0
PROBE_TIMEOUT_S = 180
UNTRUSTED = (
    "planner.links",
    "planner.logs.vllm_log",
    "planner.prompts.usage_audit",
    "planner.launch.ids",
    "planner.model.custom_model",
    "planner.model.engine_timing",
    "planner.model.specs",
    "planner.model.catalog",
    "planner.model.engine_versions",
    "planner.deploy.fleet",
    "planner.deploy.images",
    "planner.deploy.shell",
    "planner.logs.sglang_log",
    "planner.kernels.format",
    "planner.model.hf_import.importer",
    "planner.model.hf_import.quantization",
    "planner.predict.crosscheck",
    "ui.format",
    "ui.sidebar.model_inputs",
)
#: Functions of untrusted modules that compile a pattern the input supplies, and why that is safe.
DYNAMIC_PATTERNS = {
    ("planner.model.hf_import.quantization", "_regex"): "a config.json's own 're:' module patterns (vLLM's ignore-list "
    "syntax), compiled only after _RE_TOKENS admits them: no repetition inside a group, at most 3 repeats",
}
TRUSTED = {
    "planner.bench.host": "reads this machine's own lscpu and /proc/cpuinfo (kvplan bench)",
    "planner.bench.threads": "reads this process's own /proc/self/maps (kvplan bench)",
}


def _module(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _sources() -> dict[str, ast.Module]:
    return {
        _module(p): ast.parse(p.read_text(encoding="utf-8"))
        for top in ("planner", "ui")
        for p in sorted((ROOT / top).rglob("*.py"))
    }


def _imports_re(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name == "re" for a in n.names) for n in ast.walk(tree)) or any(
        isinstance(n, ast.ImportFrom) and n.module == "re" for n in ast.walk(tree)
    )


def test_every_module_that_uses_re_is_classified():
    using = {name for name, tree in _sources().items() if _imports_re(tree)}
    unknown = using - set(UNTRUSTED) - set(TRUSTED)
    assert not unknown, f"classify these modules in UNTRUSTED or TRUSTED (with the reason): {sorted(unknown)}"
    assert not set(UNTRUSTED) & set(TRUSTED)


def test_untrusted_modules_compile_every_pattern_at_module_level():
    trees = _sources()
    problems = []
    for name in UNTRUSTED:
        for fn in ast.walk(trees[name]):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if (name, getattr(fn, "name", "")) in DYNAMIC_PATTERNS:
                continue
            for call in ast.walk(fn):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name)
                    and call.func.value.id == "re"
                    and call.func.attr != "escape"
                ):
                    problems.append(f"{name}:{call.lineno}: re.{call.func.attr}(…) inside a function")
    assert not problems, problems


def test_the_probe_builds_the_f1_reproducer_shape():
    """The old quadratic V0 pattern's adversarial lines include F1's reproducer: its head repeated on one line."""
    old = re.compile(r"Memory profiling results: total_gpu_memory=([0-9][0-9,]*(?:\.[0-9]+)?)GiB.*?kv_cache_size=")
    lines = regex_probe.adversarial_lines(old, 10_000)
    unit = "Memory profiling results: total_gpu_memory=00.0GiB"  # F1: "…total_gpu_memory=1GiB" × 20,000
    assert unit * (10_000 // len(unit)) in lines
    assert all(8_000 <= len(line) <= 10_000 for line in lines)
    old_args = re.compile(r"non-default args: (\{.*\})")
    head = "non-default args: {"
    assert any(line.startswith(head + head) for line in regex_probe.adversarial_lines(old_args))


def test_every_untrusted_pattern_is_linear_on_a_1_mb_adversarial_line(tmp_path):
    log = tmp_path / "probe.jsonl"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.regex_probe", *UNTRUSTED], cwd=ROOT, stdout=fh, stderr=subprocess.PIPE
        )
        try:
            _, stderr = proc.communicate(timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            started = [json.loads(x) for x in log.read_text().splitlines() if x.startswith('{"start"')]
            raise AssertionError(f"the probe hung on {started[-1] if started else 'import'}") from None
    assert proc.returncode == 0, stderr.decode()
    done = [json.loads(x) for x in log.read_text().splitlines() if x.startswith('{"done"')]
    assert len(done) >= 30  # every module's patterns were probed
    slow = [(d["done"], d["pattern"], round(d["worst_s"], 2)) for d in done if d["worst_s"] >= BOUND_S]
    assert not slow, slow
