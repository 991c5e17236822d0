"""The Anthropic and OpenAI providers, through the real SDKs, against the fake provider server."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.loop.history import DocumentSession
from stockade.loop.hooks import StepKind
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner
from stockade.loop.state import TurnOutcome, TurnPhase, TurnState
from stockade.protocol.errors import ErrorCode, TransportReason
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
    is_terminal,
)
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.request import ChatRequest, ToolSpec
from stockade.protocol.retry import RetryPolicy
from stockade.providers.anthropic import AnthropicProvider
from stockade.providers.base import Provider
from stockade.providers.factory import create_provider
from stockade.providers.local import LocalProvider
from stockade.providers.openai import OpenAIProvider
from stockade.tools.registry import default_registry
from tests.conftest import examples
from tests.helpers.fake_provider import (
    FakeProviderServer,
    Reply,
    anthropic_error_frame,
    anthropic_frames,
    anthropic_sse,
    openai_sse,
    sse_body,
    stream_fixture,
)
from tests.unit.loop.fakes import base_model
from tests.unit.loop.scripted import RecordingHooks

ANTHROPIC_KEY = "sk-ant-api03-TESTKEYabcdef0123456789"
OPENAI_KEY = "sk-proj-TESTKEYabcdef0123456789"

REQUEST = ChatRequest(
    provider="test",
    model="test-model-1",
    system="You review threat models.",
    messages=(Message(role="user", content=(TextBlock(text="Review the gateway."),)),),
    tools=(
        ToolSpec(
            name="add_element",
            description="Add an element.",
            input_schema={
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"],
                "additionalProperties": False,
            },
        ),
    ),
    max_output_tokens=512,
)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeProviderServer]:
    with FakeProviderServer() as fake:
        yield fake


def anthropic(server: FakeProviderServer) -> AnthropicProvider:
    return AnthropicProvider(ANTHROPIC_KEY, model_base_url=server.url, timeout_s=5.0)


def openai_provider(server: FakeProviderServer) -> OpenAIProvider:
    return OpenAIProvider(OPENAI_KEY, model_base_url=server.url + "/v1", timeout_s=5.0)


PROVIDERS = {"anthropic": anthropic, "openai": openai_provider}


def collect(provider: Provider, request: ChatRequest = REQUEST) -> list[StreamEvent]:
    async def run() -> list[StreamEvent]:
        return [event async for event in provider.stream(request)]

    return asyncio.run(run())


def play(server: FakeProviderServer, name: str, *replies: Reply) -> list[StreamEvent]:
    server.script(list(replies))
    return collect(PROVIDERS[name](server))


def assert_one_terminal_at_end(events: list[StreamEvent]) -> None:
    assert events, "a stream must end with a terminal event"
    assert is_terminal(events[-1])
    assert not any(is_terminal(e) for e in events[:-1])


TEXT_EVENTS = [
    MessageStart(model="test-model-1"),
    TextDelta(text="Review "),
    TextDelta(text="the gateway."),
    Usage(input_tokens=12, output_tokens=9),
    MessageStop(stop_reason=StopReason.END_TURN),
]

TOOL_EVENTS = [
    MessageStart(model="test-model-1"),
    TextDelta(text="Adding it."),
    ToolCallStart(id="call_1", name="add_element"),
    ToolCallInputDelta(id="call_1", partial_json='{"type":"process",'),
    ToolCallInputDelta(id="call_1", partial_json='"name":"Gateway"}'),
    ToolCallComplete(id="call_1", name="add_element", input={"type": "process", "name": "Gateway"}),
    Usage(input_tokens=20, output_tokens=15),
    MessageStop(stop_reason=StopReason.TOOL_USE),
]

PARALLEL_EVENTS = [
    MessageStart(model="test-model-1"),
    TextDelta(text="Adding both."),
    ToolCallStart(id="call_1", name="add_element"),
    ToolCallInputDelta(id="call_1", partial_json='{"type":"process",'),
    ToolCallInputDelta(id="call_1", partial_json='"name":"Gateway"}'),
    ToolCallComplete(id="call_1", name="add_element", input={"type": "process", "name": "Gateway"}),
    ToolCallStart(id="call_2", name="add_data_flow"),
    ToolCallInputDelta(id="call_2", partial_json='{"from":"gw",'),
    ToolCallInputDelta(id="call_2", partial_json='"to":"db","protocol":"TLS"}'),
    ToolCallComplete(
        id="call_2", name="add_data_flow", input={"from": "gw", "to": "db", "protocol": "TLS"}
    ),
    Usage(input_tokens=30, output_tokens=25),
    MessageStop(stop_reason=StopReason.TOOL_USE),
]

EMPTY_ARGS_EVENTS = [
    MessageStart(model="test-model-1"),
    ToolCallStart(id="call_1", name="get_document_summary"),
    ToolCallComplete(id="call_1", name="get_document_summary", input={}),
    Usage(input_tokens=20, output_tokens=8),
    MessageStop(stop_reason=StopReason.TOOL_USE),
]


# --- recorded streams ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["anthropic", "openai"])
@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        ("text", TEXT_EVENTS),
        ("tool", TOOL_EVENTS),
        ("parallel_tools", PARALLEL_EVENTS),
        ("empty_args", EMPTY_ARGS_EVENTS),
    ],
)
def test_recorded_stream_maps_to_the_documented_events(
    server: FakeProviderServer, name: str, fixture: str, expected: list[StreamEvent]
) -> None:
    events = play(server, name, Reply.sse(stream_fixture(f"{name}_{fixture}.sse")))
    assert events == expected


@pytest.mark.parametrize("fixture", ["text", "tool", "parallel_tools", "empty_args", "multibyte"])
def test_identical_answers_from_both_providers_give_identical_events(
    server: FakeProviderServer, fixture: str
) -> None:
    from_anthropic = play(
        server, "anthropic", Reply.sse(stream_fixture(f"anthropic_{fixture}.sse"))
    )
    from_openai = play(server, "openai", Reply.sse(stream_fixture(f"openai_{fixture}.sse")))
    assert from_anthropic == from_openai
    assert_one_terminal_at_end(from_anthropic)


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("Only words.", []),
        (["Two ", "parts"], [("c1", "add_threat", {"action": "add_threat", "n": [1, 2]})]),
        (None, [("c1", "a", {}), ("c2", "b", {"x": "é☕"}), ("c3", "c", {"y": None})]),
    ],
)
def test_builder_answers_match_across_providers(
    server: FakeProviderServer, text: Any, calls: list[Any]
) -> None:
    from_anthropic = play(server, "anthropic", Reply.sse(anthropic_sse(text, calls)))
    from_openai = play(server, "openai", Reply.sse(openai_sse(text, calls)))
    assert from_anthropic == from_openai
    completes = [e for e in from_anthropic if isinstance(e, ToolCallComplete)]
    assert [(c.id, c.name, c.input) for c in completes] == [tuple(c) for c in calls]


def test_cached_input_is_counted_inside_all_input_by_both_providers(
    server: FakeProviderServer,
) -> None:
    # One request of 1000 input tokens, 600 read from the cache and 100 written to it.
    # Anthropic reports the three parts apart; Chat Completions counts the cached part inside
    # the prompt total. Governance prices `input - cached` and `cached` separately, so both
    # must arrive as the same all-input total with the cache reads as the cached part.
    expected = Usage(input_tokens=1000, output_tokens=9, cached_input_tokens=600)
    from_anthropic = play(
        server, "anthropic", Reply.sse(anthropic_sse("Hi.", usage=(300, 9), cache=(600, 100)))
    )
    from_openai = play(server, "openai", Reply.sse(openai_sse("Hi.", usage=(1000, 9), cached=600)))
    assert [e for e in from_anthropic if isinstance(e, Usage)] == [expected]
    assert from_anthropic == from_openai


def test_anthropic_cache_counts_repeated_in_message_delta_replace_the_start_counts(
    server: FakeProviderServer,
) -> None:
    frames = anthropic_frames("Hi.", usage=(300, 9), cache=(0, 0))
    name, stop_delta = frames[-2]
    assert name == "message_delta"
    stop_delta["usage"].update(
        input_tokens=300, cache_read_input_tokens=500, cache_creation_input_tokens=200
    )
    events = play(server, "anthropic", Reply.sse(sse_body(frames)))
    assert [e for e in events if isinstance(e, Usage)] == [
        Usage(input_tokens=1000, output_tokens=9, cached_input_tokens=500)
    ]


def test_unknown_anthropic_event_types_are_ignored(server: FakeProviderServer) -> None:
    events = play(server, "anthropic", Reply.sse(stream_fixture("anthropic_unknown_events.sse")))
    assert events == TEXT_EVENTS


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_an_undecodable_frame_is_a_notice_and_the_stream_continues(
    server: FakeProviderServer, name: str
) -> None:
    events = play(server, name, Reply.sse(stream_fixture(f"{name}_invalid_json.sse")))
    notices = [e for e in events if isinstance(e, StreamError)]
    assert len(notices) == 1
    assert notices[0].error.code is ErrorCode.MALFORMED_STREAM
    assert not notices[0].is_terminal
    assert [e for e in events if not isinstance(e, StreamError)] == TEXT_EVENTS


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_unparseable_tool_arguments_drop_only_that_call(
    server: FakeProviderServer, name: str
) -> None:
    events = play(server, name, Reply.sse(stream_fixture(f"{name}_bad_tool_args.sse")))
    notices = [e for e in events if isinstance(e, StreamError)]
    assert len(notices) == 1
    notice = notices[0]
    assert notice.error.code is ErrorCode.MALFORMED_STREAM and not notice.is_terminal
    # The stream-supplied tool name only ever appears in the redacted detail.
    assert "add_element" not in notice.error.message
    assert notice.error.provider_detail == "add_element"
    completes = [e for e in events if isinstance(e, ToolCallComplete)]
    assert [(c.id, c.input) for c in completes] == [("call_2", {})]
    assert events[-1] == MessageStop(stop_reason=StopReason.TOOL_USE)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_body_ending_without_its_terminal_frame_is_a_failure(
    server: FakeProviderServer, name: str
) -> None:
    events = play(server, name, Reply.sse(stream_fixture(f"{name}_truncated.sse")))
    assert not any(isinstance(e, MessageStop) for e in events)
    last = events[-1]
    assert isinstance(last, StreamError)
    assert last.error.code is ErrorCode.MALFORMED_STREAM and last.ends_stream
    assert "before it was complete" in last.error.message
    assert_one_terminal_at_end(events)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_notice_does_not_hide_a_later_truncation(server: FakeProviderServer, name: str) -> None:
    body = stream_fixture(f"{name}_invalid_json.sse")
    terminal_frame = b"event: message_stop" if name == "anthropic" else b"data: [DONE]"
    events = play(server, name, Reply.sse(body[: body.index(terminal_frame)]))
    errors = [e for e in events if isinstance(e, StreamError)]
    assert [e.is_terminal for e in errors] == [False, True]
    assert errors[-1].error.code is ErrorCode.MALFORMED_STREAM and errors[-1] is events[-1]


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_silent_stream_times_out_as_a_transport_error(
    server: FakeProviderServer, name: str
) -> None:
    body = stream_fixture(f"{name}_text.sse")
    server.script([Reply.sse(body[: body.index(b"\n\n") + 2], stall=True)])
    provider: Provider = (
        AnthropicProvider(ANTHROPIC_KEY, model_base_url=server.url, timeout_s=0.3)
        if name == "anthropic"
        else OpenAIProvider(OPENAI_KEY, model_base_url=server.url + "/v1", timeout_s=0.3)
    )
    events = collect(provider)
    assert events[0] == MessageStart(model="test-model-1")
    last = events[-1]
    assert isinstance(last, StreamError) and last.is_terminal
    assert last.error.code is ErrorCode.TRANSPORT
    assert last.error.transport_reason is TransportReason.NETWORK


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_in_stream_rate_limit_after_text_is_rate_limited_and_redacted(
    server: FakeProviderServer, name: str
) -> None:
    events = play(server, name, Reply.sse(stream_fixture(f"{name}_rate_limit_in_stream.sse")))
    assert events[:2] == [MessageStart(model="test-model-1"), TextDelta(text="Partial ")]
    last = events[-1]
    assert isinstance(last, StreamError) and last.is_terminal
    assert last.error.code is ErrorCode.RATE_LIMITED
    assert last.error.provider_detail is not None
    assert "[redacted-key]" in last.error.provider_detail
    assert "LEAKED" not in last.error.provider_detail
    assert len(events) == 3


def test_in_stream_provider_error_is_terminal(server: FakeProviderServer) -> None:
    events = play(
        server, "anthropic", Reply.sse(stream_fixture("anthropic_overloaded_in_stream.sse"))
    )
    last = events[-1]
    assert isinstance(last, StreamError) and last.is_terminal
    assert last.error.code is ErrorCode.HTTP_STATUS
    assert last.error.provider_detail == "overloaded_error: Overloaded"


def turn_through(server: FakeProviderServer, name: str, *replies: Reply,
                 limits: TurnLimits | None = None) -> tuple[TurnState, RecordingHooks]:
    """One turn through the runner (the one place requests are retried) and the real SDK."""
    server.script(list(replies))
    hooks = RecordingHooks()
    runner = TurnRunner(
        PROVIDERS[name](server), default_registry(), DocumentSession(base_model()),
        hooks=hooks, limits=limits or TurnLimits(), model="test-model-1", provider_name=name,
        system_prompt="You review threat models.", request_check=None,
        retry_policy=RetryPolicy(base_delay_ms=1, max_delay_ms=2))
    return asyncio.run(runner.submit("Review the gateway.")), hooks


def test_an_overload_before_any_output_is_retried(server: FakeProviderServer) -> None:
    overloaded = sse_body([anthropic_error_frame("overloaded_error", "Overloaded")])
    state, hooks = turn_through(server, "anthropic", Reply.sse(overloaded),
                                Reply.sse(stream_fixture("anthropic_text.sse")))
    assert state.outcome is TurnOutcome.COMPLETED and len(server.requests) == 2
    [retry] = [s.payload for s in hooks.steps if s.kind is StepKind.MODEL_RETRY]
    assert retry["status"] == 529


# --- chunking ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_frames_split_mid_line_and_mid_character_decode_identically(
    server: FakeProviderServer, name: str
) -> None:
    body = stream_fixture(f"{name}_multibyte.sse")
    whole = play(server, name, Reply.sse(body))
    coffee = body.index("☕".encode())
    emoji = body.index("😀".encode())
    cuts = [7, 30, coffee + 1, coffee + 2, emoji + 1, emoji + 3, body.index(b"\n\n") + 1]
    split = play(server, name, Reply.sse(body, splits=cuts, delay_s=0.002))
    assert split == whole
    assert "".join(e.text for e in whole if isinstance(e, TextDelta)) == "café ☕ review — 😀 ok"


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_chunking_of_a_valid_stream_yields_the_same_events(
    server: FakeProviderServer, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(["anthropic", "openai"]), label="provider")
    fixture = data.draw(st.sampled_from(["tool", "parallel_tools", "multibyte"]), label="fixture")
    body = stream_fixture(f"{name}_{fixture}.sse")
    cuts = data.draw(
        st.lists(st.integers(min_value=1, max_value=len(body) - 1), max_size=12), label="cuts"
    )
    expected = {
        "tool": TOOL_EVENTS,
        "parallel_tools": PARALLEL_EVENTS,
    }.get(fixture)
    events = play(server, name, Reply.sse(body, splits=cuts))
    if expected is not None:
        assert events == expected
    else:
        assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
            "café ☕ review — 😀 ok"
        )
        assert_one_terminal_at_end(events)


# --- HTTP failures -------------------------------------------------------------------------------


class _CapturingHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.setFormatter(logging.Formatter("%(name)s %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.mark.parametrize(("name", "key"), [("anthropic", ANTHROPIC_KEY), ("openai", OPENAI_KEY)])
def test_a_401_echoing_the_key_never_leaks_it(
    server: FakeProviderServer, name: str, key: str
) -> None:
    handler = _CapturingHandler()
    root = logging.getLogger()
    previous = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        events = play(
            server,
            name,
            Reply.status_reply(
                401,
                '{"error":{"type":"authentication_error","message":"invalid x-api-key"}}',
                echo_auth=True,
            ),
        )
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, StreamError) and error.is_terminal
    assert error.error.code is ErrorCode.HTTP_STATUS and error.error.status == 401
    assert "API key" in error.error.message
    assert error.error.provider_detail is not None
    assert "[redacted-key]" in error.error.provider_detail
    secret_part = key.split("-")[-1]
    for text in (repr(events), str(error.error.to_json()), *handler.lines):
        assert key not in text and secret_part not in text
    # The key travelled only in the credential header, never in the URL or the body.
    sent = server.requests[0]
    assert secret_part not in sent.path and secret_part not in sent.raw_body.decode()


def test_the_key_is_not_in_the_provider_repr_or_its_attributes() -> None:
    for provider, key in (
        (AnthropicProvider(ANTHROPIC_KEY), ANTHROPIC_KEY),
        (OpenAIProvider(OPENAI_KEY), OPENAI_KEY),
        (LocalProvider("http://127.0.0.1:1/v1", api_key=OPENAI_KEY), OPENAI_KEY),
    ):
        assert key not in repr(provider) and key not in str(provider)
        assert key not in repr(vars(provider))


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_429_is_retried_after_the_hinted_delay_then_succeeds(
    server: FakeProviderServer, name: str
) -> None:
    state, hooks = turn_through(
        server, name, Reply.status_reply(429, "slow down", headers={"retry-after": "0"}),
        Reply.sse(stream_fixture(f"{name}_text.sse")))
    assert state.outcome is TurnOutcome.COMPLETED and len(server.requests) == 2
    [retry] = [s.payload for s in hooks.steps if s.kind is StepKind.MODEL_RETRY]
    assert retry["retry_after_ms"] == 0 and retry["status"] == 429


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_429_every_attempt_ends_the_turn_with_one_redacted_rate_limited_error(
    server: FakeProviderServer, name: str
) -> None:
    busy = Reply.status_reply(
        429, "slow down, key sk-live-RL429SECRETabc", headers={"retry-after": "0"}
    )
    state, hooks = turn_through(server, name, busy, busy, busy,
                                limits=TurnLimits(max_retries=2))
    assert len(server.requests) == 3 and hooks.kinds().count(StepKind.MODEL_RETRY) == 2
    assert state.outcome is TurnOutcome.FAILED
    assert state.error is not None and state.error.code is ErrorCode.RATE_LIMITED
    assert "RL429SECRET" not in (state.error.provider_detail or "")


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_401_is_never_retried(server: FakeProviderServer, name: str) -> None:
    state, hooks = turn_through(server, name, Reply.status_reply(401, "no"),
                                Reply.sse(stream_fixture(f"{name}_text.sse")))
    assert state.outcome is TurnOutcome.FAILED and len(server.requests) == 1
    assert StepKind.MODEL_RETRY not in hooks.kinds()


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_429_carries_rate_limited_code_and_retry_after(
    server: FakeProviderServer, name: str
) -> None:
    events = play(
        server,
        name,
        Reply.status_reply(429, "quota sk-live-abcdefSECRET", headers={"retry-after": "7"}),
    )
    error = events[0]
    assert isinstance(error, StreamError)
    assert error.error.code is ErrorCode.RATE_LIMITED
    assert error.error.retry_after_ms == 7000 and error.error.status == 429
    assert "SECRET" not in (error.error.provider_detail or "")


def test_a_date_retry_after_in_the_past_means_no_wait(server: FakeProviderServer) -> None:
    events = play(
        server,
        "openai",
        Reply.status_reply(503, "", headers={"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}),
    )
    error = events[0]
    assert isinstance(error, StreamError)
    assert error.error.retry_after_ms == 0 and error.error.provider_detail is None
    assert error.error.status == 503


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_500_then_success_is_retried_once(server: FakeProviderServer, name: str) -> None:
    state, hooks = turn_through(server, name, Reply.status_reply(500, "boom"),
                                Reply.sse(stream_fixture(f"{name}_text.sse")))
    assert state.outcome is TurnOutcome.COMPLETED
    assert hooks.kinds().count(StepKind.MODEL_RETRY) == 1 and len(server.requests) == 2


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_failure_after_the_first_text_delta_is_not_retried(
    server: FakeProviderServer, name: str
) -> None:
    body = stream_fixture(f"{name}_text.sse")
    # Drop the connection right after the frame holding the first text delta.
    cut = body.index(b"\n\n", body.index(b"Review ")) + 2
    state, hooks = turn_through(server, name, Reply.sse(body, splits=[cut], drop_after=cut),
                                Reply.sse(body))
    assert state.outcome is TurnOutcome.FAILED and len(server.requests) == 1
    assert state.error is not None and state.error.code is ErrorCode.TRANSPORT
    assert StepKind.MODEL_RETRY not in hooks.kinds()


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_connection_dropped_before_any_event_is_a_transport_error(
    server: FakeProviderServer, name: str
) -> None:
    events = play(server, name, Reply.sse(b"event: message_start\n", drop_after=5))
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, StreamError) and error.is_terminal
    assert error.error.code is ErrorCode.TRANSPORT
    assert error.error.transport_reason in (None, TransportReason.NETWORK)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_redirect_is_refused_and_never_followed(server: FakeProviderServer, name: str) -> None:
    events = play(
        server,
        name,
        Reply.redirect(server.url + "/elsewhere"),
        Reply.sse(stream_fixture(f"{name}_text.sse")),
    )
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, StreamError) and error.is_terminal
    assert error.error.code is ErrorCode.TRANSPORT
    assert error.error.transport_reason is TransportReason.REFUSED
    assert "redirect" in error.error.message
    assert len(server.requests) == 1  # the redirect target was never asked
    assert server.url not in error.error.message


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_an_unreachable_provider_is_a_transport_error_without_the_url(name: str) -> None:
    with FakeProviderServer() as gone:
        url = gone.url
    provider: Provider = (
        AnthropicProvider(ANTHROPIC_KEY, model_base_url=url, timeout_s=2.0)
        if name == "anthropic"
        else OpenAIProvider(OPENAI_KEY, model_base_url=url + "/v1", timeout_s=2.0)
    )
    events = collect(provider)
    assert len(events) == 1
    error = events[0]
    assert isinstance(error, StreamError) and error.error.code is ErrorCode.TRANSPORT
    assert "127.0.0.1" not in error.error.message


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_cancelling_the_consumer_closes_the_connection_and_lets_the_cancellation_through(
    server: FakeProviderServer, name: str
) -> None:
    body = stream_fixture(f"{name}_text.sse")
    partial = body[: body.index(b"\n\n", body.index(b"Review ")) + 2]
    server.script([Reply.sse(partial, stall=True)])
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in PROVIDERS[name](server).stream(REQUEST):
            seen.append(event)

    async def run() -> bool:
        task = asyncio.create_task(consume())
        for _ in range(200):
            if any(isinstance(e, TextDelta) for e in seen):
                break
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return task.cancelled()

    assert asyncio.run(run())
    assert seen == [MessageStart(model="test-model-1"), TextDelta(text="Review ")]
    for _ in range(200):
        if server.hangups:
            break
        time.sleep(0.01)
    assert server.hangups == 1


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_cancelling_while_waiting_for_the_first_bytes_lets_the_cancellation_through(
    server: FakeProviderServer, name: str
) -> None:
    server.script([Reply.sse(b"", splits=(), delay_s=0.0, stall=True)])
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in PROVIDERS[name](server).stream(REQUEST):
            seen.append(event)

    async def run() -> bool:
        task = asyncio.create_task(consume())
        await asyncio.sleep(0.3)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return task.cancelled()

    assert asyncio.run(run())
    assert seen == []
    for _ in range(200):
        if server.hangups:
            break
        time.sleep(0.01)
    assert server.hangups == 1


def runner_on_a_stalled_answer(
    server: FakeProviderServer, name: str, limits: TurnLimits
) -> TurnRunner:
    body = stream_fixture(f"{name}_text.sse")
    partial = body[: body.index(b"\n\n", body.index(b"Review ")) + 2]
    server.script([Reply.sse(partial, stall=True)])
    return TurnRunner(
        PROVIDERS[name](server),
        default_registry(),
        DocumentSession(base_model()),
        hooks=RecordingHooks(),
        limits=limits,
        model="test-model-1",
        provider_name=name,
        system_prompt="You review threat models.",
        clock_ms=lambda: int(asyncio.get_running_loop().time() * 1000),
        request_check=None,
    )


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_the_turn_deadline_mid_answer_bounds_the_turn_rather_than_cancelling_it(
    server: FakeProviderServer, name: str
) -> None:
    runner = runner_on_a_stalled_answer(server, name, TurnLimits(deadline_ms=500))
    state = asyncio.run(asyncio.wait_for(runner.submit("Review the gateway."), timeout=10))
    assert (state.outcome, state.reason) == (TurnOutcome.BOUNDED, "deadline")
    assert state.violations == ()


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_user_stop_mid_answer_cancels_the_turn_without_a_late_event(
    server: FakeProviderServer, name: str
) -> None:
    runner = runner_on_a_stalled_answer(server, name, TurnLimits())

    async def scenario() -> TurnState:
        turn = asyncio.create_task(runner.submit("Review the gateway."))
        for _ in range(500):
            if runner.state.phase is TurnPhase.STREAMING:
                break
            await asyncio.sleep(0.01)
        runner.cancel()
        return await asyncio.wait_for(turn, timeout=10)

    state = asyncio.run(scenario())
    assert state.outcome is TurnOutcome.CANCELLED
    assert state.violations == ()


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_a_response_over_the_size_limit_is_stopped(
    server: FakeProviderServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("stockade.providers.streaming.MAX_STREAM_BYTES", 400)
    body = stream_fixture(f"{name}_parallel_tools.sse")
    events = play(server, name, Reply.sse(body, splits=range(100, len(body), 100)))
    last = events[-1]
    assert isinstance(last, StreamError) and last.is_terminal
    assert last.error.transport_reason is TransportReason.RESPONSE_TOO_LARGE
    assert not any(isinstance(e, MessageStop) for e in events)


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_an_unterminated_overlong_line_ends_the_stream(
    server: FakeProviderServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("stockade.providers.sse.MAX_LINE_LENGTH", 1000)
    events = play(server, name, Reply.sse(b"data: " + b"x" * 5000, splits=[2000]))
    [error] = events
    assert isinstance(error, StreamError) and error.ends_stream
    assert error.error.code is ErrorCode.MALFORMED_STREAM


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_the_factory_reaches_the_configured_endpoint_and_no_environment_switch(
    server: FakeProviderServer, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    server.script([Reply.sse(stream_fixture(f"{name}_tool.sse"))])
    url = server.url if name == "anthropic" else f"{server.url}/v1"
    assert collect(create_provider(name, base_url=url)) == TOOL_EVENTS
    assert server.requests[0].headers["authorization"].endswith("TESTKEYabcdef0123456789") \
        or server.requests[0].headers.get("x-api-key", "").endswith("TESTKEYabcdef0123456789")
    monkeypatch.setenv("STOCKADE_TEST_API_BASE", server.url)
    monkeypatch.setenv("STOCKADE_TESTING", "1")
    assert server.url not in repr(create_provider(name))


# --- request bodies ------------------------------------------------------------------------------

HISTORY = ChatRequest(
    provider="test",
    model="test-model-1",
    system="sys",
    messages=(
        Message(role="user", content=(TextBlock(text="Add a gateway."),)),
        Message(
            role="assistant",
            content=(
                TextBlock(text="Adding it."),
                ToolCallBlock(id="call_1", name="add_element", input={"name": "Gateway"}),
            ),
        ),
        Message(
            role="user",
            content=(ToolResultBlock(tool_call_id="call_1", content="added", is_error=False),),
        ),
    ),
    tools=REQUEST.tools,
    max_output_tokens=256,
)


def test_anthropic_request_body_carries_history_tools_and_results(
    server: FakeProviderServer,
) -> None:
    server.script([Reply.sse(stream_fixture("anthropic_text.sse"))])
    collect(anthropic(server), HISTORY)
    sent = server.requests[0]
    assert sent.path == "/v1/messages"
    body = sent.body
    assert body["model"] == "test-model-1" and body["max_tokens"] == 256
    assert body["stream"] is True and body["system"] == "sys"
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Add a gateway."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Adding it."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "add_element",
                    "input": {"name": "Gateway"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": "added",
                    "is_error": False,
                }
            ],
        },
    ]
    assert body["tools"] == [
        {
            "name": "add_element",
            "description": "Add an element.",
            "input_schema": REQUEST.tools[0].input_schema,
        }
    ]


def test_openai_request_body_carries_history_tools_and_results(
    server: FakeProviderServer,
) -> None:
    server.script([Reply.sse(stream_fixture("openai_text.sse"))])
    collect(openai_provider(server), HISTORY)
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    body = sent.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_completion_tokens"] == 256
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Add a gateway."},
        {
            "role": "assistant",
            "content": "Adding it.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add_element", "arguments": '{"name": "Gateway"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "added"},
    ]
    assert body["tools"][0]["function"]["name"] == "add_element"


def test_local_provider_streams_from_the_configured_url_without_a_key(
    server: FakeProviderServer,
) -> None:
    server.script([Reply.sse(stream_fixture("openai_tool.sse"))])
    events = collect(LocalProvider(server.url + "/v1", timeout_s=5.0))
    assert events == TOOL_EVENTS
    sent = server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert "authorization" not in sent.headers


def test_local_provider_sends_an_optional_key(server: FakeProviderServer) -> None:
    server.script([Reply.sse(stream_fixture("openai_text.sse"))])
    events = collect(LocalProvider(server.url + "/v1", api_key="local-secret", timeout_s=5.0))
    assert events == TEXT_EVENTS
    assert server.requests[0].headers["authorization"] == "Bearer local-secret"


def test_local_provider_refuses_a_url_that_is_not_http() -> None:
    with pytest.raises(ValueError, match="http"):
        LocalProvider("file:///etc/passwd")
