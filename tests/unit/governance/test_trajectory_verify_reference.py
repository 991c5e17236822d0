"""`audit verify` against a reference walk: a generated trail, damaged at a random place in a
random way, gets exactly the result the straightforward per-event definition gives."""

from __future__ import annotations

import contextlib
import json
import secrets as token
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.governance import chainscan
from stockade.governance.chain import (
    HASH_PREFIX,
    MAC_PREFIX,
    AnchorError,
    AuditKeys,
    ChainHead,
    ChainKey,
    FileAnchor,
    KeyedSince,
    KeyringMarker,
    key_id_of,
    plain_hash,
)
from stockade.governance.sealing import SnapshotKeys
from stockade.governance.trajectory import GENESIS_HASH, Trajectory, event_text
from stockade.store import open_database
from stockade.store import runs as run_sql
from tests.conftest import examples
from tests.unit.governance.conftest import DictSecrets, FakeClock

RUN_IDS = ["run-0", "run-1", "run-2", 'run "quoted"', "rün-é", "tab\there"]
KINDS = ["model.request", "tool.proposed", "tool.result", 'kind "x"', "ctrl\x01"]
COLUMNS = "seq, run_id, run_seq, kind, at_ms, payload, prev_hash, hash"
DAMAGES = ["none", "payload", "field", "delete", "swap", "move", "link", "forge", "unkey",
           "unkey_suffix", "rekey", "rekey_suffix", "truncate", "anchor_delete",
           "anchor_garbage", "anchor_alter", "anchor_unkeyed", "marker_alter",
           "marker_delete", "run_orphan", "run_emptied"]


@contextlib.contextmanager
def scanner_choice(compiled: bool) -> Any:
    """Verify with the compiled inline check (where built) or with its Python twin."""
    with pytest.MonkeyPatch.context() as patch:
        if not compiled:
            patch.setattr(chainscan, "_Compiled", None)
        yield


# -- the reference: every event checked one by one, in the order the definition gives ---------

@dataclass
class _Walk:
    key: ChainKey | None
    since: KeyedSince | None
    prev: str = GENESIS_HASH
    last: int = 0
    checked: int = 0
    legacy: int = 0
    keyed: bool = False

    def fail(self, seq: int | None, run_id: str | None, reason: str) -> dict[str, Any]:
        return {"ok": False, "checked": self.checked, "first_broken": seq, "run_id": run_id,
                "reason": reason, "keyed": self.keyed, "legacy_events": self.legacy,
                "warnings": []}


def _event_problem(walk: _Walk, row: tuple[Any, ...], run_next: dict[str, int]) -> str | None:
    seq, run_id, run_seq, kind, at_ms, payload, prev_hash, stored = row
    if seq != walk.last + 1:
        return f"events {walk.last + 1}..{seq - 1} are missing before {seq}"
    if prev_hash != walk.prev:
        return f"event {seq} does not link to the event before it"
    text = event_text(seq, run_id, run_seq, kind, at_ms, payload, prev_hash)
    key = walk.key
    if stored.startswith(MAC_PREFIX):
        want = key_id_of(stored)
        if key is None:
            return (f"event {seq} is keyed with key {want}, which this machine does not hold "
                    "(keyring locked or missing, STOCKADE_SNAPSHOT_KEY not set), so the trail "
                    "cannot be checked here")
        if key.key_id != want:
            return (f"event {seq} names audit key {want}, not this machine's key "
                    f"{key.key_id}: it was written under another key, or forged")
        if key.mac(text) != stored:
            return (f"event {seq} does not authenticate under the audit key: it was changed "
                    "after it was written, or recomputed by someone without the key")
    else:
        if walk.keyed or (walk.since is not None and seq >= walk.since.seq):
            return (f"event {seq} is unkeyed where the trail is keyed: it was rewritten "
                    "without the audit key")
        if not stored.startswith(HASH_PREFIX):
            return f"event {seq} holds no MAC this build knows"
        if plain_hash(text) != stored:
            return f"event {seq} was changed after it was written"
    if walk.since is not None and seq == walk.since.seq and stored != walk.since.mac:
        return (f"event {seq} is not the first keyed event the keyring recorded: the trail "
                "was rewritten")
    if run_seq != run_next.get(run_id, 0):
        return f"event {seq} is out of order within run {run_id}"
    return None


def _anchor_problem(walk: _Walk, anchored: ChainHead | None, at_anchor: str | None,
                    keyed: bool) -> str | None:
    if anchored is None:
        if keyed:
            return ("the chain head kept beside the database is missing, so deleted newest "
                    "events could not be told apart: it was removed")
        return None
    if not anchored.authentic(walk.key):
        if anchored.key_id is not None and walk.key is None:
            return "the chain head is keyed, and this machine does not hold the audit key"
        return "the chain head kept beside the database was altered (its seal does not check)"
    if keyed and anchored.key_id is None:
        return "the chain head is unkeyed while the trail is keyed: it was replaced"
    if anchored.seq > walk.last:
        return (f"the newest {anchored.seq - walk.last} event(s) are missing: the chain head "
                f"kept beside the database records {anchored.count} events, the database "
                f"holds {walk.last}")
    if at_anchor != anchored.mac:
        return (f"event {anchored.seq} is not the event the chain head records: events were "
                "replaced")
    return None


def reference_verify(path: Path, key: ChainKey | None, since: KeyedSince | None
                     ) -> dict[str, Any]:
    """`verify_chain` as its definition reads, one event after the other."""
    raw = sqlite3.connect(path)
    try:
        rows = raw.execute(f"SELECT {COLUMNS} FROM event ORDER BY seq").fetchall()
        walk = _Walk(key, since)
        run_next: dict[str, int] = {}
        for row in rows:
            problem = _event_problem(walk, row, run_next)
            if problem is not None:
                return walk.fail(row[0], row[1], problem)
            run_next[row[1]] = row[2] + 1
            walk.keyed = walk.keyed or row[7].startswith(MAC_PREFIX)
            walk.legacy += 0 if row[7].startswith(MAC_PREFIX) else 1
            walk.prev, walk.last = row[7], row[0]
            walk.checked += 1
        try:
            anchored = FileAnchor(path).read()
        except AnchorError as exc:
            return walk.fail(walk.last + 1, None, str(exc))
        found = None if anchored is None else raw.execute(
            "SELECT hash FROM event WHERE seq = ?", (anchored.seq,)).fetchone()
        orphans = [r[0] for r in raw.execute(
            "SELECT run_id FROM run WHERE run_id NOT IN (SELECT run_id FROM event) "
            "ORDER BY created_ms, run_id")]
    finally:
        raw.close()
    if since is not None and walk.last < since.seq:
        return walk.fail(walk.last + 1, None,
                         f"the keyring records keyed events from {since.seq} on, but the "
                         f"trail ends at {walk.last}: events were deleted")
    if walk.last or anchored is not None:
        problem = _anchor_problem(walk, anchored, None if found is None else found[0],
                                  walk.keyed or since is not None)
        if problem is not None:
            first = walk.last + 1 if anchored is None or anchored.seq > walk.last \
                else anchored.seq
            return walk.fail(first, None, problem)
    if orphans:
        return walk.fail(None, orphans[0], f"run {orphans[0]} is listed but has no audit "
                         "events: its trail was deleted")
    warnings = []
    if walk.legacy and walk.keyed:
        warnings.append(f"the first {walk.legacy} event(s) are legacy, unkeyed: they were "
                        "written before the trail was keyed, so only accidental damage to "
                        "them is detected")
    elif walk.legacy:
        warnings.append("legacy, unkeyed trail: no audit key exists on this machine (no "
                        "secure keyring, no STOCKADE_SNAPSHOT_KEY), so accidental damage is "
                        "detected but not a deliberate rewrite")
    return {"ok": True, "checked": walk.checked, "first_broken": None, "run_id": None,
            "reason": None, "keyed": walk.keyed, "legacy_events": walk.legacy,
            "warnings": warnings}


# -- building and damaging a trail -----------------------------------------------------------

def _rows(raw: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return raw.execute(f"SELECT {COLUMNS} FROM event ORDER BY seq").fetchall()


def _remac(raw: sqlite3.Connection, rows: list[tuple[Any, ...]], start: int,
           key: ChainKey | None) -> None:
    """Recompute the events from position `start` on as a consistent chain (under `key`, or
    unkeyed): what someone rewriting the trail would do."""
    prev = rows[start - 1][7] if start > 0 else GENESIS_HASH
    for seq, run_id, run_seq, kind, at_ms, payload, _prev, _stored in rows[start:]:
        text = event_text(seq, run_id, run_seq, kind, at_ms, payload, prev)
        stored = key.mac(text) if key is not None else plain_hash(text)
        raw.execute("UPDATE event SET prev_hash = ?, hash = ? WHERE seq = ?",
                    (prev, stored, seq))
        prev = stored


def _damage(data: st.DataObject, path: Path, secrets: DictSecrets, key: ChainKey | None,
            marker: KeyringMarker) -> str:
    damage = data.draw(st.sampled_from(DAMAGES), label="damage")
    raw = sqlite3.connect(path)
    raw.execute("DROP TRIGGER event_no_update")
    raw.execute("DROP TRIGGER event_no_delete")
    rows = _rows(raw)
    at = data.draw(st.integers(0, len(rows) - 1), label="position")
    seq = rows[at][0]
    anchor = FileAnchor(path)
    if damage == "payload":
        raw.execute("UPDATE event SET payload = ? WHERE seq = ?",
                    (json.dumps({"iteration": data.draw(st.integers(-5, 5))}), seq))
    elif damage == "field":
        column, value = data.draw(st.one_of(
            st.tuples(st.just("kind"), st.sampled_from(KINDS)),
            st.tuples(st.just("run_id"), st.sampled_from(RUN_IDS)),
            st.tuples(st.just("at_ms"), st.one_of(st.integers(0, 2**45), st.just(1.5))),
            st.tuples(st.just("run_seq"), st.integers(0, 6))), label="field")
        with contextlib.suppress(sqlite3.IntegrityError):  # UNIQUE (run_id, run_seq)
            raw.execute(f"UPDATE event SET {column} = ? WHERE seq = ?", (value, seq))
    elif damage == "delete":
        raw.execute("DELETE FROM event WHERE seq = ?", (seq,))
    elif damage == "swap":
        other = rows[data.draw(st.integers(0, len(rows) - 1), label="other")][0]
        raw.execute("UPDATE event SET seq = -1 WHERE seq = ?", (seq,))
        raw.execute("UPDATE event SET seq = ? WHERE seq = ?", (seq, other))
        raw.execute("UPDATE event SET seq = ? WHERE seq = -1", (other,))
    elif damage == "move":
        raw.execute("UPDATE event SET seq = ? WHERE seq = ?",
                    (rows[-1][0] + data.draw(st.integers(1, 3)), seq))
    elif damage == "link":
        other = rows[data.draw(st.integers(0, len(rows) - 1), label="other")][7]
        raw.execute("UPDATE event SET prev_hash = ? WHERE seq = ?",
                    (data.draw(st.sampled_from([other, GENESIS_HASH])), seq))
    elif damage == "forge":
        key_id = data.draw(st.sampled_from([key.key_id if key else "0" * 12, "abcdef012345"]))
        forged = data.draw(st.sampled_from([f"{MAC_PREFIX}{key_id}:{token.token_hex(32)}",
                                            HASH_PREFIX + token.token_hex(32),
                                            "md5:" + token.token_hex(16)]))
        raw.execute("UPDATE event SET hash = ? WHERE seq = ?", (forged, seq))
    elif damage in ("unkey", "rekey"):
        raw.execute("UPDATE event SET payload = ? WHERE seq = ?", ('{"iteration":77}', seq))
        rows = _rows(raw)
        _remac(raw, rows[:at + 1], at, key if damage == "rekey" else None)
    elif damage in ("unkey_suffix", "rekey_suffix"):
        _remac(raw, rows, at, key if damage == "rekey_suffix" else None)
    elif damage == "truncate":
        raw.execute("DELETE FROM event WHERE seq >= ?", (seq,))
    elif damage == "anchor_delete":
        anchor.path.unlink(missing_ok=True)
    elif damage == "anchor_garbage":
        anchor.path.write_bytes(data.draw(st.sampled_from([b"{", b'{"format":"x"}', b"\xff"])))
    elif damage == "anchor_alter":
        head = anchor.read()
        if head is not None:
            anchor.write(ChainHead(head.count, head.seq - 1, head.mac, head.key_id, head.seal))
    elif damage == "anchor_unkeyed":
        anchor.write(ChainHead.of(rows[-1][0], rows[-1][0], rows[-1][7], None))
    elif damage == "marker_alter":
        marker.write(KeyedSince(seq, rows[at][7] if data.draw(st.booleans()) else "x"))
    elif damage == "marker_delete":
        secrets.items.pop(marker.name, None)
    elif damage == "run_orphan":
        run_sql.insert_run(raw, run_id="orphan", document_path="m.thf", document_digest=None,
                           provider="offline", model="m", now_ms=1, owner_pid=1,
                           owner_host="h")
    elif damage == "run_emptied":
        raw.execute("DELETE FROM event WHERE run_id = ?", (rows[at][1],))
    raw.commit()
    raw.close()
    return damage


@settings(max_examples=examples(200), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_verify_reports_what_the_reference_walk_reports(
        data: st.DataObject, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("STOCKADE_SNAPSHOT_KEY", raising=False)
    legacy = data.draw(st.integers(0, 3), label="legacy events")
    keyed = data.draw(st.integers(0 if legacy else 1, 16), label="keyed events")
    with tempfile.TemporaryDirectory(prefix="stockade-verify-") as tmp:
        path = Path(tmp) / "stockade.db"
        db = open_database(path)
        try:
            clock = FakeClock()
            secrets = DictSecrets()
            marker = KeyringMarker(secrets, path)
            plain = Trajectory(db, clock, anchor=FileAnchor(path))
            trail = Trajectory(db, clock, keys=AuditKeys(SnapshotKeys(secrets)),
                               anchor=FileAnchor(path), marker=marker)
            listed: set[str] = set()
            for part, count in ((plain, legacy), (trail, keyed)):
                with db.write() as conn:  # one transaction per part keeps examples quick
                    for i in range(count):
                        run_id = data.draw(st.sampled_from(RUN_IDS), label="run")
                        if run_id not in listed and data.draw(st.booleans(), label="listed"):
                            run_sql.insert_run(conn, run_id=run_id, document_path="m.thf",
                                               document_digest=None, provider="offline",
                                               model="m", now_ms=clock.now, owner_pid=1,
                                               owner_host="h")
                            listed.add(run_id)
                        clock.now += data.draw(st.integers(0, 5000))
                        payload = {"iteration": i, "name": data.draw(st.text(max_size=4))}
                        part.append_in(conn, run_id,
                                       data.draw(st.sampled_from(KINDS), label="kind"), payload)
            key = trail.existing_key()
            damage = _damage(data, path, secrets, key, marker)
            without_key = data.draw(st.booleans(), label="verified without the key")
            checker = Trajectory(db, clock, keys=AuditKeys(SnapshotKeys(
                DictSecrets() if without_key else secrets)), anchor=FileAnchor(path),
                marker=marker)
            expected = reference_verify(path, None if without_key else key, marker.read())
            with scanner_choice(data.draw(st.booleans(), label="compiled check")):
                result = checker.verify_chain().to_json()
        finally:
            db.close()
    assert result == expected, damage


def test_unkeyed_events_after_keyed_ones_fail_without_the_keyrings_marker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Where no keyed-since marker exists (no keyring to keep it), the keyed events already
    # checked are what make a rewritten, unkeyed newest part visible: the inline walk must
    # count them before it hands the first unkeyed event over.
    monkeypatch.delenv("STOCKADE_SNAPSHOT_KEY", raising=False)
    path = tmp_path / "stockade.db"
    db = open_database(path)
    try:
        trail = Trajectory(db, FakeClock(), keys=AuditKeys(SnapshotKeys(DictSecrets())),
                           anchor=FileAnchor(path))
        for i in range(10):
            trail.append("r", "model.request", {"iteration": i})
        raw = sqlite3.connect(path)
        raw.execute("DROP TRIGGER event_no_update")
        _remac(raw, _rows(raw), 5, None)
        raw.commit()
        newest = _rows(raw)[-1]
        raw.close()
        FileAnchor(path).write(ChainHead.of(10, 10, newest[7], None))
        result = trail.verify_chain()
    finally:
        db.close()
    assert (result.ok, result.first_broken, result.checked, result.keyed) == (False, 6, 5, True)
    assert result.reason == ("event 6 is unkeyed where the trail is keyed: it was rewritten "
                             "without the audit key")
