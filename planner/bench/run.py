"""Run the benchmark end to end and build the validated ``BenchResults``.

Order: device facts → the decoder, its linear kernels tuned
(``backend.tune_linear``) → a calibration round (measurements 1–2: matmul
FLOP/s, bandwidth, overlap, attention; ``micro.CalibrationRound``) → the prefill
steps → a round → per KV-cache context, its steps → a round → the engine's
prediction for each step under each profile → errors, medians, ridge.

Calibration rounds are interleaved with the steps because a shared host's memory
bandwidth drifts by tens of per cent within minutes (docs/benchmark.md); each
quantity of the calibrated profile is the **median over the rounds**, so it
describes the machine over the whole run, not one moment of it.

Calibrated profile: peak = the best matmul size's FLOP/s, bandwidth = the rate
the decoder's own linear kernel streams a weight matrix at one token row
(``micro.CALIBRATION_KERNEL``), the compute–memory overlap of that kernel near
its ridge, and the attention kernel's share of the peak and of the bandwidth;
predictions with MFU = MBU = 1.  Nothing in it is taken from the scored steps.
Datasheet profile (only when the device matches a shipped one): its figures with
the planner's default MFU/MBU (``Scenario()``) and the plain roofline, i.e. what
the dashboard would predict.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from statistics import median
from typing import Literal

from planner import outfile
from planner.bench import host
from planner.bench.assemble import Measurement, assemble_results, profiles_used
from planner.bench.backend import make_backend
from planner.bench.budget import DEFAULT_BUDGET_S, QUICK_BUDGET_S, TABLE_SHARE, Deadline, case_cost_s, size_to_budget
from planner.bench.decoder import Decoder, KVCache
from planner.bench.kernels import (
    KERNEL_TABLE_SUFFIX,
    Sweep,
    kernel_estimate,
    kernel_grid,
    kernel_table_result,
    measure_kernels,
    write_kernel_table,
)
from planner.bench.micro import (
    AttentionSample,
    BandwidthSample,
    CalibrationRound,
    MatmulSample,
    OverlapSample,
    measure_attention,
    measure_bandwidth,
    measure_matmul,
    measure_overlap,
    ridge_rows,
)
from planner.bench.plan import Case, Plan, make_plan
from planner.bench.predict import engine_inputs, predict_cases
from planner.bench.results import (
    BenchResults,
    profile_toml,
    results_csv,
    results_json,
)
from planner.bench.threads import tune_malloc
from planner.model.catalog import Catalog
from planner.model.specs import GPU, GpuProfileFile, ModelSpec
from planner.units import GB, GIGA, MEGA, MS_PER_S, TERA, US_PER_S, GiB, MiB

#: share of the memory free at the start that weights + KV caches may take: a host's RAM is
#: shared with everything else running; a GPU's memory is the benchmark's own
KV_MEMORY_SHARE = {"cpu": 0.5, "cuda": 0.8}

Log = Callable[[str], None]

#: a case whose samples spread (max − min) / median more than this is timed again, at most
#: MAX_ATTEMPTS times in all, and the tightest attempt kept (another process was running)
MAX_SPREAD = 0.25
MAX_ATTEMPTS = 3


def spread(samples: list[float], med: float) -> float:
    return (max(samples) - min(samples)) / med


@dataclass(frozen=True)
class Timing:
    median_s: float
    samples_s: list[float]
    how: str


@dataclass(frozen=True)
class Device:
    kind: str
    name: str
    llc_bytes: float | None
    memory_bytes: float
    free_bytes: float
    profile_key: str | None


def _device(be, kind: str, catalog: Catalog) -> Device:
    if kind == "cuda":
        f = be.cuda_facts()
        name = str(f["name"])
        return Device(
            kind,
            name,
            float(f["l2_bytes"]) or None,
            float(f["memory_bytes"]),
            float(f["free_bytes"]),
            host.match_profile_key(name, frozenset(catalog.gpus)),
        )
    free = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))
    name = f"{host.cpu_model_name()} ({host.usable_cores()} cores)"
    return Device(kind, name, host.llc_bytes(), host.host_memory_bytes(), free, None)


def kv_cache_bytes(plan: Plan, seqs: int, tokens: int, bytes_per_element: float) -> float:
    s = plan.shape
    return 2.0 * s.layers * seqs * s.kv_heads * tokens * s.head_dim * bytes_per_element


def essential_cases(cases: tuple[Case, ...], cost_s: Callable[[Case], float]) -> set[Case]:
    """The cheapest case of each phase: timed even past the deadline, so every phase is measured."""
    out: dict[str, Case] = {}
    for c in sorted(cases, key=cost_s):
        out.setdefault(c.phase, c)
    return set(out.values())


def measure_cases(
    decoder: Decoder,
    plan: Plan,
    budget_bytes: float,
    log: Log,
    between: Callable[[], None] = lambda: None,
    cost_s: Callable[[Case], float] = lambda _c: 0.0,
    deadline: Deadline | None = None,
) -> tuple[dict[Case, Timing], list[str]]:
    """Time every case that fits ``budget_bytes`` of KV cache; the others are listed as skipped.
    ``between`` runs after the prefill steps and after each context's steps (a calibration round).
    A case whose timing (``cost_s``, estimated) would end past ``deadline`` is skipped and listed, except
    the cheapest of each phase (``essential_cases``: every phase keeps a measurement)."""
    be = decoder.be
    bpe = be.bytes_per_element
    done: dict[Case, Timing] = {}
    skipped: list[str] = []
    deadline = deadline or Deadline()
    essential = essential_cases(plan.cases, cost_s)

    def run(case: Case, running: KVCache | None, prompt: KVCache | None) -> None:
        if case not in essential and not deadline.allows(cost_s(case)):
            skipped.append(
                f"{case.phase} seqs={case.seqs} q={case.q} ctx={case.ctx} n={case.n} past={case.past}: "
                f"the time budget ran out (est. {cost_s(case):.1f} s, {max(deadline.left_s(), 0):.1f} s left)"
            )
            return
        ids = be.token_ids(case.tokens, plan.shape.vocab)
        fn, how = be.prepare(lambda: decoder.step(ids, case.seqs, case.q, case.ctx, case.n, case.past, running, prompt))
        tries = []
        for _ in range(MAX_ATTEMPTS):  # samples that disagree mean something else ran: measure again
            med, samples = be.time(fn, plan.warmup, plan.repeats, plan.target_s)
            tries.append((spread(samples, med), med, samples))
            if tries[-1][0] <= MAX_SPREAD:
                break
        sp, med, samples = min(tries, key=lambda t: t[0])
        note = f"; {len(tries)} attempts, samples spread {100 * sp:.0f} %" if len(tries) > 1 else ""
        done[case] = Timing(med, samples, how + note)
        log(
            f"  {case.phase:<7} seqs={case.seqs:<4} q={case.q} ctx={case.ctx:<5} n={case.n:<5} past={case.past:<5} "
            f"{med * MS_PER_S:9.2f} ms"
        )
        del fn
        be.release()

    prompt_tokens = max((c.past + c.n for c in plan.cases if c.n), default=0)
    prompt = decoder.cache(1, prompt_tokens) if prompt_tokens else None
    for case in (c for c in plan.cases if c.phase == "prefill"):
        run(case, None, prompt)
    between()

    running_cases = [c for c in plan.cases if c.seqs]
    for ctx in sorted({c.ctx for c in running_cases}):
        at_ctx = [c for c in running_cases if c.ctx == ctx]
        length = ctx + max(c.q for c in at_ctx)
        fits = [c for c in at_ctx if kv_cache_bytes(plan, c.seqs, length, bpe) <= budget_bytes]
        for c in at_ctx:
            if c not in fits:
                need = kv_cache_bytes(plan, c.seqs, length, bpe)
                skipped.append(
                    f"{c.phase} seqs={c.seqs} ctx={ctx}: KV cache {need / GiB:.1f} GiB > "
                    f"budget {budget_bytes / GiB:.1f} GiB"
                )
        if not fits:
            continue
        cache = decoder.cache(max(c.seqs for c in fits), length)
        for case in fits:
            run(case, cache, prompt)
        del cache
        be.release()
        between()
    return done, skipped


@dataclass(frozen=True)
class Calibration:
    """Measurements 1–2 over all rounds: each row and each derived quantity the median of its rounds."""

    rounds: list[CalibrationRound]

    def _median_rows(self, attr: str) -> list:
        """Row i of every round's ``attr`` list, with the median of their times."""
        per_round = [getattr(r, attr) for r in self.rounds]
        return [replace(same[0], median_s=median(x.median_s for x in same)) for same in zip(*per_round, strict=True)]

    @property
    def matmul(self) -> list[MatmulSample]:
        return self._median_rows("matmul")

    @property
    def bandwidth(self) -> list[BandwidthSample]:
        return self._median_rows("bandwidth")

    @property
    def overlap(self) -> list[OverlapSample]:
        return self._median_rows("overlap")

    @property
    def attention(self) -> list[AttentionSample]:
        return self._median_rows("attention")

    def _median(self, attr: str) -> float:
        return median(getattr(r, attr) for r in self.rounds)

    @property
    def peak_flop_per_s(self) -> float:
        return self._median("peak_flop_per_s")

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self._median("bandwidth_bytes_per_s")

    @property
    def compute_memory_overlap(self) -> float:
        return self._median("compute_memory_overlap")

    @property
    def attention_compute_frac(self) -> float:
        return self._median("attention_compute_frac")

    @property
    def attention_bandwidth_frac(self) -> float:
        return self._median("attention_bandwidth_frac")


#: smallest attention fraction written to a profile (the schema wants > 0)
MIN_FRAC = 0.001


def _six_digits(v: float) -> float:
    """``v`` to 6 significant digits (a CPU's few GB/s in TB/s needs more than 6 decimals)."""
    return float(f"{v:.6g}")


def calibrated_profile(
    dev: Device,
    be,
    plan: Plan,
    cal: Calibration,
    datasheet: GPU | None,
    host_link_bytes_per_s: float | None,
    when: str,
) -> GpuProfileFile:
    """The measured peaks in ``hardware_profiles/`` form (see module doc)."""
    bandwidth = cal.bandwidth
    bw = cal.bandwidth_bytes_per_s
    ov = ", ".join(str(o.rows) for o in cal.overlap)
    notes = [
        f"{be.name} {be.dtype_name} on {dev.kind}; {be.thread_note}.",
        f"Every figure is the median over {len(cal.rounds)} calibration rounds interleaved with the benchmark's steps.",
        f"dense_tflops_bf16 holds the best {be.dtype_name} matmul rate measured "
        f"(sizes {', '.join(map(str, plan.matmul_sizes))}): "
        "the engine reads the bf16 field for bf16 weights.",
        f"Bandwidth: gemv, the decoder's linear kernel at one token row, over a "
        f"{plan.bandwidth_buffer_bytes / MiB:.0f} MiB weight ({be.linear_note}); "
        + ", ".join(f"{b.kernel} {b.bytes_per_s / GB:.1f} GB/s" for b in bandwidth)
        + ".",
        f"compute_memory_overlap: the same kernel and weight at {ov} token rows (around its ridge).",
        "attention_compute_frac / attention_bandwidth_frac: the decoder's attention kernel on one causal prompt "
        "(FLOP/s ÷ peak) and on one decode token per sequence over a KV cache (bytes/s ÷ bandwidth).",
    ]
    extra: dict = {}
    if datasheet is not None:
        link = datasheet.interconnect_bytes_per_s / GB
        extra = dict(
            collective_latency_us=datasheet.collective_latency_s * US_PER_S,
            price_usd_per_gpu_hour=datasheet.price_per_gpu_hour_usd,
            price_source=f"from the datasheet profile {datasheet.key}",
        )
        notes.append(
            f"Interconnect, collective latency and price copied from the datasheet profile {datasheet.key} "
            "(not measured)."
        )
    elif host_link_bytes_per_s is not None:
        link = host_link_bytes_per_s / GB
        extra = dict(price_usd_per_gpu_hour=0.0, price_source="not priced: a measured machine")
        notes.append("No datasheet profile matched: interconnect = measured pinned host-to-device copy rate.")
    else:
        link = bw / GB
        extra = dict(price_usd_per_gpu_hour=0.0, price_source="not priced: a measured machine")
        notes.append(
            "CPU: there is one device, so tp = 1; interconnect = the measured memory bandwidth "
            "(shared-memory collectives between processes on one host go through DRAM)."
        )
    return GpuProfileFile(
        name=f"{dev.name} (measured, {be.name} {be.dtype_name})"[:120],
        vendor=(dev.name.split() or ["unknown"])[0][:40],
        memory_capacity_gib=round(dev.memory_bytes / GiB, 2),
        memory_bandwidth_tb_per_s=_six_digits(bw / TERA),
        dense_tflops_bf16=_six_digits(cal.peak_flop_per_s / TERA),
        interconnect_gb_per_s=round(link, 3),
        source=f"measured by python -m planner bench on {host.host_name()} {when}",
        notes=" ".join(notes),
        calibrated=True,
        compute_memory_overlap=round(cal.compute_memory_overlap, 3),
        attention_compute_frac=max(round(cal.attention_compute_frac, 3), MIN_FRAC),
        attention_bandwidth_frac=max(round(cal.attention_bandwidth_frac, 3), MIN_FRAC),
        **extra,
    )


def calibration_round(be, plan: Plan, log: Log, rows: tuple[int, ...] | None = None) -> CalibrationRound:
    """Measurements 1–2 once (``micro``): matmul sizes, bandwidth kernels, the linear kernel
    around its ridge (overlap; ``rows`` token rows, by default half, once and twice the ridge
    this round measures — later rounds reuse the first round's rows), the attention kernel at
    a decode and a prefill shape."""
    t = plan.micro_target_s
    mm = measure_matmul(be, plan.matmul_sizes, plan.warmup, plan.repeats, t)
    bw = measure_bandwidth(be, plan.bandwidth_buffer_bytes, plan.warmup, plan.repeats, t)
    if rows is None:
        so_far = CalibrationRound(mm, bw, [], [])
        r = ridge_rows(so_far.peak_flop_per_s, so_far.bandwidth_bytes_per_s, be.bytes_per_element)
        rows = tuple(sorted({max(2, r // 2), r, 2 * r}))
    ov = measure_overlap(be, plan.bandwidth_buffer_bytes, list(rows), plan.warmup, plan.repeats, t)
    s = plan.shape
    att = measure_attention(
        be,
        s.heads,
        s.kv_heads,
        s.head_dim,
        plan.bandwidth_buffer_bytes,
        plan.attention_keys,
        plan.attention_prompt_tokens,
        plan.warmup,
        plan.repeats,
        t,
    )
    rnd = CalibrationRound(mm, bw, ov, att)
    log(
        f"calibration round: peak {rnd.peak_flop_per_s / GIGA:.1f} GFLOP/s, "
        f"bandwidth {rnd.bandwidth_bytes_per_s / GB:.1f} GB/s "
        f"(copy {bw[0].bytes_per_s / GB:.1f}, sum {bw[1].bytes_per_s / GB:.1f}), "
        f"overlap {rnd.compute_memory_overlap:+.2f} "
        f"at rows {', '.join(map(str, rows))}, attention {rnd.attention_compute_frac:.2f} of peak / "
        f"{rnd.attention_bandwidth_frac:.2f} of bandwidth"
    )
    return rnd


def _step_estimates(
    dev: Device, be, plan: Plan, first: CalibrationRound, model: ModelSpec, link: float | None, when: str
) -> dict[Case, float]:
    """Each planned case's seconds per call, predicted by the engine with the first round's profile."""
    probe = calibrated_profile(dev, be, plan, Calibration([first]), None, link, when).to_gpu("probe")
    cost = predict_cases(engine_inputs(probe, model, be.bytes_per_element, 1.0, 1.0), plan.cases)
    return {c: float(t) for c, t in zip(plan.cases, cost.time_s, strict=True)}


def _round_points(points: int, rounds: int) -> set[int]:
    """Which of the ``points`` moments between the steps get one of the ``rounds`` − 1 later rounds."""
    if rounds <= 1:
        return set()
    return {round(i * (points - 1) / max(rounds - 2, 1)) for i in range(rounds - 1)} if rounds > 2 else {points - 1}


def _kernel_sweep(
    decoder: Decoder,
    dev: Device,
    be,
    quick: bool,
    first: CalibrationRound,
    memory_bytes: float,
    deadline_at: float,
    log: Log,
) -> Sweep:
    """The table sweep (``kernels``), sized by the first round's rates and stopped at ``deadline_at``."""
    grid = kernel_grid(dev.kind, quick, decoder.shape, be.device_count())
    estimate = kernel_estimate(
        first.peak_flop_per_s,
        first.bandwidth_bytes_per_s,
        first.attention_compute_frac,
        first.attention_bandwidth_frac,
        be.bytes_per_element,
    )
    cache = dev.llc_bytes or 32 * MiB
    sw = Sweep(be, grid, Deadline(deadline_at), memory_bytes, cache, estimate, log)
    sw.tables = measure_kernels(sw, decoder)
    log(f"kernel table: {sw.measured} of {sw.planned} cells measured")
    return sw


def run_bench(
    device: Literal["cpu", "cuda"],
    backend: str,
    quick: bool,
    catalog: Catalog,
    log: Log = lambda _m: None,
    budget_s: float | None = None,
) -> BenchResults:
    """Measure this machine (module doc), sized to ``budget_s`` seconds (``budget``'s defaults)."""
    t_start = time.perf_counter()
    budget_s = budget_s or (QUICK_BUDGET_S if quick else DEFAULT_BUDGET_S[device])
    load_before = os.getloadavg()[0]
    when = datetime.now(UTC).isoformat(timespec="seconds")
    malloc_note = tune_malloc()
    be = make_backend(backend, device, host.usable_cores())
    dev = _device(be, device, catalog)
    plan = make_plan(device, quick, dev.llc_bytes, be.bytes_per_element)
    log(
        f"{dev.name}: {be.name} {be.dtype_name}, {be.thread_note}; {malloc_note}; LLC {dev.llc_bytes or 0:.0f} B; "
        f"1-min load average {load_before:.2f}; budget {budget_s:.0f} s"
    )
    link = None
    if device == "cuda" and dev.profile_key is None:
        link = be.host_link_bytes_per_s(min(plan.bandwidth_buffer_bytes, 1 * GiB), plan.warmup, plan.repeats)
    model = plan.shape.model_spec(context_window_tokens=plan.max_positions)
    weight_bytes = plan.shape.params * be.bytes_per_element
    log(f"decoder: {plan.shape.params / MEGA:.1f} M parameters, {weight_bytes / MiB:.0f} MiB of weights")
    decoder = Decoder(plan.shape, be, plan.max_positions)
    be.tune_linear(decoder.weights(), [c.tokens for c in plan.cases])
    log(be.linear_note)
    t_round = time.perf_counter()
    rounds = [calibration_round(be, plan, log)]
    round_s = time.perf_counter() - t_round
    step_s = _step_estimates(dev, be, plan, rounds[0], model, link, when)
    first_target = plan.micro_target_s
    sizing = size_to_budget(plan, step_s, time.perf_counter() - t_start, round_s, budget_s)
    plan = sizing.plan
    for note in sizing.notes:
        log(f"budget: {note}")
    rows = tuple(o.rows for o in rounds[0].overlap)
    points = _round_points(1 + len({c.ctx for c in plan.cases if c.seqs}), sizing.rounds)
    seen = [0]
    steps_deadline = Deadline(t_start + budget_s * (1 - TABLE_SHARE))

    def between() -> None:
        """A calibration round at the chosen points, while the budget has room for one."""
        if seen[0] in points and steps_deadline.allows(round_s * plan.micro_target_s / max(first_target, 1e-9)):
            rounds.append(calibration_round(be, plan, log, rows))
        seen[0] += 1

    memory = KV_MEMORY_SHARE[device] * dev.free_bytes - weight_bytes
    measured, skipped = measure_cases(
        decoder,
        plan,
        memory,
        log,
        between,
        lambda c: case_cost_s(step_s[c], plan),
        steps_deadline,
    )
    sweep = _kernel_sweep(decoder, dev, be, quick, rounds[0], memory, t_start + budget_s, log)
    del decoder
    be.release()
    cal = Calibration(rounds)
    log(
        f"calibration (median of {len(rounds)} rounds): peak {cal.peak_flop_per_s / GIGA:.1f} GFLOP/s, bandwidth "
        f"{cal.bandwidth_bytes_per_s / GB:.1f} GB/s, overlap {cal.compute_memory_overlap:+.2f}, attention "
        f"{cal.attention_compute_frac:.2f} of peak / {cal.attention_bandwidth_frac:.2f} of bandwidth"
    )

    slug = results_slug(dev.name, be.name, quick)
    datasheet = catalog.gpus.get(dev.profile_key) if dev.profile_key else None
    cal_file = calibrated_profile(dev, be, plan, cal, datasheet, link, when)
    cal_gpu = cal_file.to_gpu(slug)
    profiles, gpus = profiles_used(cal_file, cal_gpu, slug, datasheet)
    return assemble_results(
        Measurement(
            device=device,
            dev=dev,
            be=be,
            plan=plan,
            model=model,
            weight_bytes=weight_bytes,
            measured=measured,
            skipped=list(sizing.dropped) + skipped + sweep.skipped,
            cal=cal,
            cal_file=cal_file,
            profiles=profiles,
            gpus=gpus,
            slug=slug,
            when=when,
            quick=quick,
            load_before=load_before,
            malloc_note=malloc_note,
            t_start=t_start,
            budget_s=budget_s,
            budget_notes=list(sizing.notes),
            kernel_table=kernel_table_result(sweep, dev.profile_key or slug, dev.name, be, when),
        )
    )


#: The files one run writes: ``<slug>.json``, ``.csv``, ``.toml`` (the calibrated profile) and ``.kernels.npz``
#: (its kernel table, when it measured one).
RESULT_SUFFIXES = ("json", "csv", "toml", KERNEL_TABLE_SUFFIX)


def results_slug(device_name: str, backend_name: str, quick: bool) -> str:
    """The file stem of a run's results and its calibrated profile's key."""
    return host.slug(device_name, 40) + f"-{backend_name}" + ("-quick" if quick else "")


def planned_slug(device: Literal["cpu", "cuda"], backend: str, quick: bool, catalog: Catalog) -> str:
    """The stem a run on this machine will write (``results_slug``), known before it measures anything."""
    be = make_backend(backend, device, host.usable_cores())
    try:
        return results_slug(_device(be, device, catalog).name, be.name, quick)
    finally:
        be.release()


def write_results(r: BenchResults, out_dir: Path, force: bool = False) -> list[Path]:
    """``RESULT_SUFFIXES`` files in the existing folder ``out_dir`` (``planner.outfile``: never over a file
    without ``force``, never through a link out of the folder); the kernel table (``kernels.write_kernel_table``)
    when the run measured one."""
    texts = dict(
        zip(RESULT_SUFFIXES[:3], (results_json(r), results_csv(r), profile_toml(r.calibrated_profile)), strict=True)
    )
    paths = []
    for ext, text in texts.items():
        path = out_dir / f"{r.device.slug}.{ext}"
        outfile.write_text(str(path), text, force)
        paths.append(path)
    if r.kernel_table is not None:
        path = out_dir / f"{r.device.slug}.{KERNEL_TABLE_SUFFIX}"
        write_kernel_table(path, r.kernel_table, r.device.linear_note, force)
        paths.append(path)
    return paths


def ridge_text(r: BenchResults) -> list[str]:
    lines = []
    for row in r.ridge:
        pred = ", ".join(f"{k} {_fmt_batch(v)}" for k, v in row.predicted_batch.items())
        eng = ", ".join(f"{k} {_fmt_batch(v)}" for k, v in row.engine_batch.items())
        lines.append(
            f"ctx {row.ctx}: measured {_fmt_batch(row.measured_batch)}; same fit on predicted {pred}; ridge_batch {eng}"
        )
    return lines


def _fmt_batch(v: float | None) -> str:
    return "none" if v is None or not math.isfinite(v) else f"{v:.1f}"
