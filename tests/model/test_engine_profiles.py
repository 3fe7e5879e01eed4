"""Serving-engine profiles load from package data and are selected by the link key ``engine``."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import resolve
from planner.errors import ScenarioError
from planner.links import from_query
from planner.model.catalog import DEFAULT_ENGINE, load_engines
from planner.model.scenario import Scenario


def test_the_shipped_profiles_load():
    engines, problems = load_engines()
    assert problems == []
    assert {"vllm", "sglang", "trtllm"} <= set(engines) and DEFAULT_ENGINE == "vllm"
    for key, e in engines.items():
        assert e.key == key and e.source and e.version


def test_engine_key_selects_the_profile(catalog):
    assert resolve(Scenario(), catalog).engine.key == "vllm"
    assert resolve(Scenario(engine="sglang"), catalog).engine.name == "SGLang"
    with pytest.raises(ScenarioError, match="engine='tgi': unknown engine profile; choose one of sglang, trtllm, vllm"):
        resolve(Scenario(engine="tgi"), catalog)


def test_a_link_with_an_unknown_engine_names_the_choices(catalog):
    s, issues = from_query("engine=tgi", set(catalog.gpus), set(catalog.models), set(catalog.engines))
    assert s.engine == "vllm"
    assert [i.message for i in issues] == ["engine='tgi': unknown; allowed: one of sglang, trtllm, vllm"]


def test_a_bad_engine_file_is_skipped_by_name(tmp_path):
    (tmp_path / "good.toml").write_text('name = "X"\nversion = "1"\nsource = "s"\n', encoding="utf-8")
    (tmp_path / "bad.toml").write_text('name = "Y"\nversion = "1"\n', encoding="utf-8")
    engines, problems = load_engines(tmp_path)
    assert set(engines) == {"good"} and problems == ["bad.toml: source: Field required"]
