"""OpenAI Chat Completions through the official async SDK, mapped to `StreamEvent`s."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

import openai

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
from stockade.protocol.messages import Message, ToolCallBlock, ToolResultBlock, flatten_text
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

LABEL = "OpenAI"
PRODUCTION_BASE_URL = PRODUCTION_BASE_URLS[ProviderId.OPENAI]
"""The only endpoint used outside tests; never taken from a document or the environment."""

ERRORS = SdkErrors(
    status=openai.APIStatusError,
    timeout=openai.APITimeoutError,
    connection=openai.APIConnectionError,
)

_FINISH_REASONS = {
    "stop": StopReason.END_TURN,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
}


def openai_messages(system: str, messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Our messages as Chat Completions messages.

    The system prompt leads; tool calls ride on the assistant message; each tool result is
    its own `tool` message, placed before the user's text of the same turn. Chat Completions
    has no error flag on a tool result, so `is_error` is carried by the result text alone.
    """
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        text = flatten_text(message)
        if message.role == "assistant":
            calls = [
                {
                    "id": b.id,
                    "type": "function",
                    "function": {
                        "name": b.name,
                        "arguments": json.dumps(b.input, ensure_ascii=False)
                        if b.input is not None
                        else "{}",
                    },
                }
                for b in message.content
                if isinstance(b, ToolCallBlock)
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            elif entry["content"] is None:
                entry["content"] = ""
            out.append(entry)
            continue
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        for result in results:
            out.append(
                {"role": "tool", "tool_call_id": result.tool_call_id, "content": result.content}
            )
        if text or not results:
            out.append({"role": "user", "content": text})
    return out


def openai_tools(request: ChatRequest) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in request.tools
    ]


class OpenAIMapper:
    """Maps one Chat Completions chunk stream (OpenAI or a compatible server).

    Tool-call fragments are keyed by their `index`. A call's arguments are parsed once, when
    the next call starts or a `finish_reason` (or `[DONE]`) arrives. `[DONE]` is terminal.
    """

    def __init__(self, label: str = LABEL) -> None:
        self._label = label
        self._pending: dict[int, PendingToolCall] = {}
        self._finished: set[int] = set()
        self._started = False
        self._stop_reason = StopReason.UNKNOWN

    def map_frame(self, frame: SseFrame) -> list[StreamEvent]:
        if frame.data.strip() == "[DONE]":
            # Calls still open here (a server that sent no finish_reason) are parsed rather
            # than silently lost.
            return [*self._finish_pending(), MessageStop(stop_reason=self._stop_reason)]
        try:
            chunk = json.loads(frame.data)
        except ValueError:
            chunk = None
        if not isinstance(chunk, dict):
            return [self._undecodable(frame)]
        try:
            return self._chunk(chunk)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            return [self._undecodable(frame)]

    def _undecodable(self, frame: SseFrame) -> StreamEvent:
        return notice(f"The {self._label} stream sent a chunk that could not be read.", frame.data)

    def _chunk(self, chunk: dict[str, Any]) -> list[StreamEvent]:
        error = chunk.get("error")
        if error is not None:
            return [self._in_stream_error(error)]
        # The shape is checked before any state changes, so a rejected chunk leaves none behind.
        choice, delta, fragments = _checked_parts(chunk)
        events: list[StreamEvent] = []
        model = chunk.get("model")
        if not self._started and isinstance(model, str) and model:
            self._started = True
            events.append(MessageStart(model=model))
        if choice is not None:
            content = delta.get("content")
            if isinstance(content, str) and content:
                events.append(TextDelta(text=content))
            for fragment in fragments:
                events.extend(self._tool_fragment(fragment))
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                self._stop_reason = _FINISH_REASONS.get(reason, StopReason.UNKNOWN)
                events.extend(self._finish_pending())
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else 0
            # `prompt_tokens` already includes the cached part; a compatible server that
            # reports more cached than prompt tokens must not make the uncached part negative.
            prompt = token_count(usage.get("prompt_tokens"))
            events.append(
                Usage(
                    input_tokens=prompt,
                    output_tokens=token_count(usage.get("completion_tokens")),
                    cached_input_tokens=min(token_count(cached), prompt),
                )
            )
        return events

    def _tool_fragment(self, fragment: dict[str, Any]) -> list[StreamEvent]:
        index = fragment.get("index", 0)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError("index")
        function = fragment.get("function") or {}
        arguments = function.get("arguments")
        arguments = arguments if isinstance(arguments, str) else ""
        if index in self._finished:
            return [
                notice(
                    f"The {self._label} stream sent arguments for a tool call that had already "
                    "ended; they were ignored."
                )
            ]
        call = self._pending.get(index)
        events: list[StreamEvent] = []
        if call is None:
            call_id, name = fragment.get("id"), function.get("name")
            if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
                return [
                    notice(
                        f"The {self._label} stream sent a tool-call fragment before naming the "
                        "call."
                    )
                ]
            # Calls stream one after another, so a new call means the earlier ones are whole.
            # Completing them here gives the same event order as Anthropic's per-block stops.
            events.extend(self._finish_pending())
            call = PendingToolCall(id=call_id, name=name)
            self._pending[index] = call
            events.append(ToolCallStart(id=call_id, name=name))
        if arguments:
            call.fragments.append(arguments)
            events.append(ToolCallInputDelta(id=call.id, partial_json=arguments))
        return events

    def _finish_pending(self) -> list[StreamEvent]:
        # Arrival order: the dict keeps insertion order.
        events = [finish_tool_call(call) for call in self._pending.values()]
        self._finished.update(self._pending)
        self._pending.clear()
        return events

    def _in_stream_error(self, error: Any) -> StreamEvent:
        error = error if isinstance(error, dict) else {"message": str(error)}
        kind, code = error.get("type"), error.get("code")
        parts = [p for p in (kind, code, error.get("message")) if isinstance(p, str) and p]
        detail = ": ".join(parts) if parts else None
        marker = f"{kind} {code}"
        if "rate_limit" in marker or "insufficient_quota" in marker:
            return StreamError(error=errors.rate_limited(self._label, detail=detail, status=None))
        reported = errors.stream_reported_error(self._label, detail=detail)
        # As if it had come as an HTTP 500, so a failure before any output can be retried.
        status = 500 if kind == "server_error" else None
        return StreamError(error=replace(reported, status=status))


def _checked_parts(
    chunk: dict[str, Any],
) -> tuple[dict[str, Any] | None, dict[str, Any], list[dict[str, Any]]]:
    """The first choice, its delta and its tool-call fragments; raises on a wrong shape."""
    choices = chunk.get("choices") or []
    if not isinstance(choices, list):
        raise TypeError("choices")
    if not choices:
        return None, {}, []
    choice = choices[0]
    if not isinstance(choice, dict):
        raise TypeError("choice")
    delta = choice.get("delta") or {}
    if not isinstance(delta, dict):
        raise TypeError("delta")
    fragments = delta.get("tool_calls") or []
    if not isinstance(fragments, list) or not all(isinstance(f, dict) for f in fragments):
        raise TypeError("tool_calls")
    for fragment in fragments:
        index = fragment.get("index", 0)
        function = fragment.get("function") or {}
        if isinstance(index, bool) or not isinstance(index, int) or not isinstance(function, dict):
            raise TypeError("tool call fragment")
    return choice, delta, fragments


def chat_completions_body(request: ChatRequest) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": request.model,
        "max_completion_tokens": request.max_output_tokens,
        "messages": openai_messages(request.system, request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = openai_tools(request)
    return body


async def stream_chat_completions(
    make_client: Callable[[], openai.AsyncOpenAI],
    request: ChatRequest,
    label: str,
    *,
    extra_headers: dict[str, Any] | None = None,
) -> AsyncIterator[StreamEvent]:
    """One streamed Chat Completions request; shared by the OpenAI and local providers.

    The client is made per request because its connection pool belongs to one event loop.
    """
    body = chat_completions_body(request)
    if extra_headers:
        body["extra_headers"] = extra_headers
    client = make_client()

    async def open_stream() -> SdkStream:
        stream: SdkStream = await client.chat.completions.create(**body)
        return stream

    try:
        async for event in stream_events(label, open_stream, OpenAIMapper(label), ERRORS):
            yield event
    finally:
        await client.close()


class OpenAIProvider(SdkProvider):
    """Streams one Chat Completions request per `stream()` call; never retries by itself."""

    name = "openai"
    production_base_url = PRODUCTION_BASE_URL

    def _client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._api_key.reveal(),
            base_url=self._base_url,
            max_retries=0,
            timeout=client_timeout(self._timeout_s),
            http_client=http_client(self._timeout_s),
        )

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        return stream_chat_completions(self._client, request, LABEL)
