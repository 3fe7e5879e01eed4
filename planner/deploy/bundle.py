"""A deployment bundle: every file one target needs, by relative path, as text; and the same as a zip.  Pure
(the zip is built in memory; the CLI and the dashboard write or offer it).

  kubernetes  one manifest file per pool, the router's, the benchmark Job's (``planner.deploy.kubernetes``)
  compose     compose.yaml (``planner.deploy.compose``)
  shell       one script per replica (per node of a multi-node replica), the router's, the benchmark's
  every one   README.md: the fleet, how to start it, benchmark it and calibrate kvplan to the result, the
              images and their sources, and what no file can say

YAML is written by PyYAML's ``safe_dump`` (block style, keys in the writers' order): YAML's implicit typing
turns unquoted ``on``, ``yes``, ``1e3`` or ``08`` into booleans and numbers, and a well-kept emitter quotes
exactly the strings that need it — hand-written quoting rules would get some of them wrong.  Every file
starts with a comment naming the scenario link that produced it.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from planner.deploy.compose import compose_file
from planner.deploy.fleet import Fleet, build_fleet
from planner.deploy.kubernetes import bench_result_file, entry_service, manifests
from planner.deploy.placement import hosts, needs_router, place
from planner.deploy.shell import scripts
from planner.format import fmt_count
from planner.model.catalog import Catalog
from planner.model.scenario import Scenario

Target = Literal["kubernetes", "compose", "shell"]
TARGETS: tuple[Target, ...] = ("kubernetes", "compose", "shell")
#: A fixed timestamp for the zip entries (1980-01-01, the format's first date): the same bundle, the same bytes.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
#: The LeaderWorkerSet controller and CRD (kubernetes-sigs/lws site/content/en/docs/installation, v0.10.0).
LWS_MANIFESTS = "https://github.com/kubernetes-sigs/lws/releases/download/v0.10.0/manifests.yaml"


@dataclass(frozen=True)
class Bundle:
    target: Target
    fleet: Fleet
    files: dict[str, str]  # relative path → text

    def zip_bytes(self) -> bytes:
        """The files in one zip (scripts executable), identical bytes for the same bundle."""
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for path, text in self.files.items():
                info = zipfile.ZipInfo(f"{self.fleet.name}/{path}", ZIP_DATE)
                info.external_attr = (0o755 if path.endswith(".sh") else 0o644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, text)
        return buf.getvalue()

    @property
    def zip_name(self) -> str:
        return zip_name(self.fleet, self.target)


def zip_name(fleet: Fleet, target: Target) -> str:
    return f"{fleet.name}-{target}.zip"


def header(fleet: Fleet, what: str) -> str:
    return f"# {what}\n# written by kvplan deploy from the scenario link: ?{fleet.link}\n"


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper without anchors and aliases: a dict used twice (a selector and its pod labels) is
    written out twice, as kubectl users read manifests."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(docs: list[dict[str, Any]]) -> str:
    """Documents as block YAML (module doc: why PyYAML)."""
    return yaml.dump_all(
        docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100_000, allow_unicode=True
    )


def _has_router(fleet: Fleet, target: Target) -> bool:
    """Kubernetes: where the plan routes (``Fleet.policy``); bare hosts also over several replicas."""
    return fleet.policy is not None or (target != "kubernetes" and needs_router(fleet))


def _routed(bundle: Bundle) -> bool:
    return _has_router(bundle.fleet, bundle.target)


def _summary(fleet: Fleet, target: Target) -> list[str]:
    lines = []
    for p in fleet.pools:
        nodes = f", {p.nodes} nodes of {p.gpus_per_node} GPUs each" if p.nodes > 1 else ""
        lines.append(
            f"- {p.role} pool: {p.replicas} × {p.layout} on {p.gpus_per_replica} × {p.resolved.gpu.name}{nodes} "
            f"= {fmt_count(p.gpus, 'GPU')}; batch {p.scenario.batch}, chunk {p.scenario.chunk}"
        )
    routed = _has_router(fleet, target)
    policy = fleet.policy or "round_robin"
    router = f"router: {fleet.router_image.ref}, policy {policy}" if routed else "no router (one Service)"
    if not routed and target != "kubernetes":
        router = "no router (one replica)"
    lines.append(f"- {router}; {fmt_count(fleet.gpus, 'GPU')} in all")
    return lines


def _how(bundle: Bundle) -> list[str]:
    f, result = bundle.fleet, bench_result_file(bundle.fleet)
    if bundle.target == "kubernetes":
        lws = any(p.nodes > 1 for p in f.pools)
        return [
            *([f"kubectl apply --server-side -f {LWS_MANIFESTS}"] if lws else []),
            "kubectl create secret generic hf-token --from-literal=token=$HF_TOKEN   # gated checkpoints only",
            *(f"kubectl apply -f {name}" for name in bundle.files if name.endswith(".yaml") and "-bench" not in name),
            f"kubectl apply -f {f.name}-bench.yaml    # once every pod is Ready; calls http://{entry_service(f)}:{f.port}",
            f"kubectl logs job/{f.name}-bench --tail=1 > {result}",
            f"kvplan calibrate {result} --link '?{f.link}'",
        ]
    if bundle.target == "compose":
        return [
            "docker compose up -d",
            "docker compose --profile bench run --rm " + f"{f.name}-bench",
            f"kvplan calibrate results/{result} --link '?{f.link}'",
        ]
    n = hosts(place(f))
    env = "" if n == 1 else f" (export NODE0_ADDR … NODE{n - 1}_ADDR on every host first)"
    return [
        f"# on each host, the scripts whose comment names it{env}",
        *(f"./{name} &" for name in bundle.files if name.endswith(".sh") and "-bench" not in name),
        f"./{f.name}-bench.sh",
        f"kvplan calibrate results/{result} --link '?{f.link}'",
    ]


def readme(bundle: Bundle) -> str:
    f = bundle.fleet
    lines = [
        f"# {f.name}: {bundle.target} deployment written by kvplan",
        "",
        f"Scenario link: `?{f.link}`",
        "",
        *_summary(f, bundle.target),
        "",
        f"Engine: {f.engine} {f.release}; image `{f.image.ref}` — {f.image.source}.",
        *([f"Router image: `{f.router_image.ref}` — {f.router_image.source}."] if _routed(bundle) else []),
        "",
        "## Start, benchmark, calibrate",
        "",
        "```bash",
        *_how(bundle),
        "```",
        "",
        "The benchmark sends the plan's arrivals (Poisson at the plan's rate) with every prompt and output at the "
        "plan's mean lengths (the servers' max_model_len is prompt + output, so a longer request would be "
        "refused), and writes the result file `kvplan calibrate` reads.",
    ]
    if f.notes:
        lines += ["", "## Notes", "", *(f"- {n}" for n in f.notes)]
    return "\n".join(lines) + "\n"


def _files(fleet: Fleet, target: Target) -> dict[str, str]:
    if target == "kubernetes":
        out = {}
        for name, docs in manifests(fleet).items():
            part = name.removesuffix(".yaml").removeprefix(fleet.name + "-")
            out[name] = header(fleet, f"kubernetes: {part}") + dump_yaml(docs)
        return out
    if target == "compose":
        return {"compose.yaml": header(fleet, "docker compose, one node") + dump_yaml([compose_file(fleet)])}
    return scripts(fleet)


def deploy_bundle(s: Scenario, catalog: Catalog, target: Target, engine: str | None = None) -> Bundle:
    """The bundle of scenario ``s`` for ``target`` (module doc); DeployError names why it cannot be written."""
    fleet = build_fleet(s, catalog, engine)
    files = _files(fleet, target)
    bundle = Bundle(target, fleet, files)
    return Bundle(target, fleet, {"README.md": readme(bundle), **files})
