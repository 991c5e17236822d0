"""The credit ledger: reservations held against a turn budget and daily/monthly wallet limits.

On a team store the same reserve also checks the team's shared day and month limits and each
analyst's share of them (`stockade team init --day/--month/--analyst-day/--analyst-month`),
inside the same write transaction, which the team store serializes per team across machines.

Every provider request first reserves an upper bound of its cost. The reserve is one
`BEGIN IMMEDIATE` transaction that sums what the turn, the day and the month have committed
(open holds at their full amount, closed rows at their settled amount), refuses if the new hold
would cross any limit, and inserts the hold; two processes therefore cannot both squeeze under
a limit. A hold closes exactly once: settled at the priced usage, refunded (settled 0) when the
request never started, or released in full by crash recovery; for every closed row `reserved =
settled + released`. Usage priced above its hold (which a true upper bound should make
impossible: a provider that reports more than the request could have used) is charged in full
— `settled` is the whole hold and `overrun` the rest, so the wallet shows what the provider
will bill — and the runner stops the turn at once. Windows are UTC calendar days and months.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from stockade.store import Store
from stockade.store import reservations as sql
from stockade.store.interface import Connection
from stockade.store.reservations import LedgerTotals, ReservationRow, ReservationStatus


class LimitKind(StrEnum):
    TURN = "turn"
    DAY = "day"
    MONTH = "month"
    TEAM_DAY = "team_day"
    TEAM_MONTH = "team_month"
    ANALYST_DAY = "analyst_day"
    ANALYST_MONTH = "analyst_month"


@dataclass(frozen=True, slots=True)
class CreditBudgets:
    """Per-turn budget (required) and optional wallet limits per UTC day and month."""

    per_turn: int
    per_day: int | None = None
    per_month: int | None = None

    def __post_init__(self) -> None:
        for name in ("per_turn", "per_day", "per_month"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise ValueError(f"{name} must be a non-negative whole number of credits")


@dataclass(frozen=True, slots=True)
class Hold:
    """A granted reservation."""

    id: str
    run_id: str
    reserved: int
    estimated: int


@dataclass(frozen=True, slots=True)
class LimitRefusal:
    """A reservation that would cross a limit; nothing was reserved."""

    limit: LimitKind
    needed: int
    committed: int
    allowed: int

    @property
    def message(self) -> str:
        left = max(self.allowed - self.committed, 0)
        where = {LimitKind.TURN: "this turn's credit budget",
                 LimitKind.DAY: "today's credit limit",
                 LimitKind.MONTH: "this month's credit limit",
                 LimitKind.TEAM_DAY: "the team's credits for today",
                 LimitKind.TEAM_MONTH: "the team's credits for this month",
                 LimitKind.ANALYST_DAY: "your share of the team's credits for today",
                 LimitKind.ANALYST_MONTH: "your share of the team's credits for this month",
                 }[self.limit]
        if self.limit is LimitKind.TURN and self.committed == 0:
            # The first request alone does not fit: say so before anything is sent, with the
            # figure and the way out, instead of a bare "budget spent".
            return (f"The first request of this turn could cost up to {self.needed} credits, "
                    f"more than the per-turn budget of {self.allowed} credits, so nothing was "
                    f"sent. Raise the per-turn budget to at least {self.needed} (Assistant → "
                    f"Settings, or --budget {self.needed} on the command line), or choose a "
                    "cheaper model.")
        return (f"The next request could cost up to {self.needed} credits but only {left} of "
                f"{where} ({self.allowed}) are left; the turn stops here and keeps what it did.")


@dataclass(frozen=True, slots=True)
class Settlement:
    reservation_id: str
    status: ReservationStatus
    reserved: int
    settled: int
    """Charged within the hold (at most `reserved`)."""
    actual: int
    overrun: int = 0
    """Charged above the hold."""

    @property
    def charged(self) -> int:
        return self.settled + self.overrun

    @property
    def over_reservation(self) -> bool:
        return self.actual > self.reserved


def window_keys(now_ms: int) -> tuple[str, str]:
    moment = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%d"), moment.strftime("%Y-%m")


class Ledger:
    """Reserve, settle, refund and release credits in the shared database."""

    def __init__(self, db: Store, clock_ms: Callable[[], int] | None = None) -> None:
        self._db = db
        self._clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)

    @property
    def db(self) -> Store:
        return self._db

    def reserve_in(self, conn: Connection, *, run_id: str, provider: str, model: str,
                   credits: int, estimated: int, budgets: CreditBudgets) -> Hold | LimitRefusal:
        """Check every limit and insert the hold, inside the caller's write transaction."""
        if credits < 0:
            raise ValueError("a reservation cannot be negative")
        now = int(self._clock_ms())
        day, month = window_keys(now)
        checks: list[tuple[LimitKind, int | None, Callable[[], int]]] = [
            (LimitKind.TURN, budgets.per_turn, lambda: sql.committed_for_run(conn, run_id)),
        ]
        team = self._db.team_wallet(conn)
        if team is None:
            checks += [
                (LimitKind.DAY, budgets.per_day, lambda: sql.committed_for_day(conn, day)),
                (LimitKind.MONTH, budgets.per_month, lambda: sql.committed_for_month(conn, month)),
            ]
        else:
            # Team store: the window sums see the whole team (row-level security), the
            # member's own sums what this role reserved. The settings' day and month limits
            # stay this analyst's own cap; the team's limits come from its database.
            @functools.cache
            def mine() -> tuple[int, int]:
                return self._db.committed_by_me(conn, day_key=day, month_key=month)

            checks += [
                (LimitKind.DAY, budgets.per_day, lambda: mine()[0]),
                (LimitKind.MONTH, budgets.per_month, lambda: mine()[1]),
                (LimitKind.TEAM_DAY, team.per_day, lambda: sql.committed_for_day(conn, day)),
                (LimitKind.TEAM_MONTH, team.per_month,
                 lambda: sql.committed_for_month(conn, month)),
                (LimitKind.ANALYST_DAY, team.per_analyst_day, lambda: mine()[0]),
                (LimitKind.ANALYST_MONTH, team.per_analyst_month, lambda: mine()[1]),
            ]
        for kind, allowed, committed_of in checks:
            if allowed is None:
                continue
            committed = committed_of()
            # Written so that the new hold must fit entirely; equality is allowed.
            if not committed + credits <= allowed:
                return LimitRefusal(kind, credits, committed, allowed)
        hold_id = f"res-{uuid.uuid4().hex}"
        sql.insert_reservation(conn, ReservationRow(
            hold_id, run_id, provider, model, now, day, month, credits, estimated,
            ReservationStatus.OPEN))
        return Hold(hold_id, run_id, credits, estimated)

    def reserve(self, **kwargs: Any) -> Hold | LimitRefusal:
        with self._db.write() as conn:
            return self.reserve_in(conn, **kwargs)

    def settle_in(self, conn: Connection, hold_id: str, *, actual: int | None,
                  input_tokens: int = 0, output_tokens: int = 0, cached_input_tokens: int = 0,
                  failed: bool = False) -> Settlement:
        """Close a hold: refund when the request never started (`failed`), else charge
        `actual` in full (above the hold too: see the module docstring).

        `actual=None` (the provider reported no usage) charges the full hold: we cannot prove
        the request was cheaper, and the hold was already allowed by every limit.
        """
        row = sql.get_reservation(conn, hold_id)
        if row is None:
            raise KeyError(f"no reservation {hold_id}")
        if row.status is not ReservationStatus.OPEN:
            return Settlement(hold_id, row.status, row.reserved, row.settled or 0,
                              row.actual or 0, row.overrun)
        if failed:
            status, charged, priced = ReservationStatus.REFUNDED, 0, 0
        else:
            priced = row.reserved if actual is None else actual
            status, charged = ReservationStatus.SETTLED, min(priced, row.reserved)
        overrun = max(priced - row.reserved, 0)
        sql.close_reservation(conn, hold_id, status=status, settled=charged, actual=priced,
                              overrun=overrun, input_tokens=input_tokens,
                              output_tokens=output_tokens,
                              cached_input_tokens=cached_input_tokens,
                              closed_ms=int(self._clock_ms()))
        return Settlement(hold_id, status, row.reserved, charged, priced, overrun)

    def settle(self, hold_id: str, **kwargs: Any) -> Settlement:
        with self._db.write() as conn:
            return self.settle_in(conn, hold_id, **kwargs)

    def release_run_in(self, conn: Connection, run_id: str) -> int:
        """Release every open hold of a run (crash recovery); returns how many were open."""
        return sql.release_open_for_run(conn, run_id, int(self._clock_ms()))

    def spent_for_run(self, run_id: str) -> int:
        return sql.settled_for_run(self._db.read(), run_id)

    def totals(self, run_id: str | None = None) -> LedgerTotals:
        return sql.ledger_totals(self._db.read(), run_id)

    def window_spend(self) -> tuple[int, int]:
        """Credits committed in the current day and month windows (open holds in full)."""
        conn = self._db.read()
        day, month = window_keys(int(self._clock_ms()))
        return sql.committed_for_day(conn, day), sql.committed_for_month(conn, month)

    def last_reservation(self, run_id: str) -> tuple[int, int] | None:
        """(reserved, estimated) credits of the run's newest request, if it made one."""
        return sql.last_reservation_for_run(self._db.read(), run_id)

    def usage_for_run(self, run_id: str) -> tuple[int, int, int]:
        """Reported (input, output, cached input) tokens over a run's settled requests."""
        return sql.usage_for_run(self._db.read(), run_id)
