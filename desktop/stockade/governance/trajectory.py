"""The audit trajectory: append-only, hash-chained events for every step of every run.

One global chain: each event stores the hash of the event before it (in any run), and its own
hash is `sha256:` over the canonical JSON of the whole event including that previous hash. A
single chain means deleting a whole run is as visible as editing one event. Appends take the
write lock (`BEGIN IMMEDIATE`), so two processes extend the chain one after the other, never
from the same head. SQLite triggers refuse UPDATE and DELETE; `verify_chain` catches anyone who
goes around them. Payloads hold ids, names, counts and digests only — never arguments, results,
prompts or documents; `check_payload` enforces the shape.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from stockade.store import Database, StoreError
from stockade.store import events as event_sql
from stockade.store.database import as_store_error
from stockade.thf.canonical import canonical_json

GENESIS_HASH = "sha256:" + "0" * 64
# Longest string a payload may hold: ids, names and digests fit; prose and documents do not.
MAX_PAYLOAD_STRING = 200


class EventKind(StrEnum):
    RUN_STARTED = "run.started"
    GUARD_DECISION = "guard.decision"
    MODEL_REQUEST = "model.request"
    MODEL_USAGE = "model.usage"
    MODEL_RETRY = "model.retry"
    METER_REFUSED = "meter.refused"
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

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "run_id": self.run_id, "run_seq": self.run_seq,
                "kind": self.kind, "at_ms": self.at_ms, "payload": self.payload,
                "prev_hash": self.prev_hash, "hash": self.hash}


@dataclass(frozen=True, slots=True)
class VerifyResult:
    ok: bool
    checked: int
    first_broken: int | None = None
    run_id: str | None = None
    reason: str | None = None


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


def event_hash(seq: int, run_id: str, run_seq: int, kind: str, at_ms: int, payload_json: str,
               prev_hash: str) -> str:
    """`sha256:` over the event's canonical JSON (keys in code-point order, payload embedded).

    Built by hand from the already-canonical payload text so verification of 100k events stays
    well under a second; `test_event_hash_equals_canonical_json_digest` pins the equivalence.
    """
    text = (f'{{"at_ms":{at_ms},"kind":{_s(kind)},"payload":{payload_json},'
            f'"prev_hash":{_s(prev_hash)},"run_id":{_s(run_id)},"run_seq":{run_seq},'
            f'"seq":{seq}}}')
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class Trajectory:
    """Appends and reads audit events in the shared database."""

    def __init__(self, db: Database, clock_ms: Callable[[], int] | None = None) -> None:
        self._db = db
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)

    def append_in(self, conn: sqlite3.Connection, run_id: str, kind: EventKind | str,
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
        run_seq = event_sql.next_run_seq(conn, run_id)
        at_ms = int(self._clock_ms())
        kind_text = str(kind)
        digest = event_hash(seq, run_id, run_seq, kind_text, at_ms, payload_json, prev)
        event_sql.insert_event(conn, event_sql.EventRow(seq, run_id, run_seq, kind_text, at_ms,
                                                        payload_json, prev, digest))
        return TrajectoryEvent(seq, run_id, run_seq, kind_text, at_ms, body, prev, digest)

    def append(self, run_id: str, kind: EventKind | str,
               payload: dict[str, Any] | None = None) -> TrajectoryEvent:
        """Append durably in its own transaction; raises `TrajectoryError` on any failure."""
        try:
            with self._db.write() as conn:
                return self.append_in(conn, run_id, kind, payload)
        except sqlite3.DatabaseError as exc:
            raise TrajectoryError(str(as_store_error(exc, self._db.path))) from None
        except StoreError as exc:
            raise TrajectoryError(str(exc)) from None

    def events(self, run_id: str) -> list[TrajectoryEvent]:
        rows = event_sql.events_for_run(self._db.read(), run_id)
        return [TrajectoryEvent(r.seq, r.run_id, r.run_seq, r.kind, r.at_ms,
                                json.loads(r.payload), r.prev_hash, r.hash) for r in rows]

    def export_lines(self, run_id: str) -> Iterator[str]:
        """The run's events as JSON lines (canonical JSON, one event per line)."""
        for event in self.events(run_id):
            yield canonical_json(event.to_json())

    def count(self) -> int:
        return event_sql.event_count(self._db.read())

    def verify_chain(self) -> VerifyResult:
        """Recompute every hash and link in order; name the first event that does not check.

        The hash is `event_hash`'s, computed inline: kinds and run ids repeat, so each is quoted
        once; `prev_hash` is quoted as is, because by then it equals the previous event's
        verified hash (or the genesis hash), which needs no escaping.
        """
        prev = GENESIS_HASH
        expected_seq = 1
        run_next: dict[str, int] = {}
        quoted: dict[str, str] = {}
        sha256 = hashlib.sha256
        checked = 0
        for seq, run_id, run_seq, kind, at_ms, payload, prev_hash, stored in \
                event_sql.iter_events(self._db.read()):
            if seq != expected_seq:
                return VerifyResult(False, checked, seq, run_id,
                                    f"events {expected_seq}..{seq - 1} are missing before {seq}")
            if prev_hash != prev:
                return VerifyResult(False, checked, seq, run_id,
                                    f"event {seq} does not link to the event before it")
            kind_json = quoted.get(kind)
            if kind_json is None:
                kind_json = quoted[kind] = _s(kind)
            run_json = quoted.get(run_id)
            if run_json is None:
                run_json = quoted[run_id] = _s(run_id)
            text = (f'{{"at_ms":{at_ms},"kind":{kind_json},"payload":{payload},'
                    f'"prev_hash":"{prev_hash}","run_id":{run_json},"run_seq":{run_seq},'
                    f'"seq":{seq}}}')
            if "sha256:" + sha256(text.encode("utf-8")).hexdigest() != stored:
                return VerifyResult(False, checked, seq, run_id,
                                    f"event {seq} was changed after it was written")
            if run_seq != run_next.get(run_id, 0):
                return VerifyResult(False, checked, seq, run_id,
                                    f"event {seq} is out of order within run {run_id}")
            run_next[run_id] = run_seq + 1
            prev = stored
            expected_seq = seq + 1
            checked += 1
        return VerifyResult(True, checked)
