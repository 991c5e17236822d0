"""A scripted in-process provider and recording hooks for runner tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from stockade.loop.hooks import RequestPermit, RequestRefused, StepKind, TurnStep
from stockade.protocol.errors import ErrorCode, ProtocolError
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    Usage,
)
from stockade.protocol.request import ChatRequest


@dataclass
class Stall:
    """A script step that waits on `gate` (forever if nobody sets it)."""

    gate: asyncio.Event = field(default_factory=asyncio.Event)


Step = StreamEvent | Stall


class ScriptedProvider:
    """Plays one scripted event list per request, in order; records every request."""

    name = "scripted"

    def __init__(self, scripts: Sequence[Sequence[Step]]) -> None:
        self.scripts = [list(s) for s in scripts]
        self.requests: list[ChatRequest] = []
        self.closed = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        script = self.scripts.pop(0) if self.scripts else [
            StreamError(ProtocolError(ErrorCode.HTTP_STATUS, "unscripted request"))
        ]
        try:
            for step in script:
                if isinstance(step, Stall):
                    await step.gate.wait()
                    continue
                await asyncio.sleep(0)
                yield step
        finally:
            self.closed += 1


def text_reply(text: str, usage: tuple[int, int] = (10, 5)) -> list[Step]:
    return [MessageStart("m"), TextDelta(text), Usage(*usage), MessageStop(StopReason.END_TURN)]


def calls_reply(*calls: tuple[str, str, Any]) -> list[Step]:
    return [
        MessageStart("m"),
        *(ToolCallComplete(i, n, raw) for i, n, raw in calls),
        Usage(20, 10),
        MessageStop(StopReason.TOOL_USE),
    ]


class RecordingHooks:
    """Records steps; can refuse requests, charge credits, or fail on a chosen step kind."""

    def __init__(
        self,
        *,
        fail_on: StepKind | None = None,
        refuse: RequestRefused | None = None,
        credits_per_request: int = 0,
    ) -> None:
        self.steps: list[TurnStep] = []
        self.fail_on = fail_on
        self.refuse = refuse
        self.credits_per_request = credits_per_request
        self.requests = 0
        self.settled: list[tuple[RequestPermit, Any, bool]] = []

    async def before_request(self, request: ChatRequest, iteration: int) -> RequestPermit | RequestRefused:
        self.requests += 1
        if self.refuse is not None:
            return self.refuse
        # The hold covers the charge, as a real meter's upper bound does.
        return RequestPermit(handle=f"p{self.requests}", reserved_credits=self.credits_per_request)

    async def after_request(self, permit: RequestPermit, usage: Any, failed: bool) -> int:
        self.settled.append((permit, usage, failed))
        return 0 if failed else self.credits_per_request

    async def record(self, step: TurnStep) -> None:
        if step.kind is self.fail_on:
            raise RuntimeError("the audit store is unavailable")
        self.steps.append(step)

    def kinds(self) -> list[StepKind]:
        return [s.kind for s in self.steps]
