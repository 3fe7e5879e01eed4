"""The one TOML writer (planner/tomlfile.py): whatever string a profile holds — characters outside the
Basic Multilingual Plane, DEL, quotes, newlines, every control character — reads back unchanged through
``tomllib`` and the profile schemas, for every string field of a hardware and an engine profile."""

from __future__ import annotations

import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner import tomlfile
from planner.bench.results import profile_toml
from planner.model.catalog import parse_engine_toml, parse_gpu_toml
from planner.model.specs import GpuProfileFile
from tests.paths import HARDWARE_DIR

HOSTILE = "H100 🚀 lab \x7f \"q\" 's' \\ \n2nd\r\n\t \x00\x01\x1f \u2028 \ufeff 𝔸"


#: String fields that are a choice, not text (a Literal of the schema): they keep their value.
#: choices and patterned keys, not free text ([memory], [launch], [kernels]: the table release's engine name)
CHOICES = {"budget_rule", "kv_size_printed", "block_rule", "dp_attention", "engine", "moe_distribution"}


def _hostile_strings(value, hostile: str = HOSTILE, key: str = ""):
    """``value`` with every free-text string leaf replaced by ``hostile`` (dict keys kept: they are names)."""
    if isinstance(value, dict):
        return {k: _hostile_strings(v, hostile, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_hostile_strings(v, hostile, key) for v in value]
    return hostile if isinstance(value, str) and key not in CHOICES else value


@given(st.text())
def test_any_string_round_trips(text):
    data = {"s": text, "t": {"list": [text, 1.5, 2], "flag": True}}
    assert tomllib.loads(tomlfile.dumps(data, comment=text)) == data


def test_none_is_left_out_and_non_finite_numbers_are_refused_by_name():
    assert tomllib.loads(tomlfile.dumps({"a": None, "b": {"c": None, "d": 1}})) == {"b": {"d": 1}}
    with pytest.raises(ValueError, match=r"timing\.step_overhead_us: inf"):
        tomlfile.dumps({"timing": {"step_overhead_us": float("inf")}})


def test_every_string_field_of_a_hardware_profile_round_trips():
    base = tomllib.loads((HARDWARE_DIR / "h100-sxm.toml").read_text(encoding="utf-8"))
    patterned = {"compute_capability"}  # a pattern, not text: it keeps its value
    fields = [  # free text (a patterned field, arch, is a key, not text)
        n
        for n, f in GpuProfileFile.model_fields.items()
        if "str" in str(f.annotation)
        and not any(getattr(m, "pattern", None) for m in f.metadata)
        and n not in patterned
    ]
    assert {"name", "vendor", "generation", "source", "notes", "price_source", "scale_out_name"} <= set(fields)
    profile = GpuProfileFile.model_validate({**base, **dict.fromkeys(fields, HOSTILE), "calibrated": True})
    back = parse_gpu_toml(profile_toml(profile), "lab")
    assert back.name == HOSTILE and back.vendor == HOSTILE and back.source == HOSTILE
    again = GpuProfileFile.model_validate(tomllib.loads(profile_toml(profile)))
    assert again == profile


def test_every_string_field_of_an_engine_profile_round_trips(catalog):
    engine = catalog.engine("vllm")
    data = _hostile_strings(engine.model_dump(exclude={"key"}))
    assert data["timing"]["families"]["hopper"]["source"] == data["memory"]["budget_source"] == HOSTILE
    text = tomlfile.dumps(data)
    assert parse_engine_toml(text, "vllm-lab").model_dump(exclude={"key"}) == data


def test_a_calibrated_profile_keeps_a_hostile_file_name(catalog):
    """Issue 31 F9: a results file named with DEL made `kvplan calibrate --out`'s TOML unreadable."""
    from planner.calibration.calibrate import calibrate, calibrated_profile_toml
    from tests.calibration.test_calibration import BASE, _synthetic_runs

    runs, _ = _synthetic_runs(catalog)
    cal = calibrate(runs, BASE, catalog)
    what = 'a\x7fb.json, 🚀 "lab".json'
    text = calibrated_profile_toml(catalog.engine("vllm"), catalog.gpus["h100-sxm"], cal, what)
    profile = parse_engine_toml(text, "vllm-mine")
    assert what in profile.notes and what in profile.timing.source
