"""Retry policy for provider streams: transient failures only, and only before any output."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from stockade.protocol.errors import is_retriable, malformed
from stockade.protocol.events import StreamError, StreamEvent
from stockade.protocol.request import ChatRequest

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


class _StreamSource(Protocol):
    """Structural twin of `stockade.providers.base.Provider` (protocol must not import providers)."""

    name: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently a request is retried.

    `max_attempts` counts the first try, so 1 disables retrying. `max_retry_after_ms` bounds a
    provider's retry-after hint so a hostile or confused server cannot park a turn for hours.
    """

    max_attempts: int = 3
    base_delay_ms: int = 500
    max_delay_ms: int = 10_000
    max_retry_after_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay_ms < 0 or self.max_delay_ms < 0 or self.max_retry_after_ms < 0:
            raise ValueError("retry delays must not be negative")


NO_RETRY = RetryPolicy(max_attempts=1)


def retry_delay_ms(attempt: int, policy: RetryPolicy, retry_after_ms: int | None = None) -> int:
    """Milliseconds to wait after failed attempt number `attempt` (1-based).

    Capped exponential backoff without jitter; a retry-after hint wins when it is longer than
    the backoff, clamped to `policy.max_retry_after_ms`, and never shortens the backoff.
    """
    if attempt < 1:
        raise ValueError("attempt numbers start at 1")
    # Past 2**40 the product dwarfs any sane cap; stopping the exponent keeps the integers small.
    exponent = min(attempt - 1, 40)
    backoff = min(policy.base_delay_ms * (2**exponent), policy.max_delay_ms)
    if retry_after_ms is None:
        return backoff
    return max(min(max(retry_after_ms, 0), policy.max_retry_after_ms), backoff)


class RetryingProvider:
    """Wraps any provider; re-sends a request whose attempt failed transiently before any output.

    An attempt is retried only when its very first event is a terminal `StreamError` that
    `is_retriable` accepts (rate limit, HTTP 5xx, network failure) and attempts remain. Once any
    event has been forwarded the attempt is committed: later failures reach the consumer as-is,
    because the consumer may already have shown or acted on the output.
    """

    def __init__(
        self,
        inner: _StreamSource,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self.inner = inner
        self.policy = policy if policy is not None else RetryPolicy()
        self.sleep = sleep
        self.name = inner.name

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        attempt = 1
        while True:
            events = self.inner.stream(request)
            try:
                first = await anext(events, None)
                if first is None:
                    # The provider contract promises a terminal event; its absence is a failure.
                    yield StreamError(
                        error=malformed("The provider ended its answer without sending anything."),
                        ends_stream=True,
                    )
                    return
                retry = (
                    isinstance(first, StreamError)
                    and first.is_terminal
                    and is_retriable(first.error)
                    and attempt < self.policy.max_attempts
                )
                if not retry:
                    yield first
                    async for event in events:
                        yield event
                    return
            finally:
                # Closing the abandoned attempt releases its connection before we sleep.
                close = getattr(events, "aclose", None)
                if close is not None:
                    await close()

            assert isinstance(first, StreamError)
            delay = retry_delay_ms(attempt, self.policy, first.error.retry_after_ms)
            log.info(
                "%s: transient %s failure before any output; retrying in %d ms (attempt %d of %d)",
                self.name,
                first.error.code.value,
                delay,
                attempt + 1,
                self.policy.max_attempts,
            )
            # A cancellation here propagates, as it does from the providers: the canceller
            # (a user stop or the turn deadline) decides what the stop means.
            await self.sleep(delay / 1000)
            attempt += 1
