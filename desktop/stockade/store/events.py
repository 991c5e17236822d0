"""SQL for the trajectory table: the chain head, inserts and ordered reads."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from stockade.store.interface import Connection


@dataclass(frozen=True, slots=True)
class EventRow:
    seq: int
    run_id: str
    run_seq: int
    kind: str
    at_ms: int
    payload: str
    prev_hash: str
    hash: str


_COLUMNS = "seq, run_id, run_seq, kind, at_ms, payload, prev_hash, hash"


def chain_head(conn: Connection) -> tuple[int, str] | None:
    """(seq, hash) of the newest event, or None for an empty trajectory."""
    r = conn.execute("SELECT seq, hash FROM event ORDER BY seq DESC LIMIT 1").fetchone()
    return None if r is None else (int(r[0]), str(r[1]))


def next_run_seq(conn: Connection, run_id: str) -> int:
    r = conn.execute("SELECT MAX(run_seq) FROM event WHERE run_id = ?", (run_id,)).fetchone()
    return 0 if r[0] is None else int(r[0]) + 1


def insert_event(conn: Connection, row: EventRow) -> None:
    conn.execute(
        f"INSERT INTO event({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (row.seq, row.run_id, row.run_seq, row.kind, row.at_ms, row.payload, row.prev_hash,
         row.hash),
    )


def iter_events(conn: Connection, batch: int = 5000) -> Iterator[tuple]:
    """Every event as a raw tuple in seq order, fetched in batches (verification path)."""
    cur = conn.execute(f"SELECT {_COLUMNS} FROM event ORDER BY seq")
    while True:
        rows = cur.fetchmany(batch)
        if not rows:
            return
        yield from rows


def events_for_run(conn: Connection, run_id: str) -> list[EventRow]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM event WHERE run_id = ? ORDER BY run_seq",
                        (run_id,)).fetchall()
    return [EventRow(*r) for r in rows]


def event_count(conn: Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM event").fetchone()[0])
