"""Each turn offers exactly its registry's tools; runners given the same immutable
`ToolRegistry` (as the app gives every turn) share one frozen tool set, so its specs (a copy
of every schema) are built once, not once per turn."""

from __future__ import annotations

import asyncio
from typing import Any

from stockade.loop.history import DocumentSession
from stockade.loop.runner import TurnRunner
from stockade.loop.state import ToolSet, TurnOutcome
from stockade.protocol.request import ChatRequest
from stockade.tools.registry import default_registry
from tests.unit.loop.fakes import FakeTool, base_model
from tests.unit.loop.scripted import RecordingHooks, ScriptedProvider, text_reply


def _turn(registry: Any) -> tuple[ChatRequest, ToolSet]:
    provider = ScriptedProvider([text_reply("Nothing to change.")])
    runner = TurnRunner(
        provider, registry, DocumentSession(base_model()), hooks=RecordingHooks(),
        model="test-model", provider_name="scripted", clock_ms=lambda: 0, request_check=None,
    )
    state = asyncio.run(runner.submit("Look."))
    assert state.outcome is TurnOutcome.COMPLETED
    return provider.requests[0], state.tool_set


class _ListedTools:
    """A registry the runner knows nothing about (only `list()` and `get()`)."""

    def __init__(self) -> None:
        self._tools = [FakeTool("add_thing"), FakeTool("get_thing")]

    def list(self) -> list[Any]:
        return list(self._tools)

    def get(self, name: str) -> Any:
        return next((t for t in self._tools if t.name == name), None)


def test_turns_on_one_registry_share_its_tool_set_and_offer_every_tool() -> None:
    registry = default_registry()
    first, first_tools = _turn(registry)
    second, second_tools = _turn(registry)
    assert second_tools is first_tools
    assert second.tools is first.tools
    assert [t.name for t in first.tools] == list(registry.names())
    assert [t.input_schema for t in first.tools] == [t.input_schema() for t in registry.list()]


def test_another_registry_gets_a_tool_set_of_its_own() -> None:
    first, first_tools = _turn(default_registry())
    other, other_tools = _turn(default_registry())
    assert other_tools is not first_tools and other_tools == first_tools
    assert other.tools is not first.tools
    listed = _ListedTools()
    one, one_tools = _turn(listed)
    two, two_tools = _turn(listed)
    assert one_tools is not two_tools and one_tools.names() == ("add_thing", "get_thing")
    assert [t.name for t in one.tools] == [t.name for t in two.tools] == ["add_thing", "get_thing"]
