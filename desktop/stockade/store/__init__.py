"""Stockade's stores: the SQLite file (default) and a team's PostgreSQL database; all SQL lives here."""

from stockade.store.database import (
    ConflictError,
    Database,
    NotFoundError,
    StoreError,
    database_path,
    open_database,
)
from stockade.store.interface import (
    MemberKind,
    Store,
    StoreIdentity,
    StoreKind,
    TeamWallet,
)

__all__ = ["ConflictError", "Database", "MemberKind", "NotFoundError", "Store", "StoreError",
           "StoreIdentity", "StoreKind", "TeamWallet", "database_path", "open_database"]
