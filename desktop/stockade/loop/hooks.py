"""The seam between the turn runner and governance: metering, audit steps, and their refusals.

The runner calls these hooks; `stockade.governance` implements them (the loop never imports
governance). A hook that raises `TurnStopped` stops the turn fail-closed before the step it
describes proceeds; any other exception is a bug and also stops the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from stockade.protocol.events import Usage
from stockade.protocol.frozen import mutable_twin
from stockade.protocol.request import ChatRequest


class StepKind(StrEnum):
    """Audit steps the runner reports, each before the step proceeds."""

    MODEL_REQUEST = "model.request"
    MODEL_USAGE = "model.usage"
    MODEL_RETRY = "model.retry"
    TOOL_PROPOSED = "tool.proposed"
    TOOL_APPROVED = "tool.approved"
    TOOL_DENIED = "tool.denied"
    TOOL_EDITED = "tool.edited"
    TOOL_STARTED = "tool.started"
    TOOL_RESULT = "tool.result"
    DOCUMENT_COMMITTED = "document.committed"
    TURN_UNDONE = "turn.undone"
    TURN_SETTLED = "turn.settled"


@dataclass(frozen=True, slots=True, init=False)
class TurnStep:
    """One audit step. `payload` holds ids, names, counts and `sha256:` digests only.

    `confidential` is readable text about the step (a commit's entity-level change lines) that
    the audit may keep only sealed, never in the clear.
    """

    kind: StepKind
    payload: dict[str, Any]
    confidential: tuple[str, ...]

    def __init__(self, kind: StepKind, payload: dict[str, Any] | None = None,
                 confidential: tuple[str, ...] = ()) -> None:
        # The frozen dataclass's own `__init__` sets each field through `object.__setattr__`,
        # about three times the cost of the slots' own setters, and a turn builds a step per call
        # event (the fields stay read-only: `__setattr__` still refuses).
        _set_kind(self, kind)
        _set_payload(self, {} if payload is None else payload)
        _set_confidential(self, confidential)


_set_kind = vars(TurnStep)["kind"].__set__  # the slots' member descriptors
_set_payload = vars(TurnStep)["payload"].__set__
_set_confidential = vars(TurnStep)["confidential"].__set__


def new_step(kind: StepKind, payload: dict[str, Any], confidential: tuple[str, ...] = ()) -> TurnStep:
    """`TurnStep(kind, payload, confidential)` built as its mutable twin (runner use: a turn
    records about four steps per call; see `stockade.protocol.frozen`)."""
    step = _TurnStepFields()
    step.kind = kind
    step.payload = payload
    step.confidential = confidential
    step.__class__ = TurnStep
    return step


_TurnStepFields = mutable_twin(TurnStep)


@dataclass(frozen=True, slots=True)
class RequestPermit:
    """Permission to send one provider request; `handle` identifies its credit reservation.

    `request` is exactly what may be sent (the input guard may have redacted the one the runner
    built); None means the request as built. The reservation was priced on that request.
    """

    handle: str
    reserved_credits: int = 0
    estimated_credits: int = 0
    request: ChatRequest | None = None


class RefusalKind(StrEnum):
    """Why governance refused a request; each is also the turn's settle reason."""

    CREDITS = "credits"  # the turn budget or a wallet limit would be crossed
    GUARD = "guard"  # the input guard blocks secret-shaped text


@dataclass(frozen=True, slots=True)
class RequestRefused:
    """The request may not be sent; `message` is shown to the user as the turn's notice."""

    reason: RefusalKind
    message: str


class TurnStopped(Exception):
    """Raised by a hook to stop the turn before the step it was asked about."""


class TurnHooks(Protocol):
    async def before_request(
        self, request: ChatRequest, iteration: int
    ) -> RequestPermit | RequestRefused: ...

    async def after_request(
        self, permit: RequestPermit, usage: Usage | None, failed: bool
    ) -> int:
        """Settle the reservation at reported usage (refund on failure); return credits spent."""
        ...

    async def record(self, step: TurnStep) -> None: ...


class NoHooks:
    """Hooks that permit everything and record nothing (tests and ungoverned previews)."""

    async def before_request(
        self, request: ChatRequest, iteration: int
    ) -> RequestPermit | RequestRefused:
        return RequestPermit(handle=f"unmetered-{iteration}")

    async def after_request(
        self, permit: RequestPermit, usage: Usage | None, failed: bool
    ) -> int:
        return 0

    async def record(self, step: TurnStep) -> None:
        return None
