"""Secrets test fixtures: the process-wide session store starts empty for every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from stockade.secrets.keystore import SESSION_KEYS


@pytest.fixture(autouse=True)
def empty_session_keys() -> Iterator[None]:
    SESSION_KEYS.clear()
    yield
    SESSION_KEYS.clear()
