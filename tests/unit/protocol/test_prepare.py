"""prepare_request: preflight, then budgeting against the chosen model's window."""

from __future__ import annotations

import pytest

from stockade.protocol.errors import ErrorCode, ProtocolException
from stockade.protocol.prepare import prepare_request
from stockade.protocol.request import ChatRequest, ToolSpec
from tests.unit.protocol.builders import assistant, calls, results, user

TOOL = ToolSpec(name="get_entity", description="d", input_schema={"type": "object"})


def test_a_request_that_fits_is_returned_unchanged() -> None:
    request = ChatRequest(
        provider="anthropic", model="claude-sonnet-5", system="s", messages=(user("hi"),)
    )
    assert prepare_request(request) is request


def test_old_history_is_dropped_in_whole_groups_to_fit_the_local_window() -> None:
    old = (user("x" * 100_000), calls("a"), results("a"), assistant("done"))
    request = ChatRequest(
        provider="local",
        model="llama3.1:8b",
        system="s",
        messages=(*old, user("now")),
        tools=(TOOL,),
        max_output_tokens=8192,
    )
    prepared = prepare_request(request)
    assert prepared.messages == (calls("a"), results("a"), assistant("done"), user("now"))
    assert prepared.tools == request.tools


def test_an_unlisted_model_without_tools_keeps_its_full_history() -> None:
    history = (user("x" * 400_000), user("now"))
    request = ChatRequest(provider="local-ish", model="m", system="s", messages=history)
    assert prepare_request(request).messages == history


def test_a_newest_message_larger_than_the_window_overflows() -> None:
    request = ChatRequest(
        provider="local", model="local", system="s", messages=(user("x" * 200_000),)
    )
    with pytest.raises(ProtocolException) as caught:
        prepare_request(request)
    assert caught.value.error.code is ErrorCode.CONTEXT_OVERFLOW


def test_preflight_runs_first() -> None:
    request = ChatRequest(
        provider="openai", model="gpt-unknown", system="s", messages=(user("hi"),), tools=(TOOL,)
    )
    with pytest.raises(ProtocolException) as caught:
        prepare_request(request)
    assert caught.value.error.code is ErrorCode.UNSUPPORTED_CAPABILITY
