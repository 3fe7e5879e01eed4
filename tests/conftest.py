"""Shared fixtures: the shipped catalog, loaded once per session."""

from __future__ import annotations

import pytest

from planner.model.catalog import load_catalog


@pytest.fixture(scope="session")
def catalog():
    cat = load_catalog()
    assert not cat.problems, cat.problems
    return cat
