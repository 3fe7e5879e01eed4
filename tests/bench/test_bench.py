"""The microbenchmark (planner.bench): a --quick numpy run's schema and shapes,
the calibrated profile, the results-file validator, the decoder's correctness,
the CLI's bad input, and the Cross-check tab.  No accuracy or timing is
asserted: accuracy is what the benchmark reports (docs/benchmark.md).
"""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest

from planner.bench import backend, host
from planner.bench.backend import LINEAR_KERNELS, NumpyBackend
from planner.bench.calibrate import scenario_calibration
from planner.bench.decoder import Decoder
from planner.bench.plan import GAMMA, QUICK_SHAPE, make_plan
from planner.bench.predict import (
    engine_inputs,
    predict_cases,
    predicted_ridge_batch,
    ridge_batch_fit,
)
from planner.bench.results import (
    BenchResults,
    cases_frame,
    parse_results,
    profile_toml,
    results_csv,
    results_json,
    ridge_frame,
)
from planner.bench.run import run_bench, write_results
from planner.cli.main import main
from planner.engine.roofline import step_cost
from planner.model.catalog import load_catalog, load_gpus, parse_gpu_toml
from tests.paths import APP
from ui.figures.bench import decode_figure, prefill_figure


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def quick(catalog) -> BenchResults:
    return run_bench("cpu", "numpy", quick=True, catalog=catalog)


# --- the quick run ------------------------------------------------------------------------------


def test_quick_run_schema_round_trips(quick):
    text = results_json(quick)
    assert "NaN" not in text and "Infinity" not in text
    again = parse_results(text)
    assert again == quick
    assert quick.device.kind == "cpu" and quick.device.backend == "numpy" and quick.device.dtype == "fp32"
    assert quick.device.quick and quick.device.slug.endswith("-numpy-quick")
    assert [p.label for p in quick.profiles] == ["calibrated"]  # a CPU has no datasheet profile
    assert {s.phase for s in quick.summary} == {"prefill", "decode", "mixed", "verify"}
    # calibration rounds: one before the steps, one after the prefill steps, one after each context's
    contexts = {c.ctx for c in quick.cases if c.seqs}
    assert len(quick.rounds) == 2 + len(contexts)
    assert quick.measured_peak_flop_per_s == pytest.approx(float(np.median([r.peak_flop_per_s for r in quick.rounds])))
    assert quick.measured_bandwidth_bytes_per_s == pytest.approx(
        float(np.median([r.bandwidth_bytes_per_s for r in quick.rounds]))
    )
    assert quick.measured_compute_memory_overlap == pytest.approx(
        float(np.median([r.compute_memory_overlap for r in quick.rounds]))
    )
    assert {k.kernel for k in quick.bandwidth} == {"copy", "sum", "gemv"}  # gemv: the decoder's weight-streaming kernel
    assert {a.kind for a in quick.attention} == {"decode", "prefill"}
    assert 1 <= len(quick.overlap) <= 3 and all(o.rows >= 2 for o in quick.overlap)
    cal = quick.calibrated_profile
    assert cal.compute_memory_overlap == pytest.approx(quick.measured_compute_memory_overlap, abs=5e-4)
    assert cal.attention_bandwidth_frac == pytest.approx(max(quick.measured_attention_bandwidth_frac, 1e-3), abs=5e-4)
    assert quick.profiles[0].compute_memory_overlap == cal.compute_memory_overlap
    assert quick.device.linear_note.startswith("linear: ")
    copy = next(b for b in quick.bandwidth if b.kernel == "copy")
    assert copy.bytes_moved == 2 * copy.buffer_bytes  # a copy reads and writes every byte


def test_every_planned_shape_is_measured_once(quick):
    plan = make_plan("cpu", True, quick.device.llc_bytes, 4.0)
    measured = [(c.phase, c.seqs, c.q, c.ctx, c.n, c.past) for c in quick.cases]
    planned = [(c.phase, c.seqs, c.q, c.ctx, c.n, c.past) for c in plan.cases]
    assert sorted(measured) == sorted(planned) and len(set(measured)) == len(measured)
    assert quick.skipped == []
    verify = [c for c in quick.cases if c.phase == "verify"]
    assert verify and all(c.q == GAMMA + 1 for c in verify)


def test_predictions_are_for_the_measured_shapes(quick):
    """Rebuild the engine inputs from the file alone; step_cost of each case's shape must
    give exactly the stored prediction, and the error must be against that case's median."""
    gpu = parse_gpu_toml(profile_toml(quick.calibrated_profile), quick.device.slug)
    x = engine_inputs(gpu, quick.model, quick.device.bytes_per_element, mfu=1.0, mbu=1.0)
    assert float(x.weight_bytes_per_param) == 4.0 and float(x.kv_bytes_per_element) == 4.0
    for c in quick.cases:
        cost = step_cost(x.as_arrays(), seqs=c.seqs, q=c.q, ctx=c.ctx, n=c.n, past=c.past)
        p = c.predictions["calibrated"]
        assert p.flop == pytest.approx(float(cost.flop), rel=1e-12)
        assert p.bytes == pytest.approx(float(cost.bytes), rel=1e-12)
        assert p.time_s == pytest.approx(float(cost.time_s), rel=1e-12)
        assert p.error_frac == pytest.approx((p.time_s - c.measured_s) / c.measured_s)
        assert c.measured_s == pytest.approx(float(np.median(c.samples_s)))
    weights = quick.model.model_copy()
    assert quick.weight_bytes == pytest.approx(QUICK_SHAPE.params * 4.0)
    assert weights.tied_embeddings and weights.kv_heads < weights.heads  # GQA, tied LM head


def test_calibrated_profile_validates_and_loads(quick, tmp_path):
    text = profile_toml(quick.calibrated_profile)
    gpu = parse_gpu_toml(text, quick.device.slug)
    assert gpu.calibrated
    assert gpu.peak_for("bf16") == pytest.approx(quick.measured_peak_flop_per_s, rel=1e-4)
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(quick.measured_bandwidth_bytes_per_s, rel=1e-4)
    assert gpu.source.startswith("measured by python -m planner bench on ")
    (tmp_path / f"{quick.device.slug}.toml").write_text(text, encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert problems == [] and set(gpus) == {quick.device.slug}


def test_csv_has_one_row_per_case_and_profile(quick):
    text = results_csv(quick)
    lines = text.strip().splitlines()
    assert len(lines) == 1 + len(quick.cases) * len(quick.profiles)
    header = lines[0].split(",")
    for col in ("phase", "seqs", "q", "ctx", "n", "past", "measured_s", "predicted_s", "error_frac", "predicted_bound"):
        assert col in header
    assert "nan" not in text.lower() and "inf" not in text.lower()
    assert len(cases_frame(quick)) == len(lines) - 1


def test_charts_plot_each_context_and_the_prefill(quick):
    dec = decode_figure(quick)
    contexts = {c.ctx for c in quick.cases if c.phase == "decode"}
    assert len(dec.data) == 4 * len(contexts)  # measured, predicted, no-overlap bound, error per context
    pre = prefill_figure(quick)
    rows = sorted((c for c in quick.cases if c.phase == "prefill"), key=lambda c: c.n)
    assert list(pre.data[0].y) == pytest.approx([c.measured_s * 1e3 for c in rows])
    assert list(pre.data[1].y) == pytest.approx([c.predictions["calibrated"].time_s * 1e3 for c in rows])
    # issue 30: their log axes labelled as every chart's (1-2-5 × 10^k written whole), not decades alone
    for fig in (dec, pre):
        for axis in (fig.layout.xaxis, fig.layout.xaxis2, fig.layout.yaxis):
            assert axis.tickmode == "array" and len(axis.tickvals) >= 3 and all(t[:1].isdigit() for t in axis.ticktext)


def test_cli_quick_run_writes_the_four_files(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    code = main(["bench", "--device", "cpu", "--backend", "numpy", "--quick", "--out", str(tmp_path)], out=out, err=err)
    assert code == 0, err.getvalue()
    stems = {p.suffix for p in tmp_path.iterdir()}
    assert stems == {".json", ".csv", ".toml", ".npz"}  # the results, the calibrated profile, the kernel table
    assert "median |error|" in out.getvalue() and "kernels    gemm" in out.getvalue()
    parse_results(next(tmp_path.glob("*.json")).read_bytes())


# --- bad input ----------------------------------------------------------------------------------


def test_cli_rejects_an_unknown_device():
    err = io.StringIO()
    assert main(["bench", "--device", "tpu", "--quick"], out=io.StringIO(), err=err) == 2


def test_cli_rejects_numpy_on_cuda_and_an_unwritable_folder(tmp_path):
    err = io.StringIO()
    out_dir = tmp_path / "never"
    assert (
        main(
            ["bench", "--device", "cuda", "--backend", "numpy", "--quick", "--out", str(out_dir)],
            out=io.StringIO(),
            err=err,
        )
        == 2
    )
    assert err.getvalue().startswith("error: ") and "Traceback" not in err.getvalue()
    assert not out_dir.exists()  # a rejected command creates nothing
    blocker = tmp_path / "file"
    blocker.write_text("x")
    err = io.StringIO()
    code = main(["bench", "--backend", "numpy", "--quick", "--out", str(blocker / "sub")], out=io.StringIO(), err=err)
    assert code == 2 and "--out" in err.getvalue()


def _mutated(quick: BenchResults, edit) -> str:
    data = json.loads(results_json(quick))
    edit(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    "make_text, fragment",
    [
        (lambda q: "not json", "not valid JSON"),
        (lambda q: "[1, 2]", "JSON object"),
        (lambda q: b"\xff\xfe", "UTF-8"),
        (lambda q: "x" * (6 * 2**20), "at most"),
        (lambda q: results_json(q).replace('"schema_version": 2', '"schema_version": 9'), "schema_version"),
        (lambda q: results_json(q).replace('"schema_version": 2', '"schema_version": 1'), "older benchmark's format"),
        (lambda q: _mutated(q, lambda d: d["overlap"][0].update(overlap=1.5)), "overlap.0.overlap"),
        (lambda q: _mutated(q, lambda d: d["attention"][0].update(kind="train")), "attention.0.kind"),
        (lambda q: _mutated(q, lambda d: d["device"].pop("backend")), "device.backend"),
        (lambda q: _mutated(q, lambda d: d["cases"][0].update(tokens=999)), "tokens"),
        (lambda q: _mutated(q, lambda d: d["cases"][0].update(measured_s=-1.0)), "cases.0.measured_s"),
        (lambda q: _mutated(q, lambda d: d["cases"][0]["predictions"].clear()), "predictions"),
        (
            lambda q: _mutated(q, lambda d: d["cases"][0].update(phase="decode", n=5, seqs=0, tokens=5)),
            "not a decode step",
        ),
        (lambda q: _mutated(q, lambda d: d["calibrated_profile"].update(calibrated=False)), "calibrated"),
        (lambda q: _mutated(q, lambda d: d.update(extra_field=1)), "extra_field"),
        (lambda q: results_json(q).replace('"wall_s": ', '"wall_s": NaN, "x": '), "NaN"),
    ],
)
def test_validator_rejects_malformed_files(quick, make_text, fragment):
    with pytest.raises(ValueError) as exc:
        parse_results(make_text(quick))
    assert fragment in str(exc.value)


# --- pieces -------------------------------------------------------------------------------------


def test_decoder_steps_agree_with_one_prefill():
    """Chunked prefill, decode and γ+1 verification reproduce a full prefill's last logits:
    the KV cache, RoPE positions and causal masks are right."""
    be = NumpyBackend(threads=1)
    d = Decoder(QUICK_SHAPE, be, max_positions=64)
    ids = be.token_ids(12, QUICK_SHAPE.vocab)
    full = d.step(ids, 0, 1, 0, 12, 0, None, d.cache(1, 64))
    chunked = d.cache(1, 64)
    d.step(ids[:8], 0, 1, 0, 8, 0, None, chunked)
    assert np.allclose(d.step(ids[8:], 0, 1, 0, 4, 8, None, chunked), full, rtol=1e-4, atol=1e-3)
    running = d.cache(1, 64)
    d.step(ids[:11], 0, 1, 0, 11, 0, None, running)
    assert np.allclose(d.step(ids[11:], 1, 1, 11, 0, 0, running, None), full, rtol=1e-4, atol=1e-3)
    verify = d.cache(1, 64)
    d.step(ids[:8], 0, 1, 0, 8, 0, None, verify)
    assert np.allclose(d.step(ids[8:], 1, 4, 8, 0, 0, verify, None)[-1:], full, rtol=1e-4, atol=1e-3)
    # a mixed step: the running sequence's token plus the last 4 prompt tokens, each on its own cache
    mixed_run, mixed_prompt = d.cache(1, 64), d.cache(1, 64)
    d.step(ids[:11], 0, 1, 0, 11, 0, None, mixed_run)
    d.step(ids[:8], 0, 1, 0, 8, 0, None, mixed_prompt)
    both = d.step(np.concatenate([ids[11:], ids[8:]]), 1, 1, 11, 4, 8, mixed_run, mixed_prompt)
    assert np.allclose(both, np.concatenate([full, full]), rtol=1e-4, atol=1e-3)


def test_torch_backend_matches_numpy():
    torch = pytest.importorskip("torch")
    from planner.bench.backend import TorchBackend

    nb, tb = NumpyBackend(threads=1), TorchBackend("cpu", threads=1)
    dn, dt = Decoder(QUICK_SHAPE, nb, 64), Decoder(QUICK_SHAPE, tb, 64)
    dt.emb = torch.from_numpy(dn.emb)
    dt.lm_head = tb.weight(dt.emb.T)
    for lt, ln in zip(dt.layers, dn.layers, strict=True):
        for name in ("attn_norm", "mlp_norm"):
            setattr(lt, name, torch.from_numpy(getattr(ln, name)))
        for name in ("w_qkv", "w_o", "w_gate_up", "w_down"):  # numpy keeps (out × in); weight() takes (in × out)
            setattr(lt, name, tb.weight(torch.from_numpy(np.ascontiguousarray(getattr(ln, name).T))))
    ids = nb.token_ids(16, QUICK_SHAPE.vocab)
    tids = torch.from_numpy(ids)
    cn, ct = dn.cache(1, 64), dt.cache(1, 64)
    steps = [  # (ids slice, seqs, q, ctx, n, past): a prompt, a chunk after it, a verification pass, a decode
        (slice(0, 6), 0, 1, 0, 6, 0),
        (slice(6, 8), 0, 1, 0, 2, 6),
        (slice(8, 13), 1, 5, 8, 0, 0),
        (slice(13, 14), 1, 1, 13, 0, 0),
    ]
    for sl, seqs, q, ctx, n, past in steps:
        run_n, run_t = (cn, ct) if seqs else (None, None)
        want = dn.step(ids[sl], seqs, q, ctx, n, past, run_n, None if seqs else cn)
        got = dt.step(tids[sl], seqs, q, ctx, n, past, run_t, None if seqs else ct).numpy()
        assert np.allclose(got, want, rtol=1e-4, atol=1e-3), (seqs, q, ctx, n, past)


def test_numpy_linear_kernels_agree_and_tuning_picks_one(monkeypatch):
    monkeypatch.setattr(backend, "PANEL_BYTES", 3 * 64 * 4)  # 3 weight rows a panel: several panels, a ragged last one
    be = NumpyBackend(threads=1)
    w = be.weight(be.randn((64, 50)))  # (in × out) in, stored (out × in)
    assert w.shape == (50, 64) and w.flags.c_contiguous
    for rows in (1, 2, 5):
        x = be.randn((rows, 64))
        want = x.astype(np.float64) @ w.T.astype(np.float64)
        for name, kernel in LINEAR_KERNELS.items():
            assert np.allclose(kernel(x, w), want, rtol=1e-4, atol=1e-4), (name, rows)
    chosen = be.tune_linear([w, be.weight(be.randn((64, 64)))], [1, 2, 5, 16, 2])
    assert set(chosen) == {2, 5} and set(chosen.values()) <= set(LINEAR_KERNELS)
    assert f"2: {chosen[2]}" in be.linear_note
    x = be.randn((5, 64))
    assert np.allclose(be.mm(x, w), x @ w.T, rtol=1e-4, atol=1e-4)


def test_threaded_attention_matches_one_thread():
    """Decode and verification attention split over threads gives the single-thread result."""
    one, two = NumpyBackend(threads=1), NumpyBackend(threads=2)
    if two._pool is None:
        pytest.skip("no OpenBLAS thread setter: attention is not split")
    rng = np.random.default_rng(1)
    for seqs, lq, past in ((5, 1, 8), (3, 3, 8)):
        q = rng.standard_normal((seqs, 4, lq, 32), dtype=np.float32)
        k, v = (rng.standard_normal((seqs, 2, past + lq, 32), dtype=np.float32) for _ in range(2))
        assert np.allclose(two.attend(q, k, v, past), one.attend(q, k, v, past), rtol=1e-5, atol=1e-6)


def test_ridge_fit_recovers_overlapped_and_serial_steps():
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    overlapped = [max(0.02, 0.001 * b) for b in batches]  # weights take 20 ms; 1 ms per sequence
    serial = [0.02 + 0.001 * b for b in batches]
    assert ridge_batch_fit(batches, overlapped) == pytest.approx(20.0)
    assert ridge_batch_fit(batches, serial) == pytest.approx(21.0)  # t(1) includes one sequence
    assert ridge_batch_fit(batches[:2], overlapped[:2]) is None
    assert ridge_batch_fit([1, 2, 3, 4], [1.0, 1.0, 1.0, 1.0]) is None


def test_predicted_ridge_is_where_compute_meets_memory(quick):
    # fixed peaks (50 GFLOP/s, 500 GB/s), not the quick run's, so the ridge is finite; the ridge
    # is where the whole step (matmuls and attention) turns compute-bound: compute_s = memory_s
    fixed = quick.calibrated_profile.model_copy(update=dict(dense_tflops_bf16=0.05, memory_bandwidth_tb_per_s=0.5))
    gpu = fixed.to_gpu(quick.device.slug)
    x = engine_inputs(gpu, quick.model, 4.0, 1.0, 1.0).as_arrays()
    b = predicted_ridge_batch(x, 512)
    assert b is not None
    cost = step_cost(x, seqs=b, ctx=512)
    assert float(cost.compute_s) == pytest.approx(float(cost.memory_s), rel=1e-6)
    frame = ridge_frame(quick)
    assert not frame.isna().any().any()


@pytest.mark.parametrize("t, o", [(1.0, 1.0), (1.5, 0.5), (2.0, 0.0), (3.0, -1.0), (9.0, -1.0), (0.5, 1.0)])
def test_overlap_is_read_off_the_kernel_time(t, o):
    # c = m = 1 s: the roofline says 1 s, back to back 2 s; o from t, clipped to [−1, 1]
    from planner.bench.micro import OverlapSample

    assert OverlapSample(rows=8, flop=10.0, bytes=20.0, median_s=t).overlap(10.0, 20.0) == pytest.approx(o)


def test_ridge_rows_balance_arithmetic_and_streaming():
    from planner.bench.micro import ridge_rows

    # 500 GFLOP/s, 50 GB/s, fp32: 2·r FLOP per 4 bytes → r = 500·4 / (2·50) = 20
    assert ridge_rows(500e9, 50e9, 4.0) == 20
    assert ridge_rows(1e9, 1e12, 2.0) == 2  # never below two rows


def test_predict_cases_is_one_vectorised_call(quick):
    gpu = quick.calibrated_profile.to_gpu(quick.device.slug)
    x = engine_inputs(gpu, quick.model, 4.0, 1.0, 1.0)
    plan = make_plan("cpu", True, None, 4.0)
    cost = predict_cases(x, plan.cases)
    assert cost.time_s.shape == (len(plan.cases),) and np.all(cost.time_s > 0)


def test_calibration_scales_the_datasheet_to_the_measurement(quick, catalog):
    h100 = catalog.gpus["h100-sxm"]
    assert scenario_calibration(quick, h100) is None  # measured on a CPU
    measured = quick.model_copy(
        update=dict(
            device=quick.device.model_copy(update=dict(profile_key="h100-sxm")),
            measured_peak_flop_per_s=0.6 * h100.peak_for("bf16"),
            measured_bandwidth_bytes_per_s=1.2 * h100.memory_bandwidth_bytes_per_s,
        )
    )
    cal = scenario_calibration(measured, h100)
    assert cal.mfu == pytest.approx(0.6) and cal.mbu == 1.0
    assert any("MBU" in n and "capped" in n for n in cal.notes)


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA A100 80GB PCIe", None),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("AMD Instinct MI300X", "mi300x"),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_gpu_names_match_their_datasheet_profile(catalog, name, key):
    assert host.match_profile_key(name, frozenset(catalog.gpus)) == key


def test_host_facts_parse():
    assert host.parse_size_bytes("32768K") == 32 * 2**20
    assert host.parse_size_bytes("32 MiB") == 32 * 2**20
    assert host.parse_size_bytes("lots") is None
    assert host.slug("AMD EPYC 9654 (2 cores)") == "amd-epyc-9654-2-cores"
    llc = host.llc_bytes()
    assert llc is None or llc > 0


def test_write_results_names_files_after_the_device(quick, tmp_path):
    paths = write_results(quick, tmp_path)
    assert [p.name for p in paths] == [f"{quick.device.slug}.{ext}" for ext in ("json", "csv", "toml", "kernels.npz")]


# --- the dashboard tab --------------------------------------------------------------------------


def test_crosscheck_tab_applies_the_calibration(quick, catalog, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    import ui.tabs.crosscheck as tab

    h100 = catalog.gpus["h100-sxm"]
    on_h100 = quick.model_copy(
        update=dict(
            device=quick.device.model_copy(update=dict(profile_key="h100-sxm", slug="h100-run")),
            measured_peak_flop_per_s=0.55 * h100.peak_for("bf16"),
            measured_bandwidth_bytes_per_s=0.65 * h100.memory_bandwidth_bytes_per_s,
        )
    )
    (tmp_path / "h100-run.json").write_text(results_json(on_h100), encoding="utf-8")
    (tmp_path / "zz-broken.json").write_text('{"schema_version": 1}', encoding="utf-8")
    monkeypatch.setattr(tab, "RESULTS_DIR", tmp_path)

    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["_tab"] = "Cross-check"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.get("plotly_chart")) == 2
    labels = {m.label: m.value for m in at.metric}
    assert labels["Compute–memory overlap"] == f"{on_h100.measured_compute_memory_overlap:+.2f}"
    assert labels["Calibration rounds"] == str(len(on_h100.rounds))
    assert any("The link carries MFU and MBU only" in c.value for c in at.caption)
    kernels = next(d.value for d in at.dataframe if "table" in d.value.columns)  # the kernel-table panel
    assert list(kernels["table"]) == ["gemm", "context_attention", "generation_attention"]
    assert any("first table a scenario on this GPU reads" in c.value.replace("\\", "") for c in at.caption)
    at.button(key="xc_apply").click().run()
    assert not at.exception
    assert at.query_params["mfu"] == "0.55" and at.query_params["mbu"] == "0.65"

    at.selectbox(key="xc_file").select("zz-broken.json").run()
    assert not at.exception
    assert any("not a benchmark results file" in e.value for e in at.error)
    assert math.isfinite(on_h100.wall_s)


def test_committed_results_parse_and_their_profiles_load():
    """Every results file shipped under benchmarks/results/ passes the gate the dashboard uses,
    and its TOML is the calibrated profile in the JSON."""
    from ui.tabs.crosscheck import RESULTS_DIR

    files = sorted(RESULTS_DIR.glob("*.json"))
    assert files, "no committed benchmark results"
    for path in files:
        r = parse_results(path.read_bytes())
        assert path.stem == r.device.slug and not r.device.quick
        toml = path.with_suffix(".toml").read_text(encoding="utf-8")
        gpu = parse_gpu_toml(toml, r.device.slug)
        assert gpu.compute_memory_overlap == r.calibrated_profile.compute_memory_overlap
        assert toml == profile_toml(r.calibrated_profile)
        assert path.with_suffix(".csv").read_text(encoding="utf-8") == results_csv(r)
        # the current engine, given the file's calibrated profile, reproduces every stored prediction
        x = engine_inputs(gpu, r.model, r.device.bytes_per_element, mfu=1.0, mbu=1.0).as_arrays()
        for c in r.cases:
            cost = step_cost(x, seqs=c.seqs, q=c.q, ctx=c.ctx, n=c.n, past=c.past)
            assert c.predictions["calibrated"].time_s == pytest.approx(float(cost.time_s), rel=1e-9), (path.name, c)


def test_a_quick_run_stays_out_of_the_committed_results(tmp_path, monkeypatch):
    """Without --out a quick run writes to its checkout's benchmarks/results/quick/ (here a stand-in checkout),
    wherever the command runs: nothing in the working folder, nothing in the committed folder's top level."""
    from planner.bench import cli

    results = tmp_path / "checkout" / "benchmarks" / "results"
    results.mkdir(parents=True)
    monkeypatch.setattr(cli, "checkout_results_dir", lambda: results)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    err = io.StringIO()
    assert main(["bench", "--backend", "numpy", "--quick"], out=io.StringIO(), err=err) == 0, err.getvalue()
    assert sorted(p.suffix for p in (results / "quick").iterdir()) == [".csv", ".json", ".npz", ".toml"]
    assert not list(results.glob("*.toml")) and list(elsewhere.iterdir()) == []
    from planner.model.catalog import load_measured

    assert load_measured(results, set()) == ({}, [])


def test_deeply_nested_results_json_is_reported_not_raised():
    with pytest.raises(ValueError, match="nested too deeply"):
        parse_results("[" * 100_000)
