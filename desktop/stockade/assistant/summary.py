"""`TurnSummary`: what a turn did, as `stockade assist --json` prints it and the app shows it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from stockade.loop.state import CallStatus, TurnOutcome, TurnPhase, TurnState
from stockade.protocol.messages import flatten_text


class RunOutcome(StrEnum):
    """How a run stands when a front end reports it."""

    COMPLETED = "completed"
    CANCELLED = "cancelled"
    BOUNDED = "bounded"
    FAILED = "failed"
    PARKED = "parked"
    WAITING = "waiting"  # awaiting a decision in the app (not parked)
    RUNNING = "running"  # between rest points (a summary taken mid-turn)

    @property
    def succeeded(self) -> bool:
        """Exit 0 for the command line: the turn ran to its end or stopped at a bound."""
        return self in (RunOutcome.COMPLETED, RunOutcome.BOUNDED)


def outcome_of(state: TurnState, *, parked: bool) -> RunOutcome:
    if parked:
        return RunOutcome.PARKED
    if state.phase is TurnPhase.SETTLED:
        return RunOutcome(state.outcome.value if state.outcome else TurnOutcome.FAILED.value)
    if state.phase is TurnPhase.AWAITING_APPROVAL:
        return RunOutcome.WAITING
    return RunOutcome.RUNNING


def final_text(state: TurnState, base_count: int = 0) -> str:
    """The text of the turn's last assistant message (earlier conversation excluded)."""
    for message in reversed(state.history[base_count:]):
        if message.role == "assistant":
            text = flatten_text(message)
            if text:
                return text
    return ""


def turn_text(state: TurnState, base_count: int = 0) -> str:
    """Every piece of assistant text of this turn so far, the message being streamed included."""
    parts = [flatten_text(m) for m in state.messages[base_count:] if m.role == "assistant"]
    return "\n\n".join(p for p in parts if p)


@dataclass(frozen=True, slots=True)
class CallLine:
    id: str
    tool: str
    status: CallStatus
    denial: str | None
    input_digest: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "status": self.status.value,
                "denial": self.denial, "input_digest": self.input_digest}


@dataclass(frozen=True, slots=True)
class PendingLine:
    id: str
    tool: str
    summary: str
    destructive: bool
    input_digest: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "tool": self.tool, "summary": self.summary,
                "destructive": self.destructive, "input_digest": self.input_digest}


@dataclass(frozen=True, slots=True)
class TurnSummary:
    """One turn's result. `text` is the final answer after the output guard (settled only)."""

    run_id: str
    outcome: RunOutcome
    reason: str | None
    iterations: int
    calls: tuple[CallLine, ...]
    violations: tuple[tuple[str, str | None], ...]
    text: str
    notice: str | None
    input_tokens: int
    output_tokens: int
    credits_spent: int
    last_reserved: int | None
    last_estimated: int | None
    document_path: str
    document_digest: str
    document_written: bool = False
    pending: tuple[PendingLine, ...] = field(default_factory=tuple)
    error: str | None = None
    credits_over_reservation: int = 0
    """Credits the provider's usage cost above what was reserved (flagged in the audit too)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "outcome": self.outcome.value, "reason": self.reason,
            "iterations": self.iterations, "calls": [c.to_json() for c in self.calls],
            "violations": [{"kind": kind, "call_id": call_id}
                           for kind, call_id in self.violations],
            "text": self.text, "notice": self.notice,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "credits_spent": self.credits_spent,
            "credits_over_reservation": self.credits_over_reservation,
            "document": {"path": self.document_path, "digest": self.document_digest,
                         "written": self.document_written},
            "pending": [p.to_json() for p in self.pending], "error": self.error,
        }

    def usage_line(self) -> str:
        """Tokens and credits in one line (the chat pane's footer)."""
        text = (f"Tokens: {self.input_tokens} in, {self.output_tokens} out · "
                f"Credits spent: {self.credits_spent}")
        if self.last_reserved is not None:
            text += (f" (last request reserved {self.last_reserved}, "
                     f"estimated {self.last_estimated})")
        if self.credits_over_reservation:
            text += (f" · {self.credits_over_reservation} credits above what was reserved: the "
                     "provider reported more usage than a request could cost")
        return text
