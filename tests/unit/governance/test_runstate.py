"""Run state: park, decide (idempotent, with actor), resume checks before the CAS claim, recovery."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from stockade.governance.ledger import CreditBudgets, Hold, Ledger
from stockade.governance.runstate import RunStates
from stockade.governance.sealing import SnapshotKeyMissing, SnapshotKeys, SnapshotTampered
from stockade.governance.trajectory import Trajectory
from stockade.store import ConflictError, NotFoundError, Store
from stockade.store.runs import Decision, PendingCallRow, RunStatus
from tests.unit.governance.conftest import SQLITE_FILE_ONLY, DictSecrets, FakeClock

DOC = "sha256:" + "d" * 64
PENDING = [PendingCallRow("call-1", 0, "add_threat", "sha256:" + "1" * 64, False),
           PendingCallRow("call-2", 1, "delete_element", "sha256:" + "2" * 64, True)]


@pytest.fixture
def runs(db: Store, trajectory: Trajectory, ledger: Ledger, secrets: DictSecrets,
         clock: FakeClock) -> RunStates:
    return RunStates(db, trajectory, ledger, SnapshotKeys(secrets), clock)


def _parked(runs: RunStates, run_id: str = "run-1") -> str:
    runs.start(run_id, document_path="/tmp/model.thf", document_digest=DOC,
               provider="offline", model="stride-rules", payload={"provider": "offline"})
    runs.park(run_id, snapshot={"runner": {"messages": ["hello"]}}, document_digest=DOC,
              pending=PENDING)
    return run_id


def _decide_all(runs: RunStates, run_id: str) -> None:
    runs.decide(run_id, "call-1", Decision.APPROVED, "alice")
    runs.decide(run_id, "call-2", Decision.DENIED, "alice", "too risky")


def test_park_stores_a_sealed_snapshot_and_pending_calls(runs: RunStates, db: Store) -> None:
    run_id = _parked(runs)
    row = runs.get(run_id)
    assert row.status is RunStatus.PARKED and not row.claimed and row.has_snapshot
    assert [p.call_id for p in runs.pending_calls(run_id)] == ["call-1", "call-2"]
    raw = db.read().execute("SELECT snapshot FROM run").fetchone()[0]
    assert b"hello" not in raw and b"messages" not in raw
    assert runs.open_snapshot(run_id)["runner"] == {"messages": ["hello"]}


def test_decisions_record_the_actor_and_are_idempotent(runs: RunStates,
                                                       trajectory: Trajectory) -> None:
    run_id = _parked(runs)
    first = runs.decide(run_id, "call-1", Decision.APPROVED, "alice")
    again = runs.decide(run_id, "call-1", Decision.APPROVED, "bob")
    assert not first.already_recorded and again.already_recorded and again.actor == "alice"
    approved = [e for e in trajectory.events(run_id) if e.kind == "tool.approved"]
    assert len(approved) == 1 and approved[0].payload["actor"] == "alice"


def test_a_contrary_decision_is_a_conflict(runs: RunStates) -> None:
    run_id = _parked(runs)
    runs.decide(run_id, "call-1", Decision.APPROVED, "alice")
    with pytest.raises(ConflictError, match="already approved by alice"):
        runs.decide(run_id, "call-1", Decision.DENIED, "bob")


def test_decisions_need_an_actor_a_known_run_and_a_pending_call(runs: RunStates) -> None:
    run_id = _parked(runs)
    with pytest.raises(ValueError, match="actor"):
        runs.decide(run_id, "call-1", Decision.APPROVED, "  ")
    with pytest.raises(NotFoundError):
        runs.decide("nope", "call-1", Decision.APPROVED, "alice")
    with pytest.raises(ConflictError, match="not awaiting"):
        runs.decide(run_id, "call-9", Decision.APPROVED, "alice")


def test_the_deny_reason_reaches_the_audit_only_as_a_digest(runs: RunStates,
                                                            trajectory: Trajectory) -> None:
    run_id = _parked(runs)
    runs.decide(run_id, "call-2", Decision.DENIED, "alice", "too risky")
    denied = next(e for e in trajectory.events(run_id) if e.kind == "tool.denied")
    assert "too risky" not in str(denied.payload)
    assert denied.payload["reason_digest"].startswith("sha256:")


def test_resume_is_refused_while_a_call_is_undecided(runs: RunStates) -> None:
    run_id = _parked(runs)
    runs.decide(run_id, "call-1", Decision.APPROVED, "alice")
    with pytest.raises(ConflictError, match="call-2"):
        runs.prepare_resume(run_id)
    assert runs.get(run_id).status is RunStatus.PARKED


def test_resume_then_claim_moves_the_run_to_running_once(runs: RunStates) -> None:
    run_id = _parked(runs)
    _decide_all(runs, run_id)
    first = runs.prepare_resume(run_id)
    second = runs.prepare_resume(run_id)
    runs.claim(first)
    with pytest.raises(ConflictError):
        runs.claim(second)
    row = runs.get(run_id)
    assert row.status is RunStatus.RUNNING and row.claimed and not row.has_snapshot
    assert {d.call_id: d.decision for d in first.decisions} == {
        "call-1": Decision.APPROVED, "call-2": Decision.DENIED}
    with pytest.raises(ConflictError):
        runs.prepare_resume(run_id)


def test_resume_is_refused_without_the_keyring_key(runs: RunStates, secrets: DictSecrets) -> None:
    run_id = _parked(runs)
    _decide_all(runs, run_id)
    secrets.items.clear()
    with pytest.raises(SnapshotKeyMissing):
        runs.prepare_resume(run_id)
    assert runs.get(run_id).status is RunStatus.PARKED


@SQLITE_FILE_ONLY
def test_resume_is_refused_for_a_tampered_snapshot(runs: RunStates, db: Store) -> None:
    run_id = _parked(runs)
    _decide_all(runs, run_id)
    raw = sqlite3.connect(db.path)
    blob = bytearray(raw.execute("SELECT snapshot FROM run").fetchone()[0])
    blob[-1] ^= 0xFF
    raw.execute("UPDATE run SET snapshot = ?", (bytes(blob),))
    raw.commit()
    with pytest.raises(SnapshotTampered):
        runs.prepare_resume(run_id)
    assert runs.get(run_id).status is RunStatus.PARKED


@SQLITE_FILE_ONLY
def test_a_snapshot_copied_from_another_run_is_refused(runs: RunStates, db: Store) -> None:
    _parked(runs, "run-a")
    _parked(runs, "run-b")
    raw = sqlite3.connect(db.path)
    blob = raw.execute("SELECT snapshot FROM run WHERE run_id = 'run-a'").fetchone()[0]
    raw.execute("UPDATE run SET snapshot = ? WHERE run_id = 'run-b'", (blob,))
    raw.commit()
    with pytest.raises(SnapshotTampered):
        runs.open_snapshot("run-b")


def test_parking_twice_without_a_resume_is_a_conflict(runs: RunStates) -> None:
    run_id = _parked(runs)
    with pytest.raises(ConflictError):
        runs.park(run_id, snapshot={}, document_digest=DOC, pending=PENDING)


def test_finish_releases_open_holds_and_clears_the_snapshot(runs: RunStates,
                                                             ledger: Ledger) -> None:
    runs.start("r", document_path="/x", document_digest=DOC, provider="p", model="m",
               payload={})
    hold = ledger.reserve(run_id="r", provider="p", model="m", credits=50, estimated=5,
                          budgets=CreditBudgets(per_turn=100))
    assert isinstance(hold, Hold)
    runs.finish("r", outcome="failed", reason="provider")
    totals = ledger.totals("r")
    assert totals.open_count == 0 and totals.reserved == totals.settled + totals.released
    assert runs.get("r").status is RunStatus.FINISHED


def test_finishing_a_run_that_is_already_closed_is_refused_and_records_nothing(
    runs: RunStates, trajectory: Trajectory
) -> None:
    runs.start("r", document_path="/x", document_digest=DOC, provider="p", model="m",
               payload={})
    runs.finish("r", outcome="completed", reason=None)
    events = len(trajectory.events("r"))
    with pytest.raises(ConflictError, match="already closed"):
        runs.finish("r", outcome="failed", reason="again")
    assert runs.get("r").outcome == "completed"
    assert len(trajectory.events("r")) == events


def test_recovery_releases_holds_left_without_a_running_run_and_keeps_live_ones(
    runs: RunStates, ledger: Ledger
) -> None:
    budgets = CreditBudgets(per_turn=100)
    runs.start("live", document_path="/x", document_digest=DOC, provider="p", model="m",
               payload={})
    ledger.reserve(run_id="live", provider="p", model="m", credits=30, estimated=5,
                   budgets=budgets)
    ledger.reserve(run_id="no-row", provider="p", model="m", credits=40, estimated=5,
                   budgets=budgets)
    assert runs.recover_interrupted() == []
    assert ledger.totals("no-row").open_count == 0
    assert ledger.totals("no-row").released == 40
    assert ledger.totals("live").open_count == 1


def test_a_run_whose_process_died_is_marked_interrupted_and_its_holds_released(
    runs: RunStates, db: Store, ledger: Ledger, trajectory: Trajectory
) -> None:
    runs.start("dead", document_path="/x", document_digest=DOC, provider="p", model="m",
               payload={})
    ledger.reserve(run_id="dead", provider="p", model="m", credits=70, estimated=5,
                   budgets=CreditBudgets(per_turn=100))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    with db.write() as conn:
        conn.execute("UPDATE run SET owner_pid = ? WHERE run_id = 'dead'", (int(gone.stdout),))
    runs.start("mine", document_path="/x", document_digest=DOC, provider="p", model="m",
               payload={})
    assert runs.recover_interrupted() == ["dead"]
    assert runs.get("dead").status is RunStatus.INTERRUPTED
    assert runs.get("mine").status is RunStatus.RUNNING
    totals = ledger.totals()
    assert totals.open_count == 0 and totals.reserved == totals.settled + totals.released == 70
    assert trajectory.events("dead")[-1].kind == "run.interrupted"
    assert trajectory.verify_chain().ok


def _resume_elsewhere(runs: RunStates, run_id: str, *, finish: bool) -> None:
    """Another resumer, on another machine, claims the run (and finishes it) at this moment."""
    other = runs.prepare_resume(run_id)
    runs.claim(other)
    if finish:
        runs.finish(run_id, outcome="completed", reason=None)


@pytest.mark.parametrize("finish", [False, True])
def test_a_resume_raced_by_another_resumer_is_told_the_run_moved_on_not_that_it_was_replayed(
    runs: RunStates, trajectory: Trajectory, monkeypatch: pytest.MonkeyPatch, finish: bool
) -> None:
    # The other resumer claims after this one read the run and its snapshot, before it read
    # the events: those now show a resume after the park, as a put-back snapshot's would.
    run_id = _parked(runs)
    _decide_all(runs, run_id)
    real_verify = trajectory.verify_run
    raced: list[bool] = []

    def verify_then_race(rid: str):  # type: ignore[no-untyped-def]
        result = real_verify(rid)
        if not raced:
            raced.append(True)
            _resume_elsewhere(runs, rid, finish=finish)
        return result

    monkeypatch.setattr(trajectory, "verify_run", verify_then_race)
    with pytest.raises(ConflictError) as refused:
        runs.prepare_resume(run_id)
    assert type(refused.value) is ConflictError  # not SnapshotReplayed, a tampering verdict
    status = "finished" if finish else "running and claimed"
    assert str(refused.value) == (f"run {run_id} is {status}; only a parked, unclaimed run "
                                  "can be resumed")


def test_a_resume_whose_snapshot_went_with_a_finished_rival_says_the_run_moved_on(
    runs: RunStates, monkeypatch: pytest.MonkeyPatch
) -> None:
    import stockade.governance.runstate as runstate

    run_id = _parked(runs)
    _decide_all(runs, run_id)
    real_read = runstate.sql.read_snapshot
    raced: list[bool] = []

    def race_then_read(conn, rid):  # type: ignore[no-untyped-def]
        if not raced:
            raced.append(True)
            _resume_elsewhere(runs, rid, finish=True)
        return real_read(conn, rid)

    monkeypatch.setattr(runstate.sql, "read_snapshot", race_then_read)
    with pytest.raises(ConflictError) as refused:
        runs.prepare_resume(run_id)
    assert str(refused.value) == (f"run {run_id} is finished; only a parked, unclaimed run can "
                                  "be resumed")
