"""The ledger: limits checked before each hold, usage charged in full, rows always balance."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.governance.ledger import CreditBudgets, Hold, Ledger, LimitKind, LimitRefusal
from stockade.store.reservations import ReservationStatus
from tests.conftest import examples
from tests.unit.governance.conftest import REFUSED, FakeClock

DAY_MS = 86_400_000


def _reserve(ledger: Ledger, run: str, credits: int, budgets: CreditBudgets) -> Hold | LimitRefusal:
    return ledger.reserve(run_id=run, provider="anthropic", model="m", credits=credits,
                          estimated=credits // 2, budgets=budgets)


def test_a_hold_that_fits_the_turn_budget_is_granted(ledger: Ledger) -> None:
    hold = _reserve(ledger, "r1", 100, CreditBudgets(per_turn=100))
    assert isinstance(hold, Hold) and hold.reserved == 100


def test_a_hold_that_would_cross_the_turn_budget_is_refused_and_nothing_reserved(
    ledger: Ledger,
) -> None:
    budgets = CreditBudgets(per_turn=150)
    assert isinstance(_reserve(ledger, "r1", 100, budgets), Hold)
    refusal = _reserve(ledger, "r1", 51, budgets)
    assert isinstance(refusal, LimitRefusal) and refusal.limit is LimitKind.TURN
    assert "50 of this turn's credit budget" in refusal.message
    assert ledger.totals("r1").open_reserved == 100


def test_settling_below_the_hold_frees_the_rest_for_the_turn(ledger: Ledger) -> None:
    budgets = CreditBudgets(per_turn=150)
    hold = _reserve(ledger, "r1", 100, budgets)
    assert isinstance(hold, Hold)
    settlement = ledger.settle(hold.id, actual=30, input_tokens=10, output_tokens=5)
    assert (settlement.settled, settlement.status) == (30, ReservationStatus.SETTLED)
    assert isinstance(_reserve(ledger, "r1", 120, budgets), Hold)


def test_usage_above_the_hold_is_charged_in_full(ledger: Ledger) -> None:
    hold = _reserve(ledger, "r1", 40, CreditBudgets(per_turn=40))
    assert isinstance(hold, Hold)
    settlement = ledger.settle(hold.id, actual=75)
    assert settlement.settled == 40 and settlement.overrun == 35 and settlement.charged == 75
    assert settlement.over_reservation and ledger.spent_for_run("r1") == 75
    # The row still balances (reserved = settled + released); the overrun is charged on top,
    # and every window counts it.
    totals = ledger.totals("r1")
    assert totals.reserved == totals.settled + totals.released and totals.overrun == 35
    assert ledger.window_spend() == (75, 75)


def test_a_failed_request_is_refunded(ledger: Ledger) -> None:
    hold = _reserve(ledger, "r1", 40, CreditBudgets(per_turn=40))
    assert isinstance(hold, Hold)
    settlement = ledger.settle(hold.id, actual=None, failed=True)
    assert settlement.status is ReservationStatus.REFUNDED and settlement.settled == 0
    assert ledger.spent_for_run("r1") == 0


def test_usage_never_reported_is_charged_at_the_hold(ledger: Ledger) -> None:
    hold = _reserve(ledger, "r1", 40, CreditBudgets(per_turn=100))
    assert isinstance(hold, Hold)
    assert ledger.settle(hold.id, actual=None).settled == 40


def test_settling_twice_changes_nothing(ledger: Ledger) -> None:
    hold = _reserve(ledger, "r1", 40, CreditBudgets(per_turn=100))
    assert isinstance(hold, Hold)
    ledger.settle(hold.id, actual=10)
    again = ledger.settle(hold.id, actual=35)
    assert again.settled == 10 and ledger.spent_for_run("r1") == 10


def test_the_daily_wallet_spans_runs_and_resets_the_next_day(
    ledger: Ledger, clock: FakeClock
) -> None:
    budgets = CreditBudgets(per_turn=1000, per_day=100, per_month=10_000)
    assert isinstance(_reserve(ledger, "a", 60, budgets), Hold)
    refusal = _reserve(ledger, "b", 60, budgets)
    assert isinstance(refusal, LimitRefusal) and refusal.limit is LimitKind.DAY
    clock.now += DAY_MS
    assert isinstance(_reserve(ledger, "b", 60, budgets), Hold)


def test_the_monthly_wallet_is_checked(ledger: Ledger) -> None:
    budgets = CreditBudgets(per_turn=1000, per_day=None, per_month=100)
    assert isinstance(_reserve(ledger, "a", 90, budgets), Hold)
    refusal = _reserve(ledger, "b", 11, budgets)
    assert isinstance(refusal, LimitRefusal) and refusal.limit is LimitKind.MONTH


def test_zero_cost_requests_are_never_blocked(ledger: Ledger) -> None:
    budgets = CreditBudgets(per_turn=0, per_day=0, per_month=0)
    assert isinstance(_reserve(ledger, "local", 0, budgets), Hold)


def test_closed_ledger_rows_cannot_be_changed_or_deleted(ledger: Ledger) -> None:
    hold = _reserve(ledger, "r1", 40, CreditBudgets(per_turn=100))
    assert isinstance(hold, Hold)
    ledger.settle(hold.id, actual=10)
    with pytest.raises(REFUSED), ledger.db.write() as conn:
        conn.execute("UPDATE reservation SET settled = 0 WHERE id = ?", (hold.id,))
    with pytest.raises(REFUSED), ledger.db.write() as conn:
        conn.execute("DELETE FROM reservation")


def test_budgets_must_be_whole_non_negative_credits() -> None:
    with pytest.raises(ValueError):
        CreditBudgets(per_turn=-1)
    with pytest.raises(ValueError):
        CreditBudgets(per_turn=10, per_day=1.5)  # type: ignore[arg-type]


_step = st.tuples(
    st.integers(min_value=0, max_value=400),  # reservation asked for
    st.one_of(st.none(), st.integers(min_value=0, max_value=800)),  # priced usage (None: unreported)
    st.booleans(),  # request failed
)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.integers(min_value=0, max_value=2000), steps=st.lists(_step, max_size=25))
def test_spend_never_exceeds_the_budget_and_the_ledger_always_balances(
    ledger: Ledger, clock: FakeClock, budget: int, steps: list[tuple[int, int | None, bool]]
) -> None:
    # One database for all examples: each example is its own run in its own month.
    clock.now += 40 * DAY_MS
    run_id = f"run-{clock.now}"
    budgets = CreditBudgets(per_turn=budget, per_day=budget + 500, per_month=budget + 900)
    for ask, usage, failed in steps:
        hold = ledger.reserve(run_id=run_id, provider="p", model="m", credits=ask,
                              estimated=0, budgets=budgets)
        if isinstance(hold, LimitRefusal):
            assert hold.committed + ask > hold.allowed
            continue
        ledger.settle(hold.id, actual=usage, failed=failed)
        totals = ledger.totals(run_id)
        assert totals.reserved == totals.settled + totals.released
        assert totals.open_count == 0
        # Holds never exceed the budget; only usage reported above a hold (charged in full,
        # and the turn stopped) can take spend past it, by exactly that overrun.
        assert ledger.spent_for_run(run_id) - totals.overrun <= budget
        assert ledger.spent_for_run(run_id) == totals.settled + totals.overrun
    everything = ledger.totals()
    assert everything.reserved == everything.settled + everything.released
