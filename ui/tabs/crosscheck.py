"""The "Cross-check" tab: a benchmark's measurements beside the engine's prediction.

Source: a committed results file under ``benchmarks/results/`` or an upload
(size-limited JSON).  Either is validated by ``planner.bench.results.parse_results``;
a bad file gets a one-paragraph message, never a traceback, and nothing in it
is executed.  "Apply calibration" sets the scenario's MFU/MBU (link keys) when
the results were measured on the scenario's GPU; "Plan with this measured
machine" selects the results' own calibrated profile (committed under
``benchmarks/results/``, so in the catalog) as the GPU; otherwise the calibrated
profile TOML is offered for download.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from planner.format import fmt_count, fmt_num, fmt_seconds
from planner.model.catalog import MEASURED_DIR
from planner.units import GIGA, TERA, MiB
from ui.figures.bench import decode_figure, prefill_figure
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import md_escape
from ui.state import PageContext

RESULTS_DIR = MEASURED_DIR  # the committed results beside their calibrated profiles
COMMITTED, UPLOAD = "Committed results", "Upload a file"


def _signed(v: float) -> str:
    """The overlap coefficient with its sign and two decimals ("+0.85"): planner.format has no signed number yet."""
    return f"{v:+.2f}"


def committed_files(directory: Path | None = None) -> list[Path]:
    return sorted(p for p in (directory or RESULTS_DIR).glob("*.json") if p.is_file())


def render(ctx: PageContext) -> None:
    st = ctx.st
    st.subheader("Cross-check: the engine against a measured machine")
    st.caption(
        "`python -m planner bench` times matmuls, memory streaming and a small Llama-like decoder's prefill, decode, "
        "chunked and speculative-verification steps, then asks the engine for the same shapes. See docs/benchmark.md."
    )
    results = _load(st)
    if results is None:
        return
    _device(st, results)
    labels = [p.label for p in results.profiles]
    profile = st.radio(
        "Prediction from",
        labels,
        horizontal=True,
        key="xc_profile",
        help="calibrated: measured peaks, MFU = MBU = 1; datasheet: the shipped profile with the default MFU/MBU",
    )
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
    try:
        return parse_results(data)
    except ValueError as exc:
        st.error(f"**{md_escape(label)}** is not a benchmark results file: {md_escape(str(exc))}")
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
                f"make the datasheet figures equal the measured peaks (now {fmt_num(ctx.scenario.mfu)} and "
                f"{fmt_num(ctx.scenario.mbu)})."
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
