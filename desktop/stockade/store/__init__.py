"""The SQLite database (WAL, versioned migrations); all of Stockade's SQL lives in this package."""

from stockade.store.database import (
    ConflictError,
    Database,
    NotFoundError,
    StoreError,
    database_path,
    open_database,
)

__all__ = ["ConflictError", "Database", "NotFoundError", "StoreError", "database_path",
           "open_database"]
