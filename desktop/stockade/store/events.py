"""SQL for the trajectory table: the chain head, inserts and ordered reads."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import chain
from typing import Any

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


def event_rows(conn: Connection, *, after: int = 0) -> Iterator[tuple[Any, ...]]:
    """Every event with seq > `after` as raw tuples in seq order, for the verify loop.

    From SQLite, the cursor itself: it makes each row in C as the loop takes it, so no list of
    rows is held and each row is freed before the next is made. From PostgreSQL, the rows as the
    server sends them (`PgConnection.stream`): waiting for the whole result first left the
    client idle while the server read the table, then parsing one 100,000-row result cost more
    than psycopg's generator per row."""
    sql = f"SELECT {_COLUMNS} FROM event WHERE seq > ? ORDER BY seq"
    if isinstance(conn, sqlite3.Connection):
        return conn.execute(sql, (after,))
    stream = getattr(conn, "stream", None)  # `PgConnection.stream`; not in the protocol
    if stream is not None:
        rows: Iterator[tuple[Any, ...]] = stream(sql, (after,))
        return rows
    cur = conn.execute(sql, (after,))
    return chain.from_iterable(iter(partial(cur.fetchmany, 10_000), []))


# The name `visit_events` registers its callback under for one scan. sqlite3 cannot unregister
# a function, so after the scan the name is pointed at `_no_visit`, which lets the callback (and
# all it holds) go.
_VISIT = "stockade_visit_event"


def _no_visit(*_row: Any) -> int:
    return 0


def visit_events(conn: Connection, visit: Callable[..., int], *, after: int = 0) -> bool | None:
    """Call `visit(seq, run_id, run_seq, kind, at_ms, payload, prev_hash, hash)` for each event
    with seq > `after`, from inside SQLite's own scan of the table, until it returns 0: True when
    it was called for every such event and returned 1 each time, False when it stopped the scan,
    None where the connection cannot call back (PostgreSQL: use `event_rows`).

    SQLite passes a callback's arguments with the interpreter lock held once per row, where a
    cursor releases and retakes it around every column it reads (nine times per event): half the
    cost of reading the trail. The values are those a cursor gives (`str`, `int`, `bytes`,
    `float`, `None` by storage class). The rows come in rowid order, which is seq order while
    `seq` is the table's INTEGER PRIMARY KEY; `visit` must check that itself (each row's seq one
    above the last) and stop where it is not, since a rebuilt table could scan otherwise. A
    callback's own exception is swallowed by SQLite into an `OperationalError`, so `visit`
    should keep it and return 0."""
    if not isinstance(conn, sqlite3.Connection):
        return None
    conn.create_function(_VISIT, 8, visit)
    try:
        stopped = conn.execute(f"SELECT 1 FROM event WHERE seq > ? AND NOT {_VISIT}({_COLUMNS}) "
                               "LIMIT 1", (after,)).fetchone()
    finally:
        conn.create_function(_VISIT, 8, _no_visit)
    return stopped is None


def events_between(conn: Connection, after: int, last: int) -> int:
    """How many events have after < seq <= last."""
    row = conn.execute("SELECT COUNT(*) FROM event WHERE seq > ? AND seq <= ?",
                       (after, last)).fetchone()
    return int(row[0])


def events_for_run(conn: Connection, run_id: str) -> list[EventRow]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM event WHERE run_id = ? ORDER BY run_seq",
                        (run_id,)).fetchall()
    return [EventRow(*r) for r in rows]


def event_count(conn: Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM event").fetchone()[0])


def event_at(conn: Connection, seq: int) -> EventRow | None:
    r = conn.execute(f"SELECT {_COLUMNS} FROM event WHERE seq = ?", (seq,)).fetchone()
    return None if r is None else EventRow(*r)


def hashes_at(conn: Connection, seqs: list[int]) -> dict[int, tuple[str, str]]:
    """{seq: (prev_hash, hash)} of the events at `seqs` that exist."""
    out: dict[int, tuple[str, str]] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for seq, prev, stored in conn.execute(
                f"SELECT seq, prev_hash, hash FROM event WHERE seq IN ({marks})", chunk):
            out[int(seq)] = (str(prev), str(stored))
    return out


def runs_without_events(conn: Connection) -> list[str]:
    """Runs listed in the run table that have no audit event at all (deleted trails)."""
    rows = conn.execute(
        "SELECT run_id FROM run WHERE NOT EXISTS "
        "(SELECT 1 FROM event WHERE event.run_id = run.run_id) ORDER BY created_ms, run_id"
    ).fetchall()
    return [str(r[0]) for r in rows]


def insert_change_summary(conn: Connection, event_seq: int, run_id: str,
                          sealed: bytes) -> None:
    conn.execute("INSERT INTO change_summary(event_seq, run_id, sealed) VALUES (?, ?, ?)",
                 (event_seq, run_id, sealed))


def change_summaries(conn: Connection, run_id: str) -> dict[int, bytes]:
    """{event seq: sealed change summary} of one run's committed changes."""
    rows = conn.execute("SELECT event_seq, sealed FROM change_summary WHERE run_id = ?",
                        (run_id,)).fetchall()
    return {int(r[0]): bytes(r[1]) for r in rows}
