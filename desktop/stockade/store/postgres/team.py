"""Administering a team database: the schema, the group roles, teams, members and limits.

Run by an administrator's role (one that may create roles and owns the `stockade` schema),
never by the app: `stockade team init` calls `set_up_schema`, `ensure_team` and `add_member`;
`stockade team status` calls `team_overview` (through `TeamAdmin`). Every step is idempotent, so running `init` again
with more members, or with a newer build's migrations, changes only what is new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

from stockade.store.database import StoreError
from stockade.store.interface import MemberKind, TeamWallet
from stockade.store.postgres.database import CONNECT_TIMEOUT_S
from stockade.store.postgres.schema import GROUP_ROLES, MIGRATIONS, SCHEMA
from stockade.store.postgres.target import DatabaseTarget

ROLE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
TEAM_ID = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
_MIGRATION_LOCK = "stockade.migrate"


class TeamAdminError(StoreError):
    """An administration step was refused; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class MemberInfo:
    role: str
    team: str
    kind: MemberKind | None


@dataclass(frozen=True, slots=True)
class TeamInfo:
    team: str
    wallet: TeamWallet
    members: tuple[MemberInfo, ...]
    events: int
    runs_parked: int
    credits_today: int


def check_role_name(name: str) -> str:
    if not ROLE_NAME.match(name):
        raise TeamAdminError(f"{name!r} is not a role name Stockade creates: lowercase letters, "
                             "digits and underscores, starting with a letter or underscore")
    if name.startswith("pg_") or name in GROUP_ROLES.values():
        raise TeamAdminError(f"{name!r} is reserved; choose another role name")
    return name


def check_team_id(team: str) -> str:
    if not TEAM_ID.match(team):
        raise TeamAdminError(f"{team!r} is not a team id: lowercase letters, digits and dashes, "
                             "starting with a letter, at most 40 characters")
    return team


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    """The one row a statement that always returns one row returned."""
    row = cursor.fetchone()
    if row is None:
        raise TeamAdminError("the database returned no row where one was expected")
    return row


def _admin_error(exc: psycopg.Error, what: str) -> TeamAdminError:
    text = (getattr(exc.diag, "message_primary", None) or str(exc)).strip()
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return TeamAdminError(f"{what} needs an administrator's role (CREATEROLE, and CREATE on "
                              f"the database or ownership of the {SCHEMA} schema): {text}")
    return TeamAdminError(f"{what} failed: {text}")


def set_up_schema(conn: psycopg.Connection[Any]) -> list[int]:
    """Create the schema and the group roles if missing and apply every missing version, each
    in its own transaction under one lock (two administrators at once apply each once)."""
    applied: list[int] = []
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_MIGRATION_LOCK,))
            for group in GROUP_ROLES.values():
                exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                      (group,)).fetchone()
                if exists is None:
                    conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(group)))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(SCHEMA)))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS stockade.schema_version(version INTEGER PRIMARY KEY, "
                "name TEXT NOT NULL, applied_at TEXT NOT NULL)")
        for migration in MIGRATIONS:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (_MIGRATION_LOCK,))
                done = conn.execute("SELECT 1 FROM stockade.schema_version WHERE version = %s",
                                    (migration.version,)).fetchone()
                if done is not None:
                    continue
                conn.execute(sql.SQL("SET LOCAL search_path = {}").format(
                    sql.Identifier(SCHEMA)))
                for statement in migration.statements:
                    conn.execute(statement.encode("utf-8"))
                conn.execute(
                    "INSERT INTO stockade.schema_version(version, name, applied_at) "
                    "VALUES (%s, %s, to_char(now() AT TIME ZONE 'UTC', "
                    "'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'))",
                    (migration.version, migration.name))
                applied.append(migration.version)
        newest = _one(conn.execute("SELECT MAX(version) FROM stockade.schema_version"))[0]
    except psycopg.Error as exc:
        raise _admin_error(exc, "setting up the Stockade schema") from None
    if newest is not None and int(newest) > MIGRATIONS[-1].version:
        raise TeamAdminError(f"the database is at schema {newest}, newer than this build "
                             f"({MIGRATIONS[-1].version}); run `team init` from a newer build")
    return applied


def ensure_team(conn: psycopg.Connection[Any], team: str,
                wallet: TeamWallet | None = None) -> bool:
    """Create the team (True) or leave it (False); `wallet` replaces its limits when given."""
    check_team_id(team)
    try:
        with conn.transaction():
            created = conn.execute(
                "INSERT INTO stockade.team(team_id) VALUES (%s) ON CONFLICT DO NOTHING "
                "RETURNING 1", (team,)).fetchone() is not None
            conn.execute("INSERT INTO stockade.team_lock(team_id) VALUES (%s) "
                         "ON CONFLICT DO NOTHING", (team,))
            if wallet is not None:
                conn.execute(
                    "UPDATE stockade.team SET per_day = %s, per_month = %s, "
                    "per_analyst_day = %s, per_analyst_month = %s WHERE team_id = %s",
                    (wallet.per_day, wallet.per_month, wallet.per_analyst_day,
                     wallet.per_analyst_month, team))
    except psycopg.Error as exc:
        raise _admin_error(exc, f"creating team {team}") from None
    return created


def add_member(conn: psycopg.Connection[Any], team: str, role: str, kind: MemberKind) -> bool:
    """Make `role` (created as a login role without a password when missing) a member of
    `team` with exactly one kind; True when the role was created.

    A role belongs to one team: moving it to another is refused, because its rows would stay
    behind in the first team's trail under a name that now means someone else's.
    """
    check_role_name(role)
    check_team_id(team)
    try:
        with conn.transaction():
            created = False
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() \
                    is None:
                conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
                created = True
            current = conn.execute("SELECT team_id FROM stockade.member WHERE role_name = %s",
                                   (role,)).fetchone()
            if current is not None and current[0] != team:
                raise TeamAdminError(f"role {role} already belongs to team {current[0]}; a "
                                     "role is a member of one team only")
            conn.execute("INSERT INTO stockade.member(role_name, team_id) VALUES (%s, %s) "
                         "ON CONFLICT DO NOTHING", (role, team))
            for other_kind, group in GROUP_ROLES.items():
                statement = "GRANT {} TO {}" if other_kind is kind else "REVOKE {} FROM {}"
                conn.execute(sql.SQL(statement).format(sql.Identifier(group),
                                                       sql.Identifier(role)))
    except psycopg.Error as exc:
        raise _admin_error(exc, f"adding {role} to team {team}") from None
    return created


def member_kind(conn: psycopg.Connection[Any], role: str) -> MemberKind | None:
    for kind in (MemberKind.APPROVER, MemberKind.ANALYST, MemberKind.AUDITOR):
        held = _one(conn.execute("SELECT pg_has_role(%s, %s, 'MEMBER')",
                                 (role, GROUP_ROLES[kind])))[0]
        if held:
            return kind
    return None


def schema_version(conn: psycopg.Connection[Any]) -> int | None:
    present = _one(conn.execute("SELECT to_regclass('stockade.schema_version')"))[0]
    if present is None:
        return None
    return int(_one(conn.execute(
        "SELECT COALESCE(MAX(version), 0) FROM stockade.schema_version"))[0])


def team_overview(conn: psycopg.Connection[Any], day_key: str) -> list[TeamInfo]:
    """Every team with its limits, members and counts (the administrator sees all teams)."""
    try:
        teams = conn.execute(
            "SELECT team_id, per_day, per_month, per_analyst_day, per_analyst_month "
            "FROM stockade.team ORDER BY team_id").fetchall()
        out = []
        for team_id, *limits in teams:
            members = tuple(
                MemberInfo(role, team_id, member_kind(conn, role)) for (role,) in conn.execute(
                    "SELECT role_name FROM stockade.member WHERE team_id = %s "
                    "ORDER BY role_name", (team_id,)).fetchall())
            events = _one(conn.execute(
                "SELECT COUNT(*) FROM stockade.event WHERE team_id = %s", (team_id,)))[0]
            parked = _one(conn.execute(
                "SELECT COUNT(*) FROM stockade.run WHERE team_id = %s AND status = 'parked'",
                (team_id,)))[0]
            today = _one(conn.execute(
                "SELECT COALESCE(SUM(CASE status WHEN 'open' THEN reserved ELSE settled END), 0) "
                "FROM stockade.reservation WHERE team_id = %s AND day_key = %s",
                (team_id, day_key)))[0]
            out.append(TeamInfo(team_id, TeamWallet(*(None if v is None else int(v)
                                                      for v in limits)),
                                members, int(events), int(parked), int(today)))
    except psycopg.Error as exc:
        raise _admin_error(exc, "reading the teams") from None
    return out


class TeamAdmin:
    """An administrator's connection to a team database (`with TeamAdmin(target) as admin`)."""

    def __init__(self, target: DatabaseTarget, *, password: str | None = None) -> None:
        self.target = target
        self._password = password
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> TeamAdmin:
        extra: dict[str, Any] = {"password": self._password} if self._password else {}
        try:
            self._conn = psycopg.connect(self.target.conninfo, autocommit=True,
                                         connect_timeout=CONNECT_TIMEOUT_S,
                                         application_name="stockade-team", **extra)
        except psycopg.Error as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TeamAdminError(f"cannot connect to {self.target.display} ({text})") from None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise TeamAdminError("the administrator's connection is not open")
        return self._conn

    def whoami(self) -> tuple[str, str | None]:
        """(role, team) of this connection; team None for an administrator (or no schema)."""
        role = str(_one(self.conn.execute("SELECT current_user"))[0])
        if schema_version(self.conn) is None:
            return role, None
        row = self.conn.execute("SELECT team_id FROM stockade.member WHERE role_name = %s",
                                (role,)).fetchone()
        return role, None if row is None else str(row[0])

    def set_up_schema(self) -> list[int]:
        return set_up_schema(self.conn)

    def ensure_team(self, team: str, wallet: TeamWallet | None = None) -> bool:
        return ensure_team(self.conn, team, wallet)

    def add_member(self, team: str, role: str, kind: MemberKind) -> bool:
        return add_member(self.conn, team, role, kind)

    def schema_version(self) -> int | None:
        return schema_version(self.conn)

    def overview(self, day_key: str) -> list[TeamInfo]:
        """Every team this role may see: all of them for the administrator, its own for a
        member (row-level security)."""
        if schema_version(self.conn) is None:
            return []
        return team_overview(self.conn, day_key)
