"""The "Check a log" tab: a pasted or uploaded vLLM or SGLang start-up log beside the plan, term by term.

The log is read by ``planner.logs.startup.parse_startup_log`` (size-limited; linear in its length;
nothing in it is executed; foreign text gets a message naming the lines it looked for) and compared by
``planner.logs.check.check_log`` at the log's own settings, on the engine version it is from — both in
the uploads' worker (``ui.jobs.UPLOADS``, kind ``check_log``), never in the server process, so one
visitor's log cannot stall another's page.  "Use this log's figures" puts the log's settings, its engine
version and its memory terms (``cal_*`` link keys) into the scenario, so the link carries the
calibration — offered only when the figures are physical on the plan's GPU (``calibration_problems``;
else the reasons).  Same figures as ``kvplan check-log LINK --log FILE [--calibrate]``.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from planner.format import fmt_count, fmt_num, fmt_pct
from planner.logs.check import StartupLog, calibration, log_scenario
from planner.logs.sglang_log import SglangStartup
from planner.logs.vllm_log import MAX_LOG_CHARS
from planner.units import MiB
from ui.format import md_escape, md_list
from ui.job_kinds import LogReport
from ui.state import PageContext
from ui.tabs.runs import content_key, upload_job

TEXT_KEY = "_log_text"
FILE_KEY = "_log_file"
SOURCE_KEY = "_log_source"  # the text last checked
MAX_UPLOAD_BYTES = 16 * MiB
PASTE, UPLOAD = "Paste", "Upload a file"


#: Units counted in whole things (written 451,088; 28,193), the rest to three significant digits.
COUNTED_UNITS = ("tokens", "blocks", "sequences")


def cell(value: float | None, unit: str) -> str:
    """A predicted or logged figure as the page writes numbers; blank where the log does not print it."""
    if value is None:
        return ""
    return fmt_count(value) if unit in COUNTED_UNITS else fmt_num(value)


def rows_frame(check: LogReport) -> pd.DataFrame:
    """The comparison table as shown: term, unit, predicted, logged, error — each figure through
    ``planner.format`` (451,088 tokens, 28,193 blocks, 58.1 GiB, +1.2%, never -0.0%), blank where the log
    does not print the term (never "None")."""
    return pd.DataFrame(
        {
            "term": [r.label for r in check.rows],
            "unit": [r.unit for r in check.rows],
            "predicted": [cell(r.predicted, r.unit) for r in check.rows],
            "logged": [cell(r.logged, r.unit) for r in check.rows],
            "error": ["" if r.error_frac is None else fmt_pct(r.error_frac, signed=True) for r in check.rows],
        }
    )


def _read_source(st: Any) -> str | None:
    """The log text from the paste box or the upload; an error message when the upload is too large."""
    ss = st.session_state
    if ss.get("log_source_kind", PASTE) == UPLOAD:
        upload = ss.get(FILE_KEY)
        if upload is None:
            return None
        if upload.size > MAX_UPLOAD_BYTES:
            st.error(f"The file is larger than {MAX_UPLOAD_BYTES // MiB} MiB: upload the start-up part only.")
            return None
        return upload.getvalue().decode("utf-8", errors="replace")
    text = ss.get(TEXT_KEY, "")
    return text if text.strip() else None


def _inputs(st: Any) -> None:
    kind = st.radio("Log", (PASTE, UPLOAD), horizontal=True, key="log_source_kind")
    if kind == UPLOAD:
        st.file_uploader(
            "vLLM or SGLang start-up log",
            type=["log", "txt", "out"],
            key=FILE_KEY,
            max_upload_size=MAX_UPLOAD_BYTES // MiB,
            help=f"The text `vllm serve` printed while starting (≤ {MAX_UPLOAD_BYTES // MiB} MiB).",
        )
    else:
        st.text_area(
            "vLLM or SGLang start-up log",
            key=TEXT_KEY,
            height=180,
            max_chars=MAX_LOG_CHARS,
            placeholder="INFO … Model loading took 14.99 GiB memory …\nINFO … Available KV cache memory: 58.11 GiB\n"
            "INFO … GPU KV cache size: 476,016 tokens",
            help="Paste what `vllm serve` printed while starting (INFO level is enough; DEBUG adds the breakdown).",
        )


def _apply(ctx: PageContext, log: StartupLog) -> None:
    """The log's settings, engine version and figures into the scenario (the link follows)."""
    plan, _ = log_scenario(ctx.scenario, log, ctx.catalog)
    keys = ("tp", "mem_util", "batch", "chunk", "prompt", "output", "prefix", "engine")
    changes = {k: getattr(plan, k) for k in keys}
    changes.update({k: getattr(plan, k) for k in ("block", "kvdtype", "wdtype", "quant")})
    ctx.update_scenario(**changes, **calibration(log))


def _show(ctx: PageContext, check: LogReport) -> None:
    st, log = ctx.st, check.log
    if isinstance(log, SglangStartup):
        version = "an SGLang log"
    else:
        version = f"vLLM {log.engine_version}" if log.engine_version else "a vLLM log"
    st.markdown(f"**The plan at the log's settings** ({md_escape(version)}; terms the log does not print are blank)")
    st.dataframe(rows_frame(check), hide_index=True)
    for note in check.notes:
        st.caption(md_escape(note))
    cal = calibration(log)
    if cal and check.refused:
        st.warning("The log's figures are not used for the plan:\n\n" + md_list(check.refused))
    elif cal and st.button(
        "Use this log's figures",
        key="log_apply",
        type="primary",
        help="Sets the plan to the log's settings and its memory terms: "
        + ", ".join(f"{k}={v}" for k, v in cal.items())
        + " (link keys; clear them to return to the model).",
    ):
        _apply(ctx, log)


def render(ctx: PageContext) -> None:
    st = ctx.st
    st.subheader("Check the plan against a vLLM or SGLang start-up log")
    st.caption(
        "vLLM and SGLang print their memory accounting while they start: total memory, weights, peak activation, "
        "the KV cache and its concurrency (vLLM ≥ 0.27 folds non-torch memory into 'consumed' and the CUDA-graph "
        "estimate into 'peak activation'). kvplan runs the plan at the log's settings, on the engine version the "
        "log is from, and sets each term beside the log's. See docs/launch.md."
    )
    _inputs(st)
    text = _read_source(st)
    if text is None:
        st.info("Paste or upload a log to compare it with the plan.")
        return
    scenario_json = ctx.scenario.model_dump_json()
    report, problems = upload_job(
        st, "check_log", content_key(scenario_json, text), (scenario_json, text), "Reading the log…"
    )
    if report is None:
        st.error(md_escape("; ".join(problems)))
        return
    _show(ctx, report)
