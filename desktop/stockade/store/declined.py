"""SQL for the declined-proposal memory: what a user declined on a document, across turns.

Schema version 4. Not an audit record (the trajectory holds the `tool.denied` event with the
reason's digest): it is what later turns are told and what the review queue marks as "declined
earlier", so it keeps the title and the reason as text. A proposal declined again replaces its
row (the newest reason wins).
"""

from __future__ import annotations

from dataclasses import dataclass

from stockade.store.interface import Connection

SCHEMA: tuple[str, ...] = (
    """
    CREATE TABLE declined_proposal(
        document_path TEXT NOT NULL,
        tool TEXT NOT NULL,
        input_digest TEXT NOT NULL,
        summary TEXT NOT NULL,
        target_kind TEXT CHECK (target_kind IS NULL OR target_kind IN ('element', 'flow')),
        target TEXT,
        category TEXT,
        title TEXT,
        title_key TEXT,
        reason TEXT,
        actor TEXT NOT NULL CHECK (length(trim(actor)) > 0),
        run_id TEXT NOT NULL,
        call_id TEXT NOT NULL,
        declined_ms INTEGER NOT NULL,
        PRIMARY KEY (document_path, tool, input_digest)
    )
    """,
    "CREATE INDEX declined_by_document ON declined_proposal(document_path, declined_ms)",
)
"""Migration 4 (`stockade.store.migrations`)."""

TEXT_MAX = 500
"""Longest summary, title or reason kept (the prompt caps them again when it lists them)."""


@dataclass(frozen=True, slots=True)
class DeclinedRow:
    document_path: str
    tool: str
    input_digest: str
    summary: str
    target_kind: str | None
    target: str | None
    category: str | None
    title: str | None
    title_key: str | None
    reason: str | None
    actor: str
    run_id: str
    call_id: str
    declined_ms: int


_COLUMNS = ("document_path, tool, input_digest, summary, target_kind, target, category, title, "
            "title_key, reason, actor, run_id, call_id, declined_ms")


def _cap(value: str | None) -> str | None:
    return value if value is None or len(value) <= TEXT_MAX else value[: TEXT_MAX - 1] + "…"


def remember(conn: Connection, row: DeclinedRow) -> None:
    """Insert the declined proposal, replacing the row of an earlier decline (the newest reason,
    actor and time win). Delete-then-insert rather than an upsert: the team store's key also
    holds the team, which a portable `ON CONFLICT` target cannot name."""
    conn.execute("DELETE FROM declined_proposal WHERE document_path = ? AND tool = ? "
                 "AND input_digest = ?", (row.document_path, row.tool, row.input_digest))
    conn.execute(
        f"INSERT INTO declined_proposal({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (row.document_path, row.tool, row.input_digest, _cap(row.summary) or "",
         row.target_kind, row.target, row.category, _cap(row.title), row.title_key,
         _cap(row.reason), row.actor, row.run_id, row.call_id, row.declined_ms),
    )


def declined_for(conn: Connection, document_path: str,
                 limit: int = 1000) -> list[DeclinedRow]:
    """The document's declined proposals, oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM declined_proposal WHERE document_path = ? "
        "ORDER BY declined_ms, tool, input_digest LIMIT ?", (document_path, limit)).fetchall()
    return [DeclinedRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10],
                        r[11], r[12], int(r[13])) for r in rows]
