"""Bash scripts for bare-metal hosts: one per replica (one per node of a multi-node replica), the router's and
the benchmark's.  Pure: script texts.

Each server script pins its GPUs by device id (CUDA_VISIBLE_DEVICES on NVIDIA, HIP_VISIBLE_DEVICES on AMD;
``planner.deploy.placement``) and ``exec``s the ``kvplan launch`` command with the port, node rank and role of
``planner.deploy.argv``.  Hosts are named by variables, NODE0_ADDR, NODE1_ADDR, …: a fleet on one host defaults
NODE0_ADDR to 127.0.0.1; a fleet on several hosts needs each variable exported (the script stops with a message
naming it otherwise).  Every word of a command is shell-quoted except these variables.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from planner.deploy.argv import bench_argv, router_argv, serve_argv, serve_env
from planner.deploy.fleet import Fleet
from planner.deploy.images import VLLM_ROUTER_RELEASE
from planner.deploy.kubernetes import bench_result_file
from planner.deploy.placement import Placed, endpoints, hosts, leader_host, needs_router, place

_VAR = re.compile(r"\$\{NODE[0-9]+_ADDR\}")
_VAR_NUMBER = re.compile(r"\$\{NODE([0-9]+)_ADDR\}")


def _var(host: int) -> str:
    return f"${{NODE{host}_ADDR}}"


def _word(w: str) -> str:
    """Shell-quoted, except a word holding a host variable, double-quoted so the variable expands (the rest of
    such a word is a URL or address kvplan wrote: letters, digits, ':', '/', '.')."""
    return f'"{w}"' if _VAR.search(w) else shlex.quote(w)


def command_text(argv: Sequence[str], prefix: str = "exec ") -> str:
    """``argv`` as shell text, one flag and its values per line."""
    words = [_word(w) for w in argv]
    i = next((k for k, w in enumerate(argv) if w.startswith("--")), len(argv))
    lines = [prefix + " ".join(words[:i])]
    while i < len(words):
        j = i + 1
        while j < len(words) and not argv[j].startswith("--"):
            j += 1
        lines.append("  " + " ".join(words[i:j]))
        i = j
    return " \\\n".join(lines)


def _hosts_named(words: Sequence[str]) -> list[int]:
    """The hosts whose address variable the words use."""
    return sorted({int(m.group(1)) for w in words for m in _VAR_NUMBER.finditer(w)})


def _header(fleet: Fleet, what: str, n_hosts: int, used: Sequence[int]) -> list[str]:
    lines = [
        "#!/usr/bin/env bash",
        f"# {what}",
        f"# written by kvplan deploy from the scenario link: ?{fleet.link}",
        "set -euo pipefail",
    ]
    for h in sorted(set(used)):
        if n_hosts == 1:
            lines.append(f'NODE{h}_ADDR="${{NODE{h}_ADDR:-127.0.0.1}}"')
        else:
            lines.append(f': "${{NODE{h}_ADDR:?export NODE{h}_ADDR=<the address of host {h}>}}"')
    return lines


def server_script(fleet: Fleet, p: Placed, placed: list[Placed]) -> str:
    n_hosts, leader = hosts(placed), leader_host(placed, p)
    role = "" if p.pool.role == "colocated" else f"{p.pool.role} pool, "
    node = f", node {p.node} of {p.pool.nodes}" if p.pool.nodes > 1 else ""
    what = f"{role}replica {p.replica}{node}: run on host {p.host}, GPUs {','.join(map(str, p.devices))}"
    argv = serve_argv(fleet, p.pool, p.port, str(p.node), _var(leader), p.bootstrap_port)
    env = serve_env(fleet, p.pool, _var(p.host), p.side_port)
    lines = _header(fleet, what, n_hosts, _hosts_named([*argv, *env.values()]))
    devices = "CUDA_VISIBLE_DEVICES" if fleet.vendor == "NVIDIA" else "HIP_VISIBLE_DEVICES"
    lines.append(f"export {devices}={','.join(map(str, p.devices))}")
    for k, v in env.items():
        lines.append(f"export {k}={_word(v)}")
    return "\n".join([*lines, command_text(argv), ""])


def router_script(fleet: Fleet, placed: list[Placed]) -> str:
    n_hosts = hosts(placed)
    eps = endpoints(fleet, placed, {h: _var(h) for h in range(n_hosts)})
    install = (
        f"pip install vllm-router=={VLLM_ROUTER_RELEASE}"
        if fleet.engine == "vllm"
        else f"pip install sglang-router, or run it in {fleet.router_image.ref}"
    )
    what = f"the router ({fleet.policy or 'round_robin'}): run on host 0 ({install})"
    argv = router_argv(fleet, fleet.port, eps)
    lines = _header(fleet, what, n_hosts, _hosts_named(argv))
    return "\n".join([*lines, command_text(argv), ""])


def bench_script(fleet: Fleet, placed: list[Placed]) -> str:
    path = f"results/{bench_result_file(fleet)}"
    argv = bench_argv(fleet, f"http://{_var(0)}:{fleet.port}", path)
    what = f"the benchmark at the plan's rate and lengths; then: kvplan calibrate {path} --link '?{fleet.link}'"
    lines = _header(fleet, what, hosts(placed), _hosts_named(argv))
    return "\n".join([*lines, "mkdir -p results", command_text(argv, prefix=""), ""])


def scripts(fleet: Fleet) -> dict[str, str]:
    """Every script by file name (module doc)."""
    placed = place(fleet)
    files = {f"{fleet.name}-{p.label}.sh": server_script(fleet, p, placed) for p in placed}
    if needs_router(fleet):
        files[f"{fleet.name}-router.sh"] = router_script(fleet, placed)
    files[f"{fleet.name}-bench.sh"] = bench_script(fleet, placed)
    return files
