"""The "Cross-check" tab: a benchmark's measurements beside the engine's prediction.

Two kinds of measurement:

* **Serving benchmark** — the result files of ``vllm bench serve --save-result`` or SGLang
  ``bench_serving --output-file`` (``planner.calibration.serving_results``): each vLLM run
  beside ``kvplan predict`` for the same settings, field by field (``crosscheck_predict``);
  each run's median TTFT and TPOT at its load beside the engine profile's prediction for the
  scenario's deployment, and a calibration (``planner.calibration.calibrate``) of the
  profile's efficiency parameters to them — applied to the link as ``timing=…`` and
  offered as a calibrated engine-profile TOML.
* **Microbenchmark** (``python -m planner bench``), below.

Source: a committed results file under ``benchmarks/results/`` or an upload
(size-limited JSON).  Either is validated by ``planner.bench.results.parse_results``
(an upload in the uploads' worker, ``ui.jobs.UPLOADS``; so are the serving runs' reading and
their fit, which a 60,000-run file once ran for minutes in the server);
a bad file gets a one-paragraph message, never a traceback, and nothing in it
is executed.  "Apply calibration" sets the scenario's MFU/MBU (link keys) when
the results were measured on the scenario's GPU; "Plan with this measured
machine" selects the results' own calibrated profile (committed under
``benchmarks/results/``, so in the catalog) as the GPU; otherwise the calibrated
profile TOML is offered for download.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from planner.bench.calibrate import scenario_calibration
from planner.bench.results import (
    MAX_RESULTS_BYTES,
    BenchResults,
    parse_results,
    profile_toml,
    ridge_frame,
    steps_frame,
    summary_frame,
)
from planner.calibration.calibrate import calibrated_profile_toml, calibration_rows
from planner.calibration.serving_results import MAX_RESULT_BYTES
from planner.format import fmt_count, fmt_num, fmt_pct, fmt_seconds
from planner.model.catalog import MEASURED_DIR
from planner.units import GIGA, MS_PER_S, PERCENT, TERA, MiB
from ui.figures.bench import decode_figure, prefill_figure
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import md_escape, md_list, plot_text, visitor_text
from ui.state import PageContext
from ui.tabs.crosscheck_kernels import render_kernel_table
from ui.tabs.crosscheck_predict import render_predict_beside
from ui.tabs.runs import content_key, upload_job

RESULTS_DIR = MEASURED_DIR  # the committed results beside their calibrated profiles
COMMITTED, UPLOAD = "Committed results", "Upload a file"
MICRO, SERVING = "Microbenchmark (kvplan bench)", "Serving benchmark (vllm bench serve, SGLang bench_serving)"


def _in_force(v: float | None) -> str:
    """A scenario's MFU/MBU override, or the engine profile's fitted value when it has none."""
    return "the engine profile's" if v is None else fmt_num(v)


def _signed(v: float) -> str:
    """The overlap coefficient with its sign and two decimals ("+0.85"): planner.format has no signed number yet."""
    return f"{v:+.2f}"


def committed_files(directory: Path | None = None) -> list[Path]:
    return sorted(p for p in (directory or RESULTS_DIR).glob("*.json") if p.is_file())


#: Said once at the top: what this tab validates and what it does not.
SCOPE = (
    "This tab checks the engine on *one* machine against that machine's measurements. The datasheet GPU "
    "profiles are validated elsewhere: against published serving measurements (`benchmarks/published_accuracy.py`, "
    "docs/model.md) and, for your deployment, against the serving benchmark you upload here."
)
#: The two terms of the microbenchmark, one sentence each.
TERMS = (
    "**Overlap** o: how far a kernel's compute and memory traffic run at the same time — its time is "
    "max(c, m) + (1 − o) · min(c, m), so o = 1 is the roofline's perfect overlap and o = 0 back-to-back. "
    "**Attention share**: the fraction of the matmul peak (prefill) and of the memory bandwidth (decode) that "
    "the attention kernel reaches, below the big weight matmuls' own."
)


def median_abs_error(r: BenchResults, profile: str) -> float:
    """Median |error| over every measured step of the results for one profile's predictions."""
    errors = [abs(c.predictions[profile].error_frac) for c in r.cases if profile in c.predictions]
    return float(statistics.median(errors)) if errors else math.nan


def render(ctx: PageContext) -> None:
    st = ctx.st
    st.subheader("Cross-check: the engine against a measured machine")
    st.caption(SCOPE)
    if st.radio("Measurements", (MICRO, SERVING), horizontal=True, key="xc_mode") == SERVING:
        _serving(ctx)
        return
    st.caption(
        "`python -m planner bench` times matmuls, memory streaming and a small Llama-like decoder's prefill, decode, "
        "chunked and speculative-verification steps, then asks the engine for the same shapes. See docs/benchmark.md."
    )
    results = _load(st)
    if results is None:
        return
    labels = [p.label for p in results.profiles]
    profile = labels[0]
    if len(labels) > 1:  # one option needs no choice
        profile = st.radio(
            "Prediction from",
            labels,
            horizontal=True,
            key="xc_profile",
            help="calibrated: measured peaks, MFU = MBU = 1; datasheet: the shipped profile with the default MFU/MBU",
        )
    err = median_abs_error(results, profile)
    st.success(
        md_escape(
            f"The engine is within {fmt_pct(err)} (median |error| over {fmt_count(len(results.cases))} steps) of the "
            f"measurements on this machine ({results.device.name}), with the {profile} profile."
        )
    )
    _device(st, results)
    st.caption(TERMS)
    st.markdown("**Median |error| per phase**")
    st.dataframe(
        summary_frame(results),
        hide_index=True,
        column_config={
            "median_abs_error_pct": st.column_config.NumberColumn("median |error| (%)", format="%.1f"),
            "median_abs_serial_error_pct": st.column_config.NumberColumn(
                "no overlap (o = 0): median |error| (%)",
                format="%.1f",
                help="compute + memory time, as if they did not overlap at all "
                "(o = 0; a diagnostic beside the measured o)",
            ),
        },
    )
    st.plotly_chart(decode_figure(results, profile), key="xc-decode", config=PLOTLY_CONFIG)
    st.plotly_chart(prefill_figure(results, profile), key="xc-prefill", config=PLOTLY_CONFIG)
    st.markdown("**Chunked-prefill and speculative-verification steps**")
    st.dataframe(
        steps_frame(results, profile, ("mixed", "verify")),
        hide_index=True,
        column_config={c: st.column_config.NumberColumn(format="%.2f") for c in ("measured (ms)", "predicted (ms)")}
        | {"error (%)": st.column_config.NumberColumn(format="%+.1f")},
    )
    st.markdown("**Batch where decode turns compute-bound**")
    st.dataframe(ridge_frame(results), hide_index=True)
    if results.skipped:
        st.caption("Skipped: " + md_escape("; ".join(results.skipped)))
    render_kernel_table(st, results)
    st.divider()
    _calibration(st, ctx, results)


def _load(st: Any) -> BenchResults | None:
    files = committed_files()
    source = st.radio("Results", (COMMITTED, UPLOAD), horizontal=True, key="xc_source")
    if source == COMMITTED:
        if not files:
            st.info("No results are committed under benchmarks/results/ yet; upload one instead.")
            return None
        by_name = {p.name: p for p in files}
        name = st.selectbox("File", list(by_name), key="xc_file")
        path = by_name[name]
        if path.stat().st_size > MAX_RESULTS_BYTES:
            st.error(f"{md_escape(name)} is larger than {fmt_count(MAX_RESULTS_BYTES)} bytes; not a results file.")
            return None
        data, label = path.read_bytes(), name
    else:
        up = st.file_uploader(
            "Results JSON written by `python -m planner bench`",
            type=["json"],
            key="xc_upload",
            max_upload_size=MAX_RESULTS_BYTES // MiB,
        )
        if up is None:
            return None
        if up.size > MAX_RESULTS_BYTES:
            st.error(
                f"The file is {fmt_count(up.size)} bytes; a results file is at most {fmt_count(MAX_RESULTS_BYTES)}."
            )
            return None
        data, label = up.getvalue(), up.name
        results, problems = upload_job(st, "bench_results", content_key(data), data, "Reading the results…")
        if results is None:
            st.error(f"**{md_escape(label)}**: {md_escape(visitor_text('; '.join(problems)))}")
        return results
    try:
        return parse_results(data)
    except ValueError as exc:
        st.error(f"**{md_escape(label)}** is not a benchmark results file: {md_escape(visitor_text(exc))}")
        return None


def _device(st: Any, r: BenchResults) -> None:
    d = r.device
    cols = st.columns(3)
    cols[0].metric(
        "Matmul",
        f"{fmt_num(r.measured_peak_flop_per_s / TERA)} TFLOP/s",
        help=f"{d.dtype}, best of {len(r.matmul)} sizes, median of {len(r.rounds)} rounds",
    )
    cols[1].metric(
        "Memory bandwidth",
        f"{fmt_num(r.measured_bandwidth_bytes_per_s / GIGA)} GB/s",
        help="the decoder's weight-streaming kernel (gemv at one token row); "
        + ", ".join(f"{b.kernel} {fmt_num(b.bytes_per_s / GIGA)} GB/s" for b in r.bandwidth),
    )
    cols[2].metric("Run time", fmt_seconds(r.wall_s))
    cols = st.columns(3)
    rows = ", ".join(str(o.rows) for o in r.overlap)
    cols[0].metric(
        "Compute–memory overlap",
        _signed(r.measured_compute_memory_overlap),
        help="o in max(c, m) + (1 − o)·min(c, m): 1 = roofline, 0 = back to back; "
        f"the linear kernel at {rows} token rows",
    )
    cols[1].metric(
        "Attention: share of peak / bandwidth",
        f"{fmt_num(r.measured_attention_compute_frac)} / {fmt_num(r.measured_attention_bandwidth_frac)}",
        help="the decoder's attention kernel on one causal prompt (FLOP/s ÷ peak) and on one decode token "
        "per sequence over a KV cache (bytes/s ÷ bandwidth)",
    )
    bws = [x.bandwidth_bytes_per_s / GIGA for x in r.rounds]
    cols[2].metric(
        "Calibration rounds",
        fmt_count(len(r.rounds)),
        help="interleaved with the steps; each figure is the median. "
        f"Bandwidth ranged {fmt_num(min(bws))} … {fmt_num(max(bws))} GB/s",
    )
    st.caption(
        md_escape(
            f"{d.name} · {d.backend} {d.dtype} · {d.thread_note} · "
            + (f"{d.linear_note} · " if d.linear_note else "")
            + f"{d.date_utc} · "
            f"load average {fmt_num(d.load_average[0])} → {fmt_num(d.load_average[1])}"
            + (" · quick run" if d.quick else "")
        )
    )


def _plan_with_measured(st: Any, ctx: PageContext, r: BenchResults) -> None:
    """Results whose calibrated profile is in the catalog (committed under benchmarks/results/):
    one click makes the measured machine the scenario's GPU, at its measured rates."""
    key, s = r.device.slug, ctx.scenario
    overlap = _signed(r.measured_compute_memory_overlap)
    target = dict(gpu=key, tp=1, gpu_price=None)
    if all(getattr(s, k) == v for k, v in target.items()):
        st.success(md_escape(f"The scenario runs on this measured machine ({key}) at its measured rates."))
        return
    st.markdown(
        md_escape(
            f"Its calibrated profile is in the GPU list as {key}: planning on it takes the measured peak, bandwidth, "
            f"overlap ({overlap}) and attention shares as they are (a measured profile "
            f"runs at MFU = MBU = 1), at tp = 1 (one machine). The link will say gpu={key}."
        )
    )
    if st.button("Plan with this measured machine", key="xc_use_measured", type="primary"):
        ctx.update_scenario(**target)


def _calibration(st: Any, ctx: PageContext, r: BenchResults) -> None:
    st.markdown("**Calibration**")
    gpu = ctx.catalog.profile(ctx.scenario.gpu)
    cal = scenario_calibration(r, gpu) if gpu is not None else None
    overlap = _signed(r.measured_compute_memory_overlap)
    if cal is not None:
        st.markdown(
            md_escape(
                f"Measured on this scenario's GPU ({gpu.name}): MFU {fmt_num(cal.mfu)} and MBU {fmt_num(cal.mbu)} "
                f"make the datasheet figures equal the measured peaks (now {_in_force(ctx.scenario.mfu)} and "
                f"{_in_force(ctx.scenario.mbu)})."
            )
        )
        for note in cal.notes:
            st.caption(md_escape(note))
        st.caption(
            md_escape(
                f"The link carries MFU and MBU only; the measured overlap ({overlap}) "
                "and attention shares are in the calibrated profile below."
            )
        )
        if st.button("Apply calibration", key="xc_apply", type="primary"):
            ctx.update_scenario(mfu=cal.mfu, mbu=cal.mbu)
    elif r.device.slug in ctx.catalog.measured:
        _plan_with_measured(st, ctx, r)
    else:
        here = gpu.name if gpu is not None else ctx.scenario.gpu
        st.info(
            md_escape(
                f"These results were measured on {r.device.name}, not on the scenario's GPU ({here}), so MFU/MBU "
                "cannot be scaled from them. To plan with the measured machine, save the calibrated profile below as "
                f"benchmarks/results/{r.device.slug}.toml (or hardware_profiles/); it then appears at the end of the "
                "GPU list and runs at its measured rates (MFU and MBU do not derate a measured profile)."
            )
        )
    st.download_button(
        "Calibrated profile (TOML)",
        data=profile_toml(r.calibrated_profile),
        file_name=f"{r.device.slug}.toml",
        mime="application/toml",
        key="xc_toml",
        on_click="ignore",
        icon=":material/download:",
    )


# --------------------------------------------------------------------------- serving benchmark


def _serving(ctx: PageContext) -> None:
    """Upload serving-benchmark results; measured vs predicted per point; calibrate and apply."""
    st, s = ctx.st, ctx.scenario
    engine = ctx.catalog.engine(s.engine)
    engine_text = engine.label if engine is not None else s.engine
    st.caption(
        "Upload the JSON that `vllm bench serve --save-result` writes (one run per file) or the JSON-lines file "
        "of SGLang `python -m sglang.bench_serving --output-file` (one run per line), measured on the deployment "
        "the sidebar describes: "
        + md_escape(f"{s.model} on {s.tp} × {s.gpu}, {s.wdtype or 'checkpoint'} weights, {engine_text}.")
    )
    ups = _serving_uploads(st)
    if not ups:
        return
    render_predict_beside(ctx, ups)
    st.divider()
    st.markdown("**Calibration of the engine profile to your runs**")
    scenario_json = s.model_dump_json()
    key = content_key(scenario_json, *(part for name, data in ups for part in (name, data)))
    found, problems = upload_job(st, "calibrate", key, (scenario_json, ups), "Fitting the profile to your runs…")
    if found is None:
        st.error(md_list(visitor_text(p) for p in problems))
        return
    n_runs, cal = found
    st.success(
        md_escape(
            f"The {engine_text} engine profile is within {fmt_pct(cal.median_abs_error_before)} (median |error|) of "
            f"your {fmt_count(n_runs)} measured run(s); calibrated to them, within "
            f"{fmt_pct(cal.median_abs_error_after)}."
        )
    )
    cols = st.columns(3)
    cols[0].metric("Runs", fmt_count(n_runs))
    cols[1].metric("Median |error|, profile", fmt_pct(cal.median_abs_error_before))
    cols[2].metric("Median |error|, calibrated", fmt_pct(cal.median_abs_error_after))
    frame = pd.DataFrame(calibration_rows(cal))
    ms = {k: frame[k] * MS_PER_S for k in ("measured_s", "profile_s", "calibrated_s")}
    st.dataframe(
        pd.DataFrame(
            {
                "point": frame["point"],
                "measured (ms)": ms["measured_s"],
                "profile (ms)": ms["profile_s"],
                "calibrated (ms)": ms["calibrated_s"],
                "profile error (%)": frame["profile_error_frac"] * PERCENT,
                "calibrated error (%)": frame["calibrated_error_frac"] * PERCENT,
            }
        ),
        hide_index=True,
        column_config={c: st.column_config.NumberColumn(format="%.2f") for c in ("measured (ms)", "profile (ms)")}
        | {"calibrated (ms)": st.column_config.NumberColumn(format="%.2f")}
        | {c: st.column_config.NumberColumn(format="%+.1f") for c in ("profile error (%)", "calibrated error (%)")},
    )
    st.plotly_chart(_serving_figure(frame), key="xc-serving", config=PLOTLY_CONFIG)
    fitted = ", ".join(f"{k} {fmt_num(v)}" for k, v in cal.values.items())
    st.caption(md_escape(f"Fitted for {engine_text} on {s.gpu}: {fitted}. The link form is timing={cal.overrides}."))
    if s.timing == cal.overrides:
        st.success("The scenario runs with these calibrated efficiency parameters (timing in the link).")
    elif st.button("Apply calibration", key="xc_serving_apply", type="primary"):
        ctx.update_scenario(timing=cal.overrides)
    gpu = ctx.catalog.profile(s.gpu)
    if engine is not None and gpu is not None:
        own = f"{engine.kind}-{s.gpu}"  # a plain engine_profiles/NAME.toml: an engine of one version
        st.download_button(
            "Calibrated engine profile (TOML)",
            data=calibrated_profile_toml(engine, gpu, cal, ", ".join(name for name, _ in ups)),
            file_name=f"{own}.toml",
            mime="application/toml",
            key="xc_serving_toml",
            on_click="ignore",
            icon=":material/download:",
        )
        st.caption(
            md_escape(
                f"Saved as engine_profiles/{own}.toml it becomes an engine profile of its own (engine={own} in a link)."
            )
        )


def _serving_uploads(st: Any) -> list[tuple[str, bytes]]:
    """The uploaded result files as (name, content)."""
    ups = st.file_uploader(
        "Benchmark result files",
        type=["json", "jsonl"],
        accept_multiple_files=True,
        key="xc_serving_upload",
        max_upload_size=MAX_RESULT_BYTES // MiB,
    )
    return [(u.name, u.getvalue()) for u in ups or []]


def _serving_figure(frame: pd.DataFrame) -> go.Figure:
    """Predicted vs measured per point, profile and calibrated, with the y = x line."""
    fig = go.Figure()
    top = float(max(frame[["measured_s", "profile_s", "calibrated_s"]].to_numpy().max(), 1e-6)) * MS_PER_S
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="measured = predicted", line=dict(dash="dot")))
    for col, name in (("profile_s", "profile"), ("calibrated_s", "calibrated")):
        fig.add_trace(
            go.Scatter(
                x=frame["measured_s"] * MS_PER_S,
                y=frame[col] * MS_PER_S,
                mode="markers",
                name=name,
                text=[plot_text(p) for p in frame["point"]],
                hovertemplate="%{text}<br>measured %{x:.2f} ms<br>predicted %{y:.2f} ms<extra></extra>",
            )
        )
    fig.update_layout(xaxis_title="measured (ms)", yaxis_title="predicted (ms)", height=380)
    return fig
