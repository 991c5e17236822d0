"""The store interface governance uses: connections, write transactions and who is connected.

Two implementations: the SQLite file (`stockade.store.database.Database`, the default) and a
team's PostgreSQL database (`stockade.store.postgres.PostgresDatabase`). The SQL in
`store/events.py`, `store/reservations.py` and `store/runs.py` is written once in the subset
both engines run (qmark parameters, `ON CONFLICT`, `RETURNING`, `IS NOT DISTINCT FROM`); the
PostgreSQL connection turns `?` into its own placeholders. On PostgreSQL, row-level security
scopes every statement to the connecting role's team, so the same statements read and write
only that team's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class StoreKind(StrEnum):
    SQLITE = "sqlite"
    POSTGRES = "postgres"


class MemberKind(StrEnum):
    """What a team member's database role may do (granted through a group role)."""

    ANALYST = "analyst"
    """Starts turns, decides the calls of runs it started, resumes any run of the team."""
    APPROVER = "approver"
    """Everything an analyst may do, and decides anyone's parked calls in the team."""
    AUDITOR = "auditor"
    """Reads and verifies the team's trail and exports it; writes nothing."""


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """Which store is open and, for a team store, who the database says we are."""

    kind: StoreKind
    location: str
    """The SQLite file's path, or `postgresql://role@host:port/database` (never a password)."""
    team: str | None = None
    role: str | None = None
    """The authenticated database role (the actor on every decision in team mode)."""
    member_kind: MemberKind | None = None

    @property
    def is_team(self) -> bool:
        return self.kind is StoreKind.POSTGRES


@dataclass(frozen=True, slots=True)
class TeamWallet:
    """A team's shared credit limits (None: no limit), set by the team's administrator."""

    per_day: int | None = None
    per_month: int | None = None
    per_analyst_day: int | None = None
    per_analyst_month: int | None = None


class Cursor(Protocol):
    """The part of a DB-API cursor the store's SQL uses."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """The part of a connection the store's SQL uses (`sqlite3.Connection` has it as is)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Cursor: ...


class CommitHook(Protocol):
    """Work tied to one write transaction (see `Store.transaction_hook`)."""

    def before_commit(self) -> None: ...

    def after_rollback(self) -> None: ...


class Store(Protocol):
    """One open store: per-thread connections, serialized write transactions, identity."""

    @property
    def kind(self) -> StoreKind: ...

    def identity(self) -> StoreIdentity: ...

    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction: writers of one store (SQLite) or one team (PostgreSQL) run one
        after the other, so a check and the write it allows can never interleave with
        another writer's."""
        ...

    def transaction_hook(self, name: str, factory: Callable[[], CommitHook]) -> CommitHook:
        """The hook called `name` of the open write transaction, made by `factory` if new;
        hooks run `before_commit` in order just before COMMIT (the write lock still held) and
        `after_rollback` when the transaction does not commit."""
        ...

    def read(self) -> Connection:
        """The thread's connection for single-statement reads."""
        ...

    def in_write_transaction(self) -> bool:
        """Whether this thread has a write transaction open."""
        ...

    def close(self) -> None: ...

    def schema_version(self) -> int: ...

    def explain(self, exc: Exception) -> Exception:
        """The store's own error (a `StoreError` with a way out) for a driver exception."""
        ...

    def team_wallet(self, conn: Connection) -> TeamWallet | None:
        """The team's shared limits (read inside the caller's write transaction), or None for
        a store that has no team."""
        ...

    def committed_by_me(self, conn: Connection, *, day_key: str,
                        month_key: str) -> tuple[int, int]:
        """Credits the connected member committed in the day and month windows."""
        ...
