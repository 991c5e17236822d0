"""The audit trajectory: append-only events for every step of every run, in one keyed chain.

One global chain: each event stores the MAC of the event before it (in any run), and its own
MAC (HMAC-SHA-256 under the audit key, `governance.chain`) covers its canonical JSON including
that link. A single chain means deleting a whole run is as visible as editing one event; the
chain head kept outside the database (written inside every appending transaction) makes
deleting the newest events visible, and the key makes a consistent recomputation visible.
Trails written before keying, or on a machine with no key at all, carry plain `sha256:` hashes
and verify as "legacy, unkeyed" with a warning. Appends take the write lock (`BEGIN
IMMEDIATE`), so two processes extend the chain one after the other, never from the same head.
SQLite triggers refuse UPDATE and DELETE; `verify_chain` catches anyone who goes around them.
Payloads hold ids, names, counts and digests only — never arguments, results, prompts or
documents; `check_payload` enforces the shape.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from hashlib import sha256
from typing import Any

from stockade.governance.chain import (
    HASH_PREFIX,
    MAC_PREFIX,
    AnchorError,
    AuditKeys,
    ChainAnchor,
    ChainHead,
    ChainKey,
    ChainMarker,
    KeyedSince,
    key_id_of,
    plain_hash,
)
from stockade.governance.chainscan import ChainScanner, new_scanner
from stockade.governance.teamchain import anchor_for
from stockade.store import Store, StoreError
from stockade.store import events as event_sql
from stockade.store.interface import Connection
from stockade.thf.canonical import canonical_json

log = logging.getLogger(__name__)

GENESIS_HASH = "sha256:" + "0" * 64
# Longest string a payload may hold: ids, names and digests fit; prose and documents do not.
MAX_PAYLOAD_STRING = 200
EXPORT_FORMAT = "stockade.audit-export/1"
_EXPORT_LABEL = "stockade audit export v1|"


class EventKind(StrEnum):
    RUN_STARTED = "run.started"
    GUARD_DECISION = "guard.decision"
    MODEL_REQUEST = "model.request"
    MODEL_USAGE = "model.usage"
    MODEL_RETRY = "model.retry"
    METER_REFUSED = "meter.refused"
    METER_OVERRUN = "meter.overrun"
    TOOL_PROPOSED = "tool.proposed"
    TOOL_APPROVED = "tool.approved"
    TOOL_DENIED = "tool.denied"
    TOOL_EDITED = "tool.edited"
    TOOL_STARTED = "tool.started"
    TOOL_RESULT = "tool.result"
    DOCUMENT_COMMITTED = "document.committed"
    DOCUMENT_WRITTEN = "document.written"
    TURN_UNDONE = "turn.undone"
    TURN_SETTLED = "turn.settled"
    RUN_PARKED = "run.parked"
    RUN_RESUMED = "run.resumed"
    RUN_FINISHED = "run.finished"
    RUN_INTERRUPTED = "run.interrupted"


class TrajectoryError(Exception):
    """An event could not be appended (bad payload or storage failure); the step must not run."""


@dataclass(frozen=True, slots=True)
class TrajectoryEvent:
    seq: int
    run_id: str
    run_seq: int
    kind: str
    at_ms: int
    payload: dict[str, Any]
    prev_hash: str
    hash: str
    """The event's MAC (`hmac-sha256:<key id>:<hex>`), or `sha256:<hex>` when unkeyed."""

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "run_id": self.run_id, "run_seq": self.run_seq,
                "kind": self.kind, "at_ms": self.at_ms, "payload": self.payload,
                "prev_hash": self.prev_hash, "hash": self.hash}

    @property
    def keyed(self) -> bool:
        return self.hash.startswith(MAC_PREFIX)


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    checked: int
    first_broken: int | None = None
    run_id: str | None = None
    reason: str | None = None
    keyed: bool = False
    """The trail (or its newest part) is keyed; False: legacy, unkeyed."""
    legacy_events: int = 0
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "checked": self.checked, "first_broken": self.first_broken,
                "run_id": self.run_id, "reason": self.reason, "keyed": self.keyed,
                "legacy_events": self.legacy_events, "warnings": list(self.warnings)}


def check_payload(value: Any, path: str = "payload") -> None:
    """Refuse payload content that could carry text: long strings, floats, unknown types."""
    if value is None or isinstance(value, (bool, int)):
        return
    if isinstance(value, str):
        if len(value) > MAX_PAYLOAD_STRING:
            raise TrajectoryError(f"{path} is a {len(value)}-character string; audit payloads "
                                  f"hold ids, names, counts and digests only")
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_payload(item, f"{path}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TrajectoryError(f"{path} has a non-string key")
            check_payload(item, f"{path}.{key}")
        return
    raise TrajectoryError(f"{path} holds a {type(value).__name__}, which audit payloads refuse")


def _s(text: str) -> str:
    # Fast path for ids, kinds and digests; identical to json.dumps for such strings.
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'
    return json.dumps(text, ensure_ascii=False)


def event_text(seq: int, run_id: str, run_seq: int, kind: str, at_ms: int, payload_json: str,
               prev_hash: str) -> str:
    """The event's canonical JSON (keys in code-point order, payload embedded): what its MAC
    covers.

    Built by hand from the already-canonical payload text so verification of 100k events stays
    well under a second; `test_event_hash_equals_canonical_json_digest` pins the equivalence.
    """
    return (f'{{"at_ms":{at_ms},"kind":{_s(kind)},"payload":{payload_json},'
            f'"prev_hash":{_s(prev_hash)},"run_id":{_s(run_id)},"run_seq":{run_seq},'
            f'"seq":{seq}}}')


def event_hash(seq: int, run_id: str, run_seq: int, kind: str, at_ms: int, payload_json: str,
               prev_hash: str) -> str:
    """The unkeyed (legacy) form: `sha256:` over the event's canonical JSON."""
    return plain_hash(event_text(seq, run_id, run_seq, kind, at_ms, payload_json, prev_hash))


class _HeadWrite:
    """Writes the chain head (and, once, the keyed-since marker) just before COMMIT."""

    def __init__(self, trajectory: Trajectory, conn: Connection) -> None:
        self._trajectory = trajectory
        self._conn = conn
        self.head: ChainHead | None = None
        self.since: KeyedSince | None = None
        self._wrote = self._marked = False

    def before_commit(self) -> None:
        anchor, marker = self._trajectory.anchor, self._trajectory.marker
        if self.since is not None and marker is not None:
            marker.write(self.since)
            self._marked = True
        if self.head is not None:
            try:
                anchor.write(self.head)
            except AnchorError as exc:
                raise TrajectoryError(str(exc)) from None
            self._wrote = True

    def after_rollback(self) -> None:
        if self._marked and self._trajectory.marker is not None:
            self._trajectory.marker.clear()
        if self._wrote:
            # Put the anchor back to what the database now holds, after the rollback.
            try:
                self._trajectory.reanchor(self._conn)
            except (AnchorError, TrajectoryError, sqlite3.Error):
                log.warning("the audit chain head could not be restored after a rollback")


class Trajectory:
    """Appends, reads and verifies audit events in the shared database."""

    def __init__(self, db: Store, clock_ms: Callable[[], int] | None = None, *,
                 keys: AuditKeys | None = None, anchor: ChainAnchor | None = None,
                 marker: ChainMarker | None = None) -> None:
        self._db = db
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self._keys = keys
        self.anchor: ChainAnchor = anchor if anchor is not None else anchor_for(db)
        self.marker = marker
        self._key: ChainKey | None = None
        self._key_resolved = False

    # -- keys ----------------------------------------------------------------------------------

    def existing_key(self) -> ChainKey | None:
        """The audit key if this machine holds it (verification never creates one)."""
        if self._key_resolved:
            return self._key
        return self._keys.existing() if self._keys is not None else None

    def _key_for_append(self, previous: str | None) -> ChainKey | None:
        if not self._key_resolved:
            key = None
            if self._keys is not None:
                key = self._keys.existing()
                if key is None and (previous is None or not previous.startswith(MAC_PREFIX)):
                    key = self._keys.for_append()
            self._key, self._key_resolved = key, True
        key = self._key
        want = key_id_of(previous) if previous is not None else None
        if want is not None:
            if key is None:
                raise TrajectoryError(
                    f"the audit trail is keyed (key {want}), but this process cannot read that "
                    "key (keyring locked or missing, STOCKADE_SNAPSHOT_KEY not set); nothing "
                    "was recorded, so the step did not run")
            if key.key_id != want:
                raise TrajectoryError(
                    f"the audit trail is keyed with key {want}, but the key available here is "
                    f"{key.key_id} (another keyring or STOCKADE_SNAPSHOT_KEY); nothing was "
                    "recorded, so the step did not run")
        return key

    # -- appending -----------------------------------------------------------------------------

    def append_in(self, conn: Connection, run_id: str, kind: EventKind | str,
                  payload: dict[str, Any] | None = None) -> TrajectoryEvent:
        """Append inside the caller's write transaction (so a step and its event commit together)."""
        body = dict(payload or {})
        check_payload(body)
        try:
            payload_json = canonical_json(body)
        except (TypeError, ValueError) as exc:
            raise TrajectoryError(f"payload is not canonical JSON: {exc}") from None
        head = event_sql.chain_head(conn)
        seq, prev = (1, GENESIS_HASH) if head is None else (head[0] + 1, head[1])
        key = self._key_for_append(None if head is None else head[1])
        run_seq = event_sql.next_run_seq(conn, run_id)
        at_ms = int(self._clock_ms())
        kind_text = str(kind)
        text = event_text(seq, run_id, run_seq, kind_text, at_ms, payload_json, prev)
        stored = key.mac(text) if key is not None else plain_hash(text)
        event_sql.insert_event(conn, event_sql.EventRow(seq, run_id, run_seq, kind_text, at_ms,
                                                        payload_json, prev, stored))
        write = self._db.transaction_hook("audit-head", lambda: _HeadWrite(self, conn))
        assert isinstance(write, _HeadWrite)
        write.head = ChainHead.of(seq, seq, stored, key)
        if key is not None and (head is None or not head[1].startswith(MAC_PREFIX)):
            write.since = KeyedSince(seq, stored)  # the first keyed event of this trail
        return TrajectoryEvent(seq, run_id, run_seq, kind_text, at_ms, body, prev, stored)

    def append(self, run_id: str, kind: EventKind | str,
               payload: dict[str, Any] | None = None) -> TrajectoryEvent:
        """Append durably in its own transaction; raises `TrajectoryError` on any failure."""
        try:
            with self._db.write() as conn:
                return self.append_in(conn, run_id, kind, payload)
        except sqlite3.DatabaseError as exc:
            raise TrajectoryError(str(self._db.explain(exc))) from None
        except StoreError as exc:
            raise TrajectoryError(str(exc)) from None
        except AnchorError as exc:
            raise TrajectoryError(str(exc)) from None

    def reanchor(self, conn: Connection) -> None:
        """Write the anchor from the database's newest event (after a rolled-back append)."""
        head = event_sql.chain_head(conn)
        if head is None:
            self.anchor.restore(None)
            return
        key = self._key if head[1].startswith(MAC_PREFIX) else None
        if head[1].startswith(MAC_PREFIX) and key is None:
            return  # cannot seal it; leave the anchor ahead, verification will say so
        self.anchor.write(ChainHead.of(head[0], head[0], head[1], key))

    # -- reading -------------------------------------------------------------------------------

    def events(self, run_id: str) -> list[TrajectoryEvent]:
        rows = event_sql.events_for_run(self._db.read(), run_id)
        return [_event(r) for r in rows]

    def event(self, seq: int) -> TrajectoryEvent | None:
        row = event_sql.event_at(self._db.read(), seq)
        return None if row is None else _event(row)

    def count(self) -> int:
        return event_sql.event_count(self._db.read())

    def current_head(self) -> ChainHead | None:
        """The chain head as the database holds it now, sealed as the anchor would be."""
        head = event_sql.chain_head(self._db.read())
        if head is None:
            return None
        key = self.existing_key() if head[1].startswith(MAC_PREFIX) else None
        return ChainHead.of(head[0], head[0], head[1], key)

    # -- verification --------------------------------------------------------------------------

    def verify_chain(self) -> VerifyResult:
        """Check every MAC, link and order, the head kept outside the database, the keyed-since
        marker and that every listed run has events; name the first event that does not check."""
        key = self.existing_key()
        since = self.marker.read() if self.marker is not None else None
        conn = self._db.read()
        check = _ChainCheck(key, since)
        try:
            broken = check.scan(conn)
        except _ScanUnsure:
            check = _ChainCheck(key, since)
            broken = None
        if broken is None:
            broken = check.walk(event_sql.event_rows(conn, after=check.last_seq))
        if broken is not None:
            return broken
        # The tail and the anchor are read under the write lock, where no writer can be between
        # writing the head and committing its events.
        with self._locked() as conn:
            broken = check.walk(event_sql.event_rows(conn, after=check.last_seq))
            if broken is not None:
                return broken
            try:
                anchored = self.anchor.read()
            except AnchorError as exc:
                return check.fail(check.last_seq + 1, None, str(exc))
            at_anchor = _mac_at(conn, anchored)
            missing = event_sql.runs_without_events(conn)
        broken = check.finish(anchored, at_anchor)
        if broken is not None:
            return broken
        if missing:
            return check.fail(None, missing[0], f"run {missing[0]} is listed but has no audit "
                              "events: its trail was deleted")
        return check.result()

    @contextmanager
    def _locked(self) -> Iterator[Connection]:
        """The write lock for a consistent read of the tail, or a plain read where the file
        cannot be written (a read-only copy being inspected)."""
        with ExitStack() as stack:
            try:
                conn = stack.enter_context(self._db.write())
            except StoreError:
                conn = self._db.read()
            yield conn

    def verify_run(self, run_id: str) -> VerifyResult:
        """Check one run's events in place: each MAC, each link to the events around it, its
        order, and — for the chain's newest events — the anchored head. Cheap enough for every
        resume, where the whole chain would not be."""
        conn = self._db.read()
        rows = event_sql.events_for_run(conn, run_id)
        key = self.existing_key()
        if not rows:
            return VerifyResult(False, 0, None, run_id, f"run {run_id} has no audit events")
        neighbours = event_sql.hashes_at(conn, sorted({r.seq - 1 for r in rows if r.seq > 1}
                                                      | {r.seq + 1 for r in rows}))
        keyed = False
        for position, row in enumerate(rows):
            text = event_text(row.seq, row.run_id, row.run_seq, row.kind, row.at_ms,
                              row.payload, row.prev_hash)
            if row.run_seq != position:
                return VerifyResult(False, position, row.seq, run_id,
                                    f"event {row.seq} is out of order within run {run_id}")
            reason = _mac_problem(row.seq, text, row.hash, key)
            if reason is not None:
                return VerifyResult(False, position, row.seq, run_id, reason)
            keyed = keyed or row.hash.startswith(MAC_PREFIX)
            before = GENESIS_HASH if row.seq == 1 else neighbours.get(row.seq - 1, (None, None))[1]
            if before != row.prev_hash:
                return VerifyResult(False, position, row.seq, run_id,
                                    f"event {row.seq} does not link to the event before it")
            after = neighbours.get(row.seq + 1)
            if after is not None and after[0] != row.hash:
                return VerifyResult(False, position, row.seq + 1, run_id,
                                    f"event {row.seq + 1} does not link to event {row.seq}")
        last = rows[-1]
        if last.seq + 1 not in neighbours:
            with self._locked() as locked:
                newest = event_sql.chain_head(locked)
                try:
                    anchored = self.anchor.read()
                except AnchorError as exc:
                    return VerifyResult(False, len(rows), last.seq + 1, run_id, str(exc))
                at_anchor = _mac_at(locked, anchored)
            if newest is not None and newest[0] == last.seq:
                problem = _anchor_problem(anchored, last.seq, at_anchor, key, keyed)
                if problem is not None:
                    return VerifyResult(False, len(rows), last.seq + 1, run_id, problem)
        return VerifyResult(True, len(rows), keyed=keyed)

    # -- export --------------------------------------------------------------------------------

    def export_lines(self, run_id: str) -> Iterator[str]:
        """The run's events as JSON lines (canonical JSON, one event per line), then one line
        sealing the export: the run's event count and last MAC, and the chain head."""
        events = self.events(run_id)
        for event in events:
            yield canonical_json(event.to_json())
        if events:
            yield canonical_json({"export": self._export_seal(run_id, events)})

    def _export_seal(self, run_id: str, events: list[TrajectoryEvent]) -> dict[str, Any]:
        head = self.current_head()
        key = self.existing_key() if events[-1].keyed else None
        body: dict[str, Any] = {
            "format": EXPORT_FORMAT, "run_id": run_id, "events": len(events),
            "last_mac": events[-1].hash, "chain_head": head.to_json() if head else None,
            "key_id": key.key_id if key is not None else None}
        text = _EXPORT_LABEL + canonical_json(body)
        body["seal"] = key.mac(text) if key is not None else plain_hash(text)
        return body


def _event(r: event_sql.EventRow) -> TrajectoryEvent:
    return TrajectoryEvent(r.seq, r.run_id, r.run_seq, r.kind, r.at_ms, json.loads(r.payload),
                           r.prev_hash, r.hash)


def _mac_problem(seq: int, text: str, stored: str, key: ChainKey | None) -> str | None:
    """Why an event's stored MAC does not check (None when it does)."""
    if stored.startswith(MAC_PREFIX):
        want = key_id_of(stored)
        if key is None:
            return (f"event {seq} is keyed with key {want}, which this machine does not hold "
                    "(keyring locked or missing, STOCKADE_SNAPSHOT_KEY not set), so the trail "
                    "cannot be checked here")
        if key.key_id != want:
            return (f"event {seq} names audit key {want}, not this machine's key "
                    f"{key.key_id}: it was written under another key, or forged")
        if not key.matches(text, stored):
            return (f"event {seq} does not authenticate under the audit key: it was changed "
                    "after it was written, or recomputed by someone without the key")
        return None
    if stored.startswith(HASH_PREFIX):
        if plain_hash(text) != stored:
            return f"event {seq} was changed after it was written"
        return None
    return f"event {seq} holds no MAC this build knows"


def _mac_at(conn: Connection, anchored: ChainHead | None) -> str | None:
    """The stored MAC of the event the anchor names (None when there is no such event)."""
    if anchored is None:
        return None
    row = event_sql.event_at(conn, anchored.seq)
    return None if row is None else row.hash


def _anchor_problem(anchored: ChainHead | None, last_seq: int, at_anchor: str | None,
                    key: ChainKey | None, keyed: bool) -> str | None:
    """Why the database's events disagree with the anchor (`at_anchor`: the MAC of the event
    at the anchor's sequence number, None when the database has no such event)."""
    if anchored is None:
        if keyed:
            return ("the chain head kept beside the database is missing, so deleted newest "
                    "events could not be told apart: it was removed")
        return None
    if not anchored.authentic(key):
        if anchored.key_id is not None and key is None:
            return "the chain head is keyed, and this machine does not hold the audit key"
        return "the chain head kept beside the database was altered (its seal does not check)"
    if keyed and anchored.key_id is None:
        return "the chain head is unkeyed while the trail is keyed: it was replaced"
    if anchored.seq > last_seq:
        missing = anchored.seq - last_seq
        return (f"the newest {missing} event(s) are missing: the chain head kept beside the "
                f"database records {anchored.count} events, the database holds {last_seq}")
    if at_anchor != anchored.mac:
        return (f"event {anchored.seq} is not the event the chain head records: events were "
                "replaced")
    return None


class _ScanUnsure(Exception):
    """An in-place scan stopped where it cannot vouch that it met the events in seq order."""


@dataclass(slots=True)
class _ChainCheck:
    """The running state of `verify_chain`'s walk over the whole trail."""

    key: ChainKey | None
    since: KeyedSince | None
    prev: str = GENESIS_HASH
    last_seq: int = 0
    checked: int = 0
    legacy: int = 0
    keyed_seen: bool = False
    runs: dict[str, list[Any]] = field(default_factory=dict)
    """Per run id: [the run_seq its next event must carry, the run id as a JSON string]."""
    kinds: dict[str, str] = field(default_factory=dict)
    """Kinds as JSON strings (kinds and run ids repeat, so each is quoted once)."""

    def fail(self, seq: int | None, run_id: str | None, reason: str) -> VerifyResult:
        return VerifyResult(False, self.checked, seq, run_id, reason, keyed=self.keyed_seen,
                            legacy_events=self.legacy)

    def scan(self, conn: Connection) -> VerifyResult | None:
        """Check events in chain order from inside the store's own scan of the trail, where the
        store can call back (`event_sql.visit_events`: SQLite): what `walk` does, for half the
        cost of reading the rows through a cursor. Returns the first failure, or None with
        `last_seq` at the last event checked (`walk` goes on from there, for a store that cannot
        scan in place from the start).

        Each event passes as in `walk` (inline, or through `event`), so while the scan meets the
        events in sequence order the outcome is `walk`'s. It stops at the first event whose
        sequence number is not the next one, which `walk` then takes over in seq order. If it
        stopped early, the events it did not reach could include a second event with a number
        it already checked (a rebuilt table without its primary key): the count of events up to
        there says so, and then `_ScanUnsure` sends the caller back to `walk` from the start."""
        key = self.key
        if key is None:
            return None
        start = self.last_seq
        outcome: list[Any] = []  # what stopped the scan: a failure or an exception

        def hand_over(*row: Any) -> int:
            try:
                if row[0] != scanner.expected:
                    return 0  # out of sequence: `walk` takes over in seq order
                return self._take_over(scanner, row, outcome)
            except BaseException as exc:  # SQLite would swallow it: kept, re-raised after the scan
                outcome.append(exc)
                return 0

        scanner = self._scanner(key, hand_over)
        try:
            complete = event_sql.visit_events(conn, scanner, after=start)
        except sqlite3.Error:
            raise _ScanUnsure from None  # e.g. text that is not UTF-8: `walk` raises its error
        if scanner.error is not None:
            outcome.append(scanner.error)
        expected = scanner.expected
        self._passed(scanner.prev, expected - 1)
        if complete is None or complete:
            # Every event after `start` was visited, each with the next sequence number: they
            # are all the events after `start`, in the order `walk` would meet them.
            return None
        stop = outcome[0] if outcome else None
        if isinstance(stop, BaseException) and not isinstance(stop, Exception):
            raise stop  # Ctrl-C, exit: never traded for a walk from the start
        reached = expected if outcome else expected - 1
        if event_sql.events_between(conn, start, reached) != reached - start:
            raise _ScanUnsure
        if isinstance(stop, BaseException):
            raise stop
        return stop

    def walk(self, rows: Iterable[tuple[Any, ...]]) -> VerifyResult | None:
        """Check events in chain order, straight from the cursor: the hot loop of `audit
        verify`.

        An event passes the scanner's inline check (`chainscan`) only when `event` would pass
        it with the same effect (the next sequence number, linked to the verified MAC before
        it, not the keyed boundary the keyring recorded, in order within its run, and its MAC
        under this key); anything else — a failure, an unkeyed event, the boundary — goes
        through `event`, which decides and words the reason, so the first failure and its
        message are `event`'s. The rows are taken one at a time from the cursor rather than
        fetched in lists: each row is freed before the next is made."""
        key = self.key
        if key is None:
            for row in rows:
                broken = self.event(*row)
                if broken is not None:
                    return broken
            return None
        outcome: list[VerifyResult] = []
        scanner = self._scanner(key, lambda *row: self._take_over(scanner, row, outcome))
        scanner.run(rows)
        self._passed(scanner.prev, scanner.expected - 1)
        return outcome[0] if outcome else None

    def _scanner(self, key: ChainKey, fallback: Callable[..., int]) -> ChainScanner:
        boundary = self.since.seq if self.since is not None else -1
        return new_scanner(key, boundary, self.prev, self.last_seq + 1, self.runs, self.kinds,
                           _s, fallback)

    def _take_over(self, scanner: ChainScanner, row: tuple[Any, ...],
                   outcome: list[Any]) -> int:
        """An event the scanner's inline check did not pass: `event` decides it, after what the
        scanner passed is recorded; the scanner goes on from where `event` leaves the chain."""
        self._passed(scanner.prev, scanner.expected - 1)
        broken = self.event(*row)
        if broken is not None:
            outcome.append(broken)
            return 0
        scanner.prev, scanner.expected = self.prev, self.last_seq + 1
        return 1

    def _passed(self, prev: str, last_seq: int) -> None:
        """Record what `walk` checked inline since it last handed over to `event` (one event
        per sequence number, so the count is the distance walked)."""
        if last_seq > self.last_seq:
            self.checked += last_seq - self.last_seq
            self.keyed_seen = True
        self.prev, self.last_seq = prev, last_seq

    def event(self, seq: int, run_id: str, run_seq: int, kind: str, at_ms: int, payload: str,
              prev_hash: str, stored: str) -> VerifyResult | None:
        """Check one event in chain order: the definition `walk` follows (`prev_hash` is
        written as is, because by then it equals the previous event's verified MAC, which
        needs no escaping)."""
        expected = self.last_seq + 1
        if seq != expected:
            return self.fail(seq, run_id,
                             f"events {expected}..{seq - 1} are missing before {seq}")
        if prev_hash != self.prev:
            return self.fail(seq, run_id, f"event {seq} does not link to the event before it")
        run = self.runs.get(run_id)
        run_json = _s(run_id) if run is None else run[1]
        kind_json = self.kinds.get(kind)
        if kind_json is None:
            kind_json = self.kinds[kind] = _s(kind)
        text = (f'{{"at_ms":{at_ms},"kind":{kind_json},"payload":{payload},'
                f'"prev_hash":"{prev_hash}","run_id":{run_json},"run_seq":{run_seq},'
                f'"seq":{seq}}}')
        keyed = stored.startswith(MAC_PREFIX)
        key = self.key
        if keyed:
            ok = key is not None and key.mac(text) == stored
        else:
            since = self.since
            if self.keyed_seen or (since is not None and seq >= since.seq):
                return self.fail(seq, run_id, f"event {seq} is unkeyed where the trail is "
                                 "keyed: it was rewritten without the audit key")
            ok = HASH_PREFIX + sha256(text.encode("utf-8")).hexdigest() == stored
        if not ok:
            return self.fail(seq, run_id, _mac_problem(seq, text, stored, key)
                             or f"event {seq} does not check")
        if self.since is not None and seq == self.since.seq and stored != self.since.mac:
            return self.fail(seq, run_id, f"event {seq} is not the first keyed event the "
                             "keyring recorded: the trail was rewritten")
        if run_seq != (0 if run is None else run[0]):
            return self.fail(seq, run_id, f"event {seq} is out of order within run {run_id}")
        if run is None:
            self.runs[run_id] = [run_seq + 1, run_json]
        else:
            run[0] = run_seq + 1
        if keyed:
            self.keyed_seen = True
        else:
            self.legacy += 1
        self.prev = stored
        self.last_seq = seq
        self.checked += 1
        return None

    def finish(self, anchored: ChainHead | None, at_anchor: str | None) -> VerifyResult | None:
        since = self.since
        if since is not None and self.last_seq < since.seq:
            return self.fail(self.last_seq + 1, None,
                             f"the keyring records keyed events from {since.seq} on, but the "
                             f"trail ends at {self.last_seq}: events were deleted")
        if self.last_seq == 0 and anchored is None:
            return None
        problem = _anchor_problem(anchored, self.last_seq, at_anchor, self.key,
                                  self.keyed_seen or since is not None)
        if problem is None:
            return None
        first = self.last_seq + 1 if anchored is None or anchored.seq > self.last_seq \
            else anchored.seq
        return self.fail(first, None, problem)

    def result(self) -> VerifyResult:
        warnings: list[str] = []
        if self.legacy and self.keyed_seen:
            warnings.append(f"the first {self.legacy} event(s) are legacy, unkeyed: they were "
                            "written before the trail was keyed, so only accidental damage to "
                            "them is detected")
        elif self.legacy:
            warnings.append("legacy, unkeyed trail: no audit key exists on this machine (no "
                            "secure keyring, no STOCKADE_SNAPSHOT_KEY), so accidental damage is "
                            "detected but not a deliberate rewrite")
        return VerifyResult(True, self.checked, keyed=self.keyed_seen,
                            legacy_events=self.legacy, warnings=tuple(warnings))


def verify_export_lines(lines: Iterable[str], key: ChainKey | None) -> VerifyResult:
    """Check exported events (each MAC, their order and links) against the sealing line."""
    events: list[dict[str, Any]] = []
    seal: dict[str, Any] | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if seal is not None:
            return VerifyResult(False, len(events), None, None,
                                f"line {number} comes after the export's sealing line")
        try:
            item = json.loads(line)
        except ValueError:
            return VerifyResult(False, len(events), None, None, f"line {number} is not JSON")
        if isinstance(item, dict) and isinstance(item.get("export"), dict):
            seal = item["export"]
        elif isinstance(item, dict):
            events.append(item)
        else:
            return VerifyResult(False, len(events), None, None,
                                f"line {number} is not an audit event")
    if seal is None:
        return VerifyResult(False, len(events), None, None,
                            "the export has no sealing line: it was cut short or is not a "
                            "Stockade audit export")
    run_id = seal.get("run_id")
    checked, keyed, legacy = 0, False, 0
    prev: dict[str, Any] | None = None
    for position, event in enumerate(events):
        try:
            seq, stored = int(event["seq"]), str(event["hash"])
            text = event_text(seq, str(event["run_id"]), int(event["run_seq"]),
                              str(event["kind"]), int(event["at_ms"]),
                              canonical_json(event["payload"]), str(event["prev_hash"]))
        except (KeyError, TypeError, ValueError):
            return VerifyResult(False, checked, None, run_id,
                                f"event line {position + 1} lacks an audit event's fields")
        if event["run_id"] != run_id:
            return VerifyResult(False, checked, seq, run_id,
                                f"event {seq} belongs to run {event['run_id']}, not {run_id}")
        if int(event["run_seq"]) != position:
            return VerifyResult(False, checked, seq, run_id,
                                f"event {seq} is out of order (or events before it were "
                                "removed from the export)")
        if prev is not None:
            if seq <= int(prev["seq"]):
                return VerifyResult(False, checked, seq, run_id, f"event {seq} is out of order")
            if seq == int(prev["seq"]) + 1 and event["prev_hash"] != prev["hash"]:
                return VerifyResult(False, checked, seq, run_id,
                                    f"event {seq} does not link to the event before it")
        if keyed and not stored.startswith(MAC_PREFIX):
            return VerifyResult(False, checked, seq, run_id,
                                f"event {seq} is unkeyed after keyed events: it was rewritten")
        reason = _mac_problem(seq, text, stored, key)
        if reason is not None:
            return VerifyResult(False, checked, seq, run_id, reason)
        keyed = keyed or stored.startswith(MAC_PREFIX)
        legacy += 0 if stored.startswith(MAC_PREFIX) else 1
        prev = event
        checked += 1
    body = {k: v for k, v in seal.items() if k != "seal"}
    text = _EXPORT_LABEL + canonical_json(body)
    seal_key_id = seal.get("key_id")
    if seal_key_id is not None:
        if key is None or key.key_id != seal_key_id or not key.matches(text, str(seal.get("seal"))):
            return VerifyResult(False, checked, None, run_id,
                                "the export's sealing line does not authenticate under the "
                                "audit key: it was altered, or this machine lacks the key")
    elif keyed:
        return VerifyResult(False, checked, None, run_id,
                            "the export's sealing line is unkeyed while its events are keyed: "
                            "it was replaced")
    elif plain_hash(text) != seal.get("seal"):
        return VerifyResult(False, checked, None, run_id,
                            "the export's sealing line was altered")
    if seal.get("events") != len(events) or (events and seal.get("last_mac") != prev["hash"]
                                             if prev is not None else False):
        first_missing = (int(prev["seq"]) + 1) if prev is not None else None
        return VerifyResult(False, checked, first_missing, run_id,
                            f"the export seals {seal.get('events')} events but holds "
                            f"{len(events)}: events were removed from its end")
    head = seal.get("chain_head")
    if head is not None and prev is not None:
        try:
            chain_head = ChainHead.from_json(head)
        except AnchorError as exc:
            return VerifyResult(False, checked, None, run_id, str(exc))
        if not chain_head.authentic(key) or chain_head.seq < int(prev["seq"]):
            return VerifyResult(False, checked, None, run_id,
                                "the chain head embedded in the export does not check")
    warnings = () if keyed else (
        "legacy, unkeyed export: accidental damage is detected, not a deliberate rewrite",)
    return VerifyResult(True, checked, keyed=keyed, legacy_events=legacy, warnings=warnings)
