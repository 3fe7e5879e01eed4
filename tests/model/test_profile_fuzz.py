"""Fuzzing profile TOML files as the catalog loads them: a shipped GPU profile with one value replaced by
a huge-but-valid or hostile one (1e-300, 1e300, inf, nan, a 100 KB string, a deep array, a table), under
a valid or an invalid file name.  ``load_gpus`` loads the profile (every number finite and physical) or
skips the file with a problem that names it — never an exception (the catalog's contract, README)."""

from __future__ import annotations

import math
import tempfile
import tomllib
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.model.catalog import load_gpus
from tests.paths import HARDWARE_DIR

BASE = tomllib.loads((HARDWARE_DIR / "h100-sxm.toml").read_text(encoding="utf-8"))
FIELDS = sorted(BASE)
VALUES = st.one_of(
    st.sampled_from(["1e-300", "1e300", "inf", "-inf", "nan", "0", "-1", "0.0", "5e-324", "1.7976931348623157e308"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
    st.integers(min_value=1, max_value=100_000).map(lambda n: '"' + "x" * n + '"'),
    st.integers(min_value=1, max_value=900).map(lambda n: "[" * n + "]" * n),
    st.sampled_from(['""', '"<a href=x>y</a>"', "true", "[1, 2]", "{ a = 1 }", '"\\u0000"']),
)
NAMES = st.one_of(st.just("fuzz-gpu"), st.sampled_from(["UPPER", "Evil Key With Spaces", "a" * 200, "x.y", "ok_1"]))


def _toml(data: dict, field: str, value: str) -> str:
    lines = []
    for k, v in data.items():
        if k == field:
            lines.append(f"{k} = {value}")
        elif isinstance(v, str):
            lines.append(f"{k} = {v!r}".replace("\\'", "'") if "'" not in v else f'{k} = "{v}"')
        else:
            lines.append(f"{k} = {v!r}".lower() if isinstance(v, bool) else f"{k} = {v!r}")
    return "\n".join(lines) + "\n"


@settings(max_examples=40)
@given(st.sampled_from(FIELDS), VALUES, NAMES)
def test_a_hostile_value_loads_physically_or_skips_the_file_by_name(field, value, name):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.toml"
        path.write_text(_toml(BASE, field, value), encoding="utf-8")
        gpus, problems = load_gpus(Path(tmp))
    if problems:
        assert not gpus and len(problems) == 1 and problems[0].startswith(path.name), problems
        return
    gpu = gpus[name]
    for attr, v in vars(gpu).items():
        for x in v.values() if isinstance(v, dict) else [v]:
            if isinstance(x, float):
                assert math.isfinite(x), (attr, x)
    assert gpu.memory_bandwidth_bytes_per_s > 0 and min(gpu.peak_flop_per_s.values()) > 0


def test_the_unchanged_profile_loads():
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "fuzz-gpu.toml").write_text(_toml(BASE, "", ""), encoding="utf-8")
        gpus, problems = load_gpus(Path(tmp))
    assert not problems and "fuzz-gpu" in gpus
