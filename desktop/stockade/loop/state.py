"""The turn's immutable state: phases, call records, the frozen tool set and streamed text.

`parked` is deliberately not a reducer phase. A turn that waits for a decision is in
`awaiting_approval`; parking is governance serializing that state (see `serialize`) and
resuming is loading it back. Keeping it out of the reducer means a parked turn and a live
waiting turn obey exactly the same transitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from stockade.loop.authorization import DenialReason, DenialRecord, Grant, Violation
from stockade.loop.edits import CallEdit
from stockade.loop.limits import TurnBudget, TurnLimits
from stockade.protocol.errors import ProtocolError
from stockade.protocol.messages import ContentBlock, Message, TextBlock, ToolCallBlock
from stockade.protocol.request import ToolSpec
from stockade.tools.runtime import PreparedCall, Tool, ToolEffect


class TurnPhase(StrEnum):
    IDLE = "idle"
    REQUESTING = "requesting"  # a provider request is being sent; no message has begun
    STREAMING = "streaming"  # the assistant message is arriving
    AWAITING_APPROVAL = "awaiting_approval"  # at least one call of this iteration is pending
    EXECUTING = "executing"  # every call of this iteration is decided; approved ones run
    SETTLED = "settled"


LIVE_PHASES = frozenset(
    {
        TurnPhase.REQUESTING,
        TurnPhase.STREAMING,
        TurnPhase.AWAITING_APPROVAL,
        TurnPhase.EXECUTING,
    }
)


class TurnOutcome(StrEnum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    BOUNDED = "bounded"  # a limit or governance refusal stopped it; committed work is kept
    FAILED = "failed"


class CallStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    UNDONE = "undone"
    DENIED = "denied"
    NOT_RUN = "not_run"  # still undecided (or approved, not started) when the turn stopped


TERMINAL_STATUSES = frozenset(
    {CallStatus.SUCCEEDED, CallStatus.FAILED, CallStatus.DENIED, CallStatus.UNDONE,
     CallStatus.NOT_RUN}
)


class ToolSet:
    """The tools a turn may call, frozen at submit and resolved by exact name only.

    No normalization of any kind (case, whitespace, Unicode) is applied to a looked-up name.
    Equality is by the ordered tool names, which is what a parked snapshot stores.
    """

    __slots__ = ("_tools",)

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        table: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in table:
                raise ValueError(f"Duplicate tool name {tool.name!r} in a tool set.")
            table[tool.name] = tool
        self._tools = table

    @classmethod
    def from_registry(cls, registry: Any) -> ToolSet:
        """Freeze a registry (anything with `list()` of tools or names, and `get(name)`)."""
        if isinstance(registry, ToolSet):
            return registry
        listed = list(registry.list())
        tools = [registry.get(t) if isinstance(t, str) else t for t in listed]
        return cls(t for t in tools if t is not None)

    def get(self, name: str) -> Tool | None:
        if type(name) is not str:
            return None
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def list(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(ToolSpec(t.name, t.description, t.input_schema()) for t in self._tools.values())

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolSet) and self.names() == other.names()

    def __hash__(self) -> int:
        return hash(self.names())

    def __repr__(self) -> str:
        return f"ToolSet({list(self._tools)!r})"


class TextRun:
    """Text streamed so far in the open text block, kept as an immutable chain of chunks.

    Appending is O(1) and shares the earlier chain, so a stream of deltas never re-copies the
    text it has already received; the joined text is built once, when it is read.
    """

    __slots__ = ("_cache", "_chunk", "_prev")

    def __init__(self, chunk: str, prev: TextRun | None = None) -> None:
        self._chunk = chunk
        self._prev = prev
        self._cache: str | None = None

    def extend(self, chunk: str) -> TextRun:
        return TextRun(chunk, self)

    def text(self) -> str:
        if self._cache is None:
            parts: list[str] = []
            node: TextRun | None = self
            while node is not None:
                if node._cache is not None:
                    parts.append(node._cache)
                    break
                parts.append(node._chunk)
                node = node._prev
            parts.reverse()
            # A benign cache write: the value is a pure function of the immutable chain.
            self._cache = "".join(parts)
        return self._cache

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextRun) and self.text() == other.text()

    def __hash__(self) -> int:
        return hash(self.text())

    def __repr__(self) -> str:
        return f"TextRun({self.text()!r})"


@dataclass(frozen=True, slots=True)
class AssistantDraft:
    """The assistant message being streamed: closed blocks, the open text run, and the ids of
    tool calls the provider announced but has not completed yet."""

    blocks: tuple[ContentBlock, ...] = ()
    text: TextRun | None = None
    open_call_ids: tuple[tuple[str, str], ...] = ()  # (id, name) from tool_call_start

    def closed_blocks(self) -> tuple[ContentBlock, ...]:
        if self.text is None:
            return self.blocks
        return (*self.blocks, TextBlock(self.text.text()))

    def to_message(self) -> Message:
        return Message("assistant", self.closed_blocks())


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call the model opened in this turn."""

    id: str
    tool_name: str  # exactly as the model sent it
    input_digest: str  # "" when the input was never prepared
    summary: str
    effect: ToolEffect
    destructive: bool
    iteration: int
    status: CallStatus
    raw_input: Any = None  # kept so a parked turn can re-prepare and re-check the digest
    result: str | None = None
    is_error: bool = False
    denial_reason: DenialReason | None = None
    edit: CallEdit | None = None
    """Set when a person replaced the model's input before deciding (the input above is theirs)."""
    # Runnable closures are not state: equality and snapshots ignore them.
    prepared: PreparedCall | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class ViolationRecord:
    violation: Violation
    call_id: str | None
    detail: str


@dataclass(frozen=True)
class TurnState:
    """Everything the reducer knows about one turn. A new instance per transition.

    Not slotted on purpose: `evolve` copies the instance dict in one step, which keeps the
    per-delta cost of a streamed reply small.
    """

    phase: TurnPhase = TurnPhase.IDLE
    iteration: int = 0
    budget: TurnBudget = field(default_factory=TurnBudget)
    limits: TurnLimits = field(default_factory=TurnLimits)
    tool_set: ToolSet = field(default_factory=ToolSet)
    history: tuple[Message, ...] = ()
    draft: AssistantDraft | None = None
    calls: tuple[CallRecord, ...] = ()
    grants: tuple[Grant, ...] = ()
    used_grants: tuple[Grant, ...] = ()
    denials: tuple[DenialRecord, ...] = ()
    violations: tuple[ViolationRecord, ...] = ()
    stream_notices: tuple[ProtocolError, ...] = ()
    outcome: TurnOutcome | None = None
    reason: str | None = None  # machine reason for the outcome: a bound kind, "provider_error", ...
    notice: str | None = None  # human text for bounded and runner-stopped turns
    error: ProtocolError | None = None  # the provider error that failed the turn, if any
    seen_call_ids: frozenset[str] = frozenset()  # every tool-call id in history and this turn

    @property
    def messages(self) -> tuple[Message, ...]:
        """The whole conversation, including the assistant message still streaming."""
        if self.draft is None:
            return self.history
        return (*self.history, self.draft.to_message())

    def call(self, call_id: str) -> CallRecord | None:
        for c in self.calls:
            if c.id == call_id:
                return c
        return None

    def iteration_calls(self) -> tuple[CallRecord, ...]:
        return tuple(c for c in self.calls if c.iteration == self.iteration)

    def runnable_calls(self) -> tuple[CallRecord, ...]:
        """Approved calls, in the order the model opened them."""
        return tuple(c for c in self.calls if c.status is CallStatus.APPROVED)

    def pending_calls(self) -> tuple[CallRecord, ...]:
        return tuple(c for c in self.calls if c.status is CallStatus.PENDING)

    def evolve(self, **changes: Any) -> TurnState:
        """A copy with `changes` applied (fields only; not validated — reducer use)."""
        new = object.__new__(TurnState)
        d = new.__dict__
        d.update(self.__dict__)
        d.update(changes)
        return new


def tool_call_ids(messages: Iterable[Message]) -> frozenset[str]:
    """Every tool-call id opened anywhere in `messages`."""
    return frozenset(
        b.id for m in messages for b in m.content if isinstance(b, ToolCallBlock)
    )
