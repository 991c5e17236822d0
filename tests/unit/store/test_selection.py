"""Which store is used: the SQLite file unless a team database URL is configured; what the
About dialog and the diagnostics report say about it."""

from __future__ import annotations

from pathlib import Path

import pytest

from stockade.diagnostics import about_facts
from stockade.settings import Settings, save_settings
from stockade.store.selection import configured_database_url, describe_configured


def test_the_sqlite_file_is_the_default_and_needs_nothing(stockade_home: Path) -> None:
    assert configured_database_url(None) is None
    facts = about_facts()
    assert facts.store_description == f"{stockade_home / 'stockade.db'} (SQLite)"
    assert not facts.team_store


def test_the_environment_wins_over_settings_and_about_names_the_team_database(
    stockade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    save_settings(Settings(database_url="postgresql://ana@settings.example/stockade"))
    assert about_facts().store_description == \
        "postgresql://ana@settings.example/stockade (PostgreSQL, team mode)"
    monkeypatch.setenv("STOCKADE_DATABASE_URL", "postgresql://lead@env.example:6432/teamdb")
    assert configured_database_url("postgresql://ana@settings.example/stockade") == \
        "postgresql://lead@env.example:6432/teamdb"
    facts = about_facts()
    assert facts.team_store
    assert facts.store_description == \
        "postgresql://lead@env.example:6432/teamdb (PostgreSQL, team mode)"


def test_a_service_file_url_is_described_by_its_service(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOCKADE_DATABASE_URL", "service=redteam")
    assert describe_configured(None) == "service=redteam (PostgreSQL, team mode)"


def test_an_unusable_url_is_described_without_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("STOCKADE_DATABASE_URL", "postgresql://ana:hunter2@db.example/stockade")
    text = describe_configured(None)
    assert "not usable" in text and "hunter2" not in text
