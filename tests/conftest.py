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
