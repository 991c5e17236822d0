"""Team mode for the command line: set up a team database, report on it, name its secrets.

`stockade team init|status` and `stockade keys set-database-password` come here; the SQL is in
`stockade.store.postgres.team`. The database URL is `--database-url`, else
`STOCKADE_DATABASE_URL`, else `database_url` in settings; the password is never part of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from stockade.governance.ledger import window_keys
from stockade.governance.services import store_database_url, wall_clock_ms
from stockade.secrets import KeyStore
from stockade.store import MemberKind, StoreError, TeamWallet
from stockade.store.postgres.target import DatabaseTarget, parse_database_url
from stockade.store.postgres.team import MemberInfo, TeamAdmin, TeamAdminError, TeamInfo

__all__ = ["InitReport", "MemberInfo", "MemberKind", "StatusReport", "StoreError",
           "TeamAdminError", "TeamInfo", "TeamWallet", "database_password_secret", "init_team",
           "resolve_target", "team_status"]


@dataclass(frozen=True, slots=True)
class InitReport:
    database: str
    schema_applied: tuple[int, ...]
    schema_version: int
    team: str | None
    team_created: bool
    roles_created: tuple[str, ...]
    members: Mapping[str, MemberKind]


@dataclass(frozen=True, slots=True)
class StatusReport:
    database: str
    role: str
    team: str | None
    """The connected role's team; None for the administrator (who sees every team)."""
    schema_version: int | None
    teams: tuple[TeamInfo, ...]


def resolve_target(explicit_url: str | None) -> DatabaseTarget:
    """The team database to administer: `--database-url`, else the configured one."""
    url = explicit_url.strip() if explicit_url and explicit_url.strip() else store_database_url()
    if url is None:
        raise StoreError("no team database is configured: pass --database-url, set "
                         "STOCKADE_DATABASE_URL, or set database_url in settings")
    return parse_database_url(url)


def database_password_secret(explicit_url: str | None) -> tuple[DatabaseTarget, str]:
    """The database and the keyring name its role's password is kept under."""
    target = resolve_target(explicit_url)
    return target, target.password_secret


def _password(target: DatabaseTarget, secrets: KeyStore | None) -> str | None:
    store = secrets if secrets is not None else KeyStore()
    try:
        return store.get_secret(target.password_secret)
    except Exception:  # a locked keyring: libpq's own password sources may still work
        return None


def init_team(explicit_url: str | None, *, team: str | None,
              members: Mapping[str, MemberKind], wallet: TeamWallet | None = None,
              secrets: KeyStore | None = None) -> InitReport:
    """Set up (or upgrade) the schema, then create the team and its members if given."""
    target = resolve_target(explicit_url)
    if members and team is None:
        raise TeamAdminError("members need a team: pass --team TEAM")
    with TeamAdmin(target, password=_password(target, secrets)) as admin:
        applied = admin.set_up_schema()
        created = admin.ensure_team(team, wallet) if team is not None else False
        new_roles = tuple(role for role, kind in members.items()
                          if team is not None and admin.add_member(team, role, kind))
        version = admin.schema_version() or 0
    return InitReport(target.display, tuple(applied), version, team, created, new_roles,
                      dict(members))


def team_status(explicit_url: str | None, *, secrets: KeyStore | None = None) -> StatusReport:
    target = resolve_target(explicit_url)
    day, _month = window_keys(wall_clock_ms())
    with TeamAdmin(target, password=_password(target, secrets)) as admin:
        role, team = admin.whoami()
        return StatusReport(target.display, role, team, admin.schema_version(),
                            tuple(admin.overview(day)))
