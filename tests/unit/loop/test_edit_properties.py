"""Property: with edits in the mix (valid, invalid, repeated, into declined inputs), forged
grants for original and edited inputs, re-emitted inputs and reused ids, a call only ever runs
with exactly the input its approval was given for, under an unused grant for that input."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import Grant, GrantScope
from stockade.loop.commands import (
    Advance,
    ApproveBatch,
    ApproveCall,
    CallSettled,
    DenyCall,
    EditCall,
    StartCall,
)
from stockade.loop.reducer import reduce_turn
from stockade.loop.state import CallStatus, TurnState
from stockade.protocol.events import MessageStart, MessageStop, StopReason, ToolCallComplete
from stockade.thf.canonical import digest
from stockade.tools.runtime import ToolOk
from tests.conftest import examples
from tests.unit.loop.fakes import generic_tools, submit

TOOLS = generic_tools()
IDS = ["c1", "c2", "c3"]
INPUTS: list[Any] = [{"name": "A"}, {"name": "B"}, {"name": "C"}, {"name": ""}, {"nam": "A"},
                     "text", {"name": "A", "x": "y"}]


@dataclass(frozen=True)
class Stream:
    calls: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Forge:
    call_id: str
    input_index: int


def _action(kind: int, a: int, b: int) -> Any:
    call_id = IDS[a % len(IDS)]
    choice = kind % 9
    if choice == 0:
        return Stream(tuple((IDS[(a + n) % 3], (b + n) % 3) for n in range(1 + b % 3)))
    if choice == 1:
        return EditCall(call_id, INPUTS[b % len(INPUTS)], "user:x")
    if choice == 2:
        return ApproveCall(call_id)
    if choice == 3:
        return ApproveBatch(tuple(i for n, i in enumerate(IDS) if (b >> n) & 1))
    if choice == 4:
        return DenyCall(call_id, "no" if b % 2 else None)
    if choice == 5:
        return StartCall(call_id)
    if choice == 6:
        return CallSettled(call_id, ToolOk("ok"))
    if choice == 7:
        return Advance(1000 * (b + 1))
    return Forge(call_id, b % 3)


actions = st.tuples(st.integers(0, 8), st.integers(0, 15), st.integers(0, 15)).map(
    lambda t: _action(*t))


def _apply(state: TurnState, action: Any, forged: set[Grant]) -> TurnState:
    if isinstance(action, Stream):
        state = reduce_turn(state, MessageStart("m"))
        for call_id, index in action.calls:
            state = reduce_turn(state, ToolCallComplete(call_id, "add_thing", INPUTS[index]))
        return reduce_turn(state, MessageStop(StopReason.TOOL_USE))
    if isinstance(action, Forge):
        # A grant bound to some other input of the same call: the original, or an edit.
        grant = Grant(action.call_id, "add_thing", digest(INPUTS[action.input_index]),
                      GrantScope.CALL, state.iteration)
        call = state.call(action.call_id)
        if call is None or grant.input_digest == call.input_digest:
            return state  # not a forgery of this call's input
        forged.add(grant)
        return state.evolve(grants=(*state.grants, grant))
    return reduce_turn(state, action)


@settings(max_examples=examples(1500), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(actions, min_size=4, max_size=30))
def test_a_call_runs_only_with_the_input_its_approval_was_for(sequence: list[Any]) -> None:
    state = reduce_turn(TurnState(), submit(TOOLS))
    forged: set[Grant] = set()
    approved_digest: dict[str, str] = {}
    for action in sequence:
        before = state
        state = _apply(state, action, forged)
        old = {c.id: c for c in before.calls}
        for call in state.calls:
            previous = old.get(call.id)
            if previous is None:
                continue
            if previous.status is CallStatus.PENDING and call.status is CallStatus.APPROVED:
                approved_digest[call.id] = call.input_digest
            if previous.status is not CallStatus.PENDING:
                # Only a pending call's input can change.
                assert (call.input_digest, call.raw_input) == (previous.input_digest,
                                                               previous.raw_input)
            if call.edit is not None and previous.edit is None:
                assert isinstance(action, EditCall) and action.call_id == call.id
                assert call.edit.original_digest == previous.input_digest
            if call.status is CallStatus.RUNNING and previous.status is not CallStatus.RUNNING:
                new_used = [g for g in state.used_grants if g not in before.used_grants]
                assert len(new_used) == 1
                grant = new_used[0]
                # The user approved this call, and with exactly the input it runs with. (A
                # forged grant can equal the one that approval made; it is then no forgery.)
                assert call.id in approved_digest
                assert grant.input_digest == call.input_digest == approved_digest[call.id]
                assert call.prepared is not None
                assert call.prepared.input == call.raw_input
                assert digest(call.prepared.input) == call.input_digest
