"""The handlers' shortcuts (one pass where there were several, frames written out, tables read
in place, inputs the reducer would return unchanged not reduced) answer as their plain
definitions, for states the reducer built and states built by hand (statuses that are equal
strings but not the members, names that are not exact strings)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import auto_grant_for, auto_grant_read_only
from stockade.loop.commands import Advance, ApproveCall, StartCall
from stockade.loop.reducer import _maybe_executing, reduce_turn
from stockade.loop.state import (
    TERMINAL_STATUSES,
    CallStatus,
    ToolSet,
    TurnPhase,
    TurnState,
    new_call,
)
from stockade.protocol.events import ToolCallInputDelta
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolEffect
from tests.conftest import examples
from tests.unit.loop.fakes import generic_tools

TOOLS = generic_tools()


class _Name(str):
    """A tool name equal to a real one but not an exact `str` (never resolved)."""


# A status is a member, or (a hand-built record) the member's value as a plain string: equal,
# but not the member.
_STATUS = st.sampled_from(list(CallStatus)) | st.sampled_from([s.value for s in CallStatus])
_CALLS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 3), _STATUS,
              st.sampled_from(["add_thing", "delete_thing", "read_thing", "gone"])),
    max_size=8,
)


def _state(phase: TurnPhase, calls: list[tuple[str, int, Any, str]], iteration: int) -> TurnState:
    return TurnState(
        phase=phase, iteration=iteration, tool_set=TOOLS,
        calls=tuple(
            new_call(i, tool, f"sha256:{i}", i, ToolEffect.MUTATE, tool == "delete_thing", it,
                     status)
            for i, it, status, tool in calls
        ),
    )


@settings(max_examples=examples(400), deadline=None)
@given(_CALLS, st.integers(0, 4))
def test_a_state_executes_once_no_call_of_its_iteration_is_the_pending_member(
    calls: list[tuple[str, int, Any, str]], iteration: int
) -> None:
    state = _state(TurnPhase.AWAITING_APPROVAL, calls, iteration)
    after = _maybe_executing(state.evolve())  # a state of its own: the phase is set in place
    waiting = any(c.status is CallStatus.PENDING for c in state.calls if c.iteration == iteration)
    assert after.phase is (TurnPhase.AWAITING_APPROVAL if waiting else TurnPhase.EXECUTING)
    assert state.phase is TurnPhase.AWAITING_APPROVAL


@settings(max_examples=examples(400), deadline=None)
@given(_CALLS, st.integers(0, 4))
def test_an_advance_waits_while_a_call_of_the_iteration_is_not_terminal(
    calls: list[tuple[str, int, Any, str]], iteration: int
) -> None:
    state = _state(TurnPhase.EXECUTING, calls, iteration)
    after = reduce_turn(state, Advance(1))
    waiting = any(c.status not in TERMINAL_STATUSES for c in state.calls if c.iteration == iteration)
    assert (after is state) == waiting
    if not waiting:
        assert after.phase in (TurnPhase.REQUESTING, TurnPhase.SETTLED)
        assert all(c.status in TERMINAL_STATUSES for c in after.calls)


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(["read_thing", "add_thing", "delete_thing"]), st.booleans(),
       st.text(max_size=3), st.integers(1, 3))
def test_a_start_or_approval_refuses_a_name_that_is_not_an_exact_string(
    tool: str, subclass: bool, call_id: str, iteration: int
) -> None:
    """The tool checks read the set's table in place: a name equal to a tool's but of another
    type is as unknown to them as to `ToolSet.get`."""
    name: Any = _Name(tool) if subclass else tool
    assert (TOOLS.get(name) is None) == subclass
    record = new_call(call_id, name, "sha256:x", "s", ToolEffect.MUTATE, False, iteration,
                      CallStatus.PENDING)
    waiting = TurnState(phase=TurnPhase.AWAITING_APPROVAL, iteration=iteration, tool_set=TOOLS,
                        calls=(record,))
    approved = reduce_turn(waiting, ApproveCall(call_id))
    assert approved.grants and approved.phase is TurnPhase.EXECUTING
    started = reduce_turn(approved, StartCall(call_id))
    call = started.call(call_id)
    assert call is not None
    assert call.status is (CallStatus.FAILED if subclass else CallStatus.RUNNING)
    assert bool(started.used_grants) is not subclass


_PRODUCTION = ToolSet.from_registry(default_registry())


@pytest.mark.parametrize("name", _PRODUCTION.names())
def test_the_auto_grant_from_a_tool_sets_facts_is_the_tools_own(name: str) -> None:
    facts = _PRODUCTION.facts(name)
    assert facts is not None
    tool, effect, destructive = facts
    if effect is ToolEffect.READ and not destructive:
        made = auto_grant_for(name, effect, destructive, "c1", "sha256:d", 3)
        assert made == auto_grant_read_only(tool, call_id="c1", input_digest="sha256:d",
                                            iteration=3)
    else:
        with pytest.raises(ValueError):
            auto_grant_read_only(tool, call_id="c1", input_digest="sha256:d", iteration=3)
        with pytest.raises(ValueError):
            auto_grant_for(name, effect, destructive, "c1", "sha256:d", 3)


def test_an_object_that_is_no_input_is_ignored_while_live_and_recorded_once_settled() -> None:
    live = TurnState(phase=TurnPhase.EXECUTING, iteration=1, tool_set=TOOLS)
    for thing in (object(), 42, None, "text_delta"):
        assert reduce_turn(live, thing) is live  # type: ignore[arg-type]
    settled = TurnState(phase=TurnPhase.SETTLED)
    after = reduce_turn(settled, 42)  # type: ignore[arg-type]
    assert [v.detail for v in after.violations] == ["Dropped 'int'."]


@settings(max_examples=examples(200), deadline=None)
@given(st.sampled_from(list(TurnPhase)), _CALLS, st.text(max_size=4), st.text(max_size=4))
def test_an_argument_delta_changes_nothing_before_settlement(
    phase: TurnPhase, calls: list[tuple[str, int, Any, str]], call_id: str, piece: str
) -> None:
    """What the runner's pump relies on to skip reducing argument deltas: before settlement the
    reducer answers one with the very state it was given (after it, with a violation)."""
    state = _state(phase, calls, 1)
    after = reduce_turn(state, ToolCallInputDelta(call_id, piece))
    assert (after is state) is (phase is not TurnPhase.SETTLED)
