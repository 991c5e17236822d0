"""Tool runtime types: effects, prepared calls, outcomes, the execution context, and the bounds
every tool call from a model must keep before any tool looks at it."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import FrozenInstanceError, dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from stockade.protocol.frozen import mutable_twin
from stockade.thf.model import ThreatModel
from stockade.tools.schema import FORBIDDEN_KEY


class ToolEffect(StrEnum):
    READ = "read"
    MUTATE = "mutate"


@dataclass(frozen=True, slots=True)
class ToolContext:
    """All a running tool may see: the current document and a cancellation signal."""

    document: ThreatModel
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(frozen=True, slots=True)
class ToolOk:
    """Success. `document` is the whole next document for a mutation, None for a read."""

    result: str
    document: ThreatModel | None = None


@dataclass(frozen=True, slots=True)
class ToolFailed:
    """A structured failure whose `result` text goes back to the model verbatim."""

    result: str


ToolOutcome = ToolOk | ToolFailed


class PreparedCall:
    """A validated call, bound to its canonical input. Only `Tool.prepare` makes these.

    Frozen, compared, hashed and shown like a frozen dataclass of its five fields. A call
    `Tool.prepare` made dumps its canonical `input` from the validated value when `input` is
    first read: the loop reads only the digest, which is made with the call.
    """

    __slots__ = ("_dump", "_input", "_value", "input_digest", "run", "summary", "tool_name")
    tool_name: str
    summary: str
    input_digest: str
    run: Callable[[ToolContext], Awaitable[ToolOutcome]]
    _input: Any
    _value: Any
    _dump: Callable[..., Any] | None

    def __init__(self, tool_name: str, summary: str, input_digest: str, input: Any,
                 run: Callable[[ToolContext], Awaitable[ToolOutcome]]) -> None:
        _set_tool_name(self, tool_name)
        _set_summary(self, summary)
        _set_input_digest(self, input_digest)
        _set_input(self, input)
        _set_run(self, run)
        _set_value(self, None)
        _set_dump(self, None)

    @property
    def input(self) -> Any:
        """The validated input as digested (`StrictInput.canonical()`: JSON-ready values)."""
        dump = self._dump
        if dump is not None:
            # Benign cache write: the value is frozen, so its dump never changes. The value
            # is kept (not cleared) so that a reader in another thread that saw the dump
            # still set dumps the same value, never None.
            _set_input(self, dump(self._value, mode="json", by_alias=True, exclude_none=True))
            _set_dump(self, None)
        return self._input

    def _fields(self) -> tuple[Any, ...]:
        return (self.tool_name, self.summary, self.input_digest, self.input, self.run)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not PreparedCall:
            return NotImplemented
        return self is other or self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (f"PreparedCall(tool_name={self.tool_name!r}, summary={self.summary!r}, "
                f"input_digest={self.input_digest!r}, input={self.input!r}, run={self.run!r})")

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


# The slots' own setters, which the frozen `__setattr__` does not guard.
_set_tool_name = PreparedCall.__dict__["tool_name"].__set__
_set_summary = PreparedCall.__dict__["summary"].__set__
_set_input_digest = PreparedCall.__dict__["input_digest"].__set__
_set_input = PreparedCall.__dict__["_input"].__set__
_set_run = PreparedCall.__dict__["run"].__set__
_set_value = PreparedCall.__dict__["_value"].__set__
_set_dump = PreparedCall.__dict__["_dump"].__set__


@dataclass(frozen=True, slots=True)
class PrepareFailed:
    """Validation issues, one `path: message` string per problem. Carries no runnable call."""

    issues: tuple[str, ...]


PrepareResult = PreparedCall | PrepareFailed


def new_prepared_call(
    tool_name: str,
    summary: str,
    input_digest: str,
    value: Any,
    dump: Callable[..., Any],
    run: Callable[[ToolContext], Awaitable[ToolOutcome]],
) -> PreparedCall:
    """`PreparedCall(...)` whose `input` is `dump(value, mode="json", by_alias=True,
    exclude_none=True)`, made when first read; without `__init__`'s frame (one per prepared
    call; `Tool.prepare` use only)."""
    call = _PreparedCallFields()  # see `stockade.protocol.frozen`
    call.tool_name = tool_name
    call.summary = summary
    call.input_digest = input_digest
    call.run = run
    call._value = value
    call._dump = dump
    call.__class__ = PreparedCall
    return call


_PreparedCallFields = mutable_twin(PreparedCall)


class Tool(Protocol):
    """A registered tool. `effect` and `destructive` are static facts of the tool."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def effect(self) -> ToolEffect: ...

    @property
    def destructive(self) -> bool: ...

    def input_schema(self) -> dict[str, Any]: ...

    def prepare(self, raw: Any) -> PrepareResult: ...


MAX_CALL_ID_LENGTH = 128
"""Providers' own call ids are about 30 characters; a longer one is not a provider's."""
MAX_TOOL_NAME_LENGTH = 128
MAX_INPUT_DEPTH = 64
"""No tool input nests deeper than a few levels; 64 keeps every later walk off the stack limit."""
MAX_INPUT_BYTES = 64 * 1024
"""Far above any real tool input (document fields are capped much lower)."""
REFUSED_INPUT_KEY = "stockade_refused_input"
"""The one key of the stand-in input a refused call carries in the conversation (the model's
own input could not be kept: it would break the next request); `prepare` answers it with the
refusal it names."""
_PATH_CAP = 80


def _shown_path(path: str) -> str:
    path = path or "input"
    return path if len(path) <= _PATH_CAP else path[: _PATH_CAP - 1] + "…"


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def input_problem(raw: Any) -> str | None:
    """Why a tool input from a model can never be run, as one `path: message` issue (None when
    it is plain, bounded JSON).

    Refused: numbers that are not finite (NaN, infinity), nesting deeper than
    `MAX_INPUT_DEPTH`, more than `MAX_INPUT_BYTES` of content, keys that are not strings and
    values JSON cannot hold. The walks are iterative, so a hostile input cannot exhaust the
    stack. Plain input (nearly all of it) is recognised by a walk that spells no paths; only
    input it does not clear is walked again to name the problem.
    """
    if plainly_bounded(raw):
        return None
    return _spelled_problem(raw)


def plainly_bounded(raw: Any, *, screen_keys: bool = False) -> bool:
    """True when `input_problem(raw)` is None, found level by level without building paths;
    False when it is not, or when `raw` holds a subclass the exact walk should judge.

    With `screen_keys`, True also says `raw` has no `__proto__` key and no unpaired surrogate
    (`tools.schema.forbidden_key_issues(raw)` is empty), so one walk clears both checks.
    """
    level = [raw]
    depth = 1
    size = 0
    while level:
        if depth > MAX_INPUT_DEPTH:
            return False
        below: list[Any] = []
        push, extend = below.append, below.extend
        for value in level:
            kind = type(value)
            if kind is dict:
                # A dict's text and true/false values are judged here, not pushed a level down
                # (most of a tool input's leaves): so one at the last level may hold nothing.
                if depth == MAX_INPUT_DEPTH and value:
                    return False
                size += 2
                for key, item in value.items():
                    if type(key) is not str:
                        return False
                    if screen_keys and (key == FORBIDDEN_KEY
                                        or (not key.isascii() and _has_surrogate(key))):
                        return False
                    size += len(key) + 4
                    kind = type(item)
                    if kind is str:
                        size += len(item)
                        if screen_keys and not item.isascii() and _has_surrogate(item):
                            return False
                    elif kind is bool:
                        size += 5
                    else:
                        push(item)
            elif kind is str:
                size += len(value)
                if screen_keys and not value.isascii() and _has_surrogate(value):
                    return False
            elif kind is list:
                size += 2
                extend(value)
            elif value is None or kind is bool:
                size += 5
            elif kind is int:
                size += value.bit_length() // 3 + 1
            elif kind is float:
                if not math.isfinite(value):
                    return False
                size += 24
            else:
                return False
            if size > MAX_INPUT_BYTES:
                return False
        level = below
        depth += 1
    return True


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _spelled_problem(raw: Any) -> str | None:
    stack: list[tuple[Any, int, str]] = [(raw, 1, "")]
    size = 0
    while stack:
        value, depth, path = stack.pop()
        if depth > MAX_INPUT_DEPTH:
            return f"input: nests deeper than {MAX_INPUT_DEPTH} levels"
        if value is None or isinstance(value, bool):
            size += 5
        elif isinstance(value, int):
            size += value.bit_length() // 3 + 1
        elif isinstance(value, float):
            if not math.isfinite(value):
                return f"{_shown_path(path)}: must be a finite number"
            size += 24
        elif isinstance(value, str):
            size += len(value)
        elif isinstance(value, dict):
            size += 2
            for key, item in value.items():
                if not isinstance(key, str):
                    return f"{_shown_path(path)}: has a key that is not a string"
                size += len(key) + 4
                stack.append((item, depth + 1, _child(path, key)))
        elif isinstance(value, list):
            size += 2
            stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(value))
        else:
            return f"{_shown_path(path)}: holds a value JSON cannot carry"
        if size > MAX_INPUT_BYTES:
            return f"input: is larger than {MAX_INPUT_BYTES // 1024} KiB"
    return None


def call_problem(call_id: str, name: str, raw: Any) -> str | None:
    """Why a whole tool call from a model is refused before any tool sees it (see
    `input_problem`; ids and names are bounded too)."""
    if not isinstance(call_id, str) or len(call_id) > MAX_CALL_ID_LENGTH:
        return f"id: is longer than {MAX_CALL_ID_LENGTH} characters"
    if not isinstance(name, str) or len(name) > MAX_TOOL_NAME_LENGTH:
        return f"name: is longer than {MAX_TOOL_NAME_LENGTH} characters"
    return input_problem(raw)


def refused_input(problem: str) -> dict[str, str]:
    """The stand-in a refused call carries instead of its input (see `REFUSED_INPUT_KEY`)."""
    return {REFUSED_INPUT_KEY: f"Not run: {problem}. Send the call again with a plain, "
                               "bounded JSON input."}


def refusal_of(raw: Any) -> str | None:
    """The refusal text when `raw` is a refused call's stand-in, else None."""
    if isinstance(raw, dict) and len(raw) == 1:
        text = raw.get(REFUSED_INPUT_KEY)
        if isinstance(text, str):
            return text
    return None
