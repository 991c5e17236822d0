"""The one SQLite database: opening, pragmas, write transactions and the clear error for a bad file."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from stockade.paths import data_dir
from stockade.store.interface import CommitHook, Connection, StoreIdentity, StoreKind, TeamWallet
from stockade.store.migrations import MIGRATIONS, Migration

DATABASE_NAME = "stockade.db"
# How long a writer waits for another process (the app or the CLI) to finish its transaction.
BUSY_TIMEOUT_MS = 10_000


class StoreError(Exception):
    """The database could not be opened or used; `path` names the file and the message a way out."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


class ConflictError(StoreError):
    """A compare-and-swap lost, or a row was not in the state the operation needs."""


class NotFoundError(StoreError):
    """The row the operation names does not exist."""


def database_path() -> Path:
    """Where `stockade.db` lives: the data folder (`$STOCKADE_HOME` when set)."""
    return data_dir() / DATABASE_NAME


class Database:
    """One connection per thread to `stockade.db`; writers go through `write()` (BEGIN IMMEDIATE).

    `synchronous=NORMAL` in WAL mode makes every commit durable against an application crash
    (kill -9 included); only an OS crash or power loss can lose the last few commits. That is
    the trade we take for >1,000 audited appends per second on ordinary disks.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    # -- connections -------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()

    # -- transactions ------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front, so it never deadlocks midway.

        Hooks registered with `transaction_hook` run `before_commit` once each, in order, after
        the body and before COMMIT, while the write lock is still held; if one raises, or the
        commit fails, the transaction is rolled back and each hook's `after_rollback` runs.
        """
        conn = self.connection()
        if conn.in_transaction:
            raise StoreError("nested write transactions are not supported", self.path)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise as_store_error(exc, self.path) from None
        hooks: dict[str, CommitHook] = {}
        self._local.hooks = hooks
        try:
            try:
                yield conn
                for hook in hooks.values():
                    hook.before_commit()
            except BaseException:
                conn.rollback()
                _after_rollback(hooks)
                raise
            try:
                conn.execute("COMMIT")
            except sqlite3.DatabaseError as exc:
                conn.rollback()
                _after_rollback(hooks)
                raise as_store_error(exc, self.path) from None
        finally:
            self._local.hooks = None

    def transaction_hook(self, name: str, factory: Callable[[], CommitHook]) -> CommitHook:
        """The hook called `name` of the open write transaction, made by `factory` if new."""
        hooks: dict[str, CommitHook] | None = getattr(self._local, "hooks", None)
        if hooks is None:
            raise StoreError("a transaction hook needs an open write transaction", self.path)
        hook = hooks.get(name)
        if hook is None:
            hook = hooks[name] = factory()
        return hook

    def read(self) -> sqlite3.Connection:
        """The thread's connection, for single-statement reads (autocommit)."""
        return self.connection()

    def schema_version(self) -> int:
        row = self.read().execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0] or 0)

    # -- the store interface (`stockade.store.interface.Store`) ---------------------------------

    def in_write_transaction(self) -> bool:
        return getattr(self._local, "hooks", None) is not None

    kind = StoreKind.SQLITE

    def identity(self) -> StoreIdentity:
        return StoreIdentity(StoreKind.SQLITE, str(self.path))

    def explain(self, exc: Exception) -> Exception:
        return as_store_error(exc, self.path) if isinstance(exc, sqlite3.DatabaseError) else exc

    def team_wallet(self, conn: Connection) -> TeamWallet | None:
        return None  # one user's file: the wallet limits are the settings' own

    def committed_by_me(self, conn: Connection, *, day_key: str,
                        month_key: str) -> tuple[int, int]:
        from stockade.store.reservations import committed_for_day, committed_for_month

        return committed_for_day(conn, day_key), committed_for_month(conn, month_key)


def _after_rollback(hooks: dict[str, CommitHook]) -> None:
    for hook in hooks.values():
        hook.after_rollback()


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves so writers can use IMMEDIATE.
        # One connection per thread (see `Database.connection`); check_same_thread is off only
        # so `close()` may run from whichever thread shuts the app down.
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                               check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # Switching a new file to WAL needs an exclusive lock, and SQLite reports BUSY at once
        # (no busy handler) when another process is doing the same; retry until the timeout.
        _retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"))
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        raise as_store_error(exc, path) from None
    return conn


def _retry_busy(step: Callable[[], object]) -> None:
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def as_store_error(exc: sqlite3.DatabaseError, path: Path) -> StoreError:
    """Turn a sqlite3 error into a `StoreError` whose message says what to do."""
    text = str(exc).lower()
    if "not a database" in text or "malformed" in text or "file is encrypted" in text:
        return StoreError(
            f"The Stockade database is damaged or is not a database file. Move it aside "
            f"(for example rename it to {path.name}.broken) and start again; a new empty "
            f"database will be created. File: {path}",
            path,
        )
    if "locked" in text or "busy" in text:
        return StoreError(
            f"The Stockade database is busy in another process for longer than "
            f"{BUSY_TIMEOUT_MS // 1000} s; close other Stockade windows or commands and retry. "
            f"File: {path}",
            path,
        )
    if "readonly" in text or "unable to open" in text:
        return StoreError(
            f"The Stockade database cannot be opened for writing; check the folder's "
            f"permissions. File: {path}",
            path,
        )
    return StoreError(f"The Stockade database failed: {exc}. File: {path}", path)


def _apply(conn: sqlite3.Connection, migration: Migration) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        # Re-check inside the write lock: another process may have migrated meanwhile.
        row = conn.execute("SELECT 1 FROM schema_version WHERE version = ?",
                           (migration.version,)).fetchone()
        if row is None:
            for statement in migration.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_version(version, name, applied_at) "
                "VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (migration.version, migration.name),
            )
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback()
        raise


def open_database(path: Path | None = None) -> Database:
    """Open (creating if needed) and migrate the database; a bad file raises `StoreError`."""
    target = path or database_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    db = Database(target)
    try:
        conn = db.connection()
        _retry_busy(lambda: conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        ))
        applied = {int(r[0]) for r in conn.execute("SELECT version FROM schema_version")}
        newest = max((m.version for m in MIGRATIONS), default=0)
        if applied and max(applied) > newest:
            raise StoreError(
                f"The Stockade database was written by a newer version (schema "
                f"{max(applied)}, this build knows {newest}); update Stockade or move the file "
                f"aside. File: {target}",
                target,
            )
        for migration in MIGRATIONS:
            if migration.version not in applied:
                _apply(conn, migration)
    except sqlite3.DatabaseError as exc:
        db.close()
        raise as_store_error(exc, target) from None
    except StoreError:
        db.close()
        raise
    return db
