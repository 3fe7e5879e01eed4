"""The "Launch" tab: the command line that deploys the scenario (``planner.launch.commands``).

vLLM or SGLang, flag names as the engines document them, in a code box with a copy button; the
notes say what a flag cannot (a pre-quantised checkpoint, a placeholder model id, a KV dtype the
engine lacks).  Same text as ``kvplan launch LINK --engine …``.
"""

from __future__ import annotations

from planner.errors import ProblemsError
from planner.launch.commands import ENGINES, launch_command
from ui.format import md_escape
from ui.state import PageContext

ENGINE_LABELS = {"vllm": "vLLM (vllm serve)", "sglang": "SGLang (launch_server)"}


def render(ctx: PageContext) -> None:
    st = ctx.st
    if ctx.result is None:
        return
    r = ctx.result.resolved
    st.subheader("Launch command")
    st.caption(
        "The command that deploys this plan: batch → max_num_seqs, chunk → max_num_batched_tokens, "
        "prompt + output → max_model_len, memory utilisation → gpu_memory_utilization. "
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
        cmd = launch_command(r, engine)
    except ProblemsError as exc:
        st.error(md_escape("; ".join(exc.problems)))
        return
    st.code(cmd.text(), language="bash", wrap_lines=True)
    for note in (*r.notes, *cmd.notes):
        st.info(md_escape(note))
