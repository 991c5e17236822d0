"""Run state: start, park (sealed snapshot), decide, resume by compare-and-swap, finish, recover.

A run is one governed turn. Statuses: running → parked → running (claimed by one resumer) →
… → finished; a run whose owning process died mid-step becomes `interrupted` at the next start
and is never resumed. Resume checks everything it can *before* claiming, so a refusal leaves
the run parked and untouched: (1) the run exists, is parked and unclaimed and has not expired,
(2) every pending call has a decision, (3) the snapshot key (keyring, environment or
passphrase) opens the snapshot under the run id, (4) the run's own audit events authenticate
and link into the chain, (5) the snapshot is the newest one recorded for the run (its seal
version and digest are those of the newest `run.parked` event, and no resume or finish came
after it: a stale snapshot put back into the database is refused), (6) every decision's MAC
verifies and names its own `tool.approved`/`tool.denied` event after that park, with the same
call, input digest and iteration; the caller then checks what the snapshot says (its layout,
its tools, that every pending call is covered by a decision with its digest and iteration, the
document it was parked against: `stockade.assistant.service`). Only then does the claim run,
as a CAS that also requires the snapshot bytes to be the ones just checked, so a second
concurrent resume loses cleanly. Decisions are written together with their audit event in one
transaction, so a crash can never leave one without the other; a decision row that does not
authenticate (one inserted by hand) is never honoured.

The snapshot body is a JSON object whose layout belongs to `stockade.assistant.parked`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stockade.governance.chain import MAC_PREFIX
from stockade.governance.ledger import Ledger
from stockade.governance.sealing import (
    EnvelopeInfo,
    KeyMode,
    SnapshotKeys,
    SnapshotTampered,
    derive_key,
    envelope_info,
    seal,
    unseal,
)
from stockade.governance.trajectory import (
    EventKind,
    Trajectory,
    TrajectoryError,
    TrajectoryEvent,
)
from stockade.store import ConflictError, MemberKind, NotFoundError, Store
from stockade.store import runs as sql
from stockade.store.runs import Decision, DecisionRow, PendingCallRow, RunRow, RunStatus
from stockade.thf.canonical import canonical_json, digest

DECISION_KEY_LABEL = b"stockade decision mac v1"
MAX_ACTOR_LENGTH = 100


class DocumentChanged(ConflictError):
    """The document differs from the one the run was parked against."""


class DecisionRefused(ConflictError):
    """A decision row that is not authenticated, or does not match its audit event."""


class SnapshotReplayed(ConflictError):
    """The stored snapshot is not the newest one recorded for its run (put back, or older)."""


class RunExpired(ConflictError):
    """The run waited longer than parked runs are kept; it is never resumed."""


@dataclass(frozen=True, slots=True)
class PendingFacts:
    """A pending call as the sealed snapshot states it (what a decision is bound to)."""

    tool: str
    input_digest: str
    iteration: int


@dataclass(frozen=True, slots=True)
class DecisionOutcome:
    run_id: str
    call_id: str
    decision: Decision
    actor: str
    already_recorded: bool


@dataclass(frozen=True, slots=True)
class ResumeTicket:
    """Everything checked and decrypted, ready for `claim`."""

    run: RunRow
    snapshot: dict[str, Any]
    decisions: tuple[DecisionRow, ...]
    sealed: bytes
    seal_version: int = 0


def decision_mac(key: bytes, run_id: str, row: DecisionRow, event_mac: str,
                 seal_version: int) -> str:
    """The MAC binding a decision to its run, call, input, iteration, actor and audit event."""
    import hmac

    body = canonical_json({
        "run_id": run_id, "call_id": row.call_id, "decision": row.decision.value,
        "actor": row.actor, "reason_digest": digest(row.reason) if row.reason else None,
        "input_digest": row.input_digest, "iteration": row.iteration,
        "event_seq": row.event_seq, "event_mac": event_mac, "seal_version": seal_version})
    return MAC_PREFIX + hmac.digest(key, body.encode("utf-8"), "sha256").hex()


def _os_user() -> str:
    import getpass

    try:
        return getpass.getuser()[:64]
    except (KeyError, OSError):  # no user database entry (containers)
        return "unknown"


def _host() -> str:
    return socket.gethostname()


def process_alive(pid: int) -> bool:
    """Whether a process with this id still exists on this machine."""
    if pid <= 0:
        return False
    if sys.platform == "win32":  # os.kill(pid, 0) would send CTRL_C_EVENT on Windows
        import ctypes

        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunStates:
    """Run rows, sealed snapshots and decisions, with their audit events."""

    def __init__(self, db: Store, trajectory: Trajectory, ledger: Ledger,
                 keys: SnapshotKeys | None, clock_ms: Callable[[], int] | None = None) -> None:
        self._db = db
        self._trajectory = trajectory
        self._ledger = ledger
        self._keys = keys
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)

    def _now(self) -> int:
        return int(self._clock_ms())

    # -- reads -------------------------------------------------------------------------------

    def get(self, run_id: str) -> RunRow:
        row = sql.get_run(self._db.read(), run_id)
        if row is None:
            raise NotFoundError(f"there is no run {run_id}")
        return row

    def list_runs(self, *, status: RunStatus | None = None,
                  document_path: str | None = None) -> list[RunRow]:
        return sql.list_runs(self._db.read(), status=status, document_path=document_path)

    def pending_calls(self, run_id: str) -> list[PendingCallRow]:
        return sql.pending_calls(self._db.read(), run_id)

    def decisions(self, run_id: str) -> list[DecisionRow]:
        return sql.decisions(self._db.read(), run_id)

    def open_snapshot(self, run_id: str, *, passphrase: str | None = None) -> dict[str, Any]:
        """Decrypt a parked run's snapshot (for `runs show` and approval dialogs)."""
        run = self.get(run_id)
        if run.status is not RunStatus.PARKED:
            raise ConflictError(f"run {run_id} is {run.status.value}, not parked")
        sealed = sql.read_snapshot(self._db.read(), run_id)
        if sealed is None:
            raise ConflictError(f"run {run_id} has no parked snapshot")
        return self._open(run_id, sealed, passphrase)[0]

    def _open(self, run_id: str, sealed: bytes,
              passphrase: str | None) -> tuple[dict[str, Any], bytes, EnvelopeInfo]:
        """(snapshot, the key that opened it, its envelope header)."""
        if self._keys is None:
            raise SnapshotTampered("no keyring is available to open the snapshot")
        info = envelope_info(sealed, run_id)
        key = self._keys.opening_key(info, passphrase)
        plaintext = unseal(sealed, key, run_id)
        self._keys.remember(info, key)
        try:
            data = json.loads(plaintext.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise SnapshotTampered(f"the snapshot of run {run_id} is not readable") from None
        if not isinstance(data, dict):
            raise SnapshotTampered(f"the snapshot of run {run_id} has an unknown layout")
        return data, key, info

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, run_id: str, *, document_path: str, document_digest: str | None,
              provider: str, model: str, payload: dict[str, Any]) -> None:
        """Insert the run (running, owned by this process) and its `run.started` event."""
        with self._db.write() as conn:
            sql.insert_run(conn, run_id=run_id, document_path=document_path,
                           document_digest=document_digest, provider=provider, model=model,
                           now_ms=self._now(), owner_pid=os.getpid(), owner_host=_host())
            self._trajectory.append_in(conn, run_id, EventKind.RUN_STARTED, payload)

    def park(self, run_id: str, *, snapshot: dict[str, Any], document_digest: str,
             pending: list[PendingCallRow], passphrase: str | None = None) -> None:
        """Seal the snapshot (the next seal version) and move running → parked with its pending
        calls, atomically. Without a secure keyring the seal needs a passphrase
        (`PassphraseRequired` when none was given)."""
        if self._keys is None:
            raise SnapshotTampered("no keyring is available to seal the snapshot")
        run = self.get(run_id)
        version = run.seal_version + 1
        plaintext = json.dumps(snapshot, ensure_ascii=False).encode("utf-8")
        if self._keys.mode() is KeyMode.PASSPHRASE:
            key, params = self._keys.new_passphrase_key(passphrase)
            sealed = seal(plaintext, key, run_id, seal_version=version, scrypt=params)
        else:
            sealed = seal(plaintext, self._keys.for_sealing(), run_id, seal_version=version)
        with self._db.write() as conn:
            if not sql.park_run(conn, run_id, snapshot=sealed, document_digest=document_digest,
                                pending=pending, now_ms=self._now(), seal_version=version):
                raise ConflictError(f"run {run_id} is not running in this process; cannot park")
            self._trajectory.append_in(conn, run_id, EventKind.RUN_PARKED, {
                "pending": [{"call_id": p.call_id, "tool": p.tool,
                             "input_digest": p.input_digest, "iteration": p.iteration}
                            for p in pending],
                "snapshot_digest": "sha256:" + _sha256(sealed),
                "seal_version": version,
                "sealed_with": self._keys.mode().value,
                "document_digest": document_digest,
            })

    def decide(self, run_id: str, call_id: str, decision: Decision, actor: str,
               reason: str | None = None, *, passphrase: str | None = None,
               expected: PendingFacts | None = None) -> DecisionOutcome:
        """Record approve/deny for one pending call; repeating the same decision is a no-op.

        The decision is written with its audit event and a MAC over both, under a key derived
        from the key that opens the run's snapshot (so only someone who can open the parked run
        can decide it). `expected` is the call as the sealed snapshot states it; the plaintext
        pending-call row must agree with it.
        """
        actor = actor.strip()
        if not actor:
            raise ValueError("an actor name is required for every decision")
        if len(actor) > MAX_ACTOR_LENGTH:
            raise ValueError(f"an actor name is at most {MAX_ACTOR_LENGTH} characters")
        run = self.get(run_id)
        sealed = sql.read_snapshot(self._db.read(), run_id)
        if run.status is RunStatus.PARKED and sealed is not None:
            _data, key, info = self._open(run_id, sealed, passphrase)
            decision_key = derive_key(key, DECISION_KEY_LABEL)
        else:
            decision_key, info = None, None
        with self._db.write() as conn:
            run_row = sql.get_run(conn, run_id)
            if run_row is None:
                raise NotFoundError(f"there is no run {run_id}")
            previous = sql.get_decision(conn, run_id, call_id)
            replacing = False
            if previous is not None:
                if decision_key is not None and not self._authentic(
                        run_id, previous, decision_key, run_row.seal_version):
                    replacing = True  # a row Stockade never wrote: it is overwritten below
                elif previous.decision is decision:
                    return DecisionOutcome(run_id, call_id, decision, previous.actor, True)
                else:
                    raise ConflictError(f"call {call_id} of run {run_id} was already "
                                        f"{previous.decision.value} by {previous.actor}")
            if run_row.status is not RunStatus.PARKED or decision_key is None or info is None:
                raise ConflictError(f"run {run_id} is {run_row.status.value}; only a parked run "
                                    "takes decisions")
            if run_row.seal_version != info.seal_version or \
                    sql.read_snapshot(conn, run_id) != sealed:
                raise ConflictError(f"run {run_id} was parked again just now; decide again")
            pending = {p.call_id: p for p in sql.pending_calls(conn, run_id)}
            call = pending.get(call_id)
            if call is None:
                raise ConflictError(f"call {call_id} is not awaiting a decision in run "
                                    f"{run_id}; pending: {', '.join(pending) or 'none'}")
            iteration = call.iteration
            if expected is not None:
                if (expected.tool, expected.input_digest) != (call.tool, call.input_digest) or \
                        (iteration is not None and iteration != expected.iteration):
                    raise DecisionRefused(
                        f"the pending call {call_id} of run {run_id} listed in the database "
                        "differs from the sealed snapshot (it was altered); nothing was decided")
                iteration = expected.iteration
            kind = EventKind.TOOL_APPROVED if decision is Decision.APPROVED else \
                EventKind.TOOL_DENIED
            payload: dict[str, Any] = {"call_id": call_id, "tool": call.tool,
                                       "input_digest": call.input_digest,
                                       "iteration": iteration, "actor": actor,
                                       "os_user": _os_user(), "parked": True,
                                       "seal_version": info.seal_version}
            role = self._db.identity().role
            if role is not None:
                # Team store: the database role that decided (the decision row's
                # `actor_role`, which the database itself fills in and checks).
                payload["actor_role"] = role
            if reason:
                payload["reason_digest"] = digest(reason)
            if replacing:
                payload["replaced_unauthenticated"] = True
            event = self._trajectory.append_in(conn, run_id, kind, payload)
            row = DecisionRow(call_id, decision, actor, reason, self._now(), call.input_digest,
                              iteration, event.seq)
            row = dataclasses.replace(row, mac=decision_mac(
                decision_key, run_id, row, event.hash, info.seal_version))
            sql.insert_decision(conn, run_id, row)
        return DecisionOutcome(run_id, call_id, decision, actor, False)

    def _authentic(self, run_id: str, row: DecisionRow, key: bytes, seal_version: int) -> bool:
        if row.mac is None or row.event_seq is None:
            return False
        event = self._trajectory.event(row.event_seq)
        if event is None or event.run_id != run_id:
            return False
        return hmac_equal(decision_mac(key, run_id, row, event.hash, seal_version), row.mac)

    def expire_parked(self, ttl_ms: int) -> list[str]:
        """Finish parked runs that waited longer than `ttl_ms` (their snapshots are dropped)."""
        cutoff = self._now() - ttl_ms
        expired: list[str] = []
        for run_id in sql.parked_before(self._db.read(), cutoff):
            try:
                with self._db.write() as conn:
                    row = sql.get_run(conn, run_id)
                    if row is None or row.status is not RunStatus.PARKED or row.claimed or \
                            row.updated_ms >= cutoff:
                        continue
                    sql.finish_run(conn, run_id, outcome="expired", reason="expired",
                                   now_ms=self._now())
                    released = self._ledger.release_run_in(conn, run_id)
                    self._trajectory.append_in(conn, run_id, EventKind.RUN_FINISHED, {
                        "outcome": "expired", "reason": "expired", "released_holds": released,
                        "parked_ms": row.updated_ms})
            except TrajectoryError:
                continue  # not recordable here (no audit key): still listed and refused as
                # expired, and finished by the next process that can record it
            expired.append(run_id)
        return expired

    def prepare_resume(self, run_id: str, *, passphrase: str | None = None,
                       ttl_ms: int | None = None) -> ResumeTicket:
        """Every check of the stored run that can refuse a resume, before anything is claimed."""
        conn = self._db.read()
        run = self.get(run_id)
        if run.status is RunStatus.FINISHED and run.outcome == "expired":
            raise RunExpired(f"run {run_id} expired while it waited (parked runs are kept for a "
                             "limited time, set in settings), so it is never resumed")
        if run.status is not RunStatus.PARKED or run.claimed:
            raise _not_resumable(run)
        if ttl_ms is not None and run.updated_ms < self._now() - ttl_ms:
            days = ttl_ms // (24 * 3600 * 1000)
            raise RunExpired(f"run {run_id} has expired: it waited longer than parked runs are "
                             f"kept ({days} days), so it is never resumed")
        decided = {d.call_id: d for d in sql.decisions(conn, run_id)}
        undecided = [p.call_id for p in sql.pending_calls(conn, run_id) if p.call_id not in decided]
        if undecided:
            raise ConflictError(f"run {run_id} still waits for a decision on "
                                f"{', '.join(undecided)}; approve or deny each call first")
        sealed = sql.read_snapshot(conn, run_id)
        if sealed is None:
            # Another resumer claimed the run and finished it after it was read above: say
            # so, as a resumer arriving a moment later is told.
            now = self.get(run_id)
            if now.status is not RunStatus.PARKED or now.claimed:
                raise _not_resumable(now)
            raise ConflictError(f"run {run_id} has no parked snapshot")
        snapshot, key, info = self._open(run_id, sealed, passphrase)
        trail = self._trajectory.verify_run(run_id)
        if not trail.ok:
            raise ConflictError(f"the audit trail of run {run_id} does not check "
                                f"({trail.reason}); it cannot be resumed")
        events = self._trajectory.events(run_id)
        try:
            parked = self._newest_park(run_id, events, sealed, info, run)
        except SnapshotReplayed:
            # A resumer that claimed the run after it was read above is no replay: only a run
            # still parked and unclaimed with these events is one.
            now = self.get(run_id)
            if now.status is not RunStatus.PARKED or now.claimed:
                raise _not_resumable(now) from None
            raise
        after = [e for e in events if e.seq > parked.seq]
        decision_key = derive_key(key, DECISION_KEY_LABEL)
        by_seq = {e.seq: e for e in after}
        checked: list[DecisionRow] = []
        for pending in sql.pending_calls(conn, run_id):
            row = decided[pending.call_id]
            problem = _decision_problem(run_id, row, by_seq, decision_key, info.seal_version)
            if problem is not None:
                raise DecisionRefused(
                    f"the decision on call {row.call_id} of run {run_id} is not one Stockade "
                    f"recorded ({problem}); nothing was run. Decide the call again with "
                    f"'stockade runs approve|deny {run_id} {row.call_id} --actor NAME'")
            checked.append(row)
        return ResumeTicket(run, snapshot, tuple(checked), sealed, info.seal_version)

    @staticmethod
    def _newest_park(run_id: str, events: list[TrajectoryEvent], sealed: bytes,
                     info: EnvelopeInfo, run: RunRow) -> TrajectoryEvent:
        parks = [e for e in events if e.kind == EventKind.RUN_PARKED]
        if not parks:
            raise SnapshotReplayed(f"run {run_id} has no recorded park; its snapshot is not "
                                   "one Stockade sealed")
        newest = parks[-1]
        recorded = newest.payload.get("seal_version", 0)
        later = [e.kind for e in events if e.seq > newest.seq and e.kind in (
            EventKind.RUN_RESUMED, EventKind.RUN_FINISHED, EventKind.RUN_INTERRUPTED)]
        if later:
            raise SnapshotReplayed(
                f"the parked snapshot of run {run_id} (seal version {info.seal_version}) was "
                "already resumed; a snapshot put back into the database is never resumed "
                "twice")
        if info.seal_version != recorded or run.seal_version != recorded or \
                newest.payload.get("snapshot_digest") != "sha256:" + _sha256(sealed):
            raise SnapshotReplayed(
                f"the parked snapshot of run {run_id} is not the newest one recorded for it "
                f"(seal version {info.seal_version}, newest recorded {recorded}); an older or "
                "substituted snapshot is never resumed")
        return newest

    def claim(self, ticket: ResumeTicket, payload: dict[str, Any] | None = None) -> None:
        """The CAS: parked+unclaimed (with the checked snapshot) → running, owned by us."""
        run_id = ticket.run.run_id
        with self._db.write() as conn:
            if not sql.claim_run(conn, run_id, expected_snapshot=ticket.sealed,
                                 owner_pid=os.getpid(), owner_host=_host(), now_ms=self._now()):
                raise ConflictError(f"run {run_id} was resumed by someone else just now")
            self._trajectory.append_in(conn, run_id, EventKind.RUN_RESUMED, {
                "decisions": [{"call_id": d.call_id, "decision": d.decision.value,
                               "event_seq": d.event_seq} for d in ticket.decisions],
                "seal_version": ticket.seal_version, **(payload or {})})

    def finish(self, run_id: str, *, outcome: str, reason: str | None,
               payload: dict[str, Any] | None = None) -> None:
        """Close a running or parked run, release its open holds and record `run.finished`.

        A run that is already closed (finished, or marked interrupted) is refused untouched, so
        its trail never gets a second ending.
        """
        with self._db.write() as conn:
            if not sql.finish_run(conn, run_id, outcome=outcome, reason=reason,
                                  now_ms=self._now()):
                raise ConflictError(f"run {run_id} is not running or parked; it was already "
                                    "closed")
            released = self._ledger.release_run_in(conn, run_id)
            self._trajectory.append_in(conn, run_id, EventKind.RUN_FINISHED, {
                "outcome": outcome, "reason": reason, "released_holds": released,
                **(payload or {})})

    def recover_interrupted(self) -> list[str]:
        """Mark runs whose owning process is gone as interrupted and release their holds."""
        if self._db.identity().member_kind is MemberKind.AUDITOR:
            return []  # a read-only team role: recovery is for the members who write
        me, host = os.getpid(), _host()
        recovered: list[str] = []
        for run in sql.running_runs(self._db.read()):
            if run.owner_host != host or run.owner_pid == me:
                continue
            if run.owner_pid is not None and process_alive(run.owner_pid):
                continue
            try:
                with self._db.write() as conn:
                    if not sql.mark_interrupted(conn, run.run_id, owner_pid=run.owner_pid,
                                                now_ms=self._now()):
                        continue
                    released = self._ledger.release_run_in(conn, run.run_id)
                    self._trajectory.append_in(conn, run.run_id, EventKind.RUN_INTERRUPTED,
                                               {"released_holds": released})
            except TrajectoryError:
                continue  # left for a process that can record it (its holds stay open)
            recovered.append(run.run_id)
        # The cheap read keeps an ordinary start free of write locks; the list is read again
        # under the lock, because a parked run claimed meanwhile must keep its new hold.
        if sql.runs_with_open_holds(self._db.read()):
            with self._db.write() as conn:
                for run_id in sql.runs_with_open_holds(conn):
                    self._ledger.release_run_in(conn, run_id)
        return recovered


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def hmac_equal(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def _decision_problem(run_id: str, row: DecisionRow, events: dict[int, TrajectoryEvent],
                      key: bytes, seal_version: int) -> str | None:
    """Why a decision row may not be honoured (None: its MAC and its event both check)."""
    if row.mac is None or row.event_seq is None:
        return "it carries no MAC"
    event = events.get(row.event_seq)
    if event is None:
        return f"its audit event {row.event_seq} is not one of this park's events"
    want = EventKind.TOOL_APPROVED if row.decision is Decision.APPROVED else EventKind.TOOL_DENIED
    payload = event.payload
    if event.kind != want or payload.get("call_id") != row.call_id or \
            payload.get("input_digest") != row.input_digest or \
            payload.get("iteration") != row.iteration or payload.get("actor") != row.actor or \
            payload.get("seal_version") != seal_version:
        return f"it does not match its audit event {row.event_seq}"
    if not hmac_equal(decision_mac(key, run_id, row, event.hash, seal_version), row.mac):
        return "its MAC does not verify"
    return None


def _not_resumable(run: RunRow) -> ConflictError:
    return ConflictError(f"run {run.run_id} is {run.status.value}"
                         f"{' and claimed' if run.claimed else ''}; only a parked, "
                         "unclaimed run can be resumed")
