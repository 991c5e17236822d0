"""The retry policy and `RetryingProvider` (spec 5.9, SEC-T-20); no test sleeps for real."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from stockade.protocol.errors import (
    ErrorCode,
    TransportReason,
    http_status,
    malformed,
    rate_limited,
    transport,
)
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
)
from stockade.protocol.messages import Message, TextBlock
from stockade.protocol.request import ChatRequest
from stockade.protocol.retry import RetryingProvider, RetryPolicy, retry_delay_ms

REQUEST = ChatRequest(
    provider="anthropic",
    model="claude-sonnet-5",
    system="s",
    messages=(
        Message(
            role="user",
            content=(TextBlock(text="hi")),
        ),
    ),
)
SUCCESS: list[StreamEvent] = [
    MessageStart(model="claude-sonnet-5"),
    TextDelta(text="ok"),
    MessageStop(stop_reason=StopReason.END_TURN),
]


class ScriptedProvider:
    """Plays one scripted event list per attempt and records how many attempts were made."""

    name = "scripted"

    def __init__(self, attempts: Sequence[Sequence[StreamEvent]]) -> None:
        self.attempts = list(attempts)
        self.calls = 0
        self.closed = 0

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        script = self.attempts[self.calls]
        self.calls += 1
        try:
            for event in script:
                yield event
        finally:
            self.closed += 1


class RecordingSleep:
    def __init__(self) -> None:
        self.waits_ms: list[int] = []

    async def __call__(self, seconds: float) -> None:
        self.waits_ms.append(round(seconds * 1000))


def collect(provider: RetryingProvider) -> list[StreamEvent]:
    async def drain() -> list[StreamEvent]:
        return [event async for event in provider.stream(REQUEST)]

    return asyncio.run(drain())


def err(error: object) -> StreamError:
    assert not isinstance(error, StreamError)
    return StreamError(error=error)  # type: ignore[arg-type]


# --- retry_delay_ms ------------------------------------------------------------------------


def test_backoff_doubles_per_attempt_from_the_base() -> None:
    policy = RetryPolicy()
    assert [retry_delay_ms(a, policy) for a in (1, 2, 3, 4)] == [500, 1000, 2000, 4000]


def test_backoff_is_capped_at_max_delay() -> None:
    policy = RetryPolicy(base_delay_ms=1000, max_delay_ms=3000)
    assert retry_delay_ms(9, policy) == 3000
    assert retry_delay_ms(10_000, policy) == 3000


def test_retry_after_hint_longer_than_backoff_is_honoured() -> None:
    assert retry_delay_ms(1, RetryPolicy(), retry_after_ms=5000) == 5000


def test_retry_after_hint_never_shortens_the_backoff() -> None:
    assert retry_delay_ms(3, RetryPolicy(), retry_after_ms=100) == 2000


def test_retry_after_hint_may_exceed_max_delay_but_is_clamped() -> None:
    policy = RetryPolicy(base_delay_ms=1000, max_delay_ms=3000)
    assert retry_delay_ms(9, policy, retry_after_ms=45_000) == 45_000
    assert retry_delay_ms(1, policy, retry_after_ms=999_999_999) == 60_000


def test_negative_hint_falls_back_to_backoff() -> None:
    assert retry_delay_ms(2, RetryPolicy(), retry_after_ms=-5) == 1000


def test_policy_and_attempt_numbers_are_validated() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay_ms=-1)
    with pytest.raises(ValueError):
        retry_delay_ms(0, RetryPolicy())


# --- RetryingProvider ----------------------------------------------------------------------


def test_rate_limit_then_success_waits_for_the_hint_and_retries_once() -> None:
    inner = ScriptedProvider([[err(rate_limited("Anthropic", retry_after_ms=2000))], SUCCESS])
    sleep = RecordingSleep()
    events = collect(RetryingProvider(inner, sleep=sleep))
    assert events == SUCCESS
    assert inner.calls == 2
    assert sleep.waits_ms == [2000]


def test_connection_failure_before_any_event_is_retried_after_backoff() -> None:
    inner = ScriptedProvider([[err(transport("OpenAI"))], SUCCESS])
    sleep = RecordingSleep()
    assert collect(RetryingProvider(inner, sleep=sleep)) == SUCCESS
    assert sleep.waits_ms == [500]


def test_server_errors_are_retried_up_to_the_attempt_bound_then_forwarded_once() -> None:
    failure = err(http_status("Anthropic", 500))
    inner = ScriptedProvider([[failure], [failure], [failure], SUCCESS])
    sleep = RecordingSleep()
    events = collect(RetryingProvider(inner, sleep=sleep))
    assert events == [failure]
    assert inner.calls == 3
    assert sleep.waits_ms == [500, 1000]


def test_every_abandoned_attempt_is_closed() -> None:
    failure = err(http_status("Anthropic", 503))
    inner = ScriptedProvider([[failure, MessageStop(stop_reason=StopReason.UNKNOWN)], SUCCESS])
    collect(RetryingProvider(inner, sleep=RecordingSleep()))
    assert inner.closed == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413])
def test_client_errors_are_never_retried(status: int) -> None:
    failure = err(http_status("Anthropic", status))
    inner = ScriptedProvider([[failure], SUCCESS])
    sleep = RecordingSleep()
    assert collect(RetryingProvider(inner, sleep=sleep)) == [failure]
    assert inner.calls == 1
    assert sleep.waits_ms == []


@pytest.mark.parametrize(
    "error",
    [
        malformed(),
        transport("Anthropic", TransportReason.RESPONSE_TOO_LARGE),
        transport("Anthropic", TransportReason.REFUSED),
    ],
)
def test_non_transient_failures_are_forwarded_immediately(error: object) -> None:
    failure = StreamError(error=error, ends_stream=True)  # type: ignore[arg-type]
    inner = ScriptedProvider([[failure], SUCCESS])
    assert collect(RetryingProvider(inner, sleep=RecordingSleep())) == [failure]
    assert inner.calls == 1


def test_failure_after_the_first_event_is_not_retried() -> None:
    failure = err(transport("Anthropic"))
    inner = ScriptedProvider([[TextDelta(text="partial"), failure], SUCCESS])
    sleep = RecordingSleep()
    events = collect(RetryingProvider(inner, sleep=sleep))
    assert events == [TextDelta(text="partial"), failure]
    assert inner.calls == 1
    assert sleep.waits_ms == []


def test_rate_limit_after_message_start_is_not_retried() -> None:
    failure = err(rate_limited("OpenAI"))
    inner = ScriptedProvider([[MessageStart(model="m"), failure], SUCCESS])
    assert collect(RetryingProvider(inner, sleep=RecordingSleep())) == [
        MessageStart(model="m"),
        failure,
    ]
    assert inner.calls == 1


def test_repeated_rate_limits_end_with_one_redacted_rate_limited_error() -> None:
    failure = err(
        rate_limited("OpenAI", detail="key sk-live-999abc over quota", retry_after_ms=1000)
    )
    inner = ScriptedProvider([[failure]] * 3)
    sleep = RecordingSleep()
    events = collect(RetryingProvider(inner, sleep=sleep))
    assert len(events) == 1
    only = events[0]
    assert isinstance(only, StreamError)
    assert only.error.code is ErrorCode.RATE_LIMITED
    assert only.error.provider_detail is not None
    assert "sk-" not in only.error.provider_detail
    assert sleep.waits_ms == [1000, 1000]


def test_a_policy_of_one_attempt_disables_retrying() -> None:
    failure = err(http_status("Anthropic", 502))
    inner = ScriptedProvider([[failure], SUCCESS])
    provider = RetryingProvider(inner, RetryPolicy(max_attempts=1), sleep=RecordingSleep())
    assert collect(provider) == [failure]


def test_an_inner_stream_with_no_events_ends_with_a_terminal_error() -> None:
    inner = ScriptedProvider([[]])
    events = collect(RetryingProvider(inner, sleep=RecordingSleep()))
    assert len(events) == 1
    only = events[0]
    assert isinstance(only, StreamError) and only.is_terminal
    assert only.error.code is ErrorCode.MALFORMED_STREAM


def test_cancellation_while_waiting_to_retry_propagates_without_retrying() -> None:
    async def cancelled_sleep(seconds: float) -> None:
        raise asyncio.CancelledError

    inner = ScriptedProvider([[err(http_status("Anthropic", 500))], SUCCESS])
    with pytest.raises(asyncio.CancelledError):
        collect(RetryingProvider(inner, sleep=cancelled_sleep))
    assert inner.calls == 1


def test_real_default_sleep_is_used_when_none_is_injected() -> None:
    inner = ScriptedProvider([[err(http_status("Anthropic", 500))], SUCCESS])
    provider = RetryingProvider(inner, RetryPolicy(base_delay_ms=0, max_delay_ms=0))
    assert provider.sleep is asyncio.sleep
    assert collect(provider) == SUCCESS


def test_wrapper_keeps_the_inner_provider_name() -> None:
    assert RetryingProvider(ScriptedProvider([])).name == "scripted"


def test_cancelling_the_consumer_during_the_wait_cancels_it_instead_of_retrying() -> None:
    inner = ScriptedProvider([[err(http_status("Anthropic", 503))], SUCCESS])
    waiting = asyncio.Event()

    async def slow_sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.Event().wait()  # never set: only cancellation ends this wait

    provider = RetryingProvider(inner, sleep=slow_sleep)
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in provider.stream(REQUEST):
            seen.append(event)

    async def scenario() -> bool:
        task = asyncio.create_task(consume())
        await waiting.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return task.cancelled()

    assert asyncio.run(scenario())
    assert seen == []
    assert inner.calls == 1
