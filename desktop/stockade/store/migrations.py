"""Versioned schema migrations, applied in order at open, each in one transaction."""

from __future__ import annotations

from dataclasses import dataclass

from stockade.store.declined import SCHEMA as _DECLINED


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


_LEDGER = (
    """
    CREATE TABLE reservation(
        id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        day_key TEXT NOT NULL,
        month_key TEXT NOT NULL,
        reserved INTEGER NOT NULL CHECK (reserved >= 0),
        estimated INTEGER NOT NULL CHECK (estimated >= 0),
        status TEXT NOT NULL CHECK (status IN ('open', 'settled', 'refunded', 'released')),
        settled INTEGER CHECK (settled >= 0),
        released INTEGER CHECK (released >= 0),
        actual INTEGER CHECK (actual >= 0),
        input_tokens INTEGER CHECK (input_tokens >= 0),
        output_tokens INTEGER CHECK (output_tokens >= 0),
        cached_input_tokens INTEGER CHECK (cached_input_tokens >= 0),
        closed_ms INTEGER,
        CHECK ((status = 'open' AND settled IS NULL AND released IS NULL)
            OR (status <> 'open' AND settled IS NOT NULL AND released IS NOT NULL
                AND settled + released = reserved))
    )
    """,
    "CREATE INDEX reservation_run ON reservation(run_id)",
    "CREATE INDEX reservation_day ON reservation(day_key)",
    "CREATE INDEX reservation_month ON reservation(month_key)",
    # A closed reservation is history: it may not change or vanish.
    """
    CREATE TRIGGER reservation_closed_is_final BEFORE UPDATE ON reservation
    WHEN OLD.status <> 'open'
    BEGIN SELECT RAISE(ABORT, 'a settled reservation cannot change'); END
    """,
    """
    CREATE TRIGGER reservation_no_delete BEFORE DELETE ON reservation
    BEGIN SELECT RAISE(ABORT, 'ledger rows cannot be deleted'); END
    """,
)

_TRAJECTORY = (
    """
    CREATE TABLE event(
        seq INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        run_seq INTEGER NOT NULL CHECK (run_seq >= 0),
        kind TEXT NOT NULL,
        at_ms INTEGER NOT NULL,
        payload TEXT NOT NULL,
        prev_hash TEXT NOT NULL,
        hash TEXT NOT NULL,
        UNIQUE (run_id, run_seq)
    )
    """,
    """
    CREATE TRIGGER event_no_update BEFORE UPDATE ON event
    BEGIN SELECT RAISE(ABORT, 'the trajectory is append-only'); END
    """,
    """
    CREATE TRIGGER event_no_delete BEFORE DELETE ON event
    BEGIN SELECT RAISE(ABORT, 'the trajectory is append-only'); END
    """,
)

_RUNS = (
    """
    CREATE TABLE run(
        run_id TEXT PRIMARY KEY,
        status TEXT NOT NULL CHECK (status IN ('running', 'parked', 'finished', 'interrupted')),
        document_path TEXT NOT NULL,
        document_digest TEXT,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        owner_pid INTEGER,
        owner_host TEXT,
        claimed INTEGER NOT NULL DEFAULT 0 CHECK (claimed IN (0, 1)),
        snapshot BLOB,
        outcome TEXT,
        reason TEXT,
        CHECK ((status = 'parked') = (snapshot IS NOT NULL))
    )
    """,
    "CREATE INDEX run_status ON run(status)",
    "CREATE INDEX run_document ON run(document_path)",
    """
    CREATE TABLE pending_call(
        run_id TEXT NOT NULL REFERENCES run(run_id),
        call_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        tool TEXT NOT NULL,
        input_digest TEXT NOT NULL,
        destructive INTEGER NOT NULL CHECK (destructive IN (0, 1)),
        PRIMARY KEY (run_id, call_id)
    )
    """,
    """
    CREATE TABLE decision(
        run_id TEXT NOT NULL REFERENCES run(run_id),
        call_id TEXT NOT NULL,
        decision TEXT NOT NULL CHECK (decision IN ('approved', 'denied')),
        actor TEXT NOT NULL CHECK (length(trim(actor)) > 0),
        reason TEXT,
        decided_ms INTEGER NOT NULL,
        PRIMARY KEY (run_id, call_id)
    )
    """,
)

# Version 5 (independent of 4): authenticated decisions bound to their audit event, the
# iteration of each pending call, the snapshot seal version against replay, usage charged
# above its reservation, and sealed change summaries of committed edits.
_SECURITY = (
    "ALTER TABLE decision ADD COLUMN input_digest TEXT",
    "ALTER TABLE decision ADD COLUMN iteration INTEGER",
    "ALTER TABLE decision ADD COLUMN event_seq INTEGER",
    "ALTER TABLE decision ADD COLUMN mac TEXT",
    "ALTER TABLE pending_call ADD COLUMN iteration INTEGER",
    "ALTER TABLE run ADD COLUMN seal_version INTEGER NOT NULL DEFAULT 0 "
    "CHECK (seal_version >= 0)",
    # Charged above the hold: `settled + released = reserved` still holds for every row, and
    # the real charge is `settled + overrun`.
    "ALTER TABLE reservation ADD COLUMN overrun INTEGER NOT NULL DEFAULT 0 CHECK (overrun >= 0)",
    """
    CREATE TABLE change_summary(
        event_seq INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        sealed BLOB NOT NULL
    )
    """,
    """
    CREATE TRIGGER change_summary_no_update BEFORE UPDATE ON change_summary
    BEGIN SELECT RAISE(ABORT, 'change summaries are append-only'); END
    """,
    """
    CREATE TRIGGER change_summary_no_delete BEFORE DELETE ON change_summary
    BEGIN SELECT RAISE(ABORT, 'change summaries are append-only'); END
    """,
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "ledger", _LEDGER),
    Migration(2, "trajectory", _TRAJECTORY),
    Migration(3, "runs", _RUNS),
    Migration(4, "declined proposals", _DECLINED),
    Migration(5, "security", _SECURITY),
)
