"""TurnLimits validation and the one budget-exhaustion check."""

from __future__ import annotations

import pytest

from stockade.loop.limits import (
    BoundKind,
    TurnBudget,
    TurnLimits,
    TurnLimitsError,
    bounded_notice,
    budget_exhaustion,
)


def test_defaults_match_the_design() -> None:
    limits = TurnLimits()
    assert (
        limits.max_iterations,
        limits.max_tool_calls_per_turn,
        limits.max_tool_calls_per_iteration,
        limits.max_retries,
        limits.deadline_ms,
        limits.reserve_output_tokens,
        limits.credit_budget,
    ) == (8, 32, 12, 3, 300_000, 4096, None)


@pytest.mark.parametrize(
    "field", ["max_iterations", "max_tool_calls_per_turn", "max_retries", "deadline_ms", "credit_budget"]
)
@pytest.mark.parametrize("value", [0, -1, 1.5, True, "3"])
def test_non_positive_or_non_integer_limit_is_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(TurnLimitsError, match=field):
        TurnLimits(**{field: value})  # type: ignore[arg-type]


def test_limits_are_frozen() -> None:
    with pytest.raises(AttributeError):
        TurnLimits().max_iterations = 2  # type: ignore[misc]


def test_limits_round_trip_through_json_and_unknown_keys_are_refused() -> None:
    limits = TurnLimits(max_iterations=3, credit_budget=500)
    assert TurnLimits.from_json(limits.to_json()) == limits
    with pytest.raises(TurnLimitsError, match="colour"):
        TurnLimits.from_json({"colour": 1})


def test_exhaustion_is_checked_in_the_fixed_order() -> None:
    limits = TurnLimits(max_iterations=2, max_tool_calls_per_turn=2, max_retries=2, deadline_ms=10, credit_budget=5)
    everything = TurnBudget(2, 2, 2, 0, 5)
    assert budget_exhaustion(everything, limits, 10) is BoundKind.ITERATIONS
    assert budget_exhaustion(TurnBudget(1, 2, 2, 0, 5), limits, 10) is BoundKind.TOOL_CALLS
    assert budget_exhaustion(TurnBudget(1, 1, 2, 0, 5), limits, 10) is BoundKind.RETRIES
    assert budget_exhaustion(TurnBudget(1, 1, 1, 0, 5), limits, 10) is BoundKind.DEADLINE
    assert budget_exhaustion(TurnBudget(1, 1, 1, 0, 5), limits, 9) is BoundKind.CREDITS
    assert budget_exhaustion(TurnBudget(1, 1, 1, 0, 4), limits, 9) is None


def test_deadline_boundary_is_inclusive() -> None:
    limits = TurnLimits(deadline_ms=1000)
    assert budget_exhaustion(TurnBudget(1, 0, 0, 500, 0), limits, 1499) is None
    assert budget_exhaustion(TurnBudget(1, 0, 0, 500, 0), limits, 1500) is BoundKind.DEADLINE


def test_without_a_credit_budget_credits_never_bound() -> None:
    assert budget_exhaustion(TurnBudget(1, 0, 0, 0, 10**9), TurnLimits(), 0) is None


@pytest.mark.parametrize("kind", list(BoundKind))
def test_every_bounded_notice_says_committed_changes_were_kept_and_can_be_undone(kind: BoundKind) -> None:
    text = bounded_notice(kind)
    assert "stay in the document" in text
    assert "undo" in text
