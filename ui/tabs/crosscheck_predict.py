"""The Cross-check tab's "your run beside kvplan predict" table: each uploaded ``vllm bench serve
--save-result`` file, predicted for the same settings against the sidebar's server, field by field
(``planner.predict.crosscheck``), read and simulated in the uploads' worker (``ui.job_kinds.predict_beside``:
never in the server process).  An SGLang ``bench_serving`` file is named and skipped here (its keys
are not vLLM's); the calibration below the table reads both."""

from __future__ import annotations

import json

import pandas as pd

from planner.format import fmt_count
from planner.links import to_query_string
from planner.predict.vllm_report import vllm_json
from planner.units import PERCENT
from ui.format import md_escape, md_list, visitor_text
from ui.state import PageContext
from ui.tabs.runs import content_key, upload_job


def _settings_text(o, lengths: str) -> str:
    rate = "inf (all at once)" if o.request_rate_per_s == float("inf") else f"{o.request_rate_per_s:g} req/s"
    conc = f"--max-concurrency {o.max_concurrency}" if o.max_concurrency else "no --max-concurrency"
    return f"{fmt_count(o.num_prompts)} prompts, request rate {rate}, {conc}; lengths: {lengths}."


def command_line(link: str, o) -> str:
    """The ``kvplan predict`` command of the same prediction."""
    parts = [f'kvplan predict "{link}"', f"--num-prompts {o.num_prompts}"]
    if o.max_concurrency:
        parts.append(f"--max-concurrency {o.max_concurrency}")
    if o.request_rate_per_s != float("inf"):
        parts.append(f"--request-rate {o.request_rate_per_s:g}")
    if o.burstiness != 1.0:
        parts.append(f"--burstiness {o.burstiness:g}")
    parts.append(f"--random-input-len {o.input_len} --random-output-len {o.output_len}")
    return " ".join(parts)


def render_predict_beside(ctx: PageContext, uploads: list[tuple[str, bytes]]) -> None:
    """One table per uploaded vLLM result: field | unit | your run | kvplan predict | error."""
    st, s = ctx.st, ctx.scenario
    st.markdown("**Your run beside `kvplan predict` for the same settings**")
    st.caption(
        "The same simulation as `kvplan predict` (the engine's scheduler, one server, a closed loop for "
        "--max-concurrency), with your file's number of prompts, request rate and concurrency, against the "
        "sidebar's deployment at its batch (max_num_seqs) and chunk (max_num_batched_tokens)."
    )
    scenario_json = s.model_dump_json()
    for name, data in uploads:
        key = content_key(scenario_json, name, data)
        found, problems = upload_job(
            st, "predict_beside", key, (scenario_json, name, data), f"Predicting {name} for its settings…"
        )
        if found is None:
            st.error(md_list(visitor_text(p) for p in problems))
            continue
        if found.sglang:
            st.info(md_escape(f"{name}: an SGLang bench_serving result; this table reads vllm bench serve's keys."))
            continue
        settings, prediction, rows = found.settings, found.prediction, found.rows
        st.caption(
            md_escape(
                f"{name}: {_settings_text(settings.options, settings.lengths)} Step times: {prediction.time_basis}."
            )
        )
        frame = pd.DataFrame(
            {
                "field": [r.label for r in rows],
                "unit": [r.unit for r in rows],
                "your run": [r.measured for r in rows],
                "kvplan predict": [r.predicted for r in rows],
                "error (%)": [None if r.error_frac is None else r.error_frac * PERCENT for r in rows],
            }
        )
        st.dataframe(
            frame,
            hide_index=True,
            column_config={
                "your run": st.column_config.NumberColumn(format="%.2f"),
                "kvplan predict": st.column_config.NumberColumn(format="%.2f"),
                "error (%)": st.column_config.NumberColumn(format="%+.1f"),
            },
        )
        for note in prediction.notes:
            st.caption(md_escape(note))
        link = to_query_string(s)
        st.download_button(
            "kvplan predict's result JSON",
            data=json.dumps(vllm_json(prediction, link), indent=2),
            file_name=f"kvplan-predict-{name.rsplit('.', 1)[0]}.json",
            mime="application/json",
            key=f"xc_predict_json_{name}",
            on_click="ignore",
            icon=":material/download:",
        )
        command = command_line(link, settings.options)
        st.caption(md_escape(f"From the command line: {command} · {prediction.engine_label}"))
