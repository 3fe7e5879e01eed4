"""Regenerate planner/data/kernel_tables/ from NVIDIA AIConfigurator's measured kernel tables.

Reads the parquet tables of the ``aiconfigurator-core`` 0.12.0 wheel (Apache-2.0; its data only — no
AIConfigurator code is imported or copied) and writes kvplan kernel tables (docs/kernel_tables.md):
one file per kvplan GPU × engine at the engine's current query slot, every table the slot serves
(AIConfigurator's backward fill: a table the slot's own directory lacks comes from the newest older
version that has it, named in that table's ``source``), plus the GPU's nccl-tests table.

    pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/whl     (81.7 MB)
    .venv/bin/pip install pyarrow                                       (this script's only extra)
    .venv/bin/python tools/distill_kernel_tables.py /tmp/whl/aiconfigurator_core-0.12.0-*.whl
    .venv/bin/python tools/distill_kernel_tables.py --only gb300 --only rtx_pro_6000_server /tmp/whl/…whl

(``--only SYSTEM`` writes that AIConfigurator system's files and leaves every other file untouched: each file
carries its ``created_utc``, so a full run rewrites every file even where its tables are unchanged.)

What is kept, and why (all shapes a custom model can have, not only the presets'): the dense GEMM grid
(every n × k × tokens measured), prefill and decode attention (every head count, KV-head count, head
dim, window and dtype measured), the MLA module and kernel tables, the MoE expert layer (every measured
model shape, tp/ep split and routing distribution), the engine's all-reduce, nccl-tests and the MoE
dispatch/combine tables, and SGLang's wide-EP (DeepEP) expert kernel.  Left out: vision-encoder attention,
linear-attention/SSM mixers (kvplan's
hybrid models run on the roofline), model-specific fused modules (DeepSeek-V3.2/V4, MiniMax, GLM-5),
the quantise-op tables (the GEMM rows already include activation quantisation), and the Intel Arc Pro B60
(``b60``; kvplan has no profile for it).  GB300 (``gb300``) and the RTX PRO 6000 Blackwell Server Edition
(``rtx_pro_6000_server``) were added later (issue 32) with ``--only``: the other files are those of the first
run.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import time
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.kernels.format import (  # noqa: E402 — after the path set-up above
    TABLE_SCHEMAS,
    TEXT_KEYS,
    KernelTableMeta,
    TableMeta,
    table_file_name,
    write_table,
)
from planner.units import MS_PER_S, US_PER_S  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "planner" / "data" / "kernel_tables"
PACKAGE, PACKAGE_VERSION = "aiconfigurator-core", "0.12.0"
LICENSE = "Apache-2.0 (NVIDIA AIConfigurator measured perf data; planner/data/kernel_tables/LICENSE, NOTICE)"
DATA = "aiconfigurator_core/systems/data/"

#: AIConfigurator system → kvplan GPU profile key (hardware_profiles/<key>.toml).
GPUS = {
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "a100_sxm": "a100-80gb-sxm",
    "l40s": "l40s",
    "gb300": "gb300",
    "rtx_pro_6000_server": "rtx-pro-6000-blackwell-server",
}
#: The current query slot per engine (systems/query_versions.yaml of 0.12.0: defaults and overrides).
CURRENT = {"trtllm": "1.3.0rc20", "sglang": "0.5.14", "vllm": "0.24.0"}
CURRENT_OVERRIDES = {"a100_sxm": {"trtllm": "1.0.0", "sglang": "0.5.10", "vllm": "0.14.0"}}
#: systems/<system>.yaml misc.nccl_version: the nccl-tests directory each system uses.
NCCL_VERSION = {
    "gb200": "2.23",
    "b300_sxm": "2.27",
    "h200_sxm": "2.26.2",
    "gb300": "2.27",
    "rtx_pro_6000_server": "2.29.2",
}
NCCL_DEFAULT = "2.27.3"
#: GPUs per node of each system (the scale of a multi-node DeepEP test: ep = node_num × this).
GPUS_PER_NODE = {"gb200": 4, "gb300": 4}  # gb300.yaml 'num_gpus_per_node: 4', as gb200.yaml
ELEMENT_BYTES = {"bfloat16": 2, "half": 2, "float16": 2, "int8": 1, "fp8": 1, "float32": 4}


@dataclass(frozen=True)
class Spec:
    """How one AIConfigurator table becomes one kvplan table: renamed key and axis columns, the columns
    reduced away (``fold``: the minimum over them — the engine picks the fastest kernel or SM count), and
    what each axis value is converted by."""

    target: str
    keys: dict[str, str]  # kvplan key → AIC column (or "=value" for a constant)
    axes: dict[str, str]  # kvplan axis → AIC column
    fold: tuple[str, ...] = ()
    axis_offset: dict[str, float] = field(default_factory=dict)  # kv_tokens = step + 1
    message_bytes_from: str = ""  # a dtype column: message_size (elements) × its bytes
    value: str = "latency"  # AIC column in ms
    value_us: bool = False  # the value column is microseconds


ATTN = dict(
    attn_dtype="attn_dtype",
    kv_dtype="kv_cache_dtype",
    head_dim="head_dim",
    window="window_size",
    heads="num_heads",
    kv_heads="num_key_value_heads",
)
MOE = dict(
    dtype="moe_dtype",
    hidden="hidden_size",
    inter="inter_size",
    topk="topk",
    experts="num_experts",
    moe_tp="moe_tp_size",
    moe_ep="moe_ep_size",
    distribution="distribution",
)
MLA_MODULE = dict(model="model", kv_dtype="kv_cache_dtype", gemm_dtype="gemm_type", heads="num_heads")
SPECS: dict[str, list[Spec]] = {
    "gemm_perf": [Spec("gemm", dict(dtype="gemm_dtype", n="n", k="k"), dict(tokens="m"), ("kernel_source",))],
    "context_attention_perf": [
        Spec("context_attention", ATTN, dict(batch="batch_size", isl_tokens="isl"), ("kernel_source",))
    ],
    "generation_attention_perf": [
        Spec(
            "generation_attention",
            ATTN,
            dict(batch="batch_size", kv_tokens="step"),
            ("kernel_source",),
            axis_offset=dict(kv_tokens=1.0),
        )
    ],
    "mla_context_module_perf": [
        Spec("context_mla", MLA_MODULE, dict(batch="batch_size", isl_tokens="isl"), ("kernel_source", "tp_size"))
    ],
    "mla_generation_module_perf": [
        Spec(
            "generation_mla",
            MLA_MODULE,
            dict(batch="batch_size", kv_tokens="step"),
            ("kernel_source", "tp_size"),
            axis_offset=dict(kv_tokens=1.0),
        )
    ],
    "context_mla_perf": [
        Spec(
            "context_mla_kernel",
            dict(kv_dtype="kv_cache_dtype", heads="num_heads"),
            dict(batch="batch_size", isl_tokens="isl"),
            ("kernel_source", "tp_size"),
        )
    ],
    "generation_mla_perf": [
        Spec(
            "generation_mla_kernel",
            dict(kv_dtype="kv_cache_dtype", heads="num_heads"),
            dict(batch="batch_size", kv_tokens="step"),
            ("kernel_source", "tp_size"),
            axis_offset=dict(kv_tokens=1.0),
        )
    ],
    "mla_bmm_perf": [
        Spec("mla_bmm", dict(op="op_name", dtype="bmm_dtype", heads="num_heads"), dict(tokens="num_tokens"))
    ],
    "moe_perf": [Spec("moe", MOE, dict(tokens="num_tokens"), ("kernel_source",))],
    "wideep_generation_moe_perf": [Spec("wideep_moe", MOE, dict(tokens="num_tokens"), ("kernel_source",))],
    "custom_allreduce_perf": [
        Spec(
            "allreduce",
            dict(dtype="allreduce_dtype", variant="kernel_source"),
            dict(gpus="num_gpus", message_bytes="message_size"),
            message_bytes_from="allreduce_dtype",
        )
    ],
    "nccl_perf": [
        Spec(
            "nccl",
            dict(op="op_name", dtype="nccl_dtype"),
            dict(gpus="num_gpus", message_bytes="message_size"),
            message_bytes_from="nccl_dtype",
        )
    ],
    "moe_a2a_perf": [
        Spec(
            "moe_a2a",
            dict(
                backend="comm_backend",
                phase="phase",
                dtype="comm_dtype",
                ep="ep_size",
                hidden="hidden_size",
                topk="topk",
                experts="num_experts",
            ),
            dict(tokens="num_tokens"),
            ("sms", "node_num", "kernel_source"),
            value_us=True,  # 0.12.0's moe_a2a `latency` equals transmit_us + notify_us: microseconds
        )
    ],
    "wideep_deepep_ll_perf": [
        Spec(
            "moe_a2a",
            dict(
                backend="=deepep_ll",
                phase=f"={phase}",
                dtype="=default",
                ep="ep",
                hidden="hidden_size",
                topk="num_topk",
                experts="num_experts",
            ),
            dict(tokens="num_token"),
            value=f"{phase}_avg_t_us",
            value_us=True,
        )
        for phase in ("dispatch", "combine")
    ],
    "wideep_deepep_normal_perf": [
        Spec(
            "moe_a2a",
            dict(
                backend="=deepep_normal",
                phase=f"={phase}",
                dtype="=default",
                ep="ep",
                hidden="hidden_size",
                topk="num_topk",
                experts="num_experts",
            ),
            dict(tokens="num_token"),
            ("dispatch_sms", "combine_sms"),
            value=f"{phase}_us",
            value_us=True,
        )
        for phase in ("dispatch", "combine")
    ],
}


def _variant(kernel_source: str) -> str:
    """graph / eager from the all-reduce's kernel name (TRT-LLM's one kernel runs inside its CUDA graphs)."""
    return "eager" if "eager" in kernel_source.lower() else "graph"


def _frame(df, spec: Spec, system: str):
    """The AIC frame in kvplan's columns: keys, axes, ``ms`` (the minimum over the folded columns)."""
    import pandas as pd

    df = df.copy()
    if "node_num" in df and "ep" not in df:
        df["ep"] = df["node_num"].astype(int) * GPUS_PER_NODE.get(system, 8)
    if spec.value not in df:  # deepep normal: transmit + notify
        phase = spec.value.split("_")[0]
        df[spec.value] = df[f"{phase}_transmit_us"] + df[f"{phase}_notify_us"]
    out = pd.DataFrame(index=df.index)
    for key, col in spec.keys.items():
        if col.startswith("="):
            out[key] = col[1:]
        elif key == "variant":
            out[key] = df[col].astype(str).map(_variant)
        elif key == "window" and col not in df:
            out[key] = 0
        else:
            out[key] = df[col].astype(str) if key in _text_keys(spec.target) else df[col].astype(np.int64)
    for axis, col in spec.axes.items():
        v = df[col].astype(np.float64) + spec.axis_offset.get(axis, 0.0)
        if spec.message_bytes_from:
            v = v * df[spec.message_bytes_from].astype(str).map(ELEMENT_BYTES).astype(np.float64)
        out[axis] = v
    out["ms"] = df[spec.value].astype(np.float64) * (MS_PER_S / US_PER_S if spec.value_us else 1.0)
    return out.groupby([*spec.keys, *spec.axes], as_index=False)["ms"].min()


def _text_keys(target: str) -> set[str]:
    return {k for k in TABLE_SCHEMAS[target].keys if k in TEXT_KEYS}


def _dense(frame, target: str):
    """(keys by column, axes, ms [C, A…]) of one kvplan table from its long frame."""
    schema = TABLE_SCHEMAS[target]
    classes = frame[list(schema.keys)].drop_duplicates().sort_values(list(schema.keys)).reset_index(drop=True)
    classes["_c"] = np.arange(len(classes))
    frame = frame.merge(classes, on=list(schema.keys))
    grids = [np.unique(frame[a].to_numpy()) for a in schema.axes]
    ms = np.full((len(classes), *(len(g) for g in grids)), np.nan)
    cells = [np.searchsorted(g, frame[a].to_numpy()) for g, a in zip(grids, schema.axes, strict=True)]
    index = (frame["_c"].to_numpy(), *cells)
    ms[index] = frame["ms"].to_numpy()
    keys = {k: classes[k].to_numpy() for k in schema.keys}
    keys = {k: (v.astype(str) if v.dtype == object else v.astype(np.int64)) for k, v in keys.items()}
    return keys, tuple(grids), ms


def _version_key(v: str) -> tuple:
    """1.3.0rc20 < 1.3.0; 0.5.6.post2 > 0.5.6 (AIC's backward-fill order)."""
    m = re.match(r"^(\d+(?:\.\d+)*)(?:\.?(rc|dev)(\d+))?(?:\.post(\d+))?", v)
    if not m:
        return ((0,), 0, 0, 0)
    pre = {"dev": 0, "rc": 1}.get(m.group(2) or "", 2)
    return (tuple(int(x) for x in m.group(1).split(".")), pre, int(m.group(3) or 0), int(m.group(4) or 0))


def _index(wheel: zipfile.ZipFile, only: set[str] | None = None) -> dict[tuple[str, str], dict[str, dict[str, str]]]:
    """(system, engine) → AIC table → version → member path (of the systems in ``only`` when given)."""
    found: dict[tuple[str, str], dict[str, dict[str, str]]] = defaultdict(lambda: defaultdict(dict))
    for name in wheel.namelist():
        if not (name.startswith(DATA) and name.endswith("_perf.parquet")):
            continue
        system, _family, engine, version, fname = name[len(DATA) :].split("/")
        table = fname[: -len(".parquet")]
        if system in GPUS and table in SPECS and (not only or system in only):
            found[(system, engine)][table][version] = name
    return found


def _backfilled(tables: dict[str, dict[str, str]], slot: str) -> dict[str, tuple[str, str]]:
    """Each table the slot serves → (version, member): the newest version ≤ the slot that has it."""
    out = {}
    for table, versions in tables.items():
        older = [v for v in versions if _version_key(v) <= _version_key(slot)]
        if older:
            v = max(older, key=_version_key)
            out[table] = (v, versions[v])
    return out


def _distil_file(wheel: zipfile.ZipFile, system: str, engine: str, version: str, members: dict[str, tuple[str, str]]):
    import pyarrow.parquet as pq

    frames: dict[str, list] = defaultdict(list)
    sources: dict[str, list[str]] = defaultdict(list)
    devices: set[str] = set()
    for table, (v, member) in sorted(members.items()):
        df = pq.read_table(io.BytesIO(wheel.read(member))).to_pandas()
        devices.update(map(str, df.get("device", [])))
        for spec in SPECS[table]:
            frames[spec.target].append(_frame(df, spec, system))
            sources[spec.target].append(f"{PACKAGE} {PACKAGE_VERSION}: {member.removeprefix('aiconfigurator_core/')}")
            if v != version:
                sources[spec.target][-1] += f" (backward fill from {v})"
    import pandas as pd

    dense = {t: _dense(pd.concat(f, ignore_index=True), t) for t, f in frames.items()}
    meta = KernelTableMeta(
        gpu=GPUS[system],
        device_name=", ".join(sorted(devices)),
        engine=engine,
        engine_version=version,
        measured_by=f"NVIDIA AIConfigurator collectors ({PACKAGE} {PACKAGE_VERSION})",
        source=f"{PACKAGE} {PACKAGE_VERSION} wheel (PyPI), systems/data/{system}/…/{engine}/…",
        license=LICENSE,
        created_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        tables={
            t: TableMeta(keys=TABLE_SCHEMAS[t].keys, axes=TABLE_SCHEMAS[t].axes, source="; ".join(sources[t])[:2000])
            for t in dense
        },
    )
    return meta, dense


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", type=Path, help="aiconfigurator_core-0.12.0-*.whl")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--only", action="append", choices=sorted(GPUS), help="write only this AIConfigurator system (repeatable)"
    )
    args = ap.parse_args(argv)
    total = 0
    with zipfile.ZipFile(args.wheel) as wheel:
        for (system, engine), tables in sorted(_index(wheel, set(args.only or ())).items()):
            if engine == "nccl":
                slot = NCCL_VERSION.get(system, NCCL_DEFAULT)
                members = {t: (slot, vs[slot]) for t, vs in tables.items() if slot in vs}
            else:
                slot = CURRENT_OVERRIDES.get(system, {}).get(engine, CURRENT.get(engine, ""))
                members = _backfilled(tables, slot) if slot else {}
            if not members:
                continue
            meta, dense = _distil_file(wheel, system, engine, slot, members)
            path = args.out / table_file_name(meta)
            write_table(path, meta, dense)
            total += path.stat().st_size
            print(f"{path.relative_to(args.out)}: {path.stat().st_size / 1e6:.3f} MB, tables {sorted(dense)}")
    print(f"total {total / 1e6:.2f} MB under {args.out}")


if __name__ == "__main__":
    main()
