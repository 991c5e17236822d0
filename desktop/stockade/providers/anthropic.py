"""Anthropic Messages API through the official async SDK, mapped to `StreamEvent`s."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, ClassVar

import anthropic

from stockade.protocol import errors
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
)
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.provider_ids import PRODUCTION_BASE_URLS, ProviderId
from stockade.protocol.request import ChatRequest
from stockade.providers.sse import SseFrame
from stockade.providers.streaming import (
    PendingToolCall,
    SdkErrors,
    SdkProvider,
    SdkStream,
    client_timeout,
    finish_tool_call,
    http_client,
    notice,
    stream_events,
    token_count,
)

LABEL = "Anthropic"
PRODUCTION_BASE_URL = PRODUCTION_BASE_URLS[ProviderId.ANTHROPIC]
"""The only endpoint used outside tests; never taken from a document or the environment."""

_ERRORS = SdkErrors(
    status=anthropic.APIStatusError,
    timeout=anthropic.APITimeoutError,
    connection=anthropic.APIConnectionError,
)

_IN_STREAM_STATUS = {"overloaded_error": 529, "api_error": 500}

_INPUT_FIELDS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
"""The three disjoint input counts a Messages API `usage` object reports."""

_STOP_REASONS = {
    "end_turn": StopReason.END_TURN,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
}


def anthropic_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Our messages as Messages API `messages` (tool calls as `tool_use`, results as `tool_result`).

    Empty text blocks, and messages left with no content, are dropped: the API refuses both,
    and it joins consecutive messages of one role by itself.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks: list[dict[str, Any]] = []
        for block in message.content:
            if isinstance(block, TextBlock):
                if block.text:  # the API rejects empty text blocks
                    blocks.append({"type": "text", "text": block.text})
            elif isinstance(block, ToolCallBlock):
                blocks.append(
                    {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
                )
            elif isinstance(block, ToolResultBlock):
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.tool_call_id,
                        "content": block.content,
                        "is_error": block.is_error,
                    }
                )
        if blocks:  # the API rejects a message with no content
            out.append({"role": message.role, "content": blocks})
    return out


def anthropic_tools(request: ChatRequest) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in request.tools
    ]


class AnthropicMapper:
    """Maps one Messages API event stream; one instance per response.

    Tool-use blocks are tracked by content-block index so interleaved blocks stay apart;
    their argument fragments are joined and parsed once, when the block stops.
    """

    def __init__(self) -> None:
        self._pending: dict[int, PendingToolCall] = {}
        self._input_counts = dict.fromkeys(_INPUT_FIELDS, 0)
        self._stop_reason = StopReason.UNKNOWN

    def map_frame(self, frame: SseFrame) -> list[StreamEvent]:
        handler = self._handlers.get(frame.event)
        if handler is None:
            return []  # `ping` and event types this build does not know
        try:
            payload = json.loads(frame.data)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            return [self._undecodable(frame)]
        try:
            return handler(self, payload)
        except (KeyError, TypeError, ValueError, AttributeError):
            return [self._undecodable(frame)]

    @staticmethod
    def _undecodable(frame: SseFrame) -> StreamEvent:
        return notice(
            f'The Anthropic stream sent a "{_event_name(frame.event)}" event that could not '
            "be read.",
            frame.data,
        )

    def _message_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        message = payload["message"]
        model = message["model"]
        if not isinstance(model, str):
            raise TypeError("model")
        usage = message.get("usage")
        if isinstance(usage, dict):
            self._note_input(usage)
        return [MessageStart(model=model)]

    def _block_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = _index(payload["index"])
        block = payload["content_block"]
        kind = block.get("type")
        if kind == "tool_use":
            call_id, name = block["id"], block["name"]
            if not isinstance(call_id, str) or not isinstance(name, str) or not call_id or not name:
                raise TypeError("tool_use")
            self._pending[index] = PendingToolCall(id=call_id, name=name)
            return [ToolCallStart(id=call_id, name=name)]
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text:
                return [TextDelta(text=text)]
        return []

    def _block_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        index = _index(payload["index"])
        delta = payload["delta"]
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta["text"]
            if not isinstance(text, str):
                raise TypeError("text")
            return [TextDelta(text=text)] if text else []
        if kind == "input_json_delta":
            fragment = delta["partial_json"]
            if not isinstance(fragment, str):
                raise TypeError("partial_json")
            if not fragment:
                return []
            call = self._pending.get(index)
            if call is None:
                return [
                    notice(
                        "The Anthropic stream sent tool arguments for a tool call that never "
                        "started."
                    )
                ]
            call.fragments.append(fragment)
            return [ToolCallInputDelta(id=call.id, partial_json=fragment)]
        return []  # thinking, citations and other delta kinds are not used

    def _block_stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        call = self._pending.pop(_index(payload["index"]), None)
        return [finish_tool_call(call)] if call is not None else []

    def _message_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        delta = payload.get("delta") or {}
        reason = delta.get("stop_reason")
        if isinstance(reason, str):
            self._stop_reason = _STOP_REASONS.get(reason, StopReason.UNKNOWN)
        usage = payload.get("usage")
        if not isinstance(usage, dict):
            return []
        self._note_input(usage)
        counts = self._input_counts
        # Anthropic counts cache reads and writes outside `input_tokens`; our `Usage` counts
        # every input token, with the cached reads as the part priced at the cached rate.
        # Cache writes have no rate of their own in the price book, so they meter as input.
        return [
            Usage(
                input_tokens=sum(counts.values()),
                output_tokens=token_count(usage.get("output_tokens")),
                cached_input_tokens=counts["cache_read_input_tokens"],
            )
        ]

    def _note_input(self, usage: dict[str, Any]) -> None:
        # `message_start` carries the input counts; a `message_delta` may repeat them
        # (cumulatively), and a field it leaves out keeps the earlier value.
        for key in _INPUT_FIELDS:
            if usage.get(key) is not None:
                self._input_counts[key] = token_count(usage[key])

    def _message_stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        return [MessageStop(stop_reason=self._stop_reason)]

    def _error(self, payload: dict[str, Any]) -> list[StreamEvent]:
        error = payload.get("error")
        error = error if isinstance(error, dict) else {}
        kind = error.get("type")
        parts = [p for p in (kind, error.get("message")) if isinstance(p, str) and p]
        detail = ": ".join(parts) if parts else None
        if kind == "rate_limit_error":
            return [StreamError(error=errors.rate_limited(LABEL, detail=detail, status=None))]
        reported = errors.stream_reported_error(LABEL, detail=detail)
        # The status an HTTP answer would have carried, so a failure before any output can be
        # retried like its HTTP twin; after output the retry policy never retries anyway.
        status = _IN_STREAM_STATUS.get(kind) if isinstance(kind, str) else None
        return [StreamError(error=replace(reported, status=status))]

    _handlers: ClassVar[dict[str, Any]] = {
        "message_start": _message_start,
        "content_block_start": _block_start,
        "content_block_delta": _block_delta,
        "content_block_stop": _block_stop,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
        "error": _error,
    }


def _index(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("index")
    return value


def _event_name(name: str) -> str:
    # The event name comes from the stream; keep the notice short and printable.
    clean = "".join(ch for ch in name if ch.isprintable())
    return clean[:40]


class AnthropicProvider(SdkProvider):
    """Streams one Messages API request per `stream()` call; never retries by itself."""

    name = "anthropic"
    production_base_url = PRODUCTION_BASE_URL

    def _client(self) -> anthropic.AsyncAnthropic:
        # A fresh client per request: its HTTP connection pool belongs to one event loop.
        return anthropic.AsyncAnthropic(
            api_key=self._api_key.reveal(),
            base_url=self._base_url,
            max_retries=0,
            timeout=client_timeout(self._timeout_s),
            http_client=http_client(self._timeout_s),
        )

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        client = self._client()
        try:
            body: dict[str, Any] = {
                "model": request.model,
                "max_tokens": request.max_output_tokens,
                "messages": anthropic_messages(request.messages),
                "stream": True,
            }
            if request.system:
                body["system"] = request.system
            if request.tools:
                body["tools"] = anthropic_tools(request)

            async def open_stream() -> SdkStream:
                stream: SdkStream = await client.messages.create(**body)
                return stream

            async for event in stream_events(LABEL, open_stream, AnthropicMapper(), _ERRORS):
                yield event
        finally:
            await client.close()
