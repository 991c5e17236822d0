"""Which store to open: the team's PostgreSQL database when a URL is configured, else the file.

`STOCKADE_DATABASE_URL` wins over `database_url` in settings (a headless run can point at the
team database without editing settings). With neither, Stockade uses the SQLite file in the
data folder and never imports the PostgreSQL driver.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from stockade.store.database import open_database
from stockade.store.interface import Store

if TYPE_CHECKING:
    from stockade.store.postgres.target import DatabaseTarget

DATABASE_URL_ENV = "STOCKADE_DATABASE_URL"


def configured_database_url(settings_url: str | None) -> str | None:
    """The team database URL in force, or None for the SQLite file."""
    from_env = os.environ.get(DATABASE_URL_ENV, "").strip()
    if from_env:
        return from_env
    return settings_url.strip() if settings_url and settings_url.strip() else None


def describe_configured(settings_url: str | None) -> str:
    """What the configured store is, without connecting (the About dialog)."""
    url = configured_database_url(settings_url)
    if url is None:
        from stockade.store.database import database_path

        return f"{database_path()} (SQLite)"
    from stockade.store.postgres.target import parse_database_url

    try:
        target = parse_database_url(url)
    except Exception as exc:
        return f"team database (not usable: {exc})"
    return f"{target.display} (PostgreSQL, team mode)"


def open_store(database_url: str | None, *,
               password: Callable[[DatabaseTarget], str | None] | None = None) -> Store:
    """Open (the SQLite file is created and migrated) the store `database_url` names."""
    if database_url is None:
        return open_database()
    from stockade.store.postgres.database import open_postgres
    from stockade.store.postgres.target import parse_database_url

    return open_postgres(parse_database_url(database_url), password=password)
