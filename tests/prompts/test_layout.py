"""Prompt layout checker: encoding, prefix rules, TTL-from-start, costs, suggestion."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.evaluate import evaluate
from planner.errors import LayoutError
from planner.model.api_pricing import DEFAULT_MIN_CACHEABLE_TOKENS
from planner.model.scenario import Scenario
from planner.prompts.layout import (
    DEFAULT_LAYOUT,
    KINDS,
    MAX_BREAKPOINTS,
    VARIABILITIES,
    Block,
    Layout,
    LayoutSettings,
    decode,
    encode,
    layout_frame,
    layout_from_frame,
)
from planner.prompts.layout_report import (
    MINUTES_PER_DAY,
    MINUTES_PER_MONTH,
    Traffic,
    analyse,
    block_hit_rates,
)
from planner.prompts.layout_suggest import suggest

P_IN = 5e-6  # Scenario defaults: $5 / $25 per million tokens
P_OUT = 25e-6
OUTPUT = 256


@pytest.fixture(scope="module")
def x(catalog):
    """Default scenario's engine inputs: Llama-3.1-8B, H100, minimum 1,024 tokens."""
    return evaluate(Scenario(), catalog).inputs


def codes(found) -> list[str]:
    return [f.code for f in found.findings]


# ---------------------------------------------------------------- encoding

blocks_st = st.builds(
    Block,
    kind=st.sampled_from(KINDS),
    tokens=st.integers(1, 200_000),
    variability=st.sampled_from(VARIABILITIES),
    breakpoint=st.booleans(),
)
settings_st = st.builds(
    LayoutSettings,
    rpm=st.none() | st.floats(0, 1e6, allow_nan=False),
    users=st.integers(1, 10**9),
    dur_s=st.none() | st.floats(1e-3, 86_400, allow_nan=False),
    auto=st.booleans(),
)
layouts_st = st.builds(Layout, blocks=st.lists(blocks_st, min_size=1, max_size=12).map(tuple), settings=settings_st)


@given(layouts_st)
def test_encode_decode_round_trip(layout):
    text = encode(layout)
    assert len(text) <= 2000
    Scenario(layout=text)  # the link field accepts it (pattern and length)
    assert decode(text) == layout


def test_encoding_is_compact_and_readable():
    layout = Layout(
        blocks=(
            Block(kind="tools", tokens=1500, variability="stable"),
            Block(kind="system", tokens=4000, variability="stable", breakpoint=True),
            Block(kind="messages", tokens=300, variability="per_request"),
        ),
        settings=LayoutSettings(rpm=60, users=200, auto=True),
    )
    assert encode(layout) == "t:1500:s|s:4000:s:*|m:300:r;rpm:60,users:200,auto:1"
    assert decode("tools:1500:stable|system:4000:stable:*|messages:300:per_request;rpm:60,users:200,auto:1") == layout


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("t:1500:s|s:abc:s", "block 2 ('s:abc:s'): tokens 'abc' is not a whole number"),
        ("t:1500:s|x:10:s", "block 2 ('x:10:s'): kind 'x'"),
        ("t:1500:s|s:10:q", "block 2 ('s:10:q'): variability 'q'"),
        ("t:1500:s|s:10", "block 2 ('s:10'): expected kind:tokens:variability[:*], found 2 field(s)"),
        ("t:1500:s:+", "block 1 ('t:1500:s:+'): breakpoint field '+'"),
        ("t:0:s", "block 1 ('t:0:s'): tokens: input should be greater than or equal to 1"),
        ("t:10:s;rpm:-1", "setting 'rpm': input should be greater than or equal to 0"),
        ("t:10:s;users:0", "setting 'users': input should be greater than or equal to 1"),
        ("t:10:s;auto:2", "setting 'auto': '2' must be 0 or 1"),
        ("t:10:s;speed:3", "setting 'speed:3'"),
        ("t:10:s;rpm:1,rpm:2", "setting 'rpm': given twice"),
        ("t:6000000:s|s:6000000:s", "layout: value: value error, total tokens 12,000,000 exceed 10,000,000"),
        ("", "layout: no blocks"),
    ],
)
def test_decode_errors_name_block_and_field(text, expected):
    with pytest.raises(LayoutError) as err:
        decode(text)
    assert any(p.startswith(expected) for p in err.value.problems), err.value.problems


def test_decode_reports_every_bad_block():
    with pytest.raises(LayoutError) as err:
        decode("t:1:s|q:1:s|t:z:s")
    assert [p.split(" (")[0] for p in err.value.problems] == ["block 2", "block 3"]


def test_frame_round_trip_and_errors():
    layout = decode("t:1500:s|s:4000:s:*|m:300:r;rpm:20")
    assert layout_from_frame(layout_frame(layout), layout.settings) == layout
    bad = layout_frame(layout)
    bad.loc[1, "tokens"] = None
    bad.loc[2, "variability"] = "hourly"
    with pytest.raises(LayoutError) as err:
        layout_from_frame(bad, layout.settings)
    assert err.value.problems[0] == "block 2: tokens missing"
    assert err.value.problems[1].startswith("block 3: variability:")


# ---------------------------------------------------------------- prefix rules


def traffic(rpm=60.0, users=1, dur=0.0) -> Traffic:
    return Traffic(rpm=rpm, users=users, request_duration_s=dur)


def test_varying_block_before_breakpoint_caps_the_prefix(x):
    rep = analyse(decode("s:3000:s|s:50:r:*|m:200:r"), x, "5m", traffic())
    bp = rep.breakpoints_frame.iloc[0]
    assert bp["prefix_tokens"] == 3050
    assert bp["reusable_prefix_tokens"] == 3000  # ends at the varying block
    assert bp["cache_hit_rate"] == 0.0
    assert "breakpoint_after_varying" in codes(rep)
    # every request writes the whole prefix at 1.25x and reads nothing
    assert rep.read_tokens == 0 and rep.written_tokens == 3050
    assert rep.cost_per_request_usd == pytest.approx((3050 * 1.25 + 200) * P_IN + OUTPUT * P_OUT)
    assert rep.cost_per_request_usd > rep.nocache_cost_per_request_usd
    assert rep.ttft_saved_s == 0.0


def test_breakpoint_before_the_varying_block_is_read(x):
    rep = analyse(decode("s:3000:s:*|s:50:r|m:200:r"), x, "5m", traffic(rpm=60))
    h = 1 - math.exp(-1.0 * 300)  # one request per second, whole 5-minute window
    assert rep.breakpoints_frame.iloc[0]["cache_hit_rate"] == pytest.approx(h)
    assert rep.read_tokens == pytest.approx(3000 * h)
    assert not [f for f in rep.findings if f.severity == "error"]
    assert rep.ttft_saved_s > 0
    assert rep.cost_per_month_usd == pytest.approx(rep.cost_per_request_usd * 60 * MINUTES_PER_MONTH)


def test_prefix_below_minimum_is_silently_ignored(x):
    assert x.min_cacheable_tokens == DEFAULT_MIN_CACHEABLE_TOKENS  # no preset minimum for Llama
    rep = analyse(decode("s:800:s:*|m:200:r"), x, "5m", traffic())
    assert "below_minimum" in codes(rep)
    assert not rep.breakpoints_frame.iloc[0]["above_minimum"]
    assert rep.read_tokens == 0 and rep.written_tokens == 0
    assert rep.cost_per_request_usd == pytest.approx(rep.nocache_cost_per_request_usd)


def test_scenario_minimum_overrides_the_default(catalog):
    x4k = evaluate(Scenario(min_prefix=4096), catalog).inputs
    rep = analyse(decode("s:3000:s:*|m:200:r"), x4k, "5m", traffic())
    assert rep.min_cacheable_tokens == 4096
    assert "below_minimum" in codes(rep)


@pytest.mark.parametrize(
    ("text", "valid"),
    [
        ("s:2000:s:*|s:2000:s:*|s:2000:s:*|s:2000:s:*|m:10:r", True),
        ("s:2000:s:*|s:2000:s:*|s:2000:s:*|s:2000:s:*|m:10:r:*", False),
        ("s:2000:s:*|s:2000:s:*|s:2000:s:*|s:2000:s:*|m:10:r;auto:1", False),  # automatic caching takes a slot
        ("s:2000:s:*|s:2000:s:*|s:2000:s:*|s:2000:s|m:10:r;auto:1", True),
    ],
)
def test_breakpoint_limit(x, text, valid):
    rep = analyse(decode(text), x, "5m", traffic())
    assert rep.valid is valid
    assert ("too_many_breakpoints" in codes(rep)) is (not valid)
    assert (rep.cost_per_request_usd is None) is (not valid)
    assert len(rep.breakpoints_frame) == decode(text).breakpoint_count
    assert MAX_BREAKPOINTS == 4


def test_automatic_caching_marks_the_last_block(x):
    rep = analyse(decode("s:3000:s|m:200:r;auto:1"), x, "5m", traffic())
    bp = rep.breakpoints_frame.iloc[0]
    assert (bp["block"], bp["source"], bp["prefix_tokens"]) == (2, "auto", 3200)
    assert "breakpoint_after_varying" in codes(rep)  # a single-turn request: the last message never repeats


def test_two_breakpoints_hand_computed(x):
    """Stable 2,000 + per-user 1,000 tokens; 0.5 requests/min over 5 users; no duration."""
    rep = analyse(decode("s:2000:s:*|m:1000:u:*|m:100:r"), x, "5m", traffic(rpm=0.5, users=5))
    h1 = 1 - math.exp(-(0.5 / 60) * 300)
    h2 = 1 - math.exp(-(0.1 / 60) * 300)
    read = (h1 - h2) * 2000 + h2 * 3000
    assert rep.read_tokens == pytest.approx(read)
    assert rep.written_tokens == pytest.approx(3000 - read)
    expected = (read * 0.1 + (3000 - read) * 1.25 + 100) * P_IN + OUTPUT * P_OUT
    assert rep.cost_per_request_usd == pytest.approx(expected)
    assert "narrow_prefix" in codes(rep)


def test_block_hit_rates_per_variability():
    t = traffic(rpm=2.0, users=4, dur=60.0)
    h = block_hit_rates(list(VARIABILITIES), t, "5m")
    h_all = 1 - math.exp(-(2.0 / 60) * 240)
    assert h[0] == pytest.approx(h_all)
    assert h[1] == pytest.approx(h_all * (1 - 1 / (2.0 * MINUTES_PER_DAY)))
    assert h[2] == pytest.approx(1 - math.exp(-(0.5 / 60) * 240))
    assert h[3] == 0.0


# ---------------------------------------------------------------- TTL from the start of the request


def test_ttl_counts_from_the_start_of_the_request(x):
    layout = decode("s:5000:s:*|m:200:r")
    quick = analyse(layout, x, "5m", traffic(rpm=1.0, dur=10.0))
    slow = analyse(layout, x, "5m", traffic(rpm=1.0, dur=240.0))  # a four-minute stream
    assert quick.breakpoints_frame.iloc[0]["cache_hit_rate"] == pytest.approx(1 - math.exp(-290 / 60))
    assert slow.breakpoints_frame.iloc[0]["cache_hit_rate"] == pytest.approx(1 - math.exp(-60 / 60))
    gone = analyse(layout, x, "5m", traffic(rpm=1.0, dur=300.0))
    assert gone.breakpoints_frame.iloc[0]["cache_hit_rate"] == 0.0
    assert "below_break_even" in codes(gone)
    assert "ttl_mismatch" in codes(gone)  # 1 h leaves 55 minutes of window


def test_duration_defaults_to_the_engine_latency(x, catalog):
    rep = analyse(decode("s:2048:s:*|m:10:r"), x, "5m")
    engine = evaluate(Scenario(prompt=2058), catalog).metrics["request_latency_s"]
    assert rep.traffic.request_duration_s == pytest.approx(engine)
    assert rep.traffic.rpm == Scenario().rpm  # layout without rpm: the scenario's


@pytest.mark.parametrize(("rpm", "ttl", "better"), [(0.1, "5m", "1h"), (60.0, "1h", "5m")])
def test_ttl_mismatch(x, rpm, ttl, better):
    rep = analyse(decode("s:5000:s:*|m:200:r"), x, ttl, traffic(rpm=rpm))
    found = [f for f in rep.findings if f.code == "ttl_mismatch"]
    assert len(found) == 1 and f"Use the {better} TTL" in found[0].fix
    assert rep.other_ttl_cost_per_request_usd <= rep.cost_per_request_usd  # 60/min: equal, 5m writes cheaper


def test_no_traffic_means_no_reads(x):
    rep = analyse(decode("s:5000:s:*|m:200:r"), x, "5m", traffic(rpm=0.0))
    assert rep.read_tokens == 0
    assert {"no_traffic", "below_break_even"} <= set(codes(rep))


def test_blocks_are_analysed_in_render_order(x):
    rep = analyse(decode("m:200:r|s:5000:s:*"), x, "5m", traffic())
    assert list(rep.blocks_frame["kind"]) == ["system", "messages"]
    assert "render_order" in codes(rep)
    assert "breakpoint_after_varying" not in codes(rep)


# ---------------------------------------------------------------- suggestion


def test_suggestion_fixes_the_default_layout(x):
    layout = decode(DEFAULT_LAYOUT)
    before = analyse(layout, x, "5m")
    after = suggest(layout, x, "5m")
    assert "breakpoint_after_varying" in codes(before)
    assert not [f for f in after.report.findings if f.severity == "error"]
    assert after.report.cost_per_request_usd < before.nocache_cost_per_request_usd < before.cost_per_request_usd
    assert after.report.ttft_saved_s > 0


def test_suggestion_moves_varying_system_text_into_the_messages(x):
    """A timestamp in the system prompt ahead of stable few-shot examples."""
    layout = decode("s:4000:s|s:20:r|m:3000:s:*|m:200:r")
    sug = suggest(layout, x, "5m", traffic())
    got = [(b.kind, b.tokens, b.variability, b.breakpoint) for b in sug.layout.blocks]
    assert got == [
        ("system", 4000, "stable", False),
        ("messages", 3000, "stable", True),
        ("messages", 20, "per_request", False),
        ("messages", 200, "per_request", False),
    ]
    assert any("from system into the messages" in c for c in sug.changes)
    assert sug.report.cost_per_request_usd < analyse(layout, x, "5m", traffic()).cost_per_request_usd


def test_suggestion_fixes_too_many_breakpoints(x):
    layout = decode("t:500:s:*|s:900:s:*|s:800:s:*|m:900:u:*|m:400:r:*")
    sug = suggest(layout, x, "5m", traffic(users=50))
    assert sug.report.valid and sug.layout.breakpoint_count <= MAX_BREAKPOINTS


def test_suggestion_keeps_a_good_layout(x):
    layout = decode("t:1500:s|s:4000:s:*|m:300:r")
    sug = suggest(layout, x, "5m", traffic())
    assert encode(sug.layout) == encode(layout) and sug.ttl == "5m"


traffic_st = st.builds(
    Traffic,
    rpm=st.sampled_from([0.0, 0.05, 0.3, 2.0, 60.0]) | st.floats(0, 1000, allow_nan=False),
    users=st.integers(1, 5000),
    request_duration_s=st.floats(0, 400, allow_nan=False),
)
small_blocks_st = st.builds(
    Block,
    kind=st.sampled_from(KINDS),
    tokens=st.integers(1, 6000),
    variability=st.sampled_from(VARIABILITIES),
    breakpoint=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(
    blocks=st.lists(small_blocks_st, min_size=1, max_size=8),
    auto=st.booleans(),
    tr=traffic_st,
    ttl=st.sampled_from(["5m", "1h"]),
    min_tokens=st.sampled_from([0, 512, 1024, 4096]),
)
def test_suggested_layout_never_costs_more(x, blocks, auto, tr, ttl, min_tokens):
    layout = Layout(blocks=tuple(blocks), settings=LayoutSettings(auto=auto))
    xm = x.with_(min_cacheable_tokens=float(min_tokens))
    given_rep = analyse(layout, xm, ttl, tr)
    sug = suggest(layout, xm, ttl, tr)
    assert sug.report.valid
    assert sug.layout.breakpoint_count <= MAX_BREAKPOINTS
    assert sorted(b.tokens for b in sug.layout.blocks) == sorted(b.tokens for b in blocks)
    if given_rep.valid:
        assert sug.report.cost_per_request_usd <= given_rep.cost_per_request_usd * (1 + 1e-12) + 1e-18
    for value in (sug.report.cost_per_request_usd, sug.report.ttft_s, sug.report.read_tokens):
        assert np.isfinite(value) and value >= 0


def test_layout_frame_columns():
    frame = layout_frame(decode("t:10:s:*"))
    assert list(frame.columns) == ["kind", "tokens", "variability", "breakpoint"]
    assert frame.iloc[0].tolist() == ["tools", 10, "stable", True]
    assert isinstance(frame, pd.DataFrame)
