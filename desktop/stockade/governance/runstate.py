"""Run state: start, park (sealed snapshot), decide, resume by compare-and-swap, finish, recover.

A run is one governed turn. Statuses: running → parked → running (claimed by one resumer) →
… → finished; a run whose owning process died mid-step becomes `interrupted` at the next start
and is never resumed. Resume checks everything it can *before* claiming, so a refusal leaves
the run parked and untouched: (1) the run exists and is parked and unclaimed, (2) every pending
call has a decision, (3) the keyring holds the snapshot key, (4) the snapshot authenticates
under the run id; the caller then checks what the snapshot says (its layout, its tools, the
document it was parked against: `stockade.assistant.service`). Only then does the claim run,
as a CAS that also requires the snapshot bytes to be the ones just checked, so a second
concurrent resume loses cleanly. Decisions are written together with their audit event in one
transaction, so a crash can never leave one without the other.

The snapshot body is a JSON object whose layout belongs to `stockade.assistant.parked`.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from stockade.governance.ledger import Ledger
from stockade.governance.sealing import SnapshotKeys, SnapshotTampered, seal, unseal
from stockade.governance.trajectory import EventKind, Trajectory
from stockade.store import ConflictError, MemberKind, NotFoundError, Store
from stockade.store import runs as sql
from stockade.store.runs import Decision, DecisionRow, PendingCallRow, RunRow, RunStatus
from stockade.thf.canonical import digest


class DocumentChanged(ConflictError):
    """The document differs from the one the run was parked against."""


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

    def open_snapshot(self, run_id: str) -> dict[str, Any]:
        """Decrypt a parked run's snapshot (for `runs show` and approval dialogs)."""
        run = self.get(run_id)
        if run.status is not RunStatus.PARKED:
            raise ConflictError(f"run {run_id} is {run.status.value}, not parked")
        sealed = sql.read_snapshot(self._db.read(), run_id)
        if sealed is None:
            raise ConflictError(f"run {run_id} has no parked snapshot")
        return self._unseal(run_id, sealed)

    def _unseal(self, run_id: str, sealed: bytes) -> dict[str, Any]:
        if self._keys is None:
            raise SnapshotTampered("no keyring is available to open the snapshot")
        plaintext = unseal(sealed, self._keys.existing(), run_id)
        try:
            data = json.loads(plaintext.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise SnapshotTampered(f"the snapshot of run {run_id} is not readable") from None
        if not isinstance(data, dict):
            raise SnapshotTampered(f"the snapshot of run {run_id} has an unknown layout")
        return data

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
             pending: list[PendingCallRow]) -> None:
        """Seal the snapshot and move running → parked with its pending calls, atomically."""
        if self._keys is None:
            raise SnapshotTampered("no keyring is available to seal the snapshot")
        sealed = seal(json.dumps(snapshot, ensure_ascii=False).encode("utf-8"),
                      self._keys.for_sealing(), run_id)
        with self._db.write() as conn:
            if not sql.park_run(conn, run_id, snapshot=sealed, document_digest=document_digest,
                                pending=pending, now_ms=self._now()):
                raise ConflictError(f"run {run_id} is not running in this process; cannot park")
            self._trajectory.append_in(conn, run_id, EventKind.RUN_PARKED, {
                "pending": [{"call_id": p.call_id, "tool": p.tool,
                             "input_digest": p.input_digest} for p in pending],
                "snapshot_digest": "sha256:" + _sha256(sealed),
                "document_digest": document_digest,
            })

    def decide(self, run_id: str, call_id: str, decision: Decision, actor: str,
               reason: str | None = None) -> DecisionOutcome:
        """Record approve/deny for one pending call; repeating the same decision is a no-op."""
        actor = actor.strip()
        if not actor:
            raise ValueError("an actor name is required for every decision")
        with self._db.write() as conn:
            run = sql.get_run(conn, run_id)
            if run is None:
                raise NotFoundError(f"there is no run {run_id}")
            previous = sql.get_decision(conn, run_id, call_id)
            if previous is not None:
                if previous.decision is decision:
                    return DecisionOutcome(run_id, call_id, decision, previous.actor, True)
                raise ConflictError(f"call {call_id} of run {run_id} was already "
                                    f"{previous.decision.value} by {previous.actor}")
            if run.status is not RunStatus.PARKED:
                raise ConflictError(f"run {run_id} is {run.status.value}; only a parked run "
                                    "takes decisions")
            pending = {p.call_id: p for p in sql.pending_calls(conn, run_id)}
            call = pending.get(call_id)
            if call is None:
                raise ConflictError(f"call {call_id} is not awaiting a decision in run "
                                    f"{run_id}; pending: {', '.join(pending) or 'none'}")
            sql.insert_decision(conn, run_id, DecisionRow(call_id, decision, actor, reason,
                                                          self._now()))
            kind = EventKind.TOOL_APPROVED if decision is Decision.APPROVED else \
                EventKind.TOOL_DENIED
            payload: dict[str, Any] = {"call_id": call_id, "tool": call.tool,
                                       "input_digest": call.input_digest, "actor": actor,
                                       "parked": True}
            role = self._db.identity().role
            if role is not None:
                # Team store: the database role that decided (the decision row's
                # `actor_role`, which the database itself fills in and checks).
                payload["actor_role"] = role
            if reason:
                payload["reason_digest"] = digest(reason)
            self._trajectory.append_in(conn, run_id, kind, payload)
        return DecisionOutcome(run_id, call_id, decision, actor, False)

    def prepare_resume(self, run_id: str) -> ResumeTicket:
        """Every check of the stored run that can refuse a resume, before anything is claimed."""
        conn = self._db.read()
        run = self.get(run_id)
        if run.status is not RunStatus.PARKED or run.claimed:
            raise ConflictError(f"run {run_id} is {run.status.value}"
                                f"{' and claimed' if run.claimed else ''}; only a parked, "
                                "unclaimed run can be resumed")
        decided = {d.call_id: d for d in sql.decisions(conn, run_id)}
        undecided = [p.call_id for p in sql.pending_calls(conn, run_id) if p.call_id not in decided]
        if undecided:
            raise ConflictError(f"run {run_id} still waits for a decision on "
                                f"{', '.join(undecided)}; approve or deny each call first")
        sealed = sql.read_snapshot(conn, run_id)
        if sealed is None:
            raise ConflictError(f"run {run_id} has no parked snapshot")
        snapshot = self._unseal(run_id, sealed)
        return ResumeTicket(run, snapshot, tuple(decided.values()), sealed)

    def claim(self, ticket: ResumeTicket, payload: dict[str, Any] | None = None) -> None:
        """The CAS: parked+unclaimed (with the checked snapshot) → running, owned by us."""
        run_id = ticket.run.run_id
        with self._db.write() as conn:
            if not sql.claim_run(conn, run_id, expected_snapshot=ticket.sealed,
                                 owner_pid=os.getpid(), owner_host=_host(), now_ms=self._now()):
                raise ConflictError(f"run {run_id} was resumed by someone else just now")
            self._trajectory.append_in(conn, run_id, EventKind.RUN_RESUMED, {
                "decisions": [{"call_id": d.call_id, "decision": d.decision.value}
                              for d in ticket.decisions], **(payload or {})})

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
            with self._db.write() as conn:
                if not sql.mark_interrupted(conn, run.run_id, owner_pid=run.owner_pid,
                                            now_ms=self._now()):
                    continue
                released = self._ledger.release_run_in(conn, run.run_id)
                self._trajectory.append_in(conn, run.run_id, EventKind.RUN_INTERRUPTED,
                                           {"released_holds": released})
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
