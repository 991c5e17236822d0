"""SQL for a team's chain head and keyed-since marker (the file and keyring entry of SQLite)."""

from __future__ import annotations

from stockade.store.interface import Connection


def read_head(conn: Connection) -> str | None:
    row = conn.execute("SELECT head FROM chain_anchor").fetchone()
    return None if row is None else str(row[0])


def write_head(conn: Connection, head: str) -> None:
    conn.execute("INSERT INTO chain_anchor(head) VALUES (?) ON CONFLICT (team_id) "
                 "DO UPDATE SET head = excluded.head", (head,))


def read_marker(conn: Connection) -> tuple[int, str] | None:
    row = conn.execute("SELECT seq, mac FROM chain_marker").fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def write_marker(conn: Connection, seq: int, mac: str) -> None:
    """Insert once; a second write for the team is refused by the key (the marker is fixed)."""
    conn.execute("INSERT INTO chain_marker(seq, mac) VALUES (?, ?) ON CONFLICT (team_id) "
                 "DO NOTHING", (seq, mac))
