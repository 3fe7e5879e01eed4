"""Compose files and shell scripts for the plans of tests/deploy/plans.py: the compose file validates against
the compose-spec schema, the scripts pass ``bash -n``, every command line's flags are the tool's, the GPUs are
split by device id without overlap, and the numbers are the plan's."""

from __future__ import annotations

import shlex
from collections import Counter

import pytest

from planner.deploy.bundle import deploy_bundle
from planner.deploy.images import DeployError
from tests.deploy.plans import ENGINES, PLANS, plan
from tests.deploy.test_kubernetes import check_engine_flags, pools_of
from tests.deploy.validators import (
    bad_flags,
    bash_syntax_errors,
    flags_of,
    shell_commands,
    tool_of,
    validate_compose,
    yaml_docs,
)

ONE_NODE = [n for n in PLANS if n != "two-node-pp2"]


def replicas_of(s) -> int:
    return s.replicas + s.prefill_replicas


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ONE_NODE)
def test_compose_validates_and_splits_the_gpus(name, engine, catalog):
    s = plan(name)
    bundle = deploy_bundle(s, catalog, "compose", engine)
    (doc,) = yaml_docs(bundle.files["compose.yaml"])
    validate_compose(doc)
    services = doc["services"]
    servers = {k: v for k, v in services.items() if "healthcheck" in v and "router" not in k}
    assert len(servers) == replicas_of(s)
    assert (f"{bundle.fleet.name}-router" in services) == (replicas_of(s) > 1)
    vendor = catalog.gpus[s.gpu].vendor
    ids = []
    pools = pools_of(s)
    for key, svc in servers.items():
        argv = svc["entrypoint"] + svc["command"]
        assert bad_flags(tool_of(argv), argv) == []
        role = next(r for r in pools if f"-{r}-" in key)
        check_engine_flags(engine, flags_of(argv), pools[role][0])  # the plan's numbers
        if vendor == "NVIDIA":
            (device,) = svc["deploy"]["resources"]["reservations"]["devices"]
            assert device["driver"] == "nvidia" and device["capabilities"] == ["gpu"]
            ids += device["device_ids"]
        else:
            assert svc["devices"] == ["/dev/kfd", "/dev/dri"]
            ids += svc["environment"]["HIP_VISIBLE_DEVICES"].split(",")
        port = flags_of(argv)["--port"][0]
        assert f"127.0.0.1:{port}/health" in svc["healthcheck"]["test"][-1]
    assert (
        len(ids) == len(set(ids)) == sum(p.gpus for p in bundle.fleet.pools)
    )  # every GPU once, no two replicas share one
    for svc in services.values():
        if "router" in str(svc.get("entrypoint")) or svc.get("entrypoint", [""])[0] == "vllm-router":
            argv = svc["entrypoint"] + svc["command"]
            assert bad_flags(tool_of(argv), argv) == []
    bench = services[f"{bundle.fleet.name}-bench"]
    argv = shlex.split(bench["entrypoint"][2])
    assert bad_flags(tool_of(argv), argv) == [] and bench["profiles"] == ["bench"]
    assert flags_of(argv)["--request-rate"] == [repr(s.rate)]


def test_compose_refuses_a_fleet_that_needs_more_than_one_node(catalog):
    with pytest.raises(DeployError, match="writes one node: this fleet needs 32 GPUs on 4 nodes of 8"):
        deploy_bundle(plan("two-node-pp2"), catalog, "compose")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", PLANS)
def test_shell_scripts_parse_and_pin_their_gpus(name, engine, catalog, tmp_path):
    s = plan(name)
    bundle = deploy_bundle(s, catalog, "shell", engine)
    device_var = "CUDA_VISIBLE_DEVICES" if catalog.gpus[s.gpu].vendor == "NVIDIA" else "HIP_VISIBLE_DEVICES"
    per_host: Counter[tuple[str, str]] = Counter()
    servers = 0
    for file, text in bundle.files.items():
        if not file.endswith(".sh"):
            continue
        path = tmp_path / file
        path.write_text(text)
        assert bash_syntax_errors(path) == "", file
        assert text.startswith("#!/usr/bin/env bash\n") and f"?{bundle.fleet.link}" in text
        for argv in shell_commands(text):
            assert bad_flags(tool_of(argv), argv) == [], file
        if "-router" in file or "-bench" in file:
            continue
        servers += 1
        role = next(r for r in pools_of(s) if f"-{r}-" in file)
        (argv,) = shell_commands(text)
        check_engine_flags(engine, flags_of(argv), pools_of(s)[role][0])
        host = text.split("run on host ")[1].split(",")[0]
        (line,) = [ln for ln in text.splitlines() if ln.startswith(f"export {device_var}=")]
        for d in line.split("=")[1].split(","):
            per_host[host, d] += 1
    assert all(n == 1 for n in per_host.values())  # no GPU of a host given to two scripts
    nodes = {p.role: p.nodes for p in bundle.fleet.pools}
    assert servers == sum(n * r for n, r in zip(nodes.values(), (p.replicas for p in bundle.fleet.pools), strict=True))


def test_a_multi_host_script_names_the_addresses_it_needs(catalog, tmp_path):
    bundle = deploy_bundle(plan("two-node-pp2"), catalog, "shell", "vllm")
    node1 = bundle.files["kvplan-llama-3-1-405b-colocated-0-node1.sh"]
    assert ': "${NODE0_ADDR:?' in node1 and '--master-addr "${NODE0_ADDR}"' in node1 and "--headless" in node1
    path = tmp_path / "n.sh"
    path.write_text(node1.replace("exec vllm", "exec echo vllm"))
    import subprocess

    p = subprocess.run(["bash", str(path)], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    assert p.returncode != 0 and "export NODE0_ADDR=<the address of host 0>" in p.stderr
    p = subprocess.run(
        ["bash", str(path)], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "NODE0_ADDR": "10.0.0.5"}
    )
    assert p.returncode == 0 and "--master-addr 10.0.0.5" in p.stdout.replace("\\\n", "")


def test_disaggregated_router_lists_each_pool_with_sglang_bootstrap_ports(catalog):
    text = deploy_bundle(plan("disaggregated"), catalog, "shell", "sglang").files["kvplan-llama-3-1-70b-router.sh"]
    (argv,) = shell_commands(text)
    assert argv[:3] == ["python3", "-m", "sglang_router.launch_router"] and "--pd-disaggregation" in argv
    prefill = [argv[i + 1 : i + 3] for i, w in enumerate(argv) if w == "--prefill"]
    assert prefill == [["http://${NODE0_ADDR}:30001", "8998"]]
    assert sum(w == "--decode" for w in argv) == 2
