"""The closed, provider-neutral `StreamEvent` vocabulary every provider maps onto."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Literal

from stockade.protocol.errors import ErrorCode, ProtocolError


class StopReason(StrEnum):
    END_TURN = "end_turn"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class MessageStart:
    type: ClassVar[Literal["message_start"]] = "message_start"
    model: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    type: ClassVar[Literal["text_delta"]] = "text_delta"
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    type: ClassVar[Literal["tool_call_start"]] = "tool_call_start"
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallInputDelta:
    """A raw argument fragment; consumers show progress with it and never parse it."""

    type: ClassVar[Literal["tool_call_input_delta"]] = "tool_call_input_delta"
    id: str
    partial_json: str


@dataclass(frozen=True, slots=True)
class ToolCallComplete:
    """A whole tool call whose arguments were assembled and parsed exactly once."""

    type: ClassVar[Literal["tool_call_complete"]] = "tool_call_complete"
    id: str
    name: str
    input: Any


@dataclass(frozen=True, slots=True)
class Usage:
    type: ClassVar[Literal["usage"]] = "usage"
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


@dataclass(frozen=True, slots=True)
class MessageStop:
    type: ClassVar[Literal["message_stop"]] = "message_stop"
    stop_reason: StopReason


@dataclass(frozen=True, slots=True)
class StreamError:
    """Terminal unless its code is `malformed_stream` (then a notice about one frame or call)."""

    type: ClassVar[Literal["error"]] = "error"
    error: ProtocolError
    ends_stream: bool = False
    """True for a `malformed_stream` error that ends the stream (e.g. a truncated body)."""

    @property
    def is_terminal(self) -> bool:
        return self.error.code is not ErrorCode.MALFORMED_STREAM or self.ends_stream


@dataclass(frozen=True, slots=True)
class Aborted:
    """The user stopped the stream; never an error."""

    type: ClassVar[Literal["aborted"]] = "aborted"


StreamEvent = (
    MessageStart
    | TextDelta
    | ToolCallStart
    | ToolCallInputDelta
    | ToolCallComplete
    | Usage
    | MessageStop
    | StreamError
    | Aborted
)


def is_terminal(event: StreamEvent) -> bool:
    """Whether this event ends a provider stream."""
    if isinstance(event, (MessageStop, Aborted)):
        return True
    if isinstance(event, StreamError):
        return event.is_terminal
    return False


def event_to_json(event: StreamEvent) -> dict[str, Any]:
    """One event as a JSON-ready dict (used by replay files and parked snapshots)."""
    if isinstance(event, MessageStart):
        return {"type": event.type, "model": event.model}
    if isinstance(event, TextDelta):
        return {"type": event.type, "text": event.text}
    if isinstance(event, ToolCallStart):
        return {"type": event.type, "id": event.id, "name": event.name}
    if isinstance(event, ToolCallInputDelta):
        return {"type": event.type, "id": event.id, "partial_json": event.partial_json}
    if isinstance(event, ToolCallComplete):
        return {"type": event.type, "id": event.id, "name": event.name, "input": event.input}
    if isinstance(event, Usage):
        return {
            "type": event.type,
            "input_tokens": event.input_tokens,
            "output_tokens": event.output_tokens,
            "cached_input_tokens": event.cached_input_tokens,
        }
    if isinstance(event, MessageStop):
        return {"type": event.type, "stop_reason": event.stop_reason.value}
    if isinstance(event, StreamError):
        return {"type": event.type, "error": event.error.to_json(), "ends_stream": event.ends_stream}
    return {"type": "aborted"}


def event_from_json(data: dict[str, Any]) -> StreamEvent:
    """Inverse of `event_to_json`; raises `ValueError` naming the problem on bad input."""
    kind = data.get("type")
    try:
        if kind == "message_start":
            return MessageStart(model=str(data["model"]))
        if kind == "text_delta":
            return TextDelta(text=str(data["text"]))
        if kind == "tool_call_start":
            return ToolCallStart(id=str(data["id"]), name=str(data["name"]))
        if kind == "tool_call_input_delta":
            return ToolCallInputDelta(id=str(data["id"]), partial_json=str(data["partial_json"]))
        if kind == "tool_call_complete":
            return ToolCallComplete(id=str(data["id"]), name=str(data["name"]), input=data["input"])
        if kind == "usage":
            return Usage(
                input_tokens=int(data["input_tokens"]),
                output_tokens=int(data["output_tokens"]),
                cached_input_tokens=int(data.get("cached_input_tokens", 0)),
            )
        if kind == "message_stop":
            return MessageStop(stop_reason=StopReason(data["stop_reason"]))
        if kind == "error":
            return StreamError(
                error=ProtocolError.from_json(data["error"]),
                ends_stream=bool(data.get("ends_stream", False)),
            )
        if kind == "aborted":
            return Aborted()
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"event of type {kind!r} is missing or has a bad field: {exc}") from None
    raise ValueError(f"unknown event type {kind!r}")
