"""Closing out an iteration from what the last close-out left gives what a pass over every call
and every message gives, for states the reducer built and for states changed by hand after."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import DenialReason, Grant
from stockade.loop.commands import Submit
from stockade.loop.reducer import NOT_RUN_TEXT, _close_out, _fold_draft, _replace_calls
from stockade.loop.state import TERMINAL_STATUSES, CallStatus, TurnState
from stockade.protocol.messages import Message, TextBlock, ToolResultBlock
from tests.conftest import examples
from tests.unit.loop.test_properties import LIMITS, TOOLS, _apply, actions


def _plain_close_out(state: TurnState) -> TurnState:
    """The close-out over whole tuples: every call's status, every message's results."""
    state = _fold_draft(state)
    replaced = {
        i: c.with_changes(status=CallStatus.NOT_RUN, denial_reason=DenialReason.TURN_CANCELLED,
                          result=NOT_RUN_TEXT, is_error=True)
        for i, c in enumerate(state.calls)
        if c.status not in TERMINAL_STATUSES
    }
    if replaced:
        state = _replace_calls(state, replaced, {})
    answered = {b.tool_call_id for m in state.history if m.role == "user" for b in m.content
                if isinstance(b, ToolResultBlock)}
    results = tuple(
        ToolResultBlock(c.id, c.result if c.result is not None else c.summary, c.is_error)
        for c in state.calls if c.id not in answered
    )
    if not results:
        return state
    return state.evolve(history=(*state.history, Message("user", results)))


def _edited(state: TurnState, how: int) -> TurnState:
    """A hand-made change after the reducer's own states (the remembered close-out travels)."""
    if how == 1 and state.history:
        return state.evolve(history=state.history[:-1])
    if how == 2:
        return state.evolve(history=(*state.history, Message("user", (ToolResultBlock("c2", "x"),))))
    if how == 3 and state.calls:
        first = state.calls[0].with_changes(status=CallStatus.PENDING)
        return state.evolve(calls=(first, *state.calls[1:]))
    if how == 4:
        return state.evolve(history=(Message("user", (TextBlock("hi"),)), *state.history))
    if how == 5 and state.history:
        # The last message (often the results) swapped for two: the history is no shorter.
        note = Message("user", (TextBlock("note"),))
        return state.evolve(history=(*state.history[:-1], note, note))
    return state


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(actions, min_size=4, max_size=30), st.lists(st.integers(0, 7), min_size=30,
                                                            max_size=30))
def test_close_out_matches_the_plain_pass_at_every_step(sequence: list[Any], edits: list[int]) -> None:
    state = TurnState()
    state = _apply(state, Submit("go", (), TOOLS, LIMITS, 0), set())
    forged: set[Grant] = set()
    for action, how in zip(sequence, edits, strict=False):
        probe = _edited(state, how)
        assert _close_out(probe) == _plain_close_out(probe)
        state = _apply(state, action, forged)
    assert _close_out(state) == _plain_close_out(state)
