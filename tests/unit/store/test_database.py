"""The SQLite store: location, pragmas, migrations, bad files and two processes at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from stockade.store import StoreError, database_path, open_database
from stockade.store.migrations import MIGRATIONS


def test_database_lives_in_stockade_home(stockade_home: Path) -> None:
    db = open_database()
    assert db.path == stockade_home / "stockade.db" == database_path()
    assert db.path.exists()
    db.close()


def test_open_uses_wal_and_a_busy_timeout(stockade_home: Path) -> None:
    db = open_database()
    conn = db.read()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
    db.close()


def test_every_migration_is_applied_once_and_recorded(stockade_home: Path) -> None:
    open_database().close()
    db = open_database()  # reopening applies nothing new
    rows = db.read().execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert [r[0] for r in rows] == [m.version for m in MIGRATIONS]
    assert db.schema_version() == MIGRATIONS[-1].version
    db.close()


def test_a_failing_migration_leaves_no_partial_schema(
    stockade_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stockade.store import database, migrations

    broken = (*migrations.MIGRATIONS, migrations.Migration(
        99, "broken", ("CREATE TABLE half_done(x INTEGER)", "THIS IS NOT SQL")))
    monkeypatch.setattr(database, "MIGRATIONS", broken)
    with pytest.raises(StoreError):
        open_database()
    conn = sqlite3.connect(stockade_home / "stockade.db")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "half_done" not in tables
    assert 99 not in {r[0] for r in conn.execute("SELECT version FROM schema_version")}
    conn.close()


def test_a_file_that_is_not_a_database_gives_a_clear_error_with_a_way_out(
    stockade_home: Path,
) -> None:
    (stockade_home / "stockade.db").write_bytes(b"this is a text file, not SQLite\n" * 200)
    with pytest.raises(StoreError) as info:
        open_database()
    message = str(info.value)
    assert "Move it aside" in message and str(stockade_home / "stockade.db") in message
    assert info.value.path == stockade_home / "stockade.db"


def test_a_database_from_a_newer_build_is_refused(stockade_home: Path) -> None:
    db = open_database()
    with db.write() as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'future', 'x')")
    db.close()
    with pytest.raises(StoreError, match="newer version"):
        open_database()


def test_write_rolls_back_on_error(stockade_home: Path) -> None:
    db = open_database()
    with pytest.raises(RuntimeError), db.write() as conn:
        conn.execute("INSERT INTO schema_version VALUES (500, 'tmp', 'x')")
        raise RuntimeError("boom")
    assert db.read().execute("SELECT COUNT(*) FROM schema_version WHERE version = 500"
                             ).fetchone()[0] == 0
    db.close()


def _writer(home: str, worker: int, count: int) -> None:
    import os

    os.environ["STOCKADE_HOME"] = home
    from stockade.governance.trajectory import Trajectory
    from stockade.store import open_database as open_db

    db = open_db()
    trajectory = Trajectory(db)
    for i in range(count):
        trajectory.append(f"run-{worker}", "test.event", {"i": i})
    db.close()


def test_two_processes_append_to_one_chain_without_breaking_it(stockade_home: Path) -> None:
    open_database().close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(stockade_home), w, 150)) for w in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    from stockade.governance.trajectory import Trajectory

    db = open_database()
    result = Trajectory(db).verify_chain()
    assert result.ok and result.checked == 300
    db.close()


def _open_and_migrate(home: str) -> None:
    import os

    os.environ["STOCKADE_HOME"] = home
    from stockade.store import open_database as open_db

    open_db().close()


def test_two_processes_opening_a_fresh_database_migrate_it_once(stockade_home: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_open_and_migrate, args=(str(stockade_home),)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    db = open_database()
    count = db.read().execute("SELECT COUNT(*) FROM schema_version").fetchone()[0]
    assert count == len(MIGRATIONS)
    db.close()


def test_each_thread_gets_its_own_connection_and_close_works_from_any_thread(
    stockade_home: Path,
) -> None:
    import threading

    db = open_database()
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(db.connection()))
    worker.start()
    worker.join()
    assert seen[0] is not db.connection()
    db.close()
