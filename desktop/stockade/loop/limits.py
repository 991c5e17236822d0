"""Turn bounds: the frozen `TurnLimits`, the running `TurnBudget`, and the one exhaustion check."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class BoundKind(StrEnum):
    """Which bound stopped a turn, in the order `budget_exhaustion` checks them."""

    ITERATIONS = "iterations"
    TOOL_CALLS = "tool_calls"
    RETRIES = "retries"
    DEADLINE = "deadline"
    CREDITS = "credits"


class TurnLimitsError(ValueError):
    """A limit was not a positive integer; the message names the field."""


@dataclass(frozen=True, slots=True)
class TurnLimits:
    """Every bound of one turn, fixed when the turn is submitted."""

    max_iterations: int = 8
    max_tool_calls_per_turn: int = 32
    max_tool_calls_per_iteration: int = 12
    max_retries: int = 3
    deadline_ms: int = 300_000
    reserve_output_tokens: int = 4096
    credit_budget: int | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "credit_budget" and value is None:
                continue
            # bool is an int subclass; `True` as a limit is always a mistake.
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise TurnLimitsError(
                    f"Turn limit {f.name!r} must be a positive whole number, got {value!r}."
                )

    def to_json(self) -> dict[str, int | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> TurnLimits:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TurnLimitsError(f"Unknown turn limit {unknown[0]!r}.")
        return cls(**data)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TurnBudget:
    """What one turn has used so far. Never reset within a turn.

    Not slotted: `new_budget` builds one from a dict in a step (the reducer makes one per
    accepted call, approval wait and charge)."""

    iterations_started: int = 0
    tool_calls_accepted: int = 0
    retries_used: int = 0
    started_at_ms: int = 0
    credits_spent: int = 0

    def to_json(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> TurnBudget:
        return cls(**{f.name: int(data[f.name]) for f in fields(cls)})  # type: ignore[call-overload]


def new_budget(
    iterations_started: int,
    tool_calls_accepted: int,
    retries_used: int,
    started_at_ms: int,
    credits_spent: int,
) -> TurnBudget:
    """`TurnBudget(...)` without the frozen `__init__`'s per-field cost (reducer use)."""
    budget = _new(TurnBudget)
    _put_budget_dict(budget, {
        "iterations_started": iterations_started,
        "tool_calls_accepted": tool_calls_accepted,
        "retries_used": retries_used,
        "started_at_ms": started_at_ms,
        "credits_spent": credits_spent,
    })
    return budget


_new = object.__new__
_put_budget_dict = TurnBudget.__dict__["__dict__"].__set__


def budget_exhaustion(budget: TurnBudget, limits: TurnLimits, now_ms: int) -> BoundKind | None:
    """The first bound reached, checked in the fixed order iterations, tool calls, retries,
    deadline, credits; None while the turn may continue. Boundaries are inclusive."""
    if budget.iterations_started >= limits.max_iterations:
        return BoundKind.ITERATIONS
    if budget.tool_calls_accepted >= limits.max_tool_calls_per_turn:
        return BoundKind.TOOL_CALLS
    if budget.retries_used >= limits.max_retries:
        return BoundKind.RETRIES
    if now_ms - budget.started_at_ms >= limits.deadline_ms:
        return BoundKind.DEADLINE
    if limits.credit_budget is not None and budget.credits_spent >= limits.credit_budget:
        return BoundKind.CREDITS
    return None


_KEPT = " Changes you already approved stay in the document, and you can undo them as one step."

_NOTICES: dict[BoundKind, str] = {
    BoundKind.ITERATIONS: "The assistant used all the steps allowed for one request, so it stopped here.",
    BoundKind.TOOL_CALLS: "The assistant reached the most tool calls allowed for one request, so it stopped here.",
    BoundKind.RETRIES: "The provider failed too many times in a row, so the assistant stopped here.",
    BoundKind.DEADLINE: "This request took longer than the time allowed, so the assistant stopped here.",
    BoundKind.CREDITS: "This request reached its credit budget, so the assistant stopped here.",
}


def bounded_notice(kind: BoundKind) -> str:
    """The informational text shown when a bound stops a turn."""
    return _NOTICES[kind] + _KEPT


def refused_notice(message: str) -> str:
    """The notice for a request governance refused: its own message plus the kept-work tail."""
    return message.rstrip() + _KEPT
