"""Migration 4: the declined-proposal memory table, added to an existing database in place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from stockade.store import declined as sql
from stockade.store import open_database
from stockade.store.migrations import MIGRATIONS


def _row(**changes: object) -> sql.DeclinedRow:
    values: dict[str, object] = dict(
        document_path="/m.thf", tool="add_threat", input_digest="sha256:1", summary="Add it",
        target_kind="element", target="app", category="Spoofing", title="Token theft",
        title_key="token theft", reason="dup", actor="user:ana", run_id="run-1", call_id="c1",
        declined_ms=10)
    values.update(changes)
    return sql.DeclinedRow(**values)  # type: ignore[arg-type]


def test_a_version_3_database_gains_the_table_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "stockade.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version(version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                 "applied_at TEXT NOT NULL)")
    for migration in MIGRATIONS[:3]:
        for statement in migration.statements:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, ?, 'x')",
                     (migration.version, migration.name))
    conn.execute("INSERT INTO run(run_id, status, document_path, provider, model, created_ms, "
                 "updated_ms) VALUES ('run-1', 'finished', '/m.thf', 'offline', 'm', 1, 1)")
    conn.close()
    db = open_database(path)
    try:
        assert db.schema_version() >= 4
        assert db.read().execute("SELECT run_id FROM run").fetchall() == [("run-1",)]
        with db.write() as write:
            sql.remember(write, _row())
        assert sql.declined_for(db.read(), "/m.thf") == [_row()]
    finally:
        db.close()


def test_declining_again_refreshes_the_reason_and_other_documents_are_apart(
        tmp_path: Path) -> None:
    db = open_database(tmp_path / "stockade.db")
    try:
        with db.write() as conn:
            sql.remember(conn, _row())
            sql.remember(conn, _row(reason="not applicable", declined_ms=20, run_id="run-2"))
            sql.remember(conn, _row(document_path="/other.thf"))
            sql.remember(conn, _row(input_digest="sha256:2", reason="x" * 2000, declined_ms=30))
        rows = sql.declined_for(db.read(), "/m.thf")
        assert (rows[0].input_digest, rows[0].reason, rows[0].run_id) == (
            "sha256:1", "not applicable", "run-2")
        assert len(rows[1].reason or "") == sql.TEXT_MAX
        assert len(sql.declined_for(db.read(), "/other.thf")) == 1
        with pytest.raises(sqlite3.IntegrityError), db.write() as conn:
            sql.remember(conn, _row(input_digest="sha256:3", actor="  "))
    finally:
        db.close()
