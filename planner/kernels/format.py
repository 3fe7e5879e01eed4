"""Edge module: the kernel-table file format (docs/kernel_tables.md) — its schema, reader and writer.

A kernel table is one NumPy ``.npz`` file per GPU × engine × engine version holding measured kernel
latencies (milliseconds per call, per GPU, per layer) on sweep grids, plus a JSON header
(``meta_json``) validated by ``KernelTableMeta``.  Per table ``T`` named in the header:

  ``T__key__<col>``   [C]            the class keys (int64 or unicode), one per measured class
  ``T__axis__<ax>``   [A_i]          the sweep grid(s), strictly increasing, > 0 (1 or 2 axes)
  ``T__latency_ms``   [C, A_0(, A_1)] float16/32/64 milliseconds per call; NaN = not measured

``TABLE_SCHEMAS`` names every table kvplan reads, its keys and its axes; a file may hold any subset
(a user's microbenchmark writes ``gemm``, the attention tables and ``allreduce``).  ``read_table``
validates a file completely (never unpickles: ``allow_pickle=False``) and raises ``KernelTableError``
naming the file and the field; ``write_table`` writes a file the reader accepts.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.errors import ProblemsError, format_validation_error
from planner.units import MiB

FORMAT_NAME = "kvplan-kernel-table"
FORMAT_VERSION = 1
#: A table file larger than this is refused before it is read (the largest shipped file is ≈ 1 MB).
MAX_TABLE_FILE_BYTES = 64 * MiB
#: Cells a table may hold (all classes × grid points), and classes a table may hold.
MAX_CELLS = 20_000_000
MAX_CLASSES = 200_000
#: ``engine`` of a table that covers every engine on its GPU (a user's own microbenchmark).
ANY_ENGINE = "*"
KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
VERSION_PATTERN = r"^[0-9A-Za-z][0-9A-Za-z._+-]{0,39}$"

#: Characters a table's file name does not take from its header's engine version (``table_name``).
_UNSAFE_NAME_CHAR = re.compile(r"[^0-9A-Za-z._+-]")


@dataclass(frozen=True)
class TableSchema:
    """One table kind: its class keys, its sweep axes and what one cell measures."""

    keys: tuple[str, ...]
    axes: tuple[str, ...]
    meaning: str


#: Every table kvplan reads (docs/kernel_tables.md has the same list with the units of each key).
TABLE_SCHEMAS: dict[str, TableSchema] = {
    "gemm": TableSchema(
        ("dtype", "n", "k"),
        ("tokens",),
        "one Linear(k → n) forward on `tokens` rows: 16-bit activations in and out, the activation "
        "quantisation of fp8/fp8_block/nvfp4 included, no bias",
    ),
    "context_attention": TableSchema(
        ("attn_dtype", "kv_dtype", "head_dim", "window", "heads", "kv_heads"),
        ("batch", "isl_tokens"),
        "causal prefill attention of `batch` prompts of `isl_tokens` each (no cached prefix), heads per GPU",
    ),
    "generation_attention": TableSchema(
        ("attn_dtype", "kv_dtype", "head_dim", "window", "heads", "kv_heads"),
        ("batch", "kv_tokens"),
        "one decode token for each of `batch` sequences attending `kv_tokens` keys (cached + the new one)",
    ),
    "context_mla": TableSchema(
        ("model", "kv_dtype", "gemm_dtype", "heads"),
        ("batch", "isl_tokens"),
        "the whole MLA attention module's prefill (projections, RoPE, attention, o_proj), heads per GPU",
    ),
    "generation_mla": TableSchema(
        ("model", "kv_dtype", "gemm_dtype", "heads"),
        ("batch", "kv_tokens"),
        "the whole MLA attention module's decode step, heads per GPU",
    ),
    "context_mla_kernel": TableSchema(
        ("kv_dtype", "heads"),
        ("batch", "isl_tokens"),
        "the MLA attention kernel alone (DeepSeek geometry: kv_lora 512, rope 64, nope 128, v 128), prefill",
    ),
    "generation_mla_kernel": TableSchema(
        ("kv_dtype", "heads"),
        ("batch", "kv_tokens"),
        "the MLA attention kernel alone (DeepSeek geometry), decode over the latent cache",
    ),
    "mla_bmm": TableSchema(
        ("op", "dtype", "heads"),
        ("tokens",),
        "MLA decode's absorbed batched GEMMs: mla_gen_pre (q_nope · W_UK) and mla_gen_post (attention · W_UV)",
    ),
    "moe": TableSchema(
        ("dtype", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "distribution"),
        ("tokens",),
        "one MoE layer's expert compute on one rank (router, top-k, grouped GEMMs, activation, combine "
        "in place) for `tokens` tokens entering the layer; no dispatch/combine communication",
    ),
    "wideep_moe": TableSchema(
        ("dtype", "hidden", "inter", "topk", "experts", "moe_tp", "moe_ep", "distribution"),
        ("tokens",),
        "a wide-EP (DeepEP) MoE layer's expert kernel on one rank for `tokens` tokens entering the layer "
        "(SGLang's masked grouped GEMM over the dispatched tokens; decode)",
    ),
    "allreduce": TableSchema(
        ("dtype", "variant"),
        ("gpus", "message_bytes"),
        "the engine's all-reduce of `message_bytes` per rank over `gpus` GPUs of one node "
        "(variant: graph = inside a CUDA graph, eager = launched from the host)",
    ),
    "nccl": TableSchema(
        ("op", "dtype"),
        ("gpus", "message_bytes"),
        "nccl-tests: all_reduce and alltoall of `message_bytes` per rank, all_gather of `message_bytes` "
        "gathered, reduce_scatter of `message_bytes` input, over `gpus` GPUs of one node",
    ),
    "moe_a2a": TableSchema(
        ("backend", "phase", "dtype", "ep", "hidden", "topk", "experts"),
        ("tokens",),
        "expert-parallel dispatch or combine (`phase`) of `tokens` tokens per rank over `ep` GPUs of one node",
    ),
}
#: Key columns that hold text (every other key is an integer).
TEXT_KEYS = frozenset(
    {"dtype", "attn_dtype", "kv_dtype", "gemm_dtype", "model", "distribution", "variant", "op", "backend", "phase"}
)
TableName = Literal[
    "gemm",
    "context_attention",
    "generation_attention",
    "context_mla",
    "generation_mla",
    "context_mla_kernel",
    "generation_mla_kernel",
    "mla_bmm",
    "moe",
    "wideep_moe",
    "allreduce",
    "nccl",
    "moe_a2a",
]


class KernelTableError(ProblemsError):
    """A kernel-table file that cannot be used (one line per problem, each naming the file and field)."""


class TableMeta(BaseModel):
    """One table of a file: what its keys and axes are (they must be the schema's), and where it came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    keys: tuple[str, ...]
    axes: tuple[str, ...]
    source: str = Field(default="", max_length=2000, description="where these cells came from")
    notes: str = Field(default="", max_length=4000)


class KernelTableMeta(BaseModel):
    """The ``meta_json`` header of a kernel-table file (docs/kernel_tables.md)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal["kvplan-kernel-table"] = "kvplan-kernel-table"  # FORMAT_NAME
    format_version: Literal[1] = 1  # FORMAT_VERSION
    gpu: str = Field(pattern=KEY_PATTERN, description="kvplan GPU profile key (hardware_profiles/<gpu>.toml)")
    device_name: str = Field(default="", max_length=200, description="the device as the driver names it")
    engine: str = Field(pattern=r"^([a-z0-9][a-z0-9._-]{0,63}|\*)$", description="vllm, sglang, trtllm, nccl, or *")
    engine_version: str = Field(pattern=VERSION_PATTERN, description="the engine release measured ('' not allowed)")
    measured_by: str = Field(min_length=1, max_length=400, description="the tool that measured (name and version)")
    source: str = Field(min_length=1, max_length=4000, description="where the measurements come from")
    license: str = Field(min_length=1, max_length=400)
    created_utc: str = Field(default="", max_length=40)
    tables: dict[TableName, TableMeta] = Field(min_length=1)

    @property
    def identity(self) -> tuple[str, str, str]:
        """(gpu, engine, engine_version): a later file of the same identity replaces an earlier one."""
        return self.gpu, self.engine, self.engine_version


@dataclass(frozen=True)
class Table:
    """One validated table: class keys, sweep axes and milliseconds (float64; NaN = not measured)."""

    name: str
    keys: dict[str, np.ndarray]  # column → [C]
    axes: tuple[np.ndarray, ...]  # 1 or 2 float64 grids
    latency_ms: np.ndarray  # [C, A_0(, A_1)] float64

    @property
    def classes(self) -> int:
        return int(self.latency_ms.shape[0])


@dataclass(frozen=True)
class KernelTableFile:
    """A validated file: its header and its tables by name."""

    meta: KernelTableMeta
    tables: dict[str, Table]
    path: str = ""


def _problem(where: str, text: str) -> KernelTableError:
    return KernelTableError([f"{where}: {text}"])


def _meta(where: str, arrays: Mapping[str, np.ndarray]) -> KernelTableMeta:
    if "meta_json" not in arrays:
        raise _problem(where, "meta_json: missing (the JSON header, a 0-d string array)")
    raw = arrays["meta_json"]
    if raw.dtype.kind != "U" or raw.ndim != 0:
        raise _problem(where, "meta_json: must be a 0-d unicode string")
    try:
        data = json.loads(str(raw))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise _problem(where, f"meta_json: not valid JSON ({exc})") from None
    try:
        return KernelTableMeta.model_validate(data)
    except ValidationError as exc:
        raise _problem(where, f"meta_json: {format_validation_error(exc)}") from None


def _axis(where: str, name: str, a: np.ndarray) -> np.ndarray:
    if a.ndim != 1 or a.size < 1 or a.dtype.kind not in "iuf":
        raise _problem(where, f"{name}: must be a 1-D numeric array with at least one point")
    v = a.astype(np.float64)
    if not np.all(np.isfinite(v)) or np.any(v <= 0) or np.any(np.diff(v) <= 0):
        raise _problem(where, f"{name}: must be finite, > 0 and strictly increasing")
    return v


def _table(where: str, name: str, tm: TableMeta, arrays: Mapping[str, np.ndarray]) -> Table:
    schema = TABLE_SCHEMAS[name]
    if tm.keys != schema.keys or tm.axes != schema.axes:
        raise _problem(
            where,
            f"tables.{name}: keys {list(tm.keys)} / axes {list(tm.axes)}; must be {list(schema.keys)} / "
            f"{list(schema.axes)}",
        )
    lat_name = f"{name}__latency_ms"
    if lat_name not in arrays:
        raise _problem(where, f"{lat_name}: missing")
    lat = arrays[lat_name]
    axes = []
    for ax in schema.axes:
        arr_name = f"{name}__axis__{ax}"
        if arr_name not in arrays:
            raise _problem(where, f"{arr_name}: missing")
        axes.append(_axis(where, arr_name, arrays[arr_name]))
    if lat.dtype.kind != "f" or lat.ndim != 1 + len(axes) or lat.shape[1:] != tuple(len(a) for a in axes):
        raise _problem(
            where, f"{lat_name}: must be a float array of shape [classes, {', '.join(str(len(a)) for a in axes)}]"
        )
    classes = lat.shape[0]
    if not 1 <= classes <= MAX_CLASSES or lat.size > MAX_CELLS:
        raise _problem(where, f"{lat_name}: {classes} classes, {lat.size} cells; at most {MAX_CLASSES} / {MAX_CELLS}")
    ms = lat.astype(np.float64)
    measured = ~np.isnan(ms)
    if not np.all(np.isfinite(ms[measured])) or np.any(ms[measured] <= 0):
        raise _problem(where, f"{lat_name}: every measured cell must be finite and > 0 (NaN = not measured)")
    keys = {}
    for col in schema.keys:
        arr_name = f"{name}__key__{col}"
        if arr_name not in arrays:
            raise _problem(where, f"{arr_name}: missing")
        k = arrays[arr_name]
        text = col in TEXT_KEYS
        if k.ndim != 1 or k.shape[0] != classes or (k.dtype.kind != "U" if text else k.dtype.kind not in "iu"):
            kind = "unicode strings" if text else "integers"
            raise _problem(where, f"{arr_name}: must be {classes} {kind} (one per class)")
        keys[col] = k if text else k.astype(np.int64)
    return Table(name, keys, tuple(axes), ms)


def read_table(path: Path | str, data: bytes | None = None) -> KernelTableFile:
    """Read and validate one kernel-table file (``data``: its bytes, when already read).  KernelTableError
    names the file and the first field that is wrong."""
    where = Path(path).name
    if data is None:
        p = Path(path)
        size = p.stat().st_size
        if size > MAX_TABLE_FILE_BYTES:
            raise _problem(where, f"{size} bytes; at most {MAX_TABLE_FILE_BYTES}")
        data = p.read_bytes()
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise _problem(where, f"not a readable .npz file ({exc})") from None
    meta = _meta(where, arrays)
    tables: dict[str, Table] = {name: _table(where, name, tm, arrays) for name, tm in meta.tables.items()}
    return KernelTableFile(meta, tables, str(path))


def read_header(path: Path | str, data: bytes) -> KernelTableMeta:
    """The validated header of a kernel-table file, its arrays left unread (a zip member is inflated only
    when accessed)."""
    where = Path(path).name
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            arrays = {"meta_json": z["meta_json"]} if "meta_json" in z.files else {}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise _problem(where, f"not a readable .npz file ({exc})") from None
    return _meta(where, arrays)


def table_file_name(meta: KernelTableMeta) -> str:
    """``<engine>-<version>.npz`` (``any`` for an engine-independent table), under ``<gpu>/``."""
    engine = "any" if meta.engine == ANY_ENGINE else meta.engine
    return f"{meta.gpu}/{engine}-{_UNSAFE_NAME_CHAR.sub('_', meta.engine_version)}.npz"


def write_table(
    path: Path | str,
    meta: KernelTableMeta,
    tables: Mapping[str, tuple[Mapping[str, np.ndarray], tuple[np.ndarray, ...], np.ndarray]],
    value_dtype: type = np.float16,
) -> None:
    """Write ``tables`` (name → (keys by column, axes, milliseconds)) with ``meta`` as one file the reader
    accepts (``table_bytes``)."""
    data = table_bytes(path, meta, tables, value_dtype)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(data)


def table_bytes(
    path: Path | str,
    meta: KernelTableMeta,
    tables: Mapping[str, tuple[Mapping[str, np.ndarray], tuple[np.ndarray, ...], np.ndarray]],
    value_dtype: type = np.float16,
) -> bytes:
    """The bytes of the file ``write_table`` writes at ``path``.  ``value_dtype`` float16 keeps 10 mantissa bits
    (≤ 0.05 % rounding); values ≥ 60,000 ms are kept in float32.  The bytes are read back and validated
    before this returns."""
    arrays: dict[str, np.ndarray] = {"meta_json": np.asarray(meta.model_dump_json())}
    for name, (keys, axes, ms) in tables.items():
        schema = TABLE_SCHEMAS[name]
        for col in schema.keys:
            arrays[f"{name}__key__{col}"] = np.asarray(keys[col])
        for ax, grid in zip(schema.axes, axes, strict=True):
            arrays[f"{name}__axis__{ax}"] = np.asarray(grid, dtype=np.float64)
        values = np.asarray(ms, dtype=np.float64)
        big = np.nanmax(values, initial=0.0) >= 6e4
        arrays[f"{name}__latency_ms"] = values.astype(np.float32 if big else value_dtype)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # type: ignore[arg-type]  # numpy's stub types the kwargs loosely
    read_table(path, buffer.getvalue())
    return buffer.getvalue()
