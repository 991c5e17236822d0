"""Fixtures for loop tests: the generic and injection tool sets."""

from __future__ import annotations

import pytest

from stockade.loop.state import ToolSet
from tests.unit.loop.fakes import generic_tools, injection_tools


@pytest.fixture
def generic() -> ToolSet:
    return generic_tools()


@pytest.fixture
def inj() -> ToolSet:
    return injection_tools()
