"""The grants-by-call table built on from an earlier state's gives what a pass over every grant
gives, whether the grants were appended to, replaced or shortened by hand in between."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import Grant, GrantScope
from stockade.loop.state import TurnState
from tests.conftest import examples

_GRANTS = st.builds(Grant, st.sampled_from("abc"), st.sampled_from(["t", "u"]),
                    st.sampled_from(["d1", "d2"]), st.sampled_from(list(GrantScope)),
                    st.integers(1, 2))
_STEPS = st.lists(st.tuples(st.sampled_from(["append", "replace", "drop", "copy"]),
                            st.lists(_GRANTS, max_size=3)), max_size=12)


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(_GRANTS, max_size=4), _STEPS)
def test_grants_for_is_every_grant_naming_the_call_in_issue_order(
    first: list[Grant], steps: list[tuple[str, list[Grant]]]
) -> None:
    state = TurnState(grants=tuple(first))
    for kind, grants in steps:
        for call_id in "abcz":  # builds (or builds on) the table this state carries
            assert state.grants_for(call_id) == tuple(g for g in state.grants if g.call_id == call_id)
        if kind == "append":
            state = state.evolve(grants=(*state.grants, *grants))
        elif kind == "replace":
            state = state.evolve(grants=(*grants, *state.grants[len(grants):]))
        elif kind == "drop":
            state = state.evolve(grants=state.grants[: len(state.grants) // 2])
        else:  # an equal tuple that is another object
            state = state.evolve(grants=tuple(list(state.grants)))
    for call_id in "abcz":
        assert state.grants_for(call_id) == tuple(g for g in state.grants if g.call_id == call_id)
