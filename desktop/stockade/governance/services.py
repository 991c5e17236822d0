"""The governance services over one open database: trajectory, ledger, run state, price book."""

from __future__ import annotations

import time
from collections.abc import Callable

from stockade.governance.chain import AuditKeys, ChainKey, KeyringMarker
from stockade.governance.ledger import Ledger
from stockade.governance.pricebook import PriceBook, load_price_book
from stockade.governance.runstate import RunStates
from stockade.governance.sealing import SecretStore, SnapshotKeys
from stockade.governance.trajectory import Trajectory
from stockade.store import Database, open_database


def wall_clock_ms() -> int:
    """The one clock governance records time by (milliseconds since the epoch)."""
    return time.time_ns() // 1_000_000


class Governance:
    """The governance services over one open database (used from one thread only)."""

    def __init__(self, db: Database, *, price_book: PriceBook | None = None,
                 secrets: SecretStore | None = None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self.db = db
        self.clock_ms = clock_ms or wall_clock_ms
        self.price_book = price_book or load_price_book()
        self.keys = SnapshotKeys(secrets) if secrets is not None else None
        self.trajectory = Trajectory(
            db, self.clock_ms, keys=AuditKeys(self.keys) if self.keys is not None else None,
            marker=KeyringMarker(secrets, db.path) if secrets is not None else None)
        self.ledger = Ledger(db, self.clock_ms)
        self.runs = RunStates(db, self.trajectory, self.ledger, self.keys, self.clock_ms)

    def close(self) -> None:
        self.db.close()


def open_governance(*, secrets: SecretStore | None = None, recover: bool = True,
                    clock_ms: Callable[[], int] | None = None) -> Governance:
    """Open the database (migrating it) and, by default, recover runs a crash left mid-step.

    `secrets` defaults to the keyring-backed `stockade.secrets.KeyStore`.
    """
    if secrets is None:
        from stockade.secrets import KeyStore

        secrets = KeyStore()
    gov = Governance(open_database(), secrets=secrets, clock_ms=clock_ms)
    if recover:
        gov.runs.recover_interrupted()
    return gov


def machine_audit_key(secrets: SecretStore | None = None) -> ChainKey | None:
    """This machine's audit key (keyring or `STOCKADE_SNAPSHOT_KEY`), without opening the
    database: checking an exported trail needs no data folder."""
    if secrets is None:
        from stockade.secrets import KeyStore

        secrets = KeyStore()
    return AuditKeys(SnapshotKeys(secrets)).existing()
