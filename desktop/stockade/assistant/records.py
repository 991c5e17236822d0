"""Plain records of runs and decisions, as the service lists and shows them."""

from __future__ import annotations

from dataclasses import dataclass

from stockade.assistant.review import CallPreview
from stockade.store.runs import Decision, DecisionRow, PendingCallRow, RunRow, RunStatus

__all__ = ["CallDecision", "Decision", "ParkedCall", "RunDetails", "RunInfo", "RunStatus"]


@dataclass(frozen=True, slots=True)
class CallDecision:
    call_id: str
    decision: Decision
    actor: str
    reason: str | None
    decided_ms: int

    @classmethod
    def of(cls, row: DecisionRow) -> CallDecision:
        return cls(row.call_id, row.decision, row.actor, row.reason, row.decided_ms)


@dataclass(frozen=True, slots=True)
class ParkedCall:
    """A call a parked run waits on (from the run's plain record: nothing decrypted)."""

    call_id: str
    tool: str
    destructive: bool
    input_digest: str
    decision: CallDecision | None

    @classmethod
    def of(cls, row: PendingCallRow, decision: DecisionRow | None) -> ParkedCall:
        return cls(row.call_id, row.tool, row.destructive, row.input_digest,
                   CallDecision.of(decision) if decision is not None else None)


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    status: RunStatus
    outcome: str | None
    reason: str | None
    document_path: str
    provider: str
    model: str
    created_ms: int
    updated_ms: int
    pending: tuple[ParkedCall, ...] = ()

    @classmethod
    def of(cls, row: RunRow, pending: tuple[ParkedCall, ...] = ()) -> RunInfo:
        return cls(row.run_id, row.status, row.outcome, row.reason, row.document_path,
                   row.provider, row.model, row.created_ms, row.updated_ms, pending)

    @property
    def undecided(self) -> int:
        return sum(1 for p in self.pending if p.decision is None)


@dataclass(frozen=True, slots=True)
class RunDetails:
    """One run for `stockade runs show`: its record, decisions, and (parked) call previews."""

    info: RunInfo
    decisions: tuple[CallDecision, ...]
    previews: tuple[CallPreview, ...]
