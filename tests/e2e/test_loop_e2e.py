"""End to end: the turn runner against the real Anthropic provider talking to the fake provider
server on 127.0.0.1, with the real tools, transaction and shared edit history."""

from __future__ import annotations

import asyncio
from typing import Any

from stockade.loop.history import DocumentSession
from stockade.loop.hooks import StepKind
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner
from stockade.loop.state import CallStatus, TurnOutcome, TurnPhase
from stockade.loop.transaction import UndoAvailability
from stockade.protocol.messages import ToolResultBlock
from stockade.protocol.models import default_model
from stockade.protocol.pairing import check_tool_pairing
from stockade.providers.factory import create_provider
from stockade.thf.model import ThreatModel
from stockade.tools.prompt import build_system_prompt
from stockade.tools.registry import default_registry
from tests.helpers.fake_provider import FakeProviderServer, Reply, anthropic_sse
from tests.unit.loop.fakes import base_model
from tests.unit.loop.scripted import RecordingHooks

MODEL = default_model("anthropic").id


class StaticKeys:
    def get_key(self, provider: str) -> str | None:
        return "sk-test-key-for-the-fake-server"


def add(name: str) -> dict[str, Any]:
    return {"action": "add_element", "element": {"type": "process", "name": name}}


def reply(*calls: tuple[str, str, Any], text: str = "Working on it.") -> Reply:
    return Reply.sse(anthropic_sse(text, list(calls), model=MODEL))


def results_in(body: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    out: dict[str, tuple[bool, str]] = {}
    for message in body["messages"]:
        content = message.get("content")
        if isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    text = block["content"] if isinstance(block["content"], str) else str(block["content"])
                    out[block["tool_use_id"]] = (bool(block.get("is_error", False)), text)
    return out


def test_three_iteration_turn_with_approvals_a_denial_a_bound_and_an_undo() -> None:
    original = base_model()
    session = DocumentSession(original)
    hooks = RecordingHooks()
    with FakeProviderServer() as server:
        server.script(
            [
                reply(
                    ("c1", "add_element", add("Cache")),
                    ("c2", "add_element", add("Queue")),
                    ("r1", "search_entities", {"kind": "elements"}),
                ),
                reply(
                    ("c3", "update_element", {"action": "update_element", "id": "web-app", "updates": {"description": "Serves the shop"}}),
                    ("c4", "add_element", add("Queue")),
                ),
                reply(("c5", "add_element", add("Logs"))),
            ]
        )
        provider = create_provider("anthropic", key_store=StaticKeys(), base_url=server.url)
        runner = TurnRunner(
            provider,
            default_registry(),
            session,
            hooks=hooks,
            limits=TurnLimits(max_iterations=3),
            model=MODEL,
            provider_name="anthropic",
            system_prompt=lambda doc: build_system_prompt(doc, default_registry().specs()),
        )

        async def scenario() -> None:
            state = await runner.submit("Add caching and a queue, then describe the web app.")
            assert state.phase is TurnPhase.AWAITING_APPROVAL and state.iteration == 1
            assert {c.id: c.status for c in state.calls}["r1"] is CallStatus.APPROVED
            await runner.approve_call("c1", actor="analyst")
            state = await runner.deny_call("c2", actor="analyst", reason="no queue yet")
            # Iteration 2: c4 repeats the declined input and is refused without asking.
            assert state.phase is TurnPhase.AWAITING_APPROVAL and state.iteration == 2
            assert state.call("c4").status is CallStatus.DENIED  # type: ignore[union-attr]
            state = await runner.approve_call("c3", actor="analyst")
            assert state.iteration == 3
            state = await runner.approve_call("c5", actor="analyst")
            assert (state.outcome, state.reason) == (TurnOutcome.BOUNDED, "iterations")

            after_turn = session.document
            assert [e.name for e in after_turn.elements] == ["Web App", "Cache", "Logs"]
            assert after_turn.elements[0].description == "Serves the shop"
            assert len(session.history.past) == 1 and session.history.past[0].document is original
            assert runner.undo_availability() is UndoAvailability.UNDOABLE

            assert await runner.undo_turn()
            assert session.document is original
            assert session.history.past == [] and len(session.history.future) == 1
            assert runner.undo_availability() is UndoAvailability.ALREADY_UNDONE
            assert session.redo() and session.document is after_turn  # the shared stack redoes it

        asyncio.run(scenario())
        bodies = [r.body for r in server.requests]

    assert len(bodies) == 3  # the bound stopped the turn: no fourth request
    second = results_in(bodies[1])
    assert second["c1"][0] is False and second["r1"][0] is False
    # The user's reason reaches the model in the result (the audit keeps only its digest).
    assert second["c2"] == (True, 'Not run: the user declined this action. Their reason: '
                                  '"no queue yet"')
    third = results_in(bodies[2])
    assert third["c4"] == (True, "Not run: the user already declined an identical action in this turn.")
    assert third["c3"][0] is False
    final = runner.state
    assert {c.id: c.status for c in final.calls} == {
        "c1": CallStatus.UNDONE, "c2": CallStatus.DENIED, "r1": CallStatus.SUCCEEDED,
        "c3": CallStatus.UNDONE, "c4": CallStatus.DENIED, "c5": CallStatus.UNDONE,
    }
    assert check_tool_pairing(final.messages) == []
    assert isinstance(final.history[-1].content[0], ToolResultBlock)
    kinds = hooks.kinds()
    assert kinds.count(StepKind.MODEL_REQUEST) == 3
    assert kinds.count(StepKind.DOCUMENT_COMMITTED) == 3
    assert kinds.count(StepKind.TOOL_DENIED) == 1
    assert kinds[-1] is StepKind.TURN_UNDONE
    assert isinstance(original, ThreatModel)
