"""The "Launch" tab: the command line that deploys the scenario (``planner.launch.commands``), and the whole
fleet's deployment bundle (``planner.deploy``).

vLLM or SGLang, flag names as the engines document them, in a code box with a copy button; the
notes say what a flag cannot (a pre-quantised checkpoint, a placeholder model id, a KV dtype the
engine lacks).  Same text as ``kvplan launch LINK --engine …``.  Below it the fleet (its pools, replicas,
GPUs, images, router) and a zip of the Kubernetes manifests, compose file or shell scripts with the
benchmark job — the same files as ``kvplan deploy LINK --target … --engine …`` writes; the zip is built
only when the button is pressed.
"""

from __future__ import annotations

from typing import Any

from planner.deploy.bundle import TARGETS, Target, deploy_bundle, zip_name
from planner.deploy.compose import one_node_problems
from planner.deploy.fleet import Fleet, build_fleet
from planner.errors import ProblemsError
from planner.format import fmt_count
from planner.launch.commands import ENGINES, launch_command
from planner.launch.flags import flag_problems
from planner.model.catalog import Catalog
from planner.model.engine_flags import load_flag_table
from planner.model.scenario import Scenario
from ui.format import md_escape, md_list
from ui.state import PageContext

ENGINE_LABELS = {"vllm": "vLLM (vllm serve)", "sglang": "SGLang (launch_server)"}
TARGET_LABELS = {"kubernetes": "Kubernetes", "compose": "Docker Compose (one node)", "shell": "Shell scripts"}


def render(ctx: PageContext) -> None:
    st = ctx.st
    if ctx.result is None:
        return
    r = ctx.result.resolved
    st.subheader("Launch command")
    st.caption(
        "The command that deploys this plan: batch → max_num_seqs, chunk → max_num_batched_tokens, "
        "prompt + output → max_model_len, memory utilisation → gpu_memory_utilization (left blank: the engine "
        "version's own default). "
        "Copy it with the icon at the box's corner; `kvplan launch LINK` prints the same."
    )
    default = r.engine.kind if r.engine.kind in ENGINES else "vllm"
    engine = st.radio(
        "Engine",
        ENGINES,
        index=ENGINES.index(default),
        horizontal=True,
        key="launch_engine",
        format_func=lambda k: ENGINE_LABELS[k],
    )
    try:
        cmd = launch_command(r, engine, ctx.catalog)
    except ProblemsError as exc:
        st.error(md_escape("; ".join(exc.problems)))
        return
    st.code(cmd.text(), language="bash", wrap_lines=True)
    table = load_flag_table(cmd.profile_key)
    checked = " — every flag checked against its parser's flag table" if table is not None else ""
    st.caption(md_escape(f"Flags as {cmd.version} spells them{checked}."))
    for problem in flag_problems(cmd.argv, table) if table is not None else []:
        st.warning(md_escape(f"The {cmd.version} parser would not take: {problem}"))
    if ctx.scenario.disaggregated:
        st.info(
            "A disaggregated plan: this is one decode-pool replica's command; every pool's, with its KV-transfer "
            "flags, is in the deployment bundle below."
        )
    for note in (*r.notes, *cmd.notes):
        st.info(md_escape(note))
    _deployment(ctx, engine)


def _fleet_lines(fleet: Fleet) -> list[str]:
    lines = []
    for p in fleet.pools:
        nodes = f" on {p.nodes} nodes" if p.nodes > 1 else ""
        lines.append(
            f"{p.role} pool: {p.replicas} × {p.layout} ({p.gpus_per_replica} × {p.resolved.gpu.name}{nodes}), "
            f"batch {p.scenario.batch}, chunk {p.scenario.chunk}"
        )
    lines.append(f"image {fleet.image.ref}; {fmt_count(fleet.gpus, 'GPU')} in all")
    if fleet.policy:
        lines.append(f"router {fleet.router_image.ref}, policy {fleet.policy}")
    return lines


def _zip(s: Scenario, catalog: Catalog, target: Target, engine: str) -> Any:
    """The download's data: a callable, so the zip is built only when the button is pressed."""
    return lambda: deploy_bundle(s, catalog, target, engine).zip_bytes()


def _deployment(ctx: PageContext, engine: str) -> None:
    """The whole fleet and its bundle (module doc)."""
    st = ctx.st
    st.subheader("Deploy the whole fleet")
    st.caption(
        "Every replica of the plan: replicas and router as set in Simulate & size, a prefill pool from "
        "**Use this point** on a disaggregated point (or the link keys prefill_replicas, prefill_tp, "
        "prefill_chunk). The bundle holds the manifests or scripts, the router where the plan routes by prefix "
        "or has a prefill pool, and a benchmark job whose result file `kvplan calibrate` reads. "
        "`kvplan deploy LINK --target … --out DIR` writes the same files."
    )
    target = st.radio("Target", TARGETS, horizontal=True, key="deploy_target", format_func=lambda k: TARGET_LABELS[k])
    try:
        fleet = build_fleet(ctx.scenario, ctx.catalog, engine)
        problems = one_node_problems(fleet) if target == "compose" else []
    except ProblemsError as exc:
        fleet, problems = None, exc.problems
    if fleet is None or problems:
        st.error("These files cannot be written:\n\n" + md_list(problems))
        return
    st.markdown(md_list(_fleet_lines(fleet)))
    st.download_button(
        "Deployment bundle (zip)",
        data=_zip(ctx.scenario, ctx.catalog, target, engine),
        file_name=zip_name(fleet, target),
        mime="application/zip",
        key="deploy_zip",
        on_click="ignore",
        icon=":material/download:",
    )
