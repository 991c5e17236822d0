"""Fixtures for governance tests: an open database and the governance parts over it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from stockade.governance.ledger import Ledger
from stockade.governance.trajectory import Trajectory
from stockade.store import MemberKind, Store, open_database
from stockade.store.postgres.database import PermissionDenied, StoreIntegrityError

REFUSED = (sqlite3.IntegrityError, StoreIntegrityError, PermissionDenied)
"""What either store raises when a trigger, constraint or privilege refuses raw SQL."""


SQLITE_FILE_ONLY = pytest.mark.parametrize("db", ["sqlite"], indirect=True)
"""For tests that go around the store through the SQLite file itself (dropping its triggers,
holding its lock from another connection); `tests/unit/store/test_team_store.py` does the
same to a team database as its owner would."""


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


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, stockade_home: Path) -> Iterator[Store]:
    """The same governance tests against both stores: the SQLite file, and a fresh team on
    the test PostgreSQL server (an analyst's connection)."""
    if request.param == "sqlite":
        database: Store = open_database()
        yield database
        database.close()
        return
    from tests.helpers.teams import new_team

    team = new_team(request.getfixturevalue("postgres_server"))
    yield team.open(team.role(MemberKind.ANALYST))
    team.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def trajectory(db: Store, clock: FakeClock) -> Trajectory:
    return Trajectory(db, clock)


@pytest.fixture
def ledger(db: Store, clock: FakeClock) -> Ledger:
    return Ledger(db, clock)


@pytest.fixture
def secrets() -> DictSecrets:
    return DictSecrets()
