"""Provider-neutral conversation messages: text, tool call and tool result blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class TextBlock:
    type: ClassVar[Literal["text"]] = "text"
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallBlock:
    type: ClassVar[Literal["tool_call"]] = "tool_call"
    id: str
    name: str
    input: Any


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    type: ClassVar[Literal["tool_result"]] = "tool_result"
    tool_call_id: str
    content: str
    is_error: bool = False


ContentBlock = TextBlock | ToolCallBlock | ToolResultBlock


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation message. The system prompt is never a message."""

    role: Role
    content: tuple[ContentBlock, ...]


def flatten_text(message: Message) -> str:
    """The message's text blocks joined with no separator; tool blocks ignored."""
    return "".join(b.text for b in message.content if isinstance(b, TextBlock))


def block_to_json(block: ContentBlock) -> dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ToolCallBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "input": block.input}
    return {
        "type": "tool_result",
        "tool_call_id": block.tool_call_id,
        "content": block.content,
        "is_error": block.is_error,
    }


def block_from_json(data: dict[str, Any]) -> ContentBlock:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(text=str(data["text"]))
    if kind == "tool_call":
        return ToolCallBlock(id=str(data["id"]), name=str(data["name"]), input=data["input"])
    if kind == "tool_result":
        return ToolResultBlock(
            tool_call_id=str(data["tool_call_id"]),
            content=str(data["content"]),
            is_error=bool(data.get("is_error", False)),
        )
    raise ValueError(f"unknown content block type {kind!r}")


def message_to_json(message: Message) -> dict[str, Any]:
    return {"role": message.role, "content": [block_to_json(b) for b in message.content]}


def message_from_json(data: dict[str, Any]) -> Message:
    role = data.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"unknown message role {role!r}")
    return Message(role=role, content=tuple(block_from_json(b) for b in data["content"]))
