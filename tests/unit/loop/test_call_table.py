"""The call table's shortcuts: this iteration's calls and batch approvals found by position
give what a pass over every call gives, for states the reducer built and states built by hand."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import grant_for_batch
from stockade.loop.commands import ApproveBatch
from stockade.loop.reducer import _append_call, reduce_turn
from stockade.loop.state import CallStatus, TurnPhase, TurnState, new_call
from stockade.tools.runtime import ToolEffect
from tests.conftest import examples
from tests.unit.loop.fakes import generic_tools

TOOLS = generic_tools()
_CALLS = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(1, 3),
              st.sampled_from(["add_thing", "delete_thing", "run_shell"]), st.booleans()),
    max_size=8,
)


def _record(call_id: str, iteration: int, tool: str, pending: bool) -> object:
    return new_call(call_id, tool, f"sha256:{call_id}", call_id, ToolEffect.MUTATE,
                    tool == "delete_thing", iteration,
                    CallStatus.PENDING if pending else CallStatus.SUCCEEDED)


@settings(max_examples=examples(300), deadline=None)
@given(_CALLS, _CALLS, st.integers(0, 4))
def test_iteration_calls_are_the_calls_of_the_iteration(
    given_calls: list[tuple[str, int, str, bool]], appended: list[tuple[str, int, str, bool]],
    iteration: int,
) -> None:
    state = TurnState(iteration=iteration, calls=tuple(_record(*c) for c in given_calls))
    for c in [None, *appended]:
        if c is not None:
            state = _append_call(state, _record(*c), {})  # type: ignore[arg-type]
        assert state.iteration_calls() == tuple(
            r for r in state.calls if r.iteration == iteration
        )


@settings(max_examples=examples(300), deadline=None)
@given(_CALLS, st.lists(st.sampled_from(["a", "b", "c", "d", "x"]), max_size=5))
def test_a_batch_approves_exactly_the_pending_non_destructive_calls_it_names(
    calls: list[tuple[str, int, str, bool]], wanted: list[str]
) -> None:
    state = TurnState(phase=TurnPhase.AWAITING_APPROVAL, iteration=1, tool_set=TOOLS,
                      calls=tuple(_record(*c) for c in calls))
    after = reduce_turn(state, ApproveBatch(tuple(wanted)))
    eligible = [c for c in state.calls if c.id in set(wanted) and c.status is CallStatus.PENDING
                and not c.destructive and TOOLS.get(c.tool_name) is not None]
    if not eligible:
        assert after is state
        return
    ids = {c.id for c in eligible}
    assert [c.status for c in after.calls] == [
        CallStatus.APPROVED if c.id in ids else c.status for c in state.calls
    ]
    assert after.grants == grant_for_batch(eligible, 1)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.sampled_from("abcde")), max_size=20),
       st.lists(st.sampled_from("abcde"), max_size=3))
def test_every_used_grant_view_sees_exactly_its_own_grants(
    appends: list[tuple[int, str]], given_used: list[str]
) -> None:
    """Appending to any state's used grants (the newest, or an older one: a branch) leaves
    every other state's used grants as they were."""
    from stockade.loop.state import _MemberLog

    views = [(_MemberLog.of(given_used), tuple(given_used))]
    for pick, grant in appends:
        log, expected = views[pick % len(views)]
        views.append((log.append(grant), (*expected, grant)))
    for log, expected in views:
        assert log.as_tuple() == expected
        assert all((g in log) == (g in expected) for g in "abcdef")
