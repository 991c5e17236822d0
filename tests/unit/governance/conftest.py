"""Fixtures for governance tests: an open database and the governance parts over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.governance.ledger import Ledger
from stockade.governance.trajectory import Trajectory
from stockade.store import Database, open_database


class FakeClock:
    """A settable millisecond clock (starts 2026-11-30T12:00:00Z)."""

    def __init__(self, start_ms: int = 1_796_040_000_000) -> None:
        self.now = start_ms

    def __call__(self) -> int:
        return self.now


class DictSecrets:
    """A SecretStore kept in a dict (stands in for the keyring)."""

    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def get_secret(self, name: str) -> str | None:
        return self.items.get(name)

    def set_secret(self, name: str, value: str) -> None:
        self.items[name] = value


@pytest.fixture
def db(stockade_home: Path) -> Iterator[Database]:
    database = open_database()
    yield database
    database.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def trajectory(db: Database, clock: FakeClock) -> Trajectory:
    return Trajectory(db, clock)


@pytest.fixture
def ledger(db: Database, clock: FakeClock) -> Ledger:
    return Ledger(db, clock)


@pytest.fixture
def secrets() -> DictSecrets:
    return DictSecrets()
