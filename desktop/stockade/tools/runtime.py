"""Tool runtime types: effects, prepared calls, outcomes and the execution context."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from stockade.thf.model import ThreatModel


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


@dataclass(frozen=True, slots=True)
class PreparedCall:
    """A validated call, bound to its canonical input. Only `Tool.prepare` makes these."""

    tool_name: str
    summary: str
    input_digest: str
    input: Any
    run: Callable[[ToolContext], Awaitable[ToolOutcome]]


@dataclass(frozen=True, slots=True)
class PrepareFailed:
    """Validation issues, one `path: message` string per problem. Carries no runnable call."""

    issues: tuple[str, ...]


PrepareResult = PreparedCall | PrepareFailed


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
