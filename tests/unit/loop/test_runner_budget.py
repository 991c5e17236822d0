"""The runner budgets every request to the model's window: each request sends exactly what
`budget_messages` keeps of the conversation so far, whole when it fits, its newest whole
exchanges when it does not (the runner skips the cut only when everything fits)."""

from __future__ import annotations

import asyncio

from stockade.loop.history import DocumentSession
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner
from stockade.loop.state import ToolSet, TurnOutcome
from stockade.protocol.budget import budget_messages
from stockade.protocol.messages import Message, TextBlock
from stockade.protocol.models import resolve_model
from stockade.protocol.request import ChatRequest
from tests.unit.loop.fakes import FakeTool, base_model
from tests.unit.loop.scripted import RecordingHooks, ScriptedProvider, calls_reply, text_reply

SYSTEM = "You review threat models."
RESERVE = 32_000  # of the local model's 32,768-token window: about 700 tokens are left


def _history(exchanges: int, chars: int) -> tuple[Message, ...]:
    messages: list[Message] = []
    for i in range(exchanges):
        messages.append(Message("user", (TextBlock(f"question {i} " + "q" * chars),)))
        messages.append(Message("assistant", (TextBlock(f"answer {i} " + "a" * chars),)))
    return tuple(messages)


def _run(history: tuple[Message, ...]) -> tuple[list[ChatRequest], tuple[Message, ...], int]:
    tools = ToolSet([FakeTool("add_thing")])
    provider = ScriptedProvider([
        calls_reply(("c1", "add_thing", {"name": "A" * 400})),
        text_reply("Added."),
    ])
    runner = TurnRunner(
        provider, tools, DocumentSession(base_model()), hooks=RecordingHooks(),
        limits=TurnLimits(reserve_output_tokens=RESERVE), model="local", provider_name="local",
        system_prompt=SYSTEM, clock_ms=lambda: 0, request_check=None,
    )

    async def turn() -> tuple[Message, ...]:
        await runner.submit("Add a thing.", history)
        state = await runner.approve_call("c1")
        assert state.outcome is TurnOutcome.COMPLETED
        return state.messages

    final = asyncio.run(turn())
    overhead = (len(SYSTEM) + sum(len(str(t.input_schema)) for t in tools.specs())) // 4
    return provider.requests, final, overhead


def _expected(request: ChatRequest, final: tuple[Message, ...], overhead: int) -> tuple[Message, ...]:
    """What budgeting keeps of the conversation as it stood when `request` was built."""
    end = next(i for i, m in enumerate(final) if m is request.messages[-1])
    info = resolve_model("local", "local")
    assert info is not None
    return budget_messages(final[: end + 1], max_input_tokens=info.context_window,
                           reserve_output_tokens=RESERVE, overhead_tokens=overhead)


def test_a_conversation_that_fits_is_sent_whole_on_every_request() -> None:
    history = _history(2, 40)
    requests, final, overhead = _run(history)
    assert len(requests) == 2
    for request in requests:
        assert request.messages == _expected(request, final, overhead)
    assert requests[0].messages[: len(history)] == history
    assert requests[1].messages == final[: len(requests[1].messages)]


def test_a_conversation_past_the_window_sends_only_its_newest_whole_exchanges() -> None:
    history = _history(6, 400)  # about 1,250 tokens of history: the oldest exchanges go
    requests, final, overhead = _run(history)
    assert len(requests) == 2
    for request in requests:
        kept = request.messages
        assert kept == _expected(request, final, overhead)
        assert len(kept) < len(final)
    # The second request is longer by the call and its result, so it keeps fewer old ones.
    first_kept = next(i for i, m in enumerate(final) if m is requests[0].messages[0])
    second_kept = next(i for i, m in enumerate(final) if m is requests[1].messages[0])
    assert 0 < first_kept < second_kept
