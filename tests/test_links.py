"""Scenario ⇄ link: round trips, and bad links reported key by key."""

from __future__ import annotations

from urllib.parse import parse_qs

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.links import DEFAULTS, FIELDS, from_query, to_query, to_query_string
from planner.model.scenario import Scenario

GPUS = {"h100-sxm", "h200"}
MODELS = {"llama-3.1-8b", "llama-2-7b"}


def test_default_link_is_just_the_version():
    assert to_query(DEFAULTS) == {"v": "1"}


def test_only_non_default_values_are_written():
    q = to_query(Scenario(batch=64, alpha=0.8, spec=True))
    assert q == {"v": "1", "batch": "64", "alpha": "0.8", "spec": "1"}


def test_full_link_and_query_string_decode_alike():
    s = Scenario(gpu="h200", batch=7, ttl="1h", hit=0.123456789)
    qs = to_query_string(s)
    assert from_query(qs)[0] == s
    assert from_query("https://example.test/kvplan?" + qs)[0] == s
    assert from_query("?" + qs)[0] == s


def _scenarios():
    """Valid scenarios with arbitrary values for every field."""
    fields = {}
    for name, info in FIELDS.items():
        if name in ("gpu", "model", "draft", "layout", "custom", "prefix"):
            continue
        ann = info.annotation
        lo = next((m.ge for m in info.metadata if getattr(m, "ge", None) is not None), None)
        strict = lo is None
        if strict:
            lo = next((m.gt for m in info.metadata if getattr(m, "gt", None) is not None), None)
        hi = next((m.le for m in info.metadata if getattr(m, "le", None) is not None), None)
        if ann in (int, int | None):
            strat = st.integers(int(lo), int(hi))
        elif ann in (float, float | None):
            strat = st.floats(float(lo), float(hi), allow_nan=False, exclude_min=strict)
        elif ann is bool:
            strat = st.booleans()
        else:
            continue
        if "None" in str(ann):
            strat = st.none() | strat
        fields[name] = strat
    for name in ("wdtype", "kvdtype", "ttl", "dist"):
        fields[name] = st.sampled_from(list(__import__("typing").get_args(FIELDS[name].annotation)))
    fields["gpu"] = st.sampled_from(sorted(GPUS))
    fields["model"] = st.sampled_from(sorted(MODELS))
    return st.fixed_dictionaries(fields).flatmap(
        lambda d: st.integers(0, d["prompt"]).map(lambda p: Scenario(**d, prefix=p))
    )


@settings(max_examples=150, deadline=None)
@given(_scenarios())
def test_every_scenario_round_trips_through_its_link(s):
    back, issues = from_query(to_query_string(s), GPUS, MODELS)
    assert issues == []
    assert back == s


def test_bad_values_are_named_and_the_rest_loads():
    s, issues = from_query("batch=abc&tp=99&alpha=nan&prompt=4096&wdtype=fp3&hit=", GPUS, MODELS)
    assert s.prompt == 4096  # good value kept
    assert s.batch == DEFAULTS.batch and s.tp == DEFAULTS.tp
    msgs = {i.key: i.message for i in issues}
    assert set(msgs) == {"batch", "tp", "alpha", "wdtype", "hit"}
    assert "[1, 64]" in msgs["tp"] and "'99'" in msgs["tp"]
    assert "[1, 65536]" in msgs["batch"]  # an instance of dp engines (issue 15): up to 256 × 256 sequences
    assert "finite" in msgs["alpha"]
    assert "bf16" in msgs["wdtype"]
    assert all(i.fatal for i in issues)


def test_unknown_and_repeated_keys_are_notices():
    s, issues = from_query("foo=1&batch=3&batch=5", GPUS, MODELS)
    assert s.batch == 5
    kinds = {(i.key, i.fatal) for i in issues}
    assert ("foo", False) in kinds and ("batch", False) in kinds


def test_unknown_gpu_is_rejected_with_the_choices():
    s, issues = from_query("gpu=tpu-v9", GPUS, MODELS)
    assert s.gpu == DEFAULTS.gpu
    assert "h100-sxm, h200" in issues[0].message


def test_prefix_longer_than_prompt_is_clamped_and_reported():
    s, issues = from_query("prompt=100&prefix=5000")
    assert s.prefix == 100
    assert issues and "prefix" in issues[0].message


def test_huge_values_are_cut_in_messages():
    _, issues = from_query("gpu=" + "x" * 100_000)
    assert issues and len(issues[0].message) < 400


def test_link_keys_are_stable():
    # Keys named by the engine issue; renaming one would break every shared link.
    required = [
        "gpu",
        "tp",
        "model",
        "layers",
        "hidden",
        "heads",
        "kv_heads",
        "head_dim",
        "ffn",
        "vocab",
        "wdtype",
        "kvdtype",
        "batch",
        "prompt",
        "output",
        "chunk",
        "hit",
        "prefix",
        "gamma",
        "alpha",
        "draft",
        "price_in",
        "price_out",
        "ttl",
        "mfu",
        "mbu",
        "mem_util",
        "block",
    ]
    assert set(required) <= set(FIELDS)
    assert parse_qs(to_query_string(Scenario(kv_heads=4)))["kv_heads"] == ["4"]


def test_custom_model_travels_exactly_and_bad_codes_are_named(catalog):
    from planner.model.custom_model import encode_model

    code = encode_model(catalog.models["mixtral-8x7b"])
    s, issues = from_query(f"model=custom&custom={code}", GPUS, MODELS)
    assert issues == [] and s.model == "custom" and s.custom == code
    s, issues = from_query("model=custom&custom=L32-H4096-Q7", GPUS, MODELS)
    assert s.model == DEFAULTS.model and issues[0].key == "custom" and "Q7" in issues[0].message
    s, issues = from_query("model=custom&custom=L32-H4096-A32-G5-D128-F1-V10-C10", GPUS, MODELS)
    assert issues[0].key == "custom" and "kv_heads" in issues[0].message


def test_a_layout_longer_than_200_characters_round_trips():
    """The app writes layouts up to 2,000 characters; the reader used to reject > 200."""
    from planner.prompts.layout import Block, Layout, encode

    layout = encode(Layout(blocks=tuple(Block(kind="system", tokens=100 + i, variability="stable") for i in range(40))))
    assert len(layout) > 200
    s = Scenario(layout=layout)
    back, issues = from_query(to_query_string(s))
    assert issues == [] and back.layout == layout


def test_a_link_over_the_limit_is_cut_between_parameters_and_names_what_it_dropped():
    """`…&batch=4000` at the 20,000-character mark used to be read as batch=40."""
    filler = "layout=" + "t:1:s|" * 300  # a valid key, long value
    link = "&".join([f"zz{i}=1" for i in range(2_400)]) + "&" + filler[:100] + "&batch=4000"
    assert len(link) > 20_000
    s, issues = from_query(link)
    assert s.batch == 32  # not 40: batch was not read at all
    fatal = [i.message for i in issues if i.fatal]
    assert fatal and "batch" in fatal[0] and "longer than 20,000 characters" in fatal[0]
    # the dashboard's mapping follows the same rule
    s2, issues2 = from_query({f"zz{i}": "1" for i in range(3_000)} | {"batch": "4000"})
    assert s2.batch == 32 and any("batch" in i.message and i.fatal for i in issues2)


@pytest.mark.parametrize("raw", ["１２", "1_000", "12 ", "0x10", "٣"])
def test_numbers_are_plain_ascii(raw):
    s, issues = from_query({"batch": raw})
    assert s.batch == 32 and issues[0].fatal and "not an integer (ASCII digits, e.g. 32)" in issues[0].message


@pytest.mark.parametrize(
    "raw, ok", [("0.5", True), (".5", True), ("1e-1", True), ("1.", True), ("0,5", False), ("½", False)]
)
def test_float_syntax(raw, ok):
    s, issues = from_query({"alpha": raw})
    assert (issues == []) is ok


def test_layout_keys_round_trip_and_name_their_ranges():
    """Issue 15's keys: pp, ep, dp, eplb, ep_imbalance, redundant_experts, tbo."""
    s, issues = from_query("pp=2&ep=16&dp=16&eplb=0&ep_imbalance=1.5&redundant_experts=32&tbo=1", GPUS, MODELS)
    assert not issues
    assert (s.pp, s.ep, s.dp, s.eplb, s.ep_imbalance, s.redundant_experts, s.tbo) == (2, 16, 16, False, 1.5, 32, True)
    back, _ = from_query(to_query_string(s), GPUS, MODELS)
    assert back == s
    _, bad = from_query("pp=0&dp=9999&ep_imbalance=0.5", GPUS, MODELS)
    msgs = {i.key: i.message for i in bad}
    assert "[1, 64]" in msgs["pp"] and "[1, 256]" in msgs["dp"] and "[1.0, 64.0]" in msgs["ep_imbalance"]


def test_a_fleet_of_more_than_256_replicas_round_trips_and_its_bound_is_named():
    """2,000 requests/s of the 70B at 4,000/500 tokens is ~1,354 MI355X replicas: the search's answer link must
    parse (it once failed 'replicas: Input should be less than or equal to 256' for every router)."""
    from planner.model.scenario import MAX_REPLICAS

    s, issues = from_query("model=llama-3.1-70b&prompt=4000&output=500&rate=2000&replicas=1354&prefill_replicas=300")
    assert not issues and s.replicas == 1354 and s.prefill_replicas == 300
    again, issues = from_query(to_query_string(s))
    assert not issues and again.replicas == 1354
    _, issues = from_query(f"replicas={MAX_REPLICAS + 1}")
    assert [i.key for i in issues if i.fatal] == ["replicas"]
    assert str(MAX_REPLICAS) in str(issues[0]).replace(",", ""), issues
