"""Grants, sticky denials, the closed violation set, and `authorize_start`: the only gate to running.

A grant is data, created only by the three constructors below from user commands or from the
static read-only policy. Nothing a model says, a tool returns or a document contains can build
one. A grant binds one call id to one tool, one canonical input digest and one iteration, and is
used at most once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from stockade.protocol.frozen import mutable_twin
from stockade.tools.runtime import Tool, ToolEffect

if TYPE_CHECKING:
    from stockade.loop.state import CallRecord, TurnState


class GrantScope(StrEnum):
    CALL = "call"  # the user approved this one card
    BATCH = "batch"  # the user approved an explicit list of non-destructive cards
    AUTO = "auto"  # the static policy approved a read-only, non-destructive tool


class DenialReason(StrEnum):
    USER_DECLINED = "user_declined"  # the user said no; sticky by (tool, digest) for the turn
    POLICY_DENIED = "policy_denied"  # a headless policy said no (`--approve deny`); sticky too
    TURN_CANCELLED = "turn_cancelled"  # the turn ended before the call could run
    LIMIT_EXCEEDED = "limit_exceeded"  # over the per-iteration or per-turn tool-call cap


class Violation(StrEnum):
    """Every way input can try (or fail) to break the turn's rules. Recorded, never raised."""

    NO_GRANT = "no_grant"
    """start asked for a call that does not exist or has no grant at all."""
    DIGEST_MISMATCH = "digest_mismatch"
    """the call's grants are bound to another tool or input digest."""
    FOREIGN_ITERATION = "foreign_iteration"
    """the matching grant was issued in another iteration."""
    GRANT_ALREADY_CONSUMED = "grant_already_consumed"
    """the call is no longer `approved` or its grant was already used (single use)."""
    UNKNOWN_TOOL = "unknown_tool"
    """the model named a tool that is not in the turn's frozen tool set (exact match only)."""
    DENIED_REPLAY = "denied_replay"
    """the (tool, digest) was declined earlier in the turn; a denial beats any grant."""
    LIMIT_EXCEEDED = "limit_exceeded"
    """a tool call arrived over the per-iteration or per-turn cap and was not prepared."""
    DUPLICATE_CALL_ID = "duplicate_call_id"
    """the model reused a call id already seen in this turn or in the history it was sent."""
    POST_SETTLEMENT_EVENT = "post_settlement_event"
    """input arrived after the turn settled and was dropped."""
    STREAM_WITHOUT_START = "stream_without_start"
    """content arrived before `message_start`, or a stream ended without any message. Stockade
    treats the first content as an implicit start (the request already counted against the
    iteration bound) and fails the turn on an empty stream instead of re-requesting."""
    DROPPED_TOOL_CALL = "dropped_tool_call"
    """the provider began a tool call whose arguments it could not decode; the call is answered
    with an error result so the model sees what happened."""
    REFUSED_INPUT = "refused_input"
    """a tool call broke the bounds every call must keep (non-finite numbers, nesting, size, an
    over-long id or name); no tool saw it and the model got an error result naming why."""
    INVALID_EDIT = "invalid_edit"
    """an edit of a pending call whose input the tool refused (or that matches an input already
    declined in the turn); the call keeps its input."""



@dataclass(frozen=True, slots=True)
class Grant:
    """Permission to start exactly one call with exactly one input in exactly one iteration."""

    call_id: str
    tool_name: str
    input_digest: str
    scope: GrantScope
    iteration: int

    def __hash__(self) -> int:
        # Equal grants name the same call. The generated hash (a tuple of all five fields)
        # was most of the cost of checking whether a grant is used, once per started call.
        return hash(self.call_id)

    def to_json(self) -> dict[str, object]:
        return {
            "call_id": self.call_id,
            "tool_name": self.tool_name,
            "input_digest": self.input_digest,
            "scope": self.scope.value,
            "iteration": self.iteration,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Grant:
        return cls(
            call_id=str(data["call_id"]),
            tool_name=str(data["tool_name"]),
            input_digest=str(data["input_digest"]),
            scope=GrantScope(str(data["scope"])),
            iteration=int(data["iteration"]),  # type: ignore[call-overload]
        )


@dataclass(frozen=True, slots=True)
class DenialRecord:
    """A user's "no" for a (tool, input digest); identical re-requests are refused for the turn."""

    tool_name: str
    input_digest: str
    reason: DenialReason = DenialReason.USER_DECLINED

    def to_json(self) -> dict[str, object]:
        return {
            "tool_name": self.tool_name,
            "input_digest": self.input_digest,
            "reason": self.reason.value,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> DenialRecord:
        return cls(
            tool_name=str(data["tool_name"]),
            input_digest=str(data["input_digest"]),
            reason=DenialReason(str(data["reason"])),
        )


def _grant(call_id: str, tool_name: str, input_digest: str, scope: GrantScope,
           iteration: int) -> Grant:
    """`Grant(...)` without the frozen `__init__`'s per-field cost (one per approved call)."""
    grant = _GrantFields()
    grant.call_id = call_id
    grant.tool_name = tool_name
    grant.input_digest = input_digest
    grant.scope = scope
    grant.iteration = iteration
    grant.__class__ = Grant
    return grant


_GrantFields = mutable_twin(Grant)  # see `stockade.protocol.frozen`
# Enum members as module globals: `GrantScope.CALL` goes through the enum metaclass each time.
_CALL, _BATCH, _AUTO = GrantScope.CALL, GrantScope.BATCH, GrantScope.AUTO
_READ = ToolEffect.READ


def grant_for_call(call: CallRecord, iteration: int) -> Grant:
    """The grant for one card the user approved (the only way to approve a destructive call)."""
    return _grant(call.id, call.tool_name, call.input_digest, _CALL, iteration)


def grant_for_batch(calls: Sequence[CallRecord], iteration: int) -> tuple[Grant, ...]:
    """One batch grant per record, in the given order. The caller passes the records resolved
    from the ids captured at click time; this never takes a predicate such as "all pending"."""
    for call in calls:
        if call.destructive:
            raise ValueError(f"A batch grant cannot include destructive call {call.id!r}.")
    return tuple([_grant(c.id, c.tool_name, c.input_digest, _BATCH, iteration) for c in calls])


def auto_grant_read_only(
    tool: Tool, *, call_id: str, input_digest: str, iteration: int
) -> Grant:
    """The static policy grant for a read-only tool. Reads only the tool's static declarations."""
    if tool.effect is not _READ:
        raise ValueError(f"The read-only policy cannot approve mutating tool {tool.name!r}.")
    if tool.destructive:
        raise ValueError(f"The read-only policy cannot approve destructive tool {tool.name!r}.")
    return _grant(call_id, tool.name, input_digest, _AUTO, iteration)


def auto_grant_for(tool_name: str, effect: ToolEffect, destructive: bool, call_id: str,
                   input_digest: str, iteration: int) -> Grant:
    """`auto_grant_read_only` for a caller holding the tool's static facts as a frozen tool set
    keeps them (`ToolSet.facts`: its name, effect and destructive flag), read once per set."""
    if effect is not _READ:
        raise ValueError(f"The read-only policy cannot approve mutating tool {tool_name!r}.")
    if destructive:
        raise ValueError(f"The read-only policy cannot approve destructive tool {tool_name!r}.")
    return _grant(call_id, tool_name, input_digest, _AUTO, iteration)


def is_denied(denials: Iterable[DenialRecord], tool_name: str, input_digest: str) -> bool:
    """Whether the exact (tool, digest) pair was declined; the reason does not matter."""
    if not denials:  # the usual case, and cheaper than starting a generator
        return False
    return any(d.tool_name == tool_name and d.input_digest == input_digest for d in denials)


@dataclass(frozen=True, slots=True)
class Authorized:
    grant: Grant


@dataclass(frozen=True, slots=True)
class Refused:
    violation: Violation


def authorize_start(state: TurnState, call_id: str) -> Authorized | Refused:
    """Whether `call_id` may start now. Pure. Checks, in order: the call exists; its tool is in
    the frozen tool set; no denial for its (tool, digest); a grant names the call; a grant also
    matches its tool and digest; that grant is for the current iteration; the call is still
    `approved` and that grant is unused."""
    return authorize_found(state, call_id, state.call(call_id))


def authorize_found(state: TurnState, call_id: str, call: CallRecord | None) -> Authorized | Refused:
    """`authorize_start` for a caller that already looked up `call` (`state.call(call_id)`)."""
    found = grant_to_start(state, call_id, call)
    return found if isinstance(found, Refused) else _authorized(found)


def grant_to_start(state: TurnState, call_id: str, call: CallRecord | None) -> Grant | Refused:
    """`authorize_found`'s answer, with the grant itself for `Authorized(grant)` (the reducer,
    which only needs the grant, makes no `Authorized` per started call)."""
    if call is None:
        return _REFUSED[Violation.NO_GRANT]
    tool_name, digest = call.tool_name, call.input_digest
    # `state.tool_set.get(tool_name) is None`, without its frame:
    if type(tool_name) is not str or tool_name not in state.tool_set._tools:
        return _REFUSED[Violation.UNKNOWN_TOOL]
    if state.denials and is_denied(state.denials, tool_name, digest):
        return _REFUSED[Violation.DENIED_REPLAY]
    # `state.grants_for(call_id)`, its table looked up here when it is the grants' own:
    by_call = state.__dict__.get("_grants_by_call")
    if by_call is not None and by_call[0] is state.grants:
        named = by_call[1].get(call_id, ())
    else:
        named = state.grants_for(call_id)
    if not named:
        return _REFUSED[Violation.NO_GRANT]
    iteration = state.iteration
    if len(named) == 1:
        # The usual case (one grant per approved call): the checks below on that one grant.
        g = named[0]
        if g.tool_name != tool_name or g.input_digest != digest:
            return _REFUSED[Violation.DIGEST_MISMATCH]
        if g.iteration != iteration:
            return _REFUSED[Violation.FOREIGN_ITERATION]
        used = state._used
        at = used._first.get(g)  # `state.grant_used(g)`, without the log's frame
        if call.status != "approved" or (at is not None and at < used._n):
            return _REFUSED[Violation.GRANT_ALREADY_CONSUMED]
        return g
    bound = [g for g in named if g.tool_name == tool_name and g.input_digest == digest]
    if not bound:
        return _REFUSED[Violation.DIGEST_MISMATCH]
    current = [g for g in bound if g.iteration == iteration]
    if not current:
        return _REFUSED[Violation.FOREIGN_ITERATION]
    # Compared by value: `CallStatus` lives in `state`, which imports this module.
    if call.status != "approved":
        return _REFUSED[Violation.GRANT_ALREADY_CONSUMED]
    for g in current:
        if not state.grant_used(g):
            return g
    return _REFUSED[Violation.GRANT_ALREADY_CONSUMED]


def _authorized(grant: Grant) -> Authorized:
    """`Authorized(grant)` without the frozen `__init__` (one per started call)."""
    auth = _AuthorizedFields()
    auth.grant = grant
    auth.__class__ = Authorized
    return auth


_AuthorizedFields = mutable_twin(Authorized)
# Refusals are values: one per violation serves every call.
_REFUSED = {violation: Refused(violation) for violation in Violation}
