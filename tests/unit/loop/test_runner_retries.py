"""Retries in the turn loop itself: only before the first event, only transient failures,
with backoff or the provider's `retry-after` (clamped to the deadline), each attempt a new
permit and audit step, the wait cut short by Stop."""

from __future__ import annotations

import asyncio
import random
import time

from stockade.loop.history import DocumentSession
from stockade.loop.hooks import StepKind
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner
from stockade.loop.state import ToolSet, TurnOutcome, TurnPhase
from stockade.protocol.errors import ErrorCode, ProtocolError, http_status, transport
from stockade.protocol.events import MessageStart, StreamError, TextDelta
from stockade.protocol.retry import RetryPolicy
from tests.unit.loop.fakes import base_model
from tests.unit.loop.scripted import RecordingHooks, ScriptedProvider, text_reply


def failure(error: ProtocolError) -> list[StreamError]:
    return [StreamError(error)]


def runner_for(scripts: list[list], *, policy: RetryPolicy, limits: TurnLimits | None = None,
               hooks: RecordingHooks | None = None) -> tuple[TurnRunner, ScriptedProvider,
                                                             RecordingHooks]:
    provider = ScriptedProvider(scripts)
    hooks = hooks or RecordingHooks()
    runner = TurnRunner(provider, ToolSet(), DocumentSession(base_model()), hooks=hooks,
                        limits=limits or TurnLimits(), model="m", provider_name="scripted",
                        request_check=None, retry_policy=policy, rng=random.Random(1))
    return runner, provider, hooks


def test_a_retry_after_hint_is_waited_out_before_the_request_is_sent_again() -> None:
    limited = http_status("Anthropic", 429, retry_after_ms=300)
    runner, provider, hooks = runner_for([failure(limited), text_reply("ok")],
                                         policy=RetryPolicy(base_delay_ms=0, max_delay_ms=0))
    began = time.monotonic()
    state = asyncio.run(runner.submit("hi"))
    elapsed = time.monotonic() - began
    assert state.outcome is TurnOutcome.COMPLETED and len(provider.requests) == 2
    assert elapsed >= 0.3
    [retry] = [s for s in hooks.steps if s.kind is StepKind.MODEL_RETRY]
    assert retry.payload == {"iteration": 1, "attempt": 1, "code": "rate_limited", "status": 429,
                             "retry_after_ms": 300, "delay_ms": 300}
    # Every attempt asked for its own permit and was recorded as its own request.
    assert hooks.requests == 2
    requests = [s.payload for s in hooks.steps if s.kind is StepKind.MODEL_REQUEST]
    assert [r["attempt"] for r in requests] == [1, 2]


def test_server_trouble_and_overload_are_retried_with_backoff() -> None:
    for status in (503, 529, 500, 502, 504, 408, 409):
        runner, provider, hooks = runner_for(
            [failure(http_status("Anthropic", status)), text_reply("ok")],
            policy=RetryPolicy(base_delay_ms=40, max_delay_ms=40))
        state = asyncio.run(runner.submit("hi"))
        assert state.outcome is TurnOutcome.COMPLETED, status
        assert len(provider.requests) == 2
        [retry] = [s for s in hooks.steps if s.kind is StepKind.MODEL_RETRY]
        assert 0 <= retry.payload["delay_ms"] <= 40 and retry.payload["status"] == status


def test_requests_that_would_fail_again_are_sent_once() -> None:
    for status in (400, 401, 403, 404, 422):
        runner, provider, hooks = runner_for(
            [failure(http_status("Anthropic", status)), text_reply("never")],
            policy=RetryPolicy(base_delay_ms=0, max_delay_ms=0))
        state = asyncio.run(runner.submit("hi"))
        assert state.outcome is TurnOutcome.FAILED and len(provider.requests) == 1, status
        assert StepKind.MODEL_RETRY not in hooks.kinds()


def test_a_provider_that_always_fails_stops_within_the_retry_budget() -> None:
    runner, provider, hooks = runner_for(
        [failure(http_status("Anthropic", 503)) for _ in range(10)],
        policy=RetryPolicy(base_delay_ms=1, max_delay_ms=2), limits=TurnLimits(max_retries=3))
    state = asyncio.run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.FAILED and state.reason == "provider_error"
    assert len(provider.requests) == 4 and state.budget.retries_used == 3
    assert state.error is not None and state.error.status == 503
    assert hooks.kinds().count(StepKind.MODEL_RETRY) == 3
    assert all(failed for _permit, _usage, failed in hooks.settled)


def test_a_failure_after_the_first_event_is_never_retried() -> None:
    late = [MessageStart("m"), TextDelta("partial"), StreamError(transport("Anthropic"))]
    runner, provider, _ = runner_for([late, text_reply("never")],
                                     policy=RetryPolicy(base_delay_ms=0, max_delay_ms=0))
    state = asyncio.run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.FAILED and len(provider.requests) == 1


def test_the_wait_is_clamped_to_the_deadline() -> None:
    limited = http_status("Anthropic", 429, retry_after_ms=60_000)
    runner, provider, hooks = runner_for([failure(limited), text_reply("never")],
                                         policy=RetryPolicy(),
                                         limits=TurnLimits(deadline_ms=300))
    began = time.monotonic()
    state = asyncio.run(runner.submit("hi"))
    assert time.monotonic() - began < 5
    assert state.outcome is TurnOutcome.BOUNDED and state.reason == "deadline"
    assert len(provider.requests) == 1
    [retry] = [s for s in hooks.steps if s.kind is StepKind.MODEL_RETRY]
    assert retry.payload["delay_ms"] <= 300


def test_stop_during_the_wait_cancels_the_turn_at_once() -> None:
    limited = http_status("Anthropic", 429, retry_after_ms=30_000)
    runner, provider, _ = runner_for([failure(limited), text_reply("never")],
                                     policy=RetryPolicy())

    async def scenario() -> tuple[float, TurnPhase]:
        task = asyncio.ensure_future(runner.submit("hi"))
        while len(provider.requests) < 1:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        began = time.monotonic()
        runner.cancel()
        state = await asyncio.wait_for(task, timeout=5)
        return time.monotonic() - began, state.phase

    waited, phase = asyncio.run(scenario())
    assert phase is TurnPhase.SETTLED and waited < 1
    assert runner.state.outcome is TurnOutcome.CANCELLED and len(provider.requests) == 1


def test_a_transport_failure_before_any_output_is_retried() -> None:
    runner, provider, _ = runner_for([failure(transport("Anthropic")), text_reply("ok")],
                                     policy=RetryPolicy(base_delay_ms=1, max_delay_ms=1))
    state = asyncio.run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.COMPLETED and len(provider.requests) == 2


def test_an_unknown_error_code_is_not_retried() -> None:
    runner, provider, _ = runner_for(
        [failure(ProtocolError(ErrorCode.MALFORMED_STREAM, "garbled")), text_reply("never")],
        policy=RetryPolicy(base_delay_ms=0, max_delay_ms=0))
    assert asyncio.run(runner.submit("hi")).outcome is TurnOutcome.FAILED
    assert len(provider.requests) == 1
