"""Fresh teams on the session's PostgreSQL server: each test gets its own team and roles, so
row-level security alone gives it an empty store (and every test exercises that isolation)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field

import psycopg

from stockade.store.interface import MemberKind, TeamWallet
from stockade.store.postgres.database import PostgresDatabase, open_postgres
from stockade.store.postgres.target import parse_database_url
from stockade.store.postgres.team import add_member, ensure_team
from tests.helpers.postgres import PostgresServer

_numbers = itertools.count(1)


@dataclass
class Team:
    """One team: its id and its members' roles (kind by role name)."""

    server: PostgresServer
    team: str
    members: Mapping[str, MemberKind]
    _opened: list[PostgresDatabase] = field(default_factory=list)

    def role(self, kind: MemberKind, index: int = 0) -> str:
        return [r for r, k in self.members.items() if k is kind][index]

    def url(self, role: str) -> str:
        """The role's URL over the trusted socket (no password needed)."""
        return self.server.url(role, socket_path=True)

    def open(self, role: str) -> PostgresDatabase:
        db = open_postgres(parse_database_url(self.url(role)))
        self._opened.append(db)
        return db

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(self.server.admin_url, autocommit=True)

    def set_wallet(self, wallet: TeamWallet) -> None:
        with self.admin() as conn:
            ensure_team(conn, self.team, wallet)

    def close(self) -> None:
        for db in self._opened:
            db.close()


def new_team(server: PostgresServer, *kinds: MemberKind,
             wallet: TeamWallet | None = None) -> Team:
    """A team with one member role per kind given (analyst first when none is given)."""
    n = next(_numbers)
    team = f"team-{n}"
    members: dict[str, MemberKind] = {}
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        ensure_team(conn, team, wallet)
        for i, kind in enumerate(kinds or (MemberKind.ANALYST,)):
            role = f"t{n}_{kind.value}_{i}"
            add_member(conn, team, role, kind)
            members[role] = kind
    return Team(server, team, members)
