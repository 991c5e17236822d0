"""The team store on PostgreSQL (psycopg 3): teams, roles, row-level security (see DESIGN.md)."""

from stockade.store.postgres.database import (
    PermissionDenied,
    PgConnection,
    PostgresDatabase,
    StoreIntegrityError,
    open_postgres,
)
from stockade.store.postgres.target import (
    DatabaseTarget,
    DatabaseUrlError,
    parse_database_url,
)

__all__ = [
    "DatabaseTarget",
    "DatabaseUrlError",
    "PermissionDenied",
    "PgConnection",
    "PostgresDatabase",
    "StoreIntegrityError",
    "open_postgres",
    "parse_database_url",
]
