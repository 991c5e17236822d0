"""The bounded, governed tool loop: pure turn reducer, grants, bounds, transaction/undo, runner.

Public names are re-exported here; each lives in the module named after its concept.
"""

from stockade.loop.authorization import (
    Authorized,
    DenialReason,
    DenialRecord,
    Grant,
    GrantScope,
    Refused,
    Violation,
    authorize_start,
    auto_grant_read_only,
    grant_for_batch,
    grant_for_call,
    is_denied,
)
from stockade.loop.history import DocumentSession, EditHistory
from stockade.loop.limits import (
    BoundKind,
    TurnBudget,
    TurnLimits,
    TurnLimitsError,
    budget_exhaustion,
)
from stockade.loop.reducer import initial_state, reduce_turn
from stockade.loop.runner import TurnRunner
from stockade.loop.serialize import SnapshotError, turn_from_json, turn_to_json
from stockade.loop.state import CallRecord, CallStatus, ToolSet, TurnOutcome, TurnPhase, TurnState
from stockade.loop.transaction import (
    TurnUndoLedger,
    UndoAvailability,
    commit_tool_outcome,
    turn_undo_availability,
)

__all__ = [
    "Authorized",
    "BoundKind",
    "CallRecord",
    "CallStatus",
    "DenialReason",
    "DenialRecord",
    "DocumentSession",
    "EditHistory",
    "Grant",
    "GrantScope",
    "Refused",
    "SnapshotError",
    "ToolSet",
    "TurnBudget",
    "TurnLimits",
    "TurnLimitsError",
    "TurnOutcome",
    "TurnPhase",
    "TurnRunner",
    "TurnState",
    "TurnUndoLedger",
    "UndoAvailability",
    "Violation",
    "authorize_start",
    "auto_grant_read_only",
    "budget_exhaustion",
    "commit_tool_outcome",
    "grant_for_batch",
    "grant_for_call",
    "initial_state",
    "is_denied",
    "reduce_turn",
    "turn_from_json",
    "turn_to_json",
    "turn_undo_availability",
]
