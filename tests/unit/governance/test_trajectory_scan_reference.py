"""`audit verify`'s walk inside SQLite's own scan (`event_sql.visit_events`) against the plain
per-event reference walk of `test_trajectory_verify_reference.py`: the same result, or the same
exception, for trails whose ids, kinds and payloads hold any text, damaged in any of the
reference's 21 ways or in the ways only a scan in place could misread: a column retyped to
another storage class with the same bytes, and a table rebuilt without its primary key, its
rows out of seq order, with or without a second copy of an event."""

from __future__ import annotations

import gc
import sqlite3
import tempfile
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.governance.chain import AuditKeys, FileAnchor, KeyringMarker
from stockade.governance.sealing import SnapshotKeys
from stockade.governance.trajectory import Trajectory, _ChainCheck
from stockade.store import events as event_sql
from stockade.store import open_database
from stockade.store import runs as run_sql
from tests.conftest import examples
from tests.unit.governance.conftest import DictSecrets, FakeClock
from tests.unit.governance.test_trajectory_verify_reference import (
    COLUMNS,
    _damage,
    _rows,
    reference_verify,
    scanner_choice,
)

# Any text SQLite's TEXT holds from Python: quotes, backslashes, control characters (NUL too),
# non-ASCII and astral characters; no lone surrogates (they cannot be encoded to store them).
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
RETYPES = {
    "run_id": "CAST(run_id AS BLOB)", "kind": "CAST(kind AS BLOB)",
    "payload": "CAST(payload AS BLOB)", "prev_hash": "CAST(prev_hash AS BLOB)",
    "hash": "CAST(hash AS BLOB)", "run_seq": "CAST(run_seq AS BLOB)",
    "at_ms": "at_ms + 0.5",
}
SCAN_DAMAGES = ["retype", "rebuild", "rebuild_shuffled", "rebuild_duplicate"]


def _scan_damage(data: st.DataObject, path: Path) -> str:
    """Damage only a scan in place could misread (the reference's own kinds are `_damage`)."""
    damage = data.draw(st.sampled_from(SCAN_DAMAGES), label="scan damage")
    raw = sqlite3.connect(path)
    raw.execute("DROP TRIGGER event_no_update")
    raw.execute("DROP TRIGGER event_no_delete")
    seqs = [r[0] for r in _rows(raw)]
    if damage == "retype":
        column = data.draw(st.sampled_from(sorted(RETYPES)), label="column")
        seq = data.draw(st.sampled_from(seqs), label="event")
        raw.execute(f"UPDATE event SET {column} = {RETYPES[column]} WHERE seq = ?", (seq,))
    else:
        # The same rows in a table without INTEGER PRIMARY KEY: rowid order is insertion order.
        order = list(seqs)
        if damage != "rebuild":
            order = data.draw(st.permutations(seqs), label="insertion order")
        if damage == "rebuild_duplicate":
            order.insert(data.draw(st.integers(0, len(order)), label="copy at"),
                         data.draw(st.sampled_from(seqs), label="copied"))
        raw.execute(f"CREATE TABLE event_rebuilt AS SELECT {COLUMNS} FROM event WHERE 0")
        for seq in order:
            raw.execute(f"INSERT INTO event_rebuilt SELECT {COLUMNS} FROM event WHERE seq = ?",
                        (seq,))
        raw.execute("DROP TABLE event")
        raw.execute("ALTER TABLE event_rebuilt RENAME TO event")
    raw.commit()
    raw.close()
    return damage


def _outcome(run: Any) -> Any:
    try:
        return run()
    except Exception as exc:  # both walks must fail the same way
        return ("raises", type(exc).__name__)


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_the_scan_in_place_reports_what_the_reference_walk_reports(
        data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STOCKADE_SNAPSHOT_KEY", raising=False)
    legacy = data.draw(st.integers(0, 2), label="legacy events")
    keyed = data.draw(st.integers(0 if legacy else 1, 14), label="keyed events")
    with tempfile.TemporaryDirectory(prefix="stockade-scan-") as tmp:
        path = Path(tmp) / "stockade.db"
        db = open_database(path)
        try:
            clock = FakeClock()
            secrets = DictSecrets()
            marker = KeyringMarker(secrets, path)
            plain = Trajectory(db, clock, anchor=FileAnchor(path))
            trail = Trajectory(db, clock, keys=AuditKeys(SnapshotKeys(secrets)),
                               anchor=FileAnchor(path), marker=marker)
            run_ids = data.draw(st.lists(TEXT, min_size=1, max_size=3, unique=True),
                                label="run ids")
            listed: set[str] = set()
            for part, count in ((plain, legacy), (trail, keyed)):
                with db.write() as conn:
                    for i in range(count):
                        run_id = data.draw(st.sampled_from(run_ids), label="run")
                        if run_id not in listed and data.draw(st.booleans(), label="listed"):
                            listed.add(run_id)
                            run_sql.insert_run(conn, run_id=run_id, document_path="m.thf",
                                               document_digest=None, provider="offline",
                                               model="m", now_ms=clock.now, owner_pid=1,
                                               owner_host="h")
                        clock.now += data.draw(st.integers(0, 5000))
                        part.append_in(conn, run_id, data.draw(TEXT, label="kind"),
                                       {"iteration": i, "name": data.draw(TEXT, label="name")})
            key = trail.existing_key()
            if data.draw(st.booleans(), label="scan damage"):
                damage = _scan_damage(data, path)
            else:
                damage = _damage(data, path, secrets, key, marker)
            checker = Trajectory(db, clock, keys=AuditKeys(SnapshotKeys(secrets)),
                                 anchor=FileAnchor(path), marker=marker)
            expected = _outcome(lambda: reference_verify(path, key, marker.read()))
            with scanner_choice(data.draw(st.booleans(), label="compiled check")):
                result = _outcome(lambda: checker.verify_chain().to_json())
        finally:
            db.close()
    assert result == expected, damage


def test_a_scan_stops_where_its_callback_says_and_lets_it_go(tmp_path: Path) -> None:
    db = open_database(tmp_path / "stockade.db")
    try:
        trail = Trajectory(db, FakeClock(), anchor=FileAnchor(tmp_path / "stockade.db"))
        for i in range(5):
            trail.append("r", "model.request", {"iteration": i})
        seen: list[int] = []

        def visit(seq: int, *_rest: Any) -> int:
            seen.append(seq)
            return int(seq < 3)

        conn = db.read()
        assert event_sql.visit_events(conn, visit, after=1) is False
        assert seen == [2, 3]
        held = weakref.ref(visit)
        del visit
        gc.collect()
        assert held() is None
        assert event_sql.visit_events(conn, lambda *_row: 1) is True
    finally:
        db.close()


def test_an_interrupt_inside_the_scan_reaches_the_caller(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # SQLite turns a callback's exception into its own error; Ctrl-C must still be Ctrl-C.
    monkeypatch.delenv("STOCKADE_SNAPSHOT_KEY", raising=False)
    path = tmp_path / "stockade.db"
    db = open_database(path)
    try:
        Trajectory(db, FakeClock(), anchor=FileAnchor(path)).append("r", "model.request", {})
        trail = Trajectory(db, FakeClock(), keys=AuditKeys(SnapshotKeys(DictSecrets())),
                           anchor=FileAnchor(path))
        trail.append("r", "model.request", {})

        def interrupted(*_args: Any) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(_ChainCheck, "event", interrupted)  # the legacy event goes there
        with pytest.raises(KeyboardInterrupt):
            trail.verify_chain()
    finally:
        db.close()
