"""SQL for credit reservations: insert, close (settle, refund, release) and window sums."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stockade.store.interface import Connection


class ReservationStatus(StrEnum):
    OPEN = "open"
    SETTLED = "settled"
    REFUNDED = "refunded"
    RELEASED = "released"


@dataclass(frozen=True, slots=True)
class ReservationRow:
    id: str
    run_id: str
    provider: str
    model: str
    created_ms: int
    day_key: str
    month_key: str
    reserved: int
    estimated: int
    status: ReservationStatus
    settled: int | None = None
    released: int | None = None
    actual: int | None = None
    overrun: int = 0


@dataclass(frozen=True, slots=True)
class LedgerTotals:
    reserved: int
    settled: int
    released: int
    open_reserved: int
    open_count: int
    overrun: int = 0


# Credits a window has committed: open holds count in full, closed rows at what they charged
# (their settled amount, plus anything charged above the hold).
COMMITTED_CREDITS = "CASE status WHEN 'open' THEN reserved ELSE settled + overrun END"
"""One row's committed credits (the team store also sums it per member)."""
_COMMITTED = f"COALESCE(SUM({COMMITTED_CREDITS}), 0)"


def committed_for_run(conn: Connection, run_id: str) -> int:
    return int(conn.execute(f"SELECT {_COMMITTED} FROM reservation WHERE run_id = ?",
                            (run_id,)).fetchone()[0])


def committed_for_day(conn: Connection, day_key: str) -> int:
    return int(conn.execute(f"SELECT {_COMMITTED} FROM reservation WHERE day_key = ?",
                            (day_key,)).fetchone()[0])


def committed_for_month(conn: Connection, month_key: str) -> int:
    return int(conn.execute(f"SELECT {_COMMITTED} FROM reservation WHERE month_key = ?",
                            (month_key,)).fetchone()[0])


def settled_for_run(conn: Connection, run_id: str) -> int:
    return int(conn.execute(
        "SELECT COALESCE(SUM(settled + overrun), 0) FROM reservation "
        "WHERE run_id = ? AND status <> 'open'",
        (run_id,)).fetchone()[0])


def insert_reservation(conn: Connection, row: ReservationRow) -> None:
    conn.execute(
        "INSERT INTO reservation(id, run_id, provider, model, created_ms, day_key, month_key, "
        "reserved, estimated, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'open')",
        (row.id, row.run_id, row.provider, row.model, row.created_ms, row.day_key,
         row.month_key, row.reserved, row.estimated),
    )


def get_reservation(conn: Connection, reservation_id: str) -> ReservationRow | None:
    r = conn.execute(
        "SELECT id, run_id, provider, model, created_ms, day_key, month_key, reserved, "
        "estimated, status, settled, released, actual, overrun FROM reservation WHERE id = ?",
        (reservation_id,),
    ).fetchone()
    if r is None:
        return None
    return ReservationRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8],
                          ReservationStatus(r[9]), r[10], r[11], r[12], int(r[13] or 0))


def close_reservation(
    conn: Connection,
    reservation_id: str,
    *,
    status: ReservationStatus,
    settled: int,
    actual: int,
    overrun: int = 0,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int,
    closed_ms: int,
) -> bool:
    """Close an open hold at `settled` (released = reserved - settled) plus `overrun` charged
    above it; False if not open."""
    cur = conn.execute(
        "UPDATE reservation SET status = ?, settled = ?, released = reserved - ?, actual = ?, "
        "overrun = ?, input_tokens = ?, output_tokens = ?, cached_input_tokens = ?, "
        "closed_ms = ? WHERE id = ? AND status = 'open' AND ? <= reserved",
        (status.value, settled, settled, actual, overrun, input_tokens, output_tokens,
         cached_input_tokens, closed_ms, reservation_id, settled),
    )
    return cur.rowcount == 1


def release_open_for_run(conn: Connection, run_id: str, closed_ms: int) -> int:
    """Release every open hold of a run in full (crash recovery); returns how many."""
    cur = conn.execute(
        "UPDATE reservation SET status = 'released', settled = 0, released = reserved, "
        "actual = 0, input_tokens = 0, output_tokens = 0, cached_input_tokens = 0, "
        "closed_ms = ? WHERE run_id = ? AND status = 'open'",
        (closed_ms, run_id),
    )
    return cur.rowcount


def ledger_totals(conn: Connection, run_id: str | None = None) -> LedgerTotals:
    where, params = ("WHERE run_id = ?", (run_id,)) if run_id is not None else ("", ())
    r = conn.execute(
        "SELECT COALESCE(SUM(CASE WHEN status <> 'open' THEN reserved END), 0), "
        "COALESCE(SUM(settled), 0), COALESCE(SUM(released), 0), "
        "COALESCE(SUM(CASE WHEN status = 'open' THEN reserved END), 0), "
        "COALESCE(SUM(CASE WHEN status = 'open' THEN 1 ELSE 0 END), 0), "
        f"COALESCE(SUM(overrun), 0) FROM reservation {where}",
        params,
    ).fetchone()
    return LedgerTotals(int(r[0]), int(r[1]), int(r[2]), int(r[3]), int(r[4]), int(r[5]))


def usage_for_run(conn: Connection, run_id: str) -> tuple[int, int, int]:
    """Reported (input, output, cached input) tokens over a run's closed requests."""
    r = conn.execute(
        "SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0), "
        "COALESCE(SUM(cached_input_tokens), 0) FROM reservation "
        "WHERE run_id = ? AND status <> 'open'", (run_id,)).fetchone()
    return int(r[0]), int(r[1]), int(r[2])


def last_reservation_for_run(conn: Connection, run_id: str) -> tuple[int, int] | None:
    """(reserved, estimated) of a run's newest request, or None before its first one."""
    r = conn.execute(
        "SELECT reserved, estimated FROM reservation WHERE run_id = ? "
        "ORDER BY created_ms DESC, rowid DESC LIMIT 1", (run_id,)).fetchone()
    return None if r is None else (int(r[0]), int(r[1]))
