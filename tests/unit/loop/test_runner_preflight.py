"""The runner's request check: the default preflight refuses a model that is not trusted with
tools before anything is sent, and is consulted once per runner (its verdict depends only on
the runner's provider, model and tool set); a caller's own check sees every request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from stockade.loop.history import DocumentSession
from stockade.loop.runner import TurnRunner
from stockade.loop.state import ToolSet, TurnOutcome
from stockade.protocol import models
from stockade.protocol.errors import ErrorCode
from stockade.protocol.request import ChatRequest
from tests.unit.loop.fakes import FakeTool, base_model
from tests.unit.loop.scripted import RecordingHooks, ScriptedProvider, calls_reply, text_reply


def _runner(model: str, **options: Any) -> tuple[TurnRunner, ScriptedProvider]:
    provider = ScriptedProvider([
        calls_reply(("c1", "add_thing", {"name": "A"})),
        text_reply("Added."),
    ])
    runner = TurnRunner(
        provider, ToolSet([FakeTool("add_thing")]), DocumentSession(base_model()),
        hooks=RecordingHooks(), model=model, provider_name="anthropic", clock_ms=lambda: 0,
        **options,
    )
    return runner, provider


def _two_requests(runner: TurnRunner) -> TurnOutcome | None:
    async def turn() -> TurnOutcome | None:
        await runner.submit("Add a thing.")
        return (await runner.approve_call("c1")).outcome

    return asyncio.run(turn())


def test_the_default_check_refuses_an_unlisted_model_with_tools_before_sending() -> None:
    runner, provider = _runner("not-a-listed-model")
    state = asyncio.run(runner.submit("Add a thing."))
    assert state.outcome is TurnOutcome.FAILED
    assert state.error is not None and state.error.code is ErrorCode.UNSUPPORTED_CAPABILITY
    assert provider.requests == []


def test_the_default_check_runs_once_per_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[ChatRequest] = []
    real = models.preflight

    def counting(request: ChatRequest) -> None:
        checked.append(request)
        real(request)

    monkeypatch.setattr(models, "preflight", counting)
    runner, provider = _runner("claude-sonnet-5")
    assert _two_requests(runner) is TurnOutcome.COMPLETED
    assert len(provider.requests) == 2
    assert checked == provider.requests[:1]


def test_a_callers_check_sees_every_request() -> None:
    checked: list[ChatRequest] = []
    runner, provider = _runner("claude-sonnet-5", request_check=checked.append)
    assert _two_requests(runner) is TurnOutcome.COMPLETED
    assert checked == provider.requests
    assert len(checked) == 2
