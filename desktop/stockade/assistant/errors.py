"""The errors a front end catches from the assistant layer (it never imports the store itself)."""

from __future__ import annotations

import sqlite3

from stockade.governance.pricebook import PriceBookError
from stockade.governance.runstate import DocumentChanged
from stockade.governance.sealing import PassphraseRequired, SealError
from stockade.governance.trajectory import TrajectoryError
from stockade.loop.serialize import SnapshotError
from stockade.store import ConflictError, NotFoundError, StoreError
from stockade.store.database import as_store_error, database_path


class ParkUnavailable(Exception):
    """A waiting turn cannot be saved for later; the message says why and what to do."""


REFUSALS: tuple[type[Exception], ...] = (
    StoreError, SealError, SnapshotError, PriceBookError, ParkUnavailable, sqlite3.DatabaseError,
    TrajectoryError,
)
"""Everything the service raises for a reason a user can act on. `ConflictError`,
`NotFoundError` and `DocumentChanged` are `StoreError`s; a damaged database file surfaces as
`sqlite3.DatabaseError` from a read (`failure_text` words it); `TrajectoryError` says why the
audit trail could not record a step (a keyed trail whose key is not available here)."""


def failure_text(exc: BaseException) -> str:
    """One authored line for a refusal (a database fault says which file and what to do)."""
    if isinstance(exc, sqlite3.DatabaseError):
        return str(as_store_error(exc, database_path()))
    text = str(exc).strip()
    return text or type(exc).__name__

__all__ = [
    "REFUSALS",
    "ConflictError",
    "DocumentChanged",
    "NotFoundError",
    "ParkUnavailable",
    "PassphraseRequired",
    "PriceBookError",
    "SealError",
    "SnapshotError",
    "StoreError",
    "failure_text",
]
