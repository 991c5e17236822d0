"""The trajectory: append-only, chained, digest-only payloads, and verification that names breaks."""

from __future__ import annotations

import json
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.governance.trajectory import (
    GENESIS_HASH,
    EventKind,
    Trajectory,
    TrajectoryError,
    event_hash,
)
from stockade.store import Store
from stockade.thf.canonical import canonical_json, digest
from tests.conftest import examples
from tests.unit.governance.conftest import REFUSED, SQLITE_FILE_ONLY


def _fill(trajectory: Trajectory, n: int = 5) -> None:
    for i in range(n):
        trajectory.append(f"run-{i % 2}", EventKind.MODEL_REQUEST, {"iteration": i})


def test_events_chain_from_genesis(trajectory: Trajectory) -> None:
    first = trajectory.append("r", EventKind.RUN_STARTED, {"provider": "offline"})
    second = trajectory.append("r", EventKind.RUN_FINISHED, {"outcome": "completed"})
    assert first.prev_hash == GENESIS_HASH and second.prev_hash == first.hash
    assert (first.seq, second.seq, first.run_seq, second.run_seq) == (1, 2, 0, 1)


def test_event_hash_equals_canonical_json_digest(trajectory: Trajectory) -> None:
    event = trajectory.append("r", EventKind.TOOL_PROPOSED,
                              {"call_id": "c1", "tool": "add_threat", "é": [1, True, None]})
    envelope = {"seq": event.seq, "run_id": "r", "run_seq": 0, "kind": "tool.proposed",
                "at_ms": event.at_ms, "payload": event.payload, "prev_hash": event.prev_hash}
    assert event.hash == digest(envelope)
    assert event_hash(event.seq, "r", 0, "tool.proposed", event.at_ms,
                      canonical_json(event.payload), event.prev_hash) == event.hash


def test_run_seq_counts_per_run_while_seq_is_global(trajectory: Trajectory) -> None:
    _fill(trajectory, 6)
    assert [e.run_seq for e in trajectory.events("run-0")] == [0, 1, 2]
    assert [e.seq for e in trajectory.events("run-1")] == [2, 4, 6]


def test_payloads_refuse_long_text_and_floats(trajectory: Trajectory) -> None:
    with pytest.raises(TrajectoryError, match="ids, names, counts and digests"):
        trajectory.append("r", EventKind.TOOL_RESULT, {"result": "x" * 500})
    with pytest.raises(TrajectoryError):
        trajectory.append("r", EventKind.TOOL_RESULT, {"ratio": 0.5})
    assert trajectory.count() == 0


def test_update_and_delete_are_refused_by_triggers(trajectory: Trajectory, db: Store) -> None:
    _fill(trajectory, 2)
    # SQLite's triggers refuse; on a team store the role is not even granted UPDATE/DELETE.
    with pytest.raises(REFUSED, match=r"append-only|permission denied"), db.write() as conn:
        conn.execute("UPDATE event SET payload = '{}' WHERE seq = 1")
    with pytest.raises(REFUSED, match=r"append-only|permission denied"), db.write() as conn:
        conn.execute("DELETE FROM event WHERE seq = 2")


def test_verify_passes_on_an_intact_chain(trajectory: Trajectory) -> None:
    _fill(trajectory, 20)
    result = trajectory.verify_chain()
    assert result.ok and result.checked == 20 and result.first_broken is None


def _drop_triggers(db: Store) -> sqlite3.Connection:
    raw = sqlite3.connect(db.path)
    raw.execute("DROP TRIGGER event_no_update")
    raw.execute("DROP TRIGGER event_no_delete")
    return raw


@SQLITE_FILE_ONLY
def test_verify_names_an_edited_event(trajectory: Trajectory, db: Store) -> None:
    _fill(trajectory, 10)
    raw = _drop_triggers(db)
    raw.execute("UPDATE event SET payload = ? WHERE seq = 7", (json.dumps({"iteration": 99}),))
    raw.commit()
    result = trajectory.verify_chain()
    assert not result.ok and result.first_broken == 7 and result.checked == 6
    assert "changed" in (result.reason or "")


@SQLITE_FILE_ONLY
def test_verify_names_the_event_after_a_deleted_one(trajectory: Trajectory, db: Store) -> None:
    _fill(trajectory, 10)
    raw = _drop_triggers(db)
    raw.execute("DELETE FROM event WHERE seq = 4")
    raw.commit()
    result = trajectory.verify_chain()
    assert not result.ok and result.first_broken == 5 and "missing" in (result.reason or "")


@SQLITE_FILE_ONLY
def test_verify_catches_a_rehashed_event_by_its_successor(
    trajectory: Trajectory, db: Store
) -> None:
    _fill(trajectory, 5)
    raw = _drop_triggers(db)
    seq, run_id, run_seq, kind, at_ms, _payload, prev = raw.execute(
        "SELECT seq, run_id, run_seq, kind, at_ms, payload, prev_hash FROM event WHERE seq = 3"
    ).fetchone()
    forged = canonical_json({"iteration": 1234})
    new_hash = event_hash(seq, run_id, run_seq, kind, at_ms, forged, prev)
    raw.execute("UPDATE event SET payload = ?, hash = ? WHERE seq = 3", (forged, new_hash))
    raw.commit()
    result = trajectory.verify_chain()
    assert not result.ok and result.first_broken == 4 and "link" in (result.reason or "")


def test_export_lines_are_canonical_json_per_event(trajectory: Trajectory) -> None:
    _fill(trajectory, 4)
    *lines, sealing = list(trajectory.export_lines("run-1"))
    assert len(lines) == 2
    assert [json.loads(line)["run_seq"] for line in lines] == [0, 1]
    assert all(canonical_json(json.loads(line)) == line for line in [*lines, sealing])
    assert json.loads(sealing)["export"]["events"] == 2


@SQLITE_FILE_ONLY
def test_an_append_that_cannot_get_the_write_lock_raises_trajectory_error(db: Store) -> None:
    trajectory = Trajectory(db)
    db.read().execute("PRAGMA busy_timeout = 50")
    raw = sqlite3.connect(db.path)
    raw.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        with pytest.raises(TrajectoryError, match="busy"):
            trajectory.append("r", EventKind.RUN_STARTED, {})
    finally:
        raw.rollback()
        raw.close()


@settings(max_examples=examples(300), deadline=None)
@given(run_id=st.text(min_size=1, max_size=30), kind=st.text(min_size=1, max_size=20),
       prev=st.text(max_size=80), seq=st.integers(0, 2**40), at_ms=st.integers(0, 2**45))
def test_event_hash_matches_canonical_json_for_any_strings(
    run_id: str, kind: str, prev: str, seq: int, at_ms: int
) -> None:
    payload = {"name": run_id, "n": seq}
    envelope = {"seq": seq, "run_id": run_id, "run_seq": 3, "kind": kind, "at_ms": at_ms,
                "payload": payload, "prev_hash": prev}
    assert event_hash(seq, run_id, 3, kind, at_ms, canonical_json(payload), prev) == \
        digest(envelope)


@SQLITE_FILE_ONLY
def test_verify_checks_run_ids_and_kinds_that_need_escaping(
    trajectory: Trajectory, db: Store
) -> None:
    # Verify quotes each kind and run id once and the previous hash as is; the text it hashes
    # must still be exactly the canonical JSON the append hashed.
    for run_id, kind in [('run "quoted"', "tool.proposed"), ("rün-é\\n", 'kind "x"'),
                         ("tab\there", "ctrl\x01"), ('run "quoted"', "tool.proposed")]:
        trajectory.append(run_id, kind, {"call_id": "c1"})
    result = trajectory.verify_chain()
    assert result.ok and result.checked == 4
    raw = _drop_triggers(db)
    raw.execute("UPDATE event SET run_id = ? WHERE seq = 2", ("rün-é\\m",))
    raw.commit()
    result = trajectory.verify_chain()
    assert not result.ok and result.first_broken == 2 and "changed" in (result.reason or "")
