"""The turn's immutable state: phases, call records, the frozen tool set and streamed text.

`parked` is deliberately not a reducer phase. A turn that waits for a decision is in
`awaiting_approval`; parking is governance serializing that state (see `serialize`) and
resuming is loading it back. Keeping it out of the reducer means a parked turn and a live
waiting turn obey exactly the same transitions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import FrozenInstanceError, dataclass, field
from enum import StrEnum
from itertools import pairwise
from typing import Any

from stockade.loop.authorization import DenialReason, DenialRecord, Grant, Violation
from stockade.loop.edits import CallEdit
from stockade.loop.limits import TurnBudget, TurnLimits
from stockade.protocol.errors import ProtocolError
from stockade.protocol.frozen import mutable_twin
from stockade.protocol.messages import (
    ContentBlock,
    Message,
    Role,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
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

    __slots__ = ("_facts", "_specs", "_tools")

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        table: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in table:
                raise ValueError(f"Duplicate tool name {tool.name!r} in a tool set.")
            table[tool.name] = tool
        self._tools = table
        # Each tool with its static effect and destructive flag, read once (reducer use:
        # opening a call reads both, through two property frames, for every call).
        self._facts: dict[str, tuple[Tool, ToolEffect, bool]] = {
            name: (tool, tool.effect, tool.destructive) for name, tool in table.items()
        }
        self._specs: tuple[ToolSpec, ...] | None = None

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

    def facts(self, name: str) -> tuple[Tool, ToolEffect, bool] | None:
        """`(tool, tool.effect, tool.destructive)` for `get(name)`, or None."""
        if type(name) is not str:
            return None
        return self._facts.get(name)

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def list(self) -> tuple[Tool, ...]:
        return tuple(self._tools.values())

    def specs(self) -> tuple[ToolSpec, ...]:
        """What each request of the turn advertises. Built once: the set is frozen, and copying
        every schema for every request was most of the cost of preparing one."""
        if self._specs is None:
            self._specs = tuple(
                ToolSpec(t.name, t.description, t.input_schema()) for t in self._tools.values()
            )
        return self._specs

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


class _Chunks:
    """The shared, append-only list behind `TextRun` views, with the longest text joined so far."""

    __slots__ = ("joined", "joined_n", "parts")

    def __init__(self, parts: list[str]) -> None:
        self.parts = parts
        self.joined = ""
        self.joined_n = 0

    def text(self, n: int) -> str:
        done = self.joined_n
        if done == n:
            return self.joined
        if done < n:
            # Benign cache writes: the first `n` parts never change once appended.
            text = self.joined + "".join(self.parts[done:n])
            self.joined, self.joined_n = text, n
            return text
        return "".join(self.parts[:n])


def _append_chunk(chunks: _Chunks, n: int, chunk: str) -> _Chunks:
    """`chunks` with `chunk` as part `n`: in place when part `n` is free, else a copy of the first
    `n` parts (another view already appended there), so every view keeps exactly its own parts."""
    parts = chunks.parts
    if len(parts) == n:
        parts.append(chunk)
        return chunks
    copy = _Chunks(parts[:n])
    copy.parts.append(chunk)
    if chunks.joined_n <= n:
        copy.joined, copy.joined_n = chunks.joined, chunks.joined_n
    return copy


class TextRun:
    """Text streamed so far in the open text block: an immutable view of the first parts of a
    shared append-only chunk list.

    Extending the newest view appends in place, so a stream of deltas costs O(1) each and never
    re-copies text it already received; extending an older view copies its parts first. The
    joined text is built when read, and only the part not joined before is joined again.
    """

    __slots__ = ("_chunks", "_n")

    def __init__(self, chunk: str, prev: TextRun | None = None) -> None:
        if prev is None:
            self._chunks = _Chunks([chunk])
            self._n = 1
        else:
            self._chunks = _append_chunk(prev._chunks, prev._n, chunk)
            self._n = prev._n + 1

    @classmethod
    def _view(cls, chunks: _Chunks, n: int) -> TextRun:
        run = object.__new__(cls)
        run._chunks = chunks
        run._n = n
        return run

    def extend(self, chunk: str) -> TextRun:
        return TextRun._view(_append_chunk(self._chunks, self._n, chunk), self._n + 1)

    def text(self) -> str:
        return self._chunks.text(self._n)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TextRun) and self.text() == other.text()

    def __hash__(self) -> int:
        return hash(self.text())

    def __repr__(self) -> str:
        return f"TextRun({self.text()!r})"


class _Log:
    """An append-only record list shared between states: each state sees its first `n` items.

    Appending to the newest view is O(1) (in place); appending to an older view copies its
    items first. The tuple a reader asks for is built once per view.
    """

    __slots__ = ("_items", "_n", "_tuple")

    def __init__(self, items: list[Any], n: int) -> None:
        self._items = items
        self._n = n
        self._tuple: tuple[Any, ...] | None = None

    def append(self, item: Any) -> _Log:
        items, n = self._items, self._n
        if len(items) != n:
            items = items[:n]
        items.append(item)
        return _Log(items, n + 1)

    def as_tuple(self) -> tuple[Any, ...]:
        if self._tuple is None:
            self._tuple = tuple(self._items[: self._n])  # benign cache write
        return self._tuple


_EMPTY_LOG = _Log([], 0)


class _MemberLog:
    """An append-only log shared between states like `_Log`, whose views also answer "is this
    item among my first `n`" in O(1): each item's first position is kept in a table shared
    like the items. It holds the used grants and the turn's own call ids (so opening a call
    copies no earlier ids)."""

    __slots__ = ("_first", "_items", "_n", "_tuple")

    def __init__(self, items: list[Any], first: dict[Any, int], n: int) -> None:
        self._items = items
        self._first = first
        self._n = n
        self._tuple: tuple[Any, ...] | None = None

    @classmethod
    def of(cls, items: Iterable[Any]) -> _MemberLog:
        listed = list(items)
        first: dict[Any, int] = {}
        for i, item in enumerate(listed):
            first.setdefault(item, i)
        return cls(listed, first, len(listed))

    def append(self, item: Any) -> _MemberLog:
        items = self._items
        n = self._n
        if len(items) != n or not n:
            # Another view appended here already, or this is an empty log (often the shared
            # one every new state starts with, which must keep no turn's items).
            return _MemberLog.of([*items[:n], item])
        items.append(item)
        first = self._first
        first.setdefault(item, n)
        return _MemberLog(items, first, n + 1)

    def __contains__(self, item: Any) -> bool:
        i = self._first.get(item)
        return i is not None and i < self._n

    def __len__(self) -> int:
        return self._n

    def as_tuple(self) -> tuple[Any, ...]:
        if self._tuple is None:
            self._tuple = tuple(self._items[: self._n])  # benign cache write
        return self._tuple


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


@dataclass(frozen=True)
class CallRecord:
    """One tool call the model opened in this turn.

    Not slotted on purpose: `with_changes` copies the instance dict in one step, which is what
    each status change of a call costs.
    """

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

    def with_changes(self, **changes: Any) -> CallRecord:
        """A copy with `changes` applied (fields only; not validated — reducer use)."""
        values = self.__dict__.copy()
        values.update(changes)
        new = _new(CallRecord)
        _put_record_dict(new, values)
        return new


def with_status(record: CallRecord, status: CallStatus) -> CallRecord:
    """`record.with_changes(status=status)` without building keyword arguments (reducer use)."""
    values = record.__dict__.copy()
    values["status"] = status
    new = _new(CallRecord)
    _put_record_dict(new, values)
    return new


def new_call(
    id: str,
    tool_name: str,
    input_digest: str,
    summary: str,
    effect: ToolEffect,
    destructive: bool,
    iteration: int,
    status: CallStatus,
    raw_input: Any = None,
    result: str | None = None,
    is_error: bool = False,
    denial_reason: DenialReason | None = None,
    prepared: PreparedCall | None = None,
) -> CallRecord:
    """`CallRecord(...)` without the frozen `__init__`'s per-field cost (reducer use)."""
    record = _new(CallRecord)
    _put_record_dict(record, {
        "id": id, "tool_name": tool_name, "input_digest": input_digest, "summary": summary,
        "effect": effect, "destructive": destructive, "iteration": iteration, "status": status,
        "raw_input": raw_input, "result": result, "is_error": is_error,
        "denial_reason": denial_reason, "edit": None, "prepared": prepared,
    })
    return record


_new = object.__new__
_put_record_dict = CallRecord.__dict__["__dict__"].__set__
"""Sets a new record's instance dict (the descriptor itself: cheaper than `object.__setattr__`)."""


# The conversation's blocks and messages the reducer makes (one or two per call), built as
# their mutable twins and then made the frozen classes (`stockade.protocol.frozen`).
_TextBlockFields = mutable_twin(TextBlock)
_ToolCallBlockFields = mutable_twin(ToolCallBlock)
_ToolResultBlockFields = mutable_twin(ToolResultBlock)
_MessageFields = mutable_twin(Message)


def new_text_block(text: str) -> TextBlock:
    """`TextBlock(text)` (reducer use)."""
    block = _TextBlockFields()
    block.text = text
    block.__class__ = TextBlock
    return block


def new_tool_call_block(call_id: str, name: str, input: Any) -> ToolCallBlock:
    """`ToolCallBlock(call_id, name, input)` (reducer use)."""
    block = _ToolCallBlockFields()
    block.id = call_id
    block.name = name
    block.input = input
    block.__class__ = ToolCallBlock
    return block


def new_tool_result_block(call_id: str, content: str, is_error: bool) -> ToolResultBlock:
    """`ToolResultBlock(call_id, content, is_error)` (reducer use)."""
    block = _ToolResultBlockFields()
    block.tool_call_id = call_id
    block.content = content
    block.is_error = is_error
    block.__class__ = ToolResultBlock
    return block


def new_message(role: Role, content: tuple[ContentBlock, ...]) -> Message:
    """`Message(role, content)` (reducer use)."""
    message = _MessageFields()
    message.role = role
    message.content = content
    message.__class__ = Message
    return message


CallTable = tuple[tuple[CallRecord, ...], dict[str, int], int | None]
"""(calls, id -> position, tail): see `TurnState._call_table`."""


@dataclass(frozen=True, slots=True)
class ViolationRecord:
    violation: Violation
    call_id: str | None
    detail: str


_set_dict = object.__setattr__
_FIELDS = (
    "phase", "iteration", "budget", "limits", "tool_set", "history", "draft", "calls", "grants",
    "used_grants", "denials", "violations", "stream_notices", "outcome", "reason", "notice",
    "error", "seen_call_ids",
)
_NO_MEMBERS = _MemberLog([], {}, 0)  # shared: appending to an empty log makes a new one
_DEFAULT_BUDGET = TurnBudget()
_DEFAULT_LIMITS = TurnLimits()
_EMPTY_TOOLS = ToolSet()


class TurnState:
    """Everything the reducer knows about one turn. Immutable; a new instance per transition.

    The public attributes are the fields of `__init__`. Internally the draft is kept as its parts
    (`_blocks`, `_open`, and the text as a view `_chunks`/`_n` of a shared chunk list) and the
    violations as a shared append-only log, so a streamed delta or a late event costs O(1): one
    dict copy and one append. The call ids of the history the turn was given are kept apart
    from the turn's own, so opening a call never copies a long conversation's ids. Lookups by
    call id and grant use indexes that travel with the tuples they index (checked by identity,
    so a state made any other way rebuilds them).
    """

    def __init__(
        self,
        phase: TurnPhase = TurnPhase.IDLE,
        iteration: int = 0,
        budget: TurnBudget = _DEFAULT_BUDGET,
        limits: TurnLimits = _DEFAULT_LIMITS,
        tool_set: ToolSet = _EMPTY_TOOLS,
        history: tuple[Message, ...] = (),
        draft: AssistantDraft | None = None,
        calls: tuple[CallRecord, ...] = (),
        grants: tuple[Grant, ...] = (),
        used_grants: tuple[Grant, ...] = (),
        denials: tuple[DenialRecord, ...] = (),
        violations: tuple[ViolationRecord, ...] = (),
        stream_notices: tuple[ProtocolError, ...] = (),
        outcome: TurnOutcome | None = None,
        reason: str | None = None,  # machine reason for the outcome: a bound kind, ...
        notice: str | None = None,  # human text for bounded and runner-stopped turns
        error: ProtocolError | None = None,  # the provider error that failed the turn, if any
        seen_call_ids: frozenset[str] = frozenset(),  # every tool-call id in history and turn
    ) -> None:
        values: dict[str, Any] = {
            "phase": phase,
            "iteration": iteration,
            "budget": budget,
            "limits": limits,
            "tool_set": tool_set,
            "history": history,
            "calls": calls,
            "grants": grants,
            "_used": _MemberLog.of(used_grants) if used_grants else _NO_MEMBERS,
            "denials": denials,
            "stream_notices": stream_notices,
            "outcome": outcome,
            "reason": reason,
            "notice": notice,
            "error": error,
            "_seen": seen_call_ids,
            "_seen_turn": _NO_MEMBERS,
            "_log": _Log(list(violations), len(violations)) if violations else _EMPTY_LOG,
        }
        values.update(_draft_parts(draft))
        _set_dict(self, "__dict__", values)

    # The attributes below are set in __init__ (stored in the instance dict); declared for typing.
    phase: TurnPhase
    iteration: int
    budget: TurnBudget
    limits: TurnLimits
    tool_set: ToolSet
    history: tuple[Message, ...]
    calls: tuple[CallRecord, ...]
    grants: tuple[Grant, ...]
    denials: tuple[DenialRecord, ...]
    stream_notices: tuple[ProtocolError, ...]
    outcome: TurnOutcome | None
    reason: str | None
    notice: str | None
    error: ProtocolError | None
    _log: _Log
    _used: _MemberLog  # used_grants, shared between states like the violation log
    _seen: frozenset[str]  # seen_call_ids as given (history's ids, at submit)
    _seen_turn: _MemberLog  # ids the reducer has added since: a turn's few calls
    _index: CallTable | None = None  # the last call table built (see `_call_table`)
    _blocks: tuple[ContentBlock, ...] | None  # None: no assistant message is streaming
    _open: tuple[tuple[str, str], ...]
    _chunks: _Chunks | None
    _n: int

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    @property
    def draft(self) -> AssistantDraft | None:
        blocks = self._blocks
        if blocks is None:
            return None
        chunks = self._chunks
        text = None if chunks is None else TextRun._view(chunks, self._n)
        return AssistantDraft(blocks, text, self._open)

    @property
    def violations(self) -> tuple[ViolationRecord, ...]:
        return self._log.as_tuple()

    @property
    def used_grants(self) -> tuple[Grant, ...]:
        return self._used.as_tuple()

    def grant_used(self, grant: Grant) -> bool:
        """`grant in used_grants` without building the tuple."""
        return grant in self._used

    @property
    def seen_call_ids(self) -> frozenset[str]:
        """Every tool-call id in the history the turn was given and in the turn itself."""
        added = self._seen_turn
        if not added:
            return self._seen
        cached = self.__dict__.get("_seen_all")
        if cached is None or cached[0] is not added:
            cached = (added, self._seen | frozenset(added.as_tuple()))
            self.__dict__["_seen_all"] = cached  # benign cache write, checked by identity
        return cached[1]

    def has_seen_call(self, call_id: str) -> bool:
        """`call_id in seen_call_ids` without building the union (a long history's ids are
        kept apart from the turn's, so opening a call copies only the turn's)."""
        return call_id in self._seen_turn or call_id in self._seen

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in _FIELDS)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TurnState):
            return NotImplemented
        return self is other or self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _FIELDS)
        return f"TurnState({inner})"

    @property
    def messages(self) -> tuple[Message, ...]:
        """The whole conversation, including the assistant message still streaming."""
        draft = self.draft
        if draft is None:
            return self.history
        return (*self.history, draft.to_message())

    def call_index(self) -> dict[str, int]:
        """Position of each call id in `calls` (the first, should an id repeat)."""
        return self._call_table()[1]

    def _call_table(self) -> CallTable:
        """(calls, id -> position, tail): `tail` is where the last call's iteration begins
        along `calls` when iterations never decrease along it (0 for no calls), else None."""
        cached = self._index  # the instance's own, else the class's None
        calls = self.calls
        if cached is not None and cached[0] is calls:
            return cached
        index: dict[str, int] = {}
        for i, c in enumerate(calls):
            index.setdefault(c.id, i)
        tail: int | None = None
        if all(a.iteration <= b.iteration for a, b in pairwise(calls)):
            tail = len(calls)
            while tail and calls[tail - 1].iteration == calls[-1].iteration:
                tail -= 1
        table = (calls, index, tail)
        self.__dict__["_index"] = table  # benign cache write, checked by identity
        return table

    def call(self, call_id: str) -> CallRecord | None:
        i = self.call_index().get(call_id)
        return None if i is None else self.calls[i]

    def grants_for(self, call_id: str) -> tuple[Grant, ...]:
        """Every grant naming `call_id`, in issue order."""
        cached = self.__dict__.get("_grants_by_call")
        grants = self.grants
        if cached is None or cached[0] is not grants:
            by_call: dict[str, tuple[Grant, ...]] = {}
            start = 0
            if cached is not None:
                # Grants are appended: a table of an earlier tuple this one begins with
                # (compared element by element, by identity first) needs only the rest.
                done = cached[0]
                if len(grants) >= len(done) and grants[:len(done)] == done:
                    by_call = cached[1].copy()
                    start = len(done)
            for g in grants[start:]:
                by_call[g.call_id] = (*by_call.get(g.call_id, ()), g)
            cached = (grants, by_call)
            self.__dict__["_grants_by_call"] = cached  # benign cache write
        return cached[1].get(call_id, ())

    def iteration_calls(self) -> tuple[CallRecord, ...]:
        calls, _, tail = self._call_table()
        return calls_of_iteration(calls, tail, self.iteration)

    def runnable_calls(self) -> tuple[CallRecord, ...]:
        """Approved calls, in the order the model opened them."""
        approved = CallStatus.APPROVED
        return tuple(c for c in self.calls if c.status is approved)

    def pending_calls(self) -> tuple[CallRecord, ...]:
        pending = CallStatus.PENDING
        return tuple(c for c in self.calls if c.status is pending)

    def evolve(self, **changes: Any) -> TurnState:
        """A copy with `changes` applied (public fields only; not validated)."""
        values = state_values(self)
        for name, value in changes.items():
            if name == "draft":
                values.update(_draft_parts(value))
            elif name == "violations":
                values["_log"] = _Log(list(value), len(value)) if value else _EMPTY_LOG
            elif name == "used_grants":
                values["_used"] = _MemberLog.of(value)
            elif name == "seen_call_ids":
                values["_seen"], values["_seen_turn"] = value, _NO_MEMBERS
            elif name in _FIELDS:
                values[name] = value
            else:
                raise TypeError(f"TurnState has no field {name!r}")
        new = _new(TurnState)
        _put_state_dict(new, values)
        return new


_put_state_dict = TurnState.__dict__["__dict__"].__set__


class _Streamed(TurnState):
    """A state a text delta made by appending its chunk in place: it shares the instance dict of
    the state it was made from (every field but where its text ends) and keeps its own `_n`
    in a slot, which reads before the shared dict's entry.

    A delta then costs one small object and no dict copy. Only the reducer makes these (see
    `reduce_turn`), and anything that copies a state's dict takes `_n` from the slot
    (`state_values`); the shared dict itself is never written but for identity-checked caches,
    which hold for every state sharing it (none of them depends on the text).
    """

    __slots__ = ("_n",)
    # Made by calling the class with no arguments: `object.__init__` in place of the fields'
    # constructor makes that call cheaper than `object.__new__(_Streamed)` (no argument tuple).
    __init__ = object.__init__


_set_streamed_n = _Streamed.__dict__["_n"].__set__


def new_streamed(state: TurnState, n: int) -> TurnState:
    """A state equal to `state` but for its text, which ends at part `n` of the same chunks
    (reducer use: the chunk list already holds part `n - 1`, appended in place)."""
    new = _Streamed()
    _put_state_dict(new, state.__dict__)
    _set_streamed_n(new, n)
    return new


def state_values(state: TurnState) -> dict[str, Any]:
    """A copy of `state`'s instance dict, with its own `_n` when it is a `_Streamed` state
    (whose dict is shared with the state it was made from)."""
    values = state.__dict__.copy()
    if type(state) is _Streamed:
        values["_n"] = state._n
    return values


def calls_of_iteration(
    calls: tuple[CallRecord, ...], tail: int | None, iteration: int
) -> tuple[CallRecord, ...]:
    """The calls of `iteration`, given `calls` and the `tail` of their call table (reducer use:
    `TurnState.iteration_calls` for a caller that already holds the table)."""
    if tail is None:  # a state built by hand may mix iterations
        return tuple(c for c in calls if c.iteration == iteration)
    # The reducer appends calls in iteration order: this iteration's calls end the tuple,
    # from where the table says the last call's iteration begins.
    if not calls or calls[-1].iteration < iteration:
        return ()
    if calls[-1].iteration == iteration:
        return calls[tail:]
    start = len(calls)
    while start and calls[start - 1].iteration >= iteration:
        start -= 1
    end = start
    while end < len(calls) and calls[end].iteration == iteration:
        end += 1
    return calls[start:end]


def _draft_parts(draft: AssistantDraft | None) -> dict[str, Any]:
    if draft is None:
        return {"_blocks": None, "_open": (), "_chunks": None, "_n": 0}
    text = draft.text
    if text is None:
        return {"_blocks": draft.blocks, "_open": draft.open_call_ids, "_chunks": None, "_n": 0}
    return {"_blocks": draft.blocks, "_open": draft.open_call_ids, "_chunks": text._chunks,
            "_n": text._n}


def tool_call_ids(messages: Iterable[Message]) -> frozenset[str]:
    """Every tool-call id opened anywhere in `messages`."""
    return frozenset(
        b.id for m in messages for b in m.content if isinstance(b, ToolCallBlock)
    )
