"""The keyed chain: MACs under the audit key, the head kept beside the database, the keyring's
record of the first keyed event, per-run checks and the commit hook that writes the head."""

from __future__ import annotations

import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.governance.chain import AuditKeys, ChainHead, ChainKey
from stockade.governance.sealing import SnapshotKeys
from stockade.governance.teamchain import anchor_for, marker_for
from stockade.governance.trajectory import EventKind, Trajectory, TrajectoryError
from stockade.store import Store
from tests.conftest import examples
from tests.unit.governance.conftest import SQLITE_FILE_ONLY, DictSecrets, FakeClock


def _keyed(db: Store, secrets: DictSecrets, clock: FakeClock) -> Trajectory:
    # The head and the keyed-since marker where each store keeps them: a file and the
    # keyring for the SQLite file, the team's rows for a team store.
    return Trajectory(db, clock, keys=AuditKeys(SnapshotKeys(secrets)), anchor=anchor_for(db),
                      marker=marker_for(db, secrets))


def test_events_are_macd_and_the_head_is_written_beside_the_database(
        db: Store, secrets: DictSecrets, clock: FakeClock) -> None:
    trail = _keyed(db, secrets, clock)
    event = trail.append("r", EventKind.RUN_STARTED, {"provider": "offline"})
    assert event.hash.startswith("hmac-sha256:") and "snapshot-key" in secrets.items
    head = anchor_for(db).read()
    assert head is not None and (head.count, head.mac) == (1, event.hash)
    assert head.authentic(trail.existing_key())
    assert trail.verify_chain().ok and trail.verify_chain().keyed


def test_a_legacy_trail_becomes_keyed_from_its_next_event_and_says_so(
        db: Store, secrets: DictSecrets, clock: FakeClock) -> None:
    Trajectory(db, clock).append("old", EventKind.RUN_STARTED, {})
    trail = _keyed(db, secrets, clock)
    trail.append("new", EventKind.RUN_STARTED, {})
    result = trail.verify_chain()
    assert result.ok and result.keyed and result.legacy_events == 1 and result.warnings
    # A process without the key cannot add to it (it would have to append unkeyed).
    with pytest.raises(TrajectoryError, match="cannot read that key"):
        Trajectory(db, clock, keys=AuditKeys(SnapshotKeys(DictSecrets()))).append(
            "x", EventKind.RUN_STARTED, {})


def test_another_key_cannot_extend_a_keyed_trail(db: Store, secrets: DictSecrets,
                                                 clock: FakeClock) -> None:
    _keyed(db, secrets, clock).append("r", EventKind.RUN_STARTED, {})
    other = DictSecrets()
    SnapshotKeys(other).for_sealing()
    with pytest.raises(TrajectoryError, match="keyed with key"):
        _keyed(db, other, clock).append("r", EventKind.RUN_FINISHED, {})


def test_a_rolled_back_append_puts_the_head_back(db: Store, secrets: DictSecrets,
                                                 clock: FakeClock) -> None:
    trail = _keyed(db, secrets, clock)
    first = trail.append("r", EventKind.RUN_STARTED, {})
    with pytest.raises(RuntimeError), db.write() as conn:
        trail.append_in(conn, "r", EventKind.RUN_FINISHED, {})
        raise RuntimeError("the step failed after its event")
    head = anchor_for(db).read()
    assert head is not None and (head.seq, head.mac) == (1, first.hash)
    assert trail.verify_chain().ok


def test_a_forged_head_does_not_authenticate(db: Store, secrets: DictSecrets,
                                             clock: FakeClock) -> None:
    trail = _keyed(db, secrets, clock)
    for _ in range(3):
        trail.append("r", EventKind.MODEL_REQUEST, {})
    anchor = anchor_for(db)
    real = anchor.read()
    assert real is not None
    with db.write():  # the team store's head row is written inside a write transaction
        anchor.write(ChainHead(2, 2, real.mac, real.key_id, real.seal))
    result = trail.verify_chain()
    assert not result.ok and "altered" in (result.reason or "")


@SQLITE_FILE_ONLY
def test_verify_run_checks_one_runs_events_in_place(db: Store, secrets: DictSecrets,
                                                    clock: FakeClock) -> None:
    trail = _keyed(db, secrets, clock)
    for i in range(6):
        trail.append(f"run-{i % 2}", EventKind.MODEL_REQUEST, {"iteration": i})
    assert trail.verify_run("run-0").ok and trail.verify_run("run-1").ok
    raw = sqlite3.connect(db.path)
    raw.execute("DROP TRIGGER event_no_update")
    raw.execute("UPDATE event SET payload = '{\"iteration\":9}' WHERE seq = 3")
    raw.commit()
    raw.close()
    broken = trail.verify_run("run-0")
    assert not broken.ok and broken.first_broken == 3 and trail.verify_run("run-1").ok


@settings(max_examples=examples(200), deadline=None)
@given(key=st.binary(min_size=32, max_size=100), text=st.text(max_size=200))
def test_the_event_mac_is_hmac_sha256(key: bytes, text: str) -> None:
    import hmac

    mac = ChainKey(key).mac(text)
    assert mac.rsplit(":", 1)[1] == hmac.digest(key, text.encode("utf-8"), "sha256").hex()
    assert ChainKey(key).matches(text, mac) and not ChainKey(key + b"x").matches(text, mac)
