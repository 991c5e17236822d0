"""An in-process provider that plays scripted event lists and records what it was sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    ToolCallStart,
    Usage,
)
from stockade.protocol.request import ChatRequest


def text_reply(text: str, usage: tuple[int, int] = (1000, 50)) -> list[StreamEvent]:
    return [MessageStart("m"), TextDelta(text), Usage(*usage), MessageStop(StopReason.END_TURN)]


def tool_reply(*calls: tuple[str, str, dict[str, Any]],
               usage: tuple[int, int] = (1000, 50)) -> list[StreamEvent]:
    events: list[StreamEvent] = [MessageStart("m")]
    for call_id, name, args in calls:
        events += [ToolCallStart(call_id, name), ToolCallComplete(call_id, name, args)]
    return [*events, Usage(*usage), MessageStop(StopReason.TOOL_USE)]


def add_threat(title: str = "Token theft") -> dict[str, Any]:
    return {"action": "add_threat", "threat": {
        "title": title, "category": "Spoofing", "severity": "high", "element": "app",
        "description": "An attacker replays a stolen session token."}}


class ScriptedProvider:
    name = "anthropic"

    def __init__(self, *replies: list[StreamEvent]) -> None:
        self.replies = list(replies)
        self.requests: list[ChatRequest] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        events = self.replies.pop(0) if self.replies else text_reply("(no more script)")
        for event in events:
            yield event
