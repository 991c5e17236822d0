"""Small message builders shared by the protocol tests."""

from __future__ import annotations

from typing import Any

from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock


def user(text: str) -> Message:
    return Message(role="user", content=(TextBlock(text=text),))


def assistant(text: str) -> Message:
    return Message(role="assistant", content=(TextBlock(text=text),))


def calls(*ids: str, name: str = "get_entity", input: Any = None) -> Message:
    return Message(
        role="assistant",
        content=tuple(ToolCallBlock(id=i, name=name, input=input or {}) for i in ids),
    )


def results(*ids: str, content: str = "ok") -> Message:
    return Message(
        role="user",
        content=tuple(ToolResultBlock(tool_call_id=i, content=content) for i in ids),
    )
