"""The governance services over one open store: trajectory, ledger, run state, price book."""

from __future__ import annotations

import time
from collections.abc import Callable

from stockade.governance.chain import AuditKeys, ChainKey
from stockade.governance.ledger import Ledger
from stockade.governance.pricebook import PriceBook, load_price_book
from stockade.governance.runstate import RunStates
from stockade.governance.sealing import SecretStore, SnapshotKeys
from stockade.governance.teamchain import anchor_for, marker_for
from stockade.governance.trajectory import Trajectory
from stockade.store import Store, StoreIdentity
from stockade.store.postgres.target import DatabaseTarget
from stockade.store.selection import configured_database_url, open_store


def wall_clock_ms() -> int:
    """The one clock governance records time by (milliseconds since the epoch)."""
    return time.time_ns() // 1_000_000


class Governance:
    """The governance services over one open database (used from one thread only)."""

    def __init__(self, db: Store, *, price_book: PriceBook | None = None,
                 secrets: SecretStore | None = None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self.db = db
        self.identity: StoreIdentity = db.identity()
        self.clock_ms = clock_ms or wall_clock_ms
        self.price_book = price_book or load_price_book()
        self.keys = _snapshot_keys(secrets, self.identity)
        # On a team store the audit key derives from the team's key, so every member who holds
        # it appends to and verifies the one team chain; its head lives in the team database.
        self.trajectory = Trajectory(
            db, self.clock_ms, keys=AuditKeys(self.keys) if self.keys is not None else None,
            anchor=anchor_for(db), marker=marker_for(db, secrets))
        self.ledger = Ledger(db, self.clock_ms)
        self.runs = RunStates(db, self.trajectory, self.ledger, self.keys, self.clock_ms)

    def close(self) -> None:
        self.db.close()


def _snapshot_keys(secrets: SecretStore | None, identity: StoreIdentity) -> SnapshotKeys | None:
    if secrets is None:
        return None
    if identity.is_team and identity.team is not None:
        from stockade.governance.teamkeys import TeamSnapshotKeys

        return TeamSnapshotKeys(secrets, identity.team)
    return SnapshotKeys(secrets)


def store_database_url() -> str | None:
    """The team database URL in force (`STOCKADE_DATABASE_URL`, else settings), or None."""
    from stockade.settings import load_settings

    return configured_database_url(load_settings().database_url)


def open_configured_store(secrets: SecretStore | None = None) -> Store:
    """The store settings name: the team's PostgreSQL database, else the SQLite file.

    A team role's password comes from the keyring when it holds one for that database (saved
    with `stockade keys set-database-password`); otherwise libpq looks in the service file
    and the password file (`PGPASSFILE`, `~/.pgpass`) as it always does.
    """
    url = store_database_url()
    if url is None:
        return open_store(None)

    def password(target: DatabaseTarget) -> str | None:
        if secrets is None:
            return None
        try:
            return secrets.get_secret(target.password_secret)
        except Exception:  # an unreadable keyring: libpq's own sources may still have it
            return None

    return open_store(url, password=password)


def open_governance(*, secrets: SecretStore | None = None, recover: bool = True,
                    clock_ms: Callable[[], int] | None = None) -> Governance:
    """Open the store (migrating the SQLite file) and, by default, recover runs a crash left
    mid-step.

    `secrets` defaults to the keyring-backed `stockade.secrets.KeyStore`.
    """
    if secrets is None:
        from stockade.secrets import KeyStore

        secrets = KeyStore()
    gov = Governance(open_configured_store(secrets), secrets=secrets, clock_ms=clock_ms)
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
