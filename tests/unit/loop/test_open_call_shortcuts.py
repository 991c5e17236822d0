"""Opening a call reads its tool's facts from the tool set's table and counts the iteration's
calls from the call table's tail: the same answers as the plain definitions (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import DenialReason
from stockade.loop.limits import TurnLimits
from stockade.loop.reducer import reduce_turn
from stockade.loop.state import (
    AssistantDraft,
    CallStatus,
    ToolSet,
    TurnPhase,
    TurnState,
    calls_of_iteration,
    new_call,
)
from stockade.protocol.events import ToolCallComplete
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolEffect
from tests.conftest import examples

_TOOLS = ToolSet.from_registry(default_registry())


@given(st.sampled_from([*_TOOLS.names(), "", "get_entity ", "nope"]) | st.integers())
def test_facts_are_the_tools_own(name: Any) -> None:
    tool = _TOOLS.get(name)
    facts = _TOOLS.facts(name)
    if tool is None:
        assert facts is None
    else:
        assert facts == (tool, tool.effect, tool.destructive)
        assert facts[0] is tool


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(st.integers(min_value=1, max_value=4), max_size=10),
    st.integers(min_value=1, max_value=5),
    st.integers(min_value=1, max_value=4),
    st.booleans(),
)
def test_the_iteration_cap_counts_as_calls_of_iteration(
    iterations: list[int], cap: int, iteration: int, in_order: bool
) -> None:
    """Whatever calls a state holds (in iteration order or not), a new call is refused for
    the cap exactly when `calls_of_iteration` already holds `cap` calls."""
    if in_order:
        iterations = sorted(iterations)
    calls = tuple(
        new_call(f"c{i}", "get_entity", f"d{i}", "s", ToolEffect.READ, False, it,
                 CallStatus.SUCCEEDED)
        for i, it in enumerate(iterations)
    )
    state = TurnState(
        phase=TurnPhase.STREAMING, iteration=iteration, tool_set=_TOOLS, calls=calls,
        draft=AssistantDraft(),
        limits=TurnLimits(max_tool_calls_per_iteration=cap, max_tool_calls_per_turn=100),
    )
    existing = len(calls_of_iteration(calls, state._call_table()[2], iteration))
    assert existing == sum(1 for c in calls if c.iteration == iteration)
    after = reduce_turn(state, ToolCallComplete("new", "get_entity",
                                                {"kind": "elements", "id": "a"}))
    record = after.call("new")
    assert record is not None
    refused = record.denial_reason is DenialReason.LIMIT_EXCEEDED
    assert refused == (existing >= cap)
