"""The layout checker's own contracts: the split from the layout model, TTL choice, findings' wording."""

from __future__ import annotations

import subprocess
import sys

import pytest

from planner.engine.evaluate import evaluate
from planner.model.scenario import Scenario
from planner.prompts.layout import decode
from planner.prompts.layout_report import (
    MINUTES_PER_DAY,
    MINUTES_PER_MONTH,
    TTL_MATERIAL_FRAC,
    Traffic,
    analyse,
    other_ttl,
    ttl_is_better,
)
from tests.paths import ROOT


@pytest.fixture(scope="module")
def x(catalog):
    return evaluate(Scenario(), catalog).inputs


def finding(report, code):
    return next(f for f in report.findings if f.code == code)


def test_the_layout_model_does_not_need_the_engine():
    code = (
        "import sys; import planner.prompts.layout as layout; "
        "layout.decode(layout.DEFAULT_LAYOUT); "
        "assert not [m for m in sys.modules if m.startswith('planner.engine')], 'engine imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_minutes():
    assert MINUTES_PER_DAY == 1440.0
    assert MINUTES_PER_MONTH == 30 * 1440.0


def test_ttl_choice():
    assert other_ttl("5m") == "1h" and other_ttl("1h") == "5m"
    assert ttl_is_better("5m", 1.0, 1.0)  # 5 m whenever it costs no more
    assert not ttl_is_better("1h", 1.0 - TTL_MATERIAL_FRAC / 2, 1.0)  # 1 h only for a material saving
    assert ttl_is_better("1h", 0.98, 1.0)


def test_findings_format_numbers_with_planner_format(x):
    # per-user prefix: the hit rate reads like every other percentage ("99.6%", no space)
    rep = analyse(decode("s:3000:u:*|m:200:r"), x, "5m", Traffic(rpm=60.0, users=1, request_duration_s=0.0))
    assert "(hit rate 100.0%)" in finding(rep, "narrow_prefix").message
    small = analyse(decode("s:800:s:*|m:1:r:*"), x, "5m", Traffic(rpm=60.0, users=1, request_duration_s=0.0))
    assert "caches a 800-token prefix, below the model's minimum of 1,024" in finding(small, "below_minimum").message
    assert "(messages, 1 token)" in finding(small, "breakpoint_after_varying").message
    sparse = analyse(decode("s:5000:s:*|m:200:r"), x, "5m", Traffic(rpm=0.5, users=1, request_duration_s=0.0))
    message = finding(sparse, "ttl_mismatch").message
    assert message.startswith("At 0.500 requests/min this layout costs $")
    assert "/month with a 1h TTL against $" in message
    idle = analyse(decode("s:5000:s:*|m:200:r"), x, "5m", Traffic(rpm=60.0, users=1, request_duration_s=300.0))
    assert "hits 0.0% of the time, below the break-even 21.7% for a 5m TTL" in finding(idle, "below_break_even").message
