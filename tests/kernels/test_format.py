"""The kernel-table file format (docs/kernel_tables.md): what the writer writes the reader accepts, and a
file that breaks a rule is refused naming the file and the field."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from planner.kernels.format import (
    KernelTableError,
    KernelTableMeta,
    TableMeta,
    read_table,
    table_file_name,
    write_table,
)


def _meta(**changes) -> KernelTableMeta:
    data = dict(
        gpu="h100-sxm",
        engine="*",
        engine_version="0.2.0",
        measured_by="kvplan bench 0.2.0",
        source="test",
        license="CC0-1.0",
        tables={"gemm": TableMeta(keys=("dtype", "n", "k"), axes=("tokens",))},
    )
    data.update(changes)
    return KernelTableMeta(**data)


def _gemm(ms=((0.01, 0.011, np.nan),)):
    keys = {"dtype": np.array(["bfloat16"]), "n": np.array([4096]), "k": np.array([4096])}
    return {"gemm": (keys, (np.array([1.0, 2.0, 4.0]),), np.array(ms))}


def test_written_table_reads_back(tmp_path):
    path = tmp_path / "t.npz"
    write_table(path, _meta(), _gemm())
    f = read_table(path)
    assert f.meta.identity == ("h100-sxm", "*", "0.2.0")
    t = f.tables["gemm"]
    assert t.classes == 1 and t.keys["dtype"][0] == "bfloat16" and t.keys["n"].dtype == np.int64
    assert t.latency_ms[0, 0] == pytest.approx(0.01, rel=1e-3) and np.isnan(t.latency_ms[0, 2])
    assert table_file_name(f.meta) == "h100-sxm/any-0.2.0.npz"


def _raw(arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _arrays(**changes):
    arrays = {
        "meta_json": np.asarray(_meta().model_dump_json()),
        "gemm__key__dtype": np.array(["bfloat16"]),
        "gemm__key__n": np.array([4096]),
        "gemm__key__k": np.array([4096]),
        "gemm__axis__tokens": np.array([1.0, 2.0]),
        "gemm__latency_ms": np.array([[0.01, 0.02]], dtype=np.float16),
    }
    arrays.update(changes)
    return {k: v for k, v in arrays.items() if v is not None}


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        (dict(meta_json=None), "meta_json: missing"),
        (dict(meta_json=np.asarray("{not json")), "meta_json: not valid JSON"),
        (dict(meta_json=np.asarray(json.dumps({"gpu": "H100!"}))), "meta_json: gpu"),
        (dict(gemm__axis__tokens=np.array([2.0, 1.0])), "gemm__axis__tokens: must be finite, > 0 and strictly"),
        (dict(gemm__latency_ms=np.array([[0.01, -1.0]])), "every measured cell must be finite and > 0"),
        (dict(gemm__latency_ms=np.array([[0.01, 0.02, 0.03]])), "gemm__latency_ms: must be a float array"),
        (dict(gemm__key__n=np.array(["4096"])), "gemm__key__n: must be 1 integers"),
        (dict(gemm__key__k=None), "gemm__key__k: missing"),
    ],
)
def test_a_broken_file_is_refused_naming_the_field(tmp_path, changes, named):
    with pytest.raises(KernelTableError) as err:
        read_table(tmp_path / "bad.npz", _raw(_arrays(**changes)))
    assert err.value.problems[0].startswith("bad.npz: ") and named in err.value.problems[0]


def test_keys_and_axes_must_be_the_schemas():
    meta = _meta(tables={"gemm": TableMeta(keys=("dtype", "n"), axes=("tokens",))})
    arrays = _arrays(meta_json=np.asarray(meta.model_dump_json()))
    with pytest.raises(KernelTableError, match=r"tables.gemm: keys \['dtype', 'n'\]"):
        read_table("x.npz", _raw(arrays))


def test_an_object_array_is_never_unpickled(tmp_path):
    arrays = _arrays(gemm__key__dtype=np.array([object()], dtype=object))
    with pytest.raises(KernelTableError, match="not a readable .npz file"):
        read_table("x.npz", _raw(arrays))  # np.savez pickles an object array; the reader must refuse it


def test_a_file_that_is_not_npz_is_refused():
    with pytest.raises(KernelTableError, match="not a readable .npz file"):
        read_table("x.npz", b"PK\x03\x04 not really")
