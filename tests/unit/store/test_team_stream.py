"""`PgConnection.stream`: rows as the server sends them, and a reader that stops early leaves
the connection (and an open transaction) fit for the next statement."""

from __future__ import annotations

import pytest

from stockade.store import MemberKind, StoreError
from tests.helpers.postgres import PostgresServer
from tests.helpers.teams import Team, new_team

# Slow enough per row that the server is still sending when the reader stops.
SLOW_ROWS = "SELECT g, pg_sleep(0.005) FROM generate_series(1, ?) AS g"


@pytest.fixture
def team(postgres_server: PostgresServer) -> Team:
    made = new_team(postgres_server, MemberKind.ANALYST)
    yield made
    made.close()


def test_a_stream_gives_every_row_in_order(team: Team) -> None:
    conn = team.open(team.role(MemberKind.ANALYST)).read()
    rows = list(conn.stream("SELECT g FROM generate_series(1, ?) AS g", (2500,), size=1000))
    assert rows == [(g,) for g in range(1, 2501)]


def test_a_stream_stopped_early_outside_a_transaction_leaves_the_connection_usable(
        team: Team) -> None:
    conn = team.open(team.role(MemberKind.ANALYST)).read()
    rows = conn.stream(SLOW_ROWS, (60,), size=1)
    assert next(rows)[0] == 1
    rows.close()
    assert conn.execute("SELECT 41 + 1").fetchone() == (42,)


def test_a_stream_stopped_early_inside_a_transaction_does_not_abort_it(team: Team) -> None:
    conn = team.open(team.role(MemberKind.ANALYST)).read()
    conn.execute("BEGIN")
    try:
        rows = conn.stream(SLOW_ROWS, (40,), size=1)
        assert next(rows)[0] == 1
        rows.close()
        assert conn.execute("SELECT 41 + 1").fetchone() == (42,)
    finally:
        conn.execute("ROLLBACK")


def test_a_failing_stream_raises_the_stores_error(team: Team) -> None:
    conn = team.open(team.role(MemberKind.ANALYST)).read()
    with pytest.raises(StoreError):
        list(conn.stream("SELECT 1 / (g - 3) FROM generate_series(1, 5) AS g"))
    assert conn.execute("SELECT 1").fetchone() == (1,)
