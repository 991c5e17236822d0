"""Shared plumbing for the SDK providers: HTTP client, error translation, frame-to-event loop."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import httpx2

from stockade.protocol import errors
from stockade.protocol.errors import ErrorCode, ProtocolError, TransportReason
from stockade.protocol.events import (
    StreamError,
    StreamEvent,
    ToolCallComplete,
    is_terminal,
)
from stockade.protocol.retry import parse_retry_after
from stockade.providers.sse import SseDecoder, SseFrame, SseOverflow
from stockade.secrets.secret_str import SecretStr

log = logging.getLogger(__name__)

MAX_STREAM_BYTES = 50 * 1024 * 1024
"""Cap on one streamed response; a runaway or hostile body must not exhaust memory."""

MAX_ERROR_BODY_CHARS = 16 * 1024
"""Only this much of an error body is looked at before redaction."""

"""A `retry-after` hint is clamped to ten minutes."""

BAD_TOOL_ARGUMENTS_MESSAGE = (
    "A tool call arrived with arguments that are not valid JSON, so that call was dropped."
)


def notice(message: str, detail: str | None = None) -> StreamError:
    """A non-terminal notice about one frame or one call that could not be used."""
    return StreamError(error=errors.malformed(message, detail=detail))


def terminal(error: ProtocolError) -> StreamError:
    """An error that ends the stream (a `malformed_stream` one is marked as ending it)."""
    return StreamError(error=error, ends_stream=error.code is ErrorCode.MALFORMED_STREAM)


def token_count(value: Any) -> int:
    """A usage count from the stream; anything but a non-negative integer counts as zero."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


@dataclass(slots=True)
class PendingToolCall:
    """A tool call whose argument fragments are still arriving."""

    id: str
    name: str
    fragments: list[str] = field(default_factory=list)


def finish_tool_call(call: PendingToolCall) -> StreamEvent:
    """Parse the assembled arguments once: a complete call, or a notice that drops it.

    The stream-supplied tool name goes only into the redacted detail, never the message,
    because a hostile name must not be able to author text the user reads as ours.
    """
    raw = "".join(call.fragments) or "{}"
    try:
        parsed = json.loads(raw)
    except (ValueError, RecursionError):  # nesting past the parser's stack is damage too
        return notice(BAD_TOOL_ARGUMENTS_MESSAGE, call.name)
    return ToolCallComplete(id=call.id, name=call.name, input=parsed)


class FrameMapper(Protocol):
    """Turns one provider SSE frame into zero or more `StreamEvent`s."""

    def map_frame(self, frame: SseFrame) -> list[StreamEvent]: ...


class RedirectRefused(Exception):
    """Raised from the HTTP client's response hook so a 3xx is never followed."""


async def _refuse_redirects(response: httpx2.Response) -> None:
    if 300 <= response.status_code < 400:
        raise RedirectRefused("redirect refused")


def client_timeout(timeout_s: float) -> httpx2.Timeout:
    """Per-operation timeouts: `read` bounds the gap between chunks, not the whole answer."""
    return httpx2.Timeout(timeout_s, connect=min(timeout_s, 15.0))


def http_client(timeout_s: float) -> httpx2.AsyncClient:
    """An HTTP client that never follows a redirect (a 3xx becomes a transport error).

    `follow_redirects=False` alone would hand the SDK a 3xx response it reports as a status
    error; the response hook makes the refusal explicit even if a per-request option ever
    asked for redirects to be followed.
    """
    return httpx2.AsyncClient(
        timeout=client_timeout(timeout_s),
        follow_redirects=False,
        event_hooks={"response": [_refuse_redirects]},
    )


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """The exception classes of one SDK, so one translation serves both."""

    status: type[Exception]
    timeout: type[Exception]
    connection: type[Exception]


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _error_body(response: Any) -> str | None:
    try:
        text = response.text
    except Exception:  # the body may have been closed unread
        return None
    if not isinstance(text, str):
        return None
    return text[:MAX_ERROR_BODY_CHARS]


def translate_open_error(exc: Exception, label: str, sdk: SdkErrors) -> StreamError:
    """An exception raised while opening a stream, as one terminal error event.

    Library exception text is never used: it can carry the request URL, proxy credentials
    or an error body echoing the key.
    """
    if _caused_by(exc, RedirectRefused):
        return terminal(
            errors.transport(
                label,
                TransportReason.REFUSED,
                message=f"{label} answered with a redirect; Stockade never follows redirects.",
            )
        )
    if isinstance(exc, sdk.status):
        response = getattr(exc, "response", None)
        status = int(getattr(exc, "status_code", 0) or 0)
        headers = getattr(response, "headers", None)
        retry_after = parse_retry_after(headers.get("retry-after") if headers else None)
        return terminal(
            errors.http_status(
                label, status, detail=_error_body(response), retry_after_ms=retry_after
            )
        )
    if isinstance(exc, sdk.timeout) or _caused_by(exc, httpx2.TimeoutException):
        return terminal(errors.transport(label, message=f"{label} did not answer in time."))
    if isinstance(exc, sdk.connection):
        return terminal(errors.transport(label, message=f"{label} could not be reached."))
    log.debug("%s request failed before streaming: %s", label, type(exc).__name__)
    return terminal(
        errors.transport(
            label, TransportReason.REFUSED, message=f"The request to {label} could not be sent."
        )
    )


class SdkProvider:
    """What the Anthropic and OpenAI providers share: a wrapped key, an endpoint, a timeout."""

    production_base_url: ClassVar[str]

    def __init__(
        self,
        api_key: str | SecretStr,
        *,
        model_base_url: str | None = None,
        timeout_s: float = 60.0,
    ) -> None:
        # Held wrapped so a repr, a traceback's locals or a log line can never show it.
        self._api_key = api_key if isinstance(api_key, SecretStr) else SecretStr(api_key)
        self._base_url = model_base_url or self.production_base_url
        self._timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r})"


class SdkStream(Protocol):
    """The part of an SDK `AsyncStream` used here: its HTTP response, and `close()`."""

    response: httpx2.Response

    async def close(self) -> None: ...


async def stream_events(
    label: str,
    open_stream: Callable[[], Awaitable[SdkStream]],
    mapper: FrameMapper,
    sdk: SdkErrors,
) -> AsyncIterator[StreamEvent]:
    """Open one SDK stream and map its raw SSE body to events, ending with one terminal event.

    The SDKs' typed iterators stop the whole response at the first frame that is not JSON;
    reading the raw body here keeps that a per-frame notice, and lets a body that ends
    without its terminal frame be reported instead of looking like a short success.
    Cancelling the consuming task closes the response and lets the cancellation through: only
    the canceller knows whether it was a user stop or a deadline, and a turn runner that
    received an `Aborted` for its own deadline would settle the turn as a user stop.
    """
    try:
        sdk_stream = await open_stream()
    except Exception as exc:
        yield translate_open_error(exc, label, sdk)
        return
    decoder = SseDecoder()
    received = 0
    try:
        try:
            async for chunk in sdk_stream.response.aiter_bytes():
                received += len(chunk)
                if received > MAX_STREAM_BYTES:
                    yield terminal(errors.transport(label, TransportReason.RESPONSE_TOO_LARGE))
                    return
                try:
                    frames = decoder.feed(chunk)
                except SseOverflow:
                    yield terminal(
                        errors.malformed(f"{label} sent a line too long to be a real stream event.")
                    )
                    return
                for frame in frames:
                    for event in mapper.map_frame(frame):
                        yield event
                        if is_terminal(event):
                            return
        except httpx2.TimeoutException:
            yield terminal(
                errors.transport(label, message=f"{label} stopped sending before its answer ended.")
            )
            return
        except (httpx2.HTTPError, httpx2.StreamError, OSError) as exc:
            log.debug("%s stream read failed: %s", label, type(exc).__name__)
            yield terminal(
                errors.transport(
                    label, message=f"The connection to {label} was lost while its answer streamed."
                )
            )
            return
        yield terminal(errors.truncated(label))
    finally:
        # Runs before a cancellation leaves this generator, so the connection is released
        # then rather than at garbage collection; shielded so a second cancel cannot stop it.
        await asyncio.shield(_close_quietly(sdk_stream))


async def _close_quietly(sdk_stream: SdkStream) -> None:
    try:
        await sdk_stream.response.aclose()
    except Exception as exc:  # closing is best effort; the outcome was already reported
        log.debug("closing a provider response failed: %s", type(exc).__name__)
