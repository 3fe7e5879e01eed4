"""Over drawn plans (model, GPU, layout, replicas, router, a prefill pool, engine, target): a bundle is either
refused with reasons (a ProblemsError, never another exception) or every file in it validates and every
command line's flags are the tool's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.deploy.bundle import TARGETS, deploy_bundle
from planner.errors import ProblemsError
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from tests.deploy.validators import bad_flags, shell_commands, tool_of, validate_compose, validate_manifest, yaml_docs

CATALOG = load_catalog()
MODELS = sorted(CATALOG.models)
GPUS = ["h100-sxm", "h200", "b200", "mi300x", "mi355x", "l4"]


@st.composite
def plans(draw):
    kw = dict(
        model=draw(st.sampled_from(MODELS)),
        gpu=draw(st.sampled_from(GPUS)),
        tp=draw(st.sampled_from([1, 2, 4, 8])),
        pp=draw(st.sampled_from([1, 1, 2])),
        replicas=draw(st.integers(1, 4)),
        router=draw(st.sampled_from(["round_robin", "least_tokens", "prefix_affinity"])),
        batch=draw(st.sampled_from([16, 64, 256])),
    )
    if draw(st.booleans()):
        kw |= dict(prefill_replicas=draw(st.integers(1, 3)), prefill_tp=draw(st.sampled_from([1, 2, 4, 8])))
    return Scenario(**kw), draw(st.sampled_from(["vllm", "sglang"])), draw(st.sampled_from(TARGETS))


@settings(max_examples=15)
@given(plans())
def test_a_bundle_is_refused_with_reasons_or_valid(case):
    s, engine, target = case
    try:
        bundle = deploy_bundle(s, CATALOG, target, engine)
    except ProblemsError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        return
    for name, text in bundle.files.items():
        if name.endswith(".yaml"):
            for doc in yaml_docs(text):
                (validate_compose if target == "compose" else validate_manifest)(doc)
        elif name.endswith(".sh"):
            for argv in shell_commands(text):
                assert bad_flags(tool_of(argv), argv) == [], name
