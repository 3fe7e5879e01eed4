"""Serving-engine profiles load from engine_profiles/<engine>/<version>.toml and are selected by the link key
``engine=NAME@VERSION`` (a name alone: its newest version); every output names the version in force."""

from __future__ import annotations

import io
import json

import pytest
from streamlit.testing.v1 import AppTest

from planner.cli.main import main
from planner.engine.evaluate import resolve
from planner.errors import ScenarioError
from planner.links import from_query, to_query
from planner.model.catalog import DEFAULT_ENGINE, load_engines
from planner.model.engine_versions import resolve_engine, version_tuple
from planner.model.scenario import Scenario
from tests.paths import APP
from ui.format import md_escape

SHIPPED = {"vllm@0.19", "sglang@0.5.23", "trtllm@0.9"}


def _newest(catalog, name: str) -> str:
    keys = [k for k in catalog.engines if k.startswith(name + "@")]
    return max(keys, key=lambda k: version_tuple(k.split("@")[1]))


def test_the_shipped_profiles_load():
    engines, problems = load_engines()
    assert problems == []
    assert set(engines) >= SHIPPED and DEFAULT_ENGINE == "vllm"
    for key, e in engines.items():
        assert e.key == key and e.source and e.version
        name, version = key.split("@")
        assert e.kind == name and (e.version == version or e.version.startswith(version + "."))


def test_engine_key_selects_the_version(catalog):
    assert resolve(Scenario(), catalog).engine.key == _newest(catalog, "vllm")  # a name alone: the newest
    assert resolve(Scenario(engine="vllm@0.19"), catalog).engine.version == "0.19.0"
    assert resolve(Scenario(engine="vllm@0.19.0"), catalog).engine.key == "vllm@0.19"  # the release spelling
    assert resolve(Scenario(engine="sglang"), catalog).engine.name == "SGLang"
    assert resolve(Scenario(engine="trtllm@0"), catalog).engine.key == "trtllm@0.9"  # the newest 0.x
    assert resolve(Scenario(engine="trtllm@1"), catalog).engine.key == _newest(catalog, "trtllm")  # the newest 1.x


@pytest.mark.parametrize("key", ["tgi", "vllm@0.7", "vllm@0.1", "trtllm@9"])
def test_an_unknown_engine_or_version_is_refused_with_the_known_ones(catalog, key):
    with pytest.raises(ScenarioError) as exc:
        resolve(Scenario(engine=key), catalog)
    (msg,) = exc.value.problems
    assert msg.startswith(f"engine={key!r}: unknown engine or version; choose one of ")
    assert all(k in msg for k in SHIPPED) and "a name without @version means its newest" in msg


def test_a_link_names_the_version_it_gets(catalog):
    aliases = catalog.engine_aliases()
    s, issues = from_query("engine=vllm", set(catalog.gpus), set(catalog.models), aliases)
    assert issues == [] and s.engine == _newest(catalog, "vllm") and to_query(s)["engine"] == s.engine
    s, _ = from_query("engine=vllm@0.19.0", set(catalog.gpus), set(catalog.models), aliases)
    assert s.engine == "vllm@0.19"
    s, issues = from_query("engine=vllm@0.7", set(catalog.gpus), set(catalog.models), aliases)
    assert s.engine == "vllm" and len(issues) == 1 and "vllm@0.19" in issues[0].message


def test_a_link_with_an_unknown_engine_names_the_choices(catalog):
    s, issues = from_query("engine=tgi", set(catalog.gpus), set(catalog.models), catalog.engine_aliases())
    assert s.engine == "vllm"
    assert (
        issues[0].message.startswith("engine='tgi': unknown; allowed: one of ") and "sglang@0.5.23" in issues[0].message
    )


def test_versions_in_a_folder_order_numerically_and_a_plain_file_beside_it_is_named(tmp_path):
    body = 'name = "X"\nversion = "{v}"\nsource = "s"\n'
    (tmp_path / "x").mkdir()
    for v in ("1.9", "1.10", "0.5.23", "0.5.14"):
        (tmp_path / "x" / f"{v}.toml").write_text(body.format(v=v), encoding="utf-8")
    (tmp_path / "x" / "latest.toml").write_text(body.format(v="9"), encoding="utf-8")
    (tmp_path / "x.toml").write_text(body.format(v="2"), encoding="utf-8")
    (tmp_path / "mine.toml").write_text(body.format(v="0.19.0"), encoding="utf-8")
    engines, problems = load_engines(tmp_path)
    assert set(engines) == {"x@1.9", "x@1.10", "x@0.5.23", "x@0.5.14", "mine"}
    assert resolve_engine(engines, "x").key == "x@1.10"  # 1.10 is newer than 1.9
    assert resolve_engine(engines, "x@0.5").key == "x@0.5.23"
    assert resolve_engine(engines, "mine").key == "mine" and resolve_engine(engines, "x@2") is None
    assert sorted(problems) == [
        "x.toml: skipped, a folder x/ holds this engine's versions (put it there)",
        "x/latest.toml: the file name must be a version: numeric components separated by '.' (0.19, 0.5.23)",
    ]


def test_a_bad_engine_file_is_skipped_by_name(tmp_path):
    (tmp_path / "good.toml").write_text('name = "X"\nversion = "1"\nsource = "s"\n', encoding="utf-8")
    (tmp_path / "bad.toml").write_text('name = "Y"\nversion = "1"\n', encoding="utf-8")
    engines, problems = load_engines(tmp_path)
    assert set(engines) == {"good"} and problems == ["bad.toml: source: Field required"]


def test_the_cli_names_the_version_in_force(catalog):
    newest = _newest(catalog, "vllm")
    out = io.StringIO()
    assert main(["evaluate", "", "--format", "json"], out=out) == 0
    assert json.loads(out.getvalue())["engine"] == newest
    out = io.StringIO()
    assert main(["evaluate", "engine=vllm@0.19", "--format", "csv"], out=out) == 0
    header, row = out.getvalue().splitlines()[:2]
    assert row.split(",")[header.split(",").index("engine")] == "vllm@0.19"
    out = io.StringIO()
    assert main(["evaluate", "engine=sglang"], out=out) == 0
    assert "SGLang 0.5.23 (engine=sglang@0.5.23)" in out.getvalue().splitlines()[0]


def test_the_page_writes_the_version_into_its_link(catalog):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["engine"] = "vllm"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    newest = _newest(catalog, "vllm")
    assert at.sidebar.selectbox(key="engine").value == newest
    assert at.query_params["engine"] == newest
    assert any(md_escape(catalog.engines[newest].label) in c.value for c in at.caption)
    assert any(o.endswith("(newest)") for o in at.sidebar.selectbox(key="engine").options)
