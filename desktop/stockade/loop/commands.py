"""Commands the runner and the user send to the turn reducer (stream events are the others).

Time enters the reducer only through the `now_ms` fields here; the reducer never reads a clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from stockade.loop.limits import TurnLimits
from stockade.protocol.errors import ProtocolError
from stockade.protocol.frozen import mutable_twin
from stockade.protocol.messages import Message
from stockade.tools.runtime import ToolOutcome


@dataclass(frozen=True, slots=True)
class Submit:
    type: ClassVar[str] = "submit"
    text: str
    base_messages: tuple[Message, ...] = ()
    tool_set: Any = None  # a ToolSet or any registry; frozen at submit
    limits: TurnLimits = field(default_factory=TurnLimits)
    now_ms: int = 0


@dataclass(frozen=True, slots=True)
class ApproveCall:
    type: ClassVar[str] = "approve_call"
    call_id: str


@dataclass(frozen=True, slots=True)
class ApproveBatch:
    """Approve exactly the ids the user saw when they clicked; later arrivals are not included."""

    type: ClassVar[str] = "approve_batch"
    call_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DenyCall:
    """A "no" for one pending call. `reason` (optional) is told to the model in the result;
    `by_policy` marks a headless policy's denial (`--approve deny`), not a person's."""

    type: ClassVar[str] = "deny_call"
    call_id: str
    reason: str | None = None
    by_policy: bool = False


@dataclass(frozen=True, slots=True)
class EditCall:
    """A person replaces a pending call's input before deciding on it. The reducer prepares
    `new_input` with the call's own tool; an input that does not validate changes nothing."""

    type: ClassVar[str] = "edit_call"
    call_id: str
    new_input: Any
    actor: str


@dataclass(frozen=True, slots=True)
class StartCall:
    """The runner asks to run a call; it runs only if the reducer moves it to `running`."""

    type: ClassVar[str] = "start_call"
    call_id: str


@dataclass(frozen=True, slots=True)
class CallSettled:
    """The final outcome of a running call, after the transaction (refusals are `ToolFailed`)."""

    type: ClassVar[str] = "call_settled"
    call_id: str
    outcome: ToolOutcome


@dataclass(frozen=True, slots=True)
class Advance:
    """Close the iteration and either request again or settle at a bound."""

    type: ClassVar[str] = "advance"
    now_ms: int


@dataclass(frozen=True, slots=True)
class Retry:
    """Repeat the current request after a transient failure before any content arrived."""

    type: ClassVar[str] = "retry"
    now_ms: int = 0
    error: ProtocolError | None = None  # the failure being retried; the turn's error if refused


@dataclass(frozen=True, slots=True)
class Cancel:
    type: ClassVar[str] = "cancel"


@dataclass(frozen=True, slots=True)
class UndoTurn:
    """Mark the turn's committed calls undone (the runner has already restored the document)."""

    type: ClassVar[str] = "undo_turn"
    kept: frozenset[str] = frozenset()
    """Calls that committed before the turn was parked and resumed: their edits sit under an
    earlier undo entry that this undo does not revert, so they stay succeeded."""


@dataclass(frozen=True, slots=True)
class RefuseRequest:
    """Governance refused the next provider request (e.g. `credits`); the turn stops bounded."""

    type: ClassVar[str] = "refuse_request"
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ChargeCredits:
    """Credits a finished request cost. Accepted after settlement too: the last request's usage
    is only known once its stream has ended, which may be the moment the turn settled."""

    type: ClassVar[str] = "charge_credits"
    credits: int


@dataclass(frozen=True, slots=True)
class StreamEnded:
    """The provider's stream ended. Only meaningful while still requesting or streaming, where
    it means the stream closed without a terminal event (or without any message at all)."""

    type: ClassVar[str] = "stream_ended"


@dataclass(frozen=True, slots=True)
class CheckDeadline:
    """The runner's timer fired; settles the turn bounded if the deadline has passed."""

    type: ClassVar[str] = "check_deadline"
    now_ms: int


@dataclass(frozen=True, slots=True)
class ApprovalWaited:
    """Time the turn spent waiting for a person. The deadline bounds the assistant's own work,
    not how long someone takes to decide (or how long a parked turn sat), so the runner
    reports the wait before acting on a decision and the turn's clock start moves forward."""

    type: ClassVar[str] = "approval_waited"
    waited_ms: int


@dataclass(frozen=True, slots=True)
class StopTurn:
    """The runner must stop the turn (an audit hook failed, a tool context was missing)."""

    type: ClassVar[str] = "stop_turn"
    message: str
    reason: str = "stopped"


TurnCommand = (
    Submit
    | ApproveCall
    | ApproveBatch
    | DenyCall
    | EditCall
    | StartCall
    | CallSettled
    | Advance
    | Retry
    | Cancel
    | UndoTurn
    | RefuseRequest
    | ChargeCredits
    | StreamEnded
    | CheckDeadline
    | ApprovalWaited
    | StopTurn
)


# The two commands the runner sends per call, built as their mutable twins and then made the
# frozen classes (`stockade.protocol.frozen`): the frozen `__init__` sets each field through
# `object.__setattr__`.
_StartCallFields = mutable_twin(StartCall)
_CallSettledFields = mutable_twin(CallSettled)


def start_call(call_id: str) -> StartCall:
    """`StartCall(call_id)` (runner use)."""
    command = _StartCallFields()
    command.call_id = call_id
    command.__class__ = StartCall
    return command


def call_settled(call_id: str, outcome: ToolOutcome) -> CallSettled:
    """`CallSettled(call_id, outcome)` (runner use)."""
    command = _CallSettledFields()
    command.call_id = call_id
    command.outcome = outcome
    command.__class__ = CallSettled
    return command
