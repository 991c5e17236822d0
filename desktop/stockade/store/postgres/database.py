"""A team's PostgreSQL database as a Stockade store: connections, team-serialized writes, identity.

Each thread gets its own connection (autocommit for single-statement reads, explicit
transactions for writes), as the SQLite store does. A write transaction first locks the team's
row in `team_lock`, so the writers of one team run one after the other on every machine —
exactly the guarantee `BEGIN IMMEDIATE` gives the writers of one SQLite file — and the
check-then-write steps of the ledger, the trajectory and the run state need no other locking:
two analysts racing for the last credits, or two approvers resuming one run, are ordered by
that lock and the second sees what the first committed. Driver errors become `StoreError`s
whose text says what to do; a broken connection is dropped and the next call reconnects.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from stockade.store.database import ConflictError, StoreError
from stockade.store.interface import CommitHook, MemberKind, StoreIdentity, StoreKind, TeamWallet
from stockade.store.postgres.schema import GROUP_ROLES, MIGRATIONS, SCHEMA
from stockade.store.postgres.target import DatabaseTarget
from stockade.store.reservations import COMMITTED_CREDITS

CONNECT_TIMEOUT_S = 10
# A statement that waits longer than this for the team lock (another writer holding it) fails
# with a clear error rather than hanging the app.
LOCK_TIMEOUT_MS = 15_000
PasswordLookup = Callable[[DatabaseTarget], str | None]


_BEGIN_LOCKED = (
    "BEGIN; SELECT t.per_day, t.per_month, t.per_analyst_day, t.per_analyst_month "
    "FROM team_lock l JOIN team t ON t.team_id = l.team_id "
    "WHERE l.team_id = (SELECT stockade.my_team()) FOR UPDATE OF l")


class PermissionDenied(StoreError):
    """The connected role may not do this (an auditor writing, an analyst deciding for others)."""


class StoreIntegrityError(StoreError):
    """A constraint or trigger refused the statement (append-only, settled, duplicate key)."""


@functools.lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """qmark SQL (`?`) as psycopg wants it (`%s`, with a literal `%` doubled).

    A `?` inside a quoted literal or identifier stays as it is; the store's SQL has none, but
    the rule keeps a future literal from turning into a parameter.
    """
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote is not None:
            out.append("%%" if ch == "%" else ch)
            if ch == quote:
                quote = None
            continue
        if ch in ("'", '"'):
            quote = ch
            out.append(ch)
        elif ch == "?":
            out.append("%s")
        elif ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    return "".join(out)


class PgConnection:
    """A psycopg connection that runs the store's qmark SQL and raises `StoreError`s."""

    def __init__(self, raw: psycopg.Connection[Any], store: PostgresDatabase) -> None:
        self.raw = raw
        self._store = store
        self.wallet: TeamWallet | None = None
        """The team's limits, read under the lock while a write transaction is open."""

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Any:
        try:
            return self.raw.execute(translate(sql), tuple(parameters))
        except psycopg.Error as exc:
            raise self._store.explain(exc) from None

    def stream(self, sql: str, parameters: Sequence[Any] = (), /, *,
               size: int = 100) -> Iterator[tuple[Any, ...]]:
        """The rows of a long query as the server sends them, `size` rows at a time (libpq's
        chunked mode): reading them overlaps the server's work, where `execute` waits for the
        whole result, and libpq parses small results instead of one that outgrows the caches
        (the 100,000 events `audit verify` reads, psycopg's generator per row included, on the
        wall clock: 0.08-0.11 s in chunks of 100, 0.11-0.13 s in chunks of 1,000, 0.19-0.23 s
        as one result).

        psycopg asks the server to cancel a stream left unfinished (a verify that found damage
        stops reading), which would abort an open transaction; so inside one (the tail `audit
        verify` reads under the team's lock) the rows come from a whole result, in batches."""
        try:
            if self.in_transaction:
                cur = self.raw.execute(translate(sql), tuple(parameters))
                for batch in iter(functools.partial(cur.fetchmany, size), []):
                    yield from batch
                return
            yield from self.raw.cursor().stream(translate(sql), tuple(parameters), size=size)
        except psycopg.Error as exc:
            raise self._store.explain(exc) from None

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any:
        cur = self.raw.cursor()
        try:
            cur.executemany(translate(sql), [tuple(p) for p in parameters])
        except psycopg.Error as exc:
            raise self._store.explain(exc) from None
        return cur


class PostgresDatabase:
    """The team store (see the module docstring); open it with `open_postgres`."""

    kind = StoreKind.POSTGRES

    def __init__(self, target: DatabaseTarget, *, password: PasswordLookup | None = None) -> None:
        self.target = target
        self._password = password
        self._local = threading.local()
        self._all: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._identity: StoreIdentity | None = None

    # -- connections -------------------------------------------------------------------------

    def connect_raw(self) -> psycopg.Connection[Any]:
        """A new autocommit connection with the schema on the search path."""
        extra: dict[str, Any] = {}
        secret = self._password(self.target) if self._password is not None else None
        if secret:
            extra["password"] = secret
        try:
            raw = psycopg.connect(
                self.target.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                application_name="stockade",
                options=f"-c search_path={SCHEMA} -c lock_timeout={LOCK_TIMEOUT_MS}", **extra)
        except psycopg.Error as exc:
            raise self._connect_error(exc) from None
        return raw

    def connection(self) -> PgConnection:
        conn: PgConnection | None = getattr(self._local, "conn", None)
        if conn is not None and (conn.raw.closed or conn.raw.broken):
            self._forget(conn)
            conn = None
        if conn is None:
            conn = PgConnection(self.connect_raw(), self)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn.raw)
        return conn

    def _forget(self, conn: PgConnection) -> None:
        self._local.conn = None
        with self._lock:
            if conn.raw in self._all:
                self._all.remove(conn.raw)
        with suppress(psycopg.Error):
            conn.raw.close()

    def close(self) -> None:
        with self._lock:
            for raw in self._all:
                raw.close()
            self._all.clear()
        self._local = threading.local()

    # -- transactions ------------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[PgConnection]:
        """A write transaction holding the team's lock from its first statement to COMMIT."""
        conn = self.connection()
        if conn.in_transaction:
            raise StoreError("nested write transactions are not supported")
        try:
            # One round trip: open the transaction, take the lock, read the team's limits
            # (the ledger's reserve needs them, under the same lock).
            cur = conn.raw.execute(_BEGIN_LOCKED)
            cur.nextset()
            row = cur.fetchone()
        except psycopg.Error as exc:
            self._rollback(conn)
            raise self.explain(exc) from None
        hooks: dict[str, CommitHook] = {}
        self._local.hooks = hooks
        try:
            try:
                if row is None:
                    raise self._no_team()
                conn.wallet = TeamWallet(*(None if v is None else int(v) for v in row))
                yield conn
                for hook in hooks.values():
                    hook.before_commit()
            except BaseException:
                self._rollback(conn)
                _after_rollback(hooks)
                raise
            finally:
                conn.wallet = None
            try:
                conn.execute("COMMIT")
            except StoreError:
                self._rollback(conn)
                _after_rollback(hooks)
                raise
        finally:
            self._local.hooks = None

    def transaction_hook(self, name: str, factory: Callable[[], CommitHook]) -> CommitHook:
        hooks: dict[str, CommitHook] | None = getattr(self._local, "hooks", None)
        if hooks is None:
            raise StoreError("a transaction hook needs an open write transaction")
        hook = hooks.get(name)
        if hook is None:
            hook = hooks[name] = factory()
        return hook

    def _rollback(self, conn: PgConnection) -> None:
        try:
            conn.raw.execute("ROLLBACK")
        except psycopg.Error:
            self._forget(conn)  # the connection is gone; the server rolled back for us

    def read(self) -> PgConnection:
        return self.connection()

    def in_write_transaction(self) -> bool:
        conn: PgConnection | None = getattr(self._local, "conn", None)
        return conn is not None and getattr(self._local, "hooks", None) is not None \
            and conn.in_transaction

    def schema_version(self) -> int:
        row = self.read().execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0] or 0)

    # -- who we are ------------------------------------------------------------------------------

    def identity(self) -> StoreIdentity:
        """The team and role the database gives this connection (read once, then kept)."""
        if self._identity is None:
            conn = self.read()
            role, team = conn.execute("SELECT current_user, stockade.my_team()").fetchone()
            kinds = conn.execute(
                "SELECT pg_has_role(current_user, ?, 'MEMBER'), "
                "pg_has_role(current_user, ?, 'MEMBER'), pg_has_role(current_user, ?, 'MEMBER')",
                (GROUP_ROLES[MemberKind.APPROVER], GROUP_ROLES[MemberKind.ANALYST],
                 GROUP_ROLES[MemberKind.AUDITOR])).fetchone()
            member_kind = next((k for k, held in zip(
                (MemberKind.APPROVER, MemberKind.ANALYST, MemberKind.AUDITOR), kinds,
                strict=True) if held), None)
            self._identity = StoreIdentity(StoreKind.POSTGRES, self.target.display, team,
                                           str(role), member_kind)
        return self._identity

    def team_wallet(self, conn: Any) -> TeamWallet:
        held = getattr(conn, "wallet", None)
        if isinstance(held, TeamWallet):
            return held  # read with the team's lock when the write transaction began
        row = conn.execute("SELECT per_day, per_month, per_analyst_day, per_analyst_month "
                           "FROM team").fetchone()
        if row is None:
            raise self._no_team()
        return TeamWallet(*(None if v is None else int(v) for v in row))

    def committed_by_me(self, conn: Any, *, day_key: str, month_key: str) -> tuple[int, int]:
        # The same "committed" as the wallet's windows: open holds in full, closed at settled.
        row = conn.execute(
            f"SELECT COALESCE(SUM(CASE WHEN day_key = ? THEN {COMMITTED_CREDITS} END), 0), "
            f"COALESCE(SUM({COMMITTED_CREDITS}), 0) FROM reservation "
            "WHERE created_by = current_user AND month_key = ?",
            (day_key, month_key)).fetchone()
        return int(row[0]), int(row[1])

    # -- errors ----------------------------------------------------------------------------------

    def _no_team(self) -> StoreError:
        role = self._identity.role if self._identity else "this role"
        return PermissionDenied(
            f"The database role {role} is not a member of any Stockade team at "
            f"{self.target.display}; an administrator adds it with `stockade team init "
            f"--team TEAM --analyst {role}`.")

    def _connect_error(self, exc: psycopg.Error) -> StoreError:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        lowered = text.lower()
        if "password" in lowered or "authentication" in lowered:
            return StoreError(
                f"The team database {self.target.display} refused the login ({text}). Keep "
                "the role's password in the keyring (stockade keys set-database-password), a "
                "libpq service file or PGPASSFILE; the URL itself never holds it.")
        return StoreError(f"The team database {self.target.display} cannot be reached "
                          f"({text}); check the address in settings or STOCKADE_DATABASE_URL, "
                          "and that the server is running.")

    def explain(self, exc: Exception) -> Exception:
        if not isinstance(exc, psycopg.Error):
            return exc
        text = (getattr(exc.diag, "message_primary", None) or str(exc)).strip()
        where = self.target.display
        if isinstance(exc, (pg_errors.InsufficientPrivilege,
                            pg_errors.InvalidAuthorizationSpecification)):
            ident = self._identity
            who = f"{ident.role} ({ident.member_kind.value if ident.member_kind else 'no kind'})" \
                if ident else "this role"
            if "row-level security" in text:
                why = ("rows are only written for the role's own team and in its own name, and "
                       "only an approver decides a run another analyst started")
            else:
                why = "an auditor may only read and verify the team's trail"
            return PermissionDenied(f"The team database refused this to {who}: {text} ({why}).")
        if isinstance(exc, pg_errors.LockNotAvailable):
            return StoreError(f"The team database {where} is busy: another writer of the team "
                              f"held it for over {LOCK_TIMEOUT_MS // 1000} s; retry.")
        if isinstance(exc, (pg_errors.IntegrityError, pg_errors.RaiseException)):
            if isinstance(exc, pg_errors.UniqueViolation):
                return ConflictError(f"The team database already holds that row ({text}).")
            return StoreIntegrityError(f"The team database refused the change: {text}.")
        if isinstance(exc, psycopg.OperationalError):
            return StoreError(f"The connection to the team database {where} failed ({text}); "
                              "the change was not made. Check the network and retry.")
        return StoreError(f"The team database {where} failed: {text}.")


def _after_rollback(hooks: dict[str, CommitHook]) -> None:
    for hook in hooks.values():
        hook.after_rollback()


def open_postgres(target: DatabaseTarget, *, password: PasswordLookup | None = None
                  ) -> PostgresDatabase:
    """Connect, check the schema version and that the role belongs to a team."""
    db = PostgresDatabase(target, password=password)
    try:
        conn = db.read()
        present = conn.execute("SELECT to_regclass('stockade.schema_version')").fetchone()[0]
        if present is None:
            raise StoreError(
                f"The database {target.display} has no Stockade schema yet; an administrator "
                "sets it up with `stockade team init` (see README, Team mode).")
        version = db.schema_version()
        newest = MIGRATIONS[-1].version
        if version > newest:
            raise StoreError(
                f"The team database {target.display} was set up by a newer Stockade (schema "
                f"{version}, this build knows {newest}); update Stockade.")
        if version < newest:
            raise StoreError(
                f"The team database {target.display} is at schema {version} and this build "
                f"needs {newest}; the administrator upgrades it with `stockade team init` "
                "run from this build.")
        if db.identity().team is None:
            raise db._no_team()
    except BaseException:
        db.close()
        raise
    return db
