"""SQL for run state: runs, their pending calls and decisions, and the compare-and-swap steps."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stockade.store.interface import Connection


class RunStatus(StrEnum):
    RUNNING = "running"
    PARKED = "parked"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    EXPIRED = "expired"
    """Shown, never stored: a parked run past its expiry, or one finished because it expired."""


class Decision(StrEnum):
    APPROVED = "approved"
    DENIED = "denied"


@dataclass(frozen=True, slots=True)
class RunRow:
    run_id: str
    status: RunStatus
    document_path: str
    document_digest: str | None
    provider: str
    model: str
    created_ms: int
    updated_ms: int
    owner_pid: int | None
    owner_host: str | None
    claimed: bool
    outcome: str | None
    reason: str | None
    has_snapshot: bool
    seal_version: int = 0
    """How many times the run was parked: the version its newest sealed snapshot carries."""


@dataclass(frozen=True, slots=True)
class PendingCallRow:
    call_id: str
    position: int
    tool: str
    input_digest: str
    destructive: bool
    iteration: int | None = None


@dataclass(frozen=True, slots=True)
class DecisionRow:
    call_id: str
    decision: Decision
    actor: str
    reason: str | None
    decided_ms: int
    input_digest: str | None = None
    iteration: int | None = None
    event_seq: int | None = None
    """The audit event recording this decision (its MAC is bound into `mac`)."""
    mac: str | None = None
    """`hmac-sha256:` over the decision and its event; rows without one are never honoured."""


# Never selects the snapshot itself: listing and status reads must not touch ciphertext.
_RUN_COLUMNS = ("run_id, status, document_path, document_digest, provider, model, created_ms, "
                "updated_ms, owner_pid, owner_host, claimed, outcome, reason, "
                "snapshot IS NOT NULL, seal_version")


def _run(r: tuple) -> RunRow:
    return RunRow(r[0], RunStatus(r[1]), r[2], r[3], r[4], r[5], int(r[6]), int(r[7]), r[8],
                  r[9], bool(r[10]), r[11], r[12], bool(r[13]), int(r[14] or 0))


def insert_run(conn: Connection, *, run_id: str, document_path: str,
               document_digest: str | None, provider: str, model: str, now_ms: int,
               owner_pid: int, owner_host: str) -> None:
    conn.execute(
        "INSERT INTO run(run_id, status, document_path, document_digest, provider, model, "
        "created_ms, updated_ms, owner_pid, owner_host, claimed) "
        "VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, 1)",
        (run_id, document_path, document_digest, provider, model, now_ms, now_ms, owner_pid,
         owner_host),
    )


def get_run(conn: Connection, run_id: str) -> RunRow | None:
    r = conn.execute(f"SELECT {_RUN_COLUMNS} FROM run WHERE run_id = ?", (run_id,)).fetchone()
    return None if r is None else _run(r)


def list_runs(conn: Connection, *, status: RunStatus | None = None,
              document_path: str | None = None, limit: int = 200) -> list[RunRow]:
    clauses, params = [], []
    if status is not None:
        clauses.append("status = ?")
        params.append(status.value)
    if document_path is not None:
        clauses.append("document_path = ?")
        params.append(document_path)
    where = ("WHERE " + " AND ".join(clauses)) if clauses else ""
    rows = conn.execute(
        f"SELECT {_RUN_COLUMNS} FROM run {where} ORDER BY created_ms DESC, run_id LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [_run(r) for r in rows]


def read_snapshot(conn: Connection, run_id: str) -> bytes | None:
    r = conn.execute("SELECT snapshot FROM run WHERE run_id = ?", (run_id,)).fetchone()
    return None if r is None or r[0] is None else bytes(r[0])


def park_run(conn: Connection, run_id: str, *, snapshot: bytes, document_digest: str,
             pending: list[PendingCallRow], now_ms: int, seal_version: int) -> bool:
    """CAS running+claimed → parked+unclaimed with the sealed snapshot, its seal version (which
    must be the next one) and its pending calls."""
    cur = conn.execute(
        "UPDATE run SET status = 'parked', claimed = 0, snapshot = ?, document_digest = ?, "
        "owner_pid = NULL, owner_host = NULL, updated_ms = ?, seal_version = ? "
        "WHERE run_id = ? AND status = 'running' AND claimed = 1 AND seal_version = ?",
        (snapshot, document_digest, now_ms, seal_version, run_id, seal_version - 1),
    )
    if cur.rowcount != 1:
        return False
    conn.execute("DELETE FROM pending_call WHERE run_id = ?", (run_id,))
    conn.executemany(
        "INSERT INTO pending_call(run_id, call_id, position, tool, input_digest, destructive, "
        "iteration) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(run_id, p.call_id, p.position, p.tool, p.input_digest, int(p.destructive),
          p.iteration) for p in pending],
    )
    return True


def claim_run(conn: Connection, run_id: str, *, expected_snapshot: bytes,
              owner_pid: int, owner_host: str, now_ms: int) -> bool:
    """CAS parked+unclaimed → running+claimed, only if the snapshot is the one already checked."""
    r = conn.execute(
        "UPDATE run SET status = 'running', claimed = 1, owner_pid = ?, owner_host = ?, "
        "updated_ms = ?, snapshot = NULL "
        "WHERE run_id = ? AND status = 'parked' AND claimed = 0 AND snapshot = ? RETURNING 1",
        (owner_pid, owner_host, now_ms, run_id, expected_snapshot),
    ).fetchone()
    return r is not None


def finish_run(conn: Connection, run_id: str, *, outcome: str, reason: str | None,
               now_ms: int, status: RunStatus = RunStatus.FINISHED) -> bool:
    cur = conn.execute(
        "UPDATE run SET status = ?, outcome = ?, reason = ?, snapshot = NULL, claimed = 0, "
        "owner_pid = NULL, owner_host = NULL, updated_ms = ? "
        "WHERE run_id = ? AND status IN ('running', 'parked')",
        (status.value, outcome, reason, now_ms, run_id),
    )
    return cur.rowcount == 1


def running_runs(conn: Connection) -> list[RunRow]:
    rows = conn.execute(f"SELECT {_RUN_COLUMNS} FROM run WHERE status = 'running'").fetchall()
    return [_run(r) for r in rows]


def mark_interrupted(conn: Connection, run_id: str, *, owner_pid: int | None,
                     now_ms: int) -> bool:
    """Mark a running run whose owner is gone; the pid check stops a race with a live owner."""
    cur = conn.execute(
        "UPDATE run SET status = 'interrupted', outcome = 'interrupted', "
        "reason = 'process ended mid-step', claimed = 0, owner_pid = NULL, owner_host = NULL, "
        "updated_ms = ? WHERE run_id = ? AND status = 'running' "
        "AND owner_pid IS NOT DISTINCT FROM ?",
        (now_ms, run_id, owner_pid),
    )
    return cur.rowcount == 1


def pending_calls(conn: Connection, run_id: str) -> list[PendingCallRow]:
    rows = conn.execute(
        "SELECT call_id, position, tool, input_digest, destructive, iteration FROM pending_call "
        "WHERE run_id = ? ORDER BY position", (run_id,)).fetchall()
    return [PendingCallRow(r[0], int(r[1]), r[2], r[3], bool(r[4]),
                           None if r[5] is None else int(r[5])) for r in rows]


_DECISION_COLUMNS = ("call_id, decision, actor, reason, decided_ms, input_digest, iteration, "
                     "event_seq, mac")


def _decision(r: tuple) -> DecisionRow | None:
    try:
        decision = Decision(r[1])
    except ValueError:
        return None  # not a value Stockade writes: never honoured, never shown as decided
    return DecisionRow(r[0], decision, r[2], r[3], int(r[4]), r[5],
                       None if r[6] is None else int(r[6]),
                       None if r[7] is None else int(r[7]), r[8])


def get_decision(conn: Connection, run_id: str, call_id: str) -> DecisionRow | None:
    r = conn.execute(
        f"SELECT {_DECISION_COLUMNS} FROM decision WHERE run_id = ? AND call_id = ?",
        (run_id, call_id)).fetchone()
    return None if r is None else _decision(r)


def decisions(conn: Connection, run_id: str) -> list[DecisionRow]:
    rows = conn.execute(
        f"SELECT {_DECISION_COLUMNS} FROM decision WHERE run_id = ? "
        "ORDER BY decided_ms, call_id", (run_id,)).fetchall()
    return [d for d in map(_decision, rows) if d is not None]


def insert_decision(conn: Connection, run_id: str, row: DecisionRow) -> None:
    """Insert, or replace a row that did not authenticate (the caller checked that).

    Update-then-insert, inside the caller's write transaction (which no other writer of the
    store, or of the team, can interleave with): portable to the team store, whose key also
    holds the team, which a portable `ON CONFLICT` target cannot name."""
    values = (row.decision.value, row.actor, row.reason, row.decided_ms, row.input_digest,
              row.iteration, row.event_seq, row.mac)
    cur = conn.execute(
        "UPDATE decision SET decision = ?, actor = ?, reason = ?, decided_ms = ?, "
        "input_digest = ?, iteration = ?, event_seq = ?, mac = ? "
        "WHERE run_id = ? AND call_id = ?", (*values, run_id, row.call_id))
    if cur.rowcount == 0:
        conn.execute(
            f"INSERT INTO decision(run_id, {_DECISION_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (run_id, row.call_id, *values))


def parked_before(conn: Connection, cutoff_ms: int) -> list[str]:
    """Parked, unclaimed runs whose park is older than `cutoff_ms` (expired)."""
    rows = conn.execute(
        "SELECT run_id FROM run WHERE status = 'parked' AND claimed = 0 AND updated_ms < ? "
        "ORDER BY updated_ms", (cutoff_ms,)).fetchall()
    return [str(r[0]) for r in rows]


def runs_with_open_holds(conn: Connection) -> list[str]:
    """Runs that hold open reservations but are not running (left by a crash or a failed settle)."""
    rows = conn.execute(
        "SELECT DISTINCT r.run_id FROM reservation r LEFT JOIN run ON run.run_id = r.run_id "
        "WHERE r.status = 'open' AND (run.status IS NULL OR run.status <> 'running')"
    ).fetchall()
    return [str(r[0]) for r in rows]
