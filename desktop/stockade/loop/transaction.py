"""The only path from a tool outcome to the document, and the per-turn undo built on it.

A turn adds at most one entry to the shared edit history: its first commit pushes the pre-turn
document; later commits of the same turn replace the live document under that entry, so one
undo reverts the whole turn. Undo of a turn is offered only while its entry is the newest.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from stockade.loop.history import DocumentSession, EntryFate
from stockade.thf.model import ThreatModel
from stockade.tools.runtime import ToolEffect, ToolFailed, ToolOutcome

Validator = Callable[[ThreatModel], None]

READ_TOOL_MUTATED_TEXT = "Refused: a read-only tool tried to change the document."
DOCUMENT_CHANGED_TEXT = (
    "Refused: the document changed while this tool was running. "
    "Read the current model again and retry."
)
INVALID_DOCUMENT_TEXT = "Refused: the change would produce a document that cannot be reopened."
DEFAULT_TURN_LABEL = "Assistant changes"


class RefusalReason(StrEnum):
    TOOL_ERROR = "tool_error"
    READ_TOOL_MUTATED = "read_tool_mutated"
    DOCUMENT_CHANGED = "document_changed"
    INVALID_DOCUMENT = "invalid_document"


class UndoAvailability(StrEnum):
    UNDOABLE = "undoable"
    SUPERSEDED = "superseded"  # newer edits sit on top of (or pushed out) the turn's entry
    ALREADY_UNDONE = "already_undone"  # undone, or the turn never committed anything


@dataclass(slots=True)
class TurnUndoLedger:
    """What one turn pushed to the shared history (fresh per turn; mutable runner bookkeeping)."""

    label: str = DEFAULT_TURN_LABEL
    serial: int | None = None
    split: bool = False  # another edit landed between two commits of this turn
    commits: int = 0


@dataclass(frozen=True, slots=True)
class Committed:
    document: ThreatModel
    before: ThreatModel
    result: str


@dataclass(frozen=True, slots=True)
class Unchanged:
    result: str


@dataclass(frozen=True, slots=True)
class Refused:
    reason: RefusalReason
    message: str


@dataclass(frozen=True, slots=True)
class ProposedCommit:
    """A change that passed every check and may be applied (after it has been audited)."""

    document: ThreatModel
    expected: ThreatModel
    result: str


def _default_validator(model: ThreatModel) -> None:
    from stockade.thf.validate import validate_references

    validate_references(model)


def review_tool_outcome(
    outcome: ToolOutcome,
    *,
    expected: ThreatModel,
    effect: ToolEffect,
    session: DocumentSession,
    validator: Validator | None = None,
) -> ProposedCommit | Unchanged | Refused:
    """Check an outcome without touching the document: refusals in the fixed order tool error,
    read tool returning a document, document changed under the call, invalid result."""
    if isinstance(outcome, ToolFailed):
        return Refused(RefusalReason.TOOL_ERROR, outcome.result)
    if outcome.document is None:
        return Unchanged(outcome.result)
    if effect is ToolEffect.READ:
        return Refused(RefusalReason.READ_TOOL_MUTATED, READ_TOOL_MUTATED_TEXT)
    if session.document is not expected:
        return Refused(RefusalReason.DOCUMENT_CHANGED, DOCUMENT_CHANGED_TEXT)
    proposed = outcome.document
    if not isinstance(proposed, ThreatModel):
        return Refused(RefusalReason.INVALID_DOCUMENT, INVALID_DOCUMENT_TEXT)
    check = validator or _default_validator
    try:
        check(proposed)
    except Exception as exc:
        # The validator's own message is authored for people and models; anything else is not.
        message = getattr(exc, "message", None)
        text = message if isinstance(message, str) and message else INVALID_DOCUMENT_TEXT
        return Refused(RefusalReason.INVALID_DOCUMENT, text)
    return ProposedCommit(proposed, expected, outcome.result)


def apply_commit(
    proposal: ProposedCommit, *, session: DocumentSession, ledger: TurnUndoLedger
) -> Committed | Refused:
    """Swap the document in. Re-checks identity: an edit may have landed while the step was
    being audited."""
    if session.document is not proposal.expected:
        return Refused(RefusalReason.DOCUMENT_CHANGED, DOCUMENT_CHANGED_TEXT)
    history = session.history
    if ledger.serial is None:
        ledger.serial = session.apply_edit(proposal.document, ledger.label).serial
    elif history.fate(ledger.serial) is EntryFate.NEWEST:
        session.replace(proposal.document)
    else:
        # Someone else edited between two commits of this turn: keep their edit separately
        # undoable, and stop offering a one-step undo of the turn.
        ledger.split = True
        ledger.serial = session.apply_edit(proposal.document, ledger.label).serial
    ledger.commits += 1
    return Committed(proposal.document, proposal.expected, proposal.result)


def commit_tool_outcome(
    outcome: ToolOutcome,
    *,
    expected: ThreatModel,
    effect: ToolEffect,
    session: DocumentSession,
    ledger: TurnUndoLedger,
    validator: Validator | None = None,
) -> Committed | Unchanged | Refused:
    """Review then apply in one step (for callers that audit nothing in between)."""
    review = review_tool_outcome(
        outcome, expected=expected, effect=effect, session=session, validator=validator
    )
    if isinstance(review, ProposedCommit):
        return apply_commit(review, session=session, ledger=ledger)
    return review


def turn_undo_availability(ledger: TurnUndoLedger, session: DocumentSession) -> UndoAvailability:
    if ledger.serial is None:
        return UndoAvailability.ALREADY_UNDONE
    fate = session.history.fate(ledger.serial)
    if fate is EntryFate.NEWEST:
        return UndoAvailability.SUPERSEDED if ledger.split else UndoAvailability.UNDOABLE
    if fate is EntryFate.UNDONE:
        return UndoAvailability.ALREADY_UNDONE
    return UndoAvailability.SUPERSEDED


def undo_turn(ledger: TurnUndoLedger, session: DocumentSession) -> bool:
    """Revert the whole turn in one step, if that is still possible."""
    if turn_undo_availability(ledger, session) is not UndoAvailability.UNDOABLE:
        return False
    return session.undo()
