"""Shared fixtures: the shipped catalog, loaded once per session; the hypothesis profile."""

from __future__ import annotations

import pytest
from hypothesis import settings

from planner.model.catalog import load_catalog

# The suite is a regression gate: property tests draw the same examples every run (CI cannot
# flake on a new random draw); benchmarks/fuzz_long.py explores at random, for longer.
settings.register_profile("suite", derandomize=True, deadline=None)
settings.load_profile("suite")


@pytest.fixture(scope="session")
def catalog():
    cat = load_catalog()
    assert not cat.problems, cat.problems
    return cat


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run the slow tier (tests marked slow)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow tier (minutes): run with `pytest --run-slow` (tests marked slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
