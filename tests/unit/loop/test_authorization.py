"""Grant constructors, sticky denials and `authorize_start` (SEC-AUTH-01..14)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.loop.authorization import (
    Authorized,
    DenialRecord,
    Grant,
    GrantScope,
    Refused,
    Violation,
    authorize_start,
    auto_grant_read_only,
    grant_for_batch,
    grant_for_call,
    grant_to_start,
    is_denied,
)
from stockade.loop.state import CallRecord, CallStatus, ToolSet, TurnPhase, TurnState
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolEffect
from tests.conftest import examples
from tests.unit.loop.fakes import FakeTool

UPDATE = FakeTool("update_thing", fields=("id",))
READ = FakeTool("read_thing", effect=ToolEffect.READ, fields=("q",))
TOOLS = ToolSet([UPDATE, READ])


def record(
    call_id: str = "toolu_1",
    tool: str = "update_thing",
    digest: str = "d1",
    status: CallStatus = CallStatus.APPROVED,
    iteration: int = 1,
) -> CallRecord:
    return CallRecord(call_id, tool, digest, "s", ToolEffect.MUTATE, False, iteration, status)


def executing(
    calls: tuple[CallRecord, ...],
    grants: tuple[Grant, ...] = (),
    denials: tuple[DenialRecord, ...] = (),
    iteration: int = 1,
) -> TurnState:
    return TurnState(
        phase=TurnPhase.EXECUTING,
        iteration=iteration,
        tool_set=TOOLS,
        calls=calls,
        grants=grants,
        denials=denials,
    )


def test_auth_01_approved_call_with_its_grant_is_authorized() -> None:
    call = record()
    grant = grant_for_call(call, 1)
    assert authorize_start(executing((call,), (grant,)), "toolu_1") == Authorized(grant)


def test_auth_02_pending_call_without_a_grant_is_refused_no_grant() -> None:
    state = executing((record(status=CallStatus.PENDING),))
    assert authorize_start(state, "toolu_1") == Refused(Violation.NO_GRANT)


def test_auth_02b_unknown_call_id_is_refused_no_grant() -> None:
    assert authorize_start(executing(()), "ghost") == Refused(Violation.NO_GRANT)


def test_auth_03_grant_for_another_digest_is_refused_digest_mismatch() -> None:
    call = record(digest="d-current")
    grant = grant_for_call(record(digest="d-approved"), 1)
    assert authorize_start(executing((call,), (grant,)), "toolu_1") == Refused(Violation.DIGEST_MISMATCH)


def test_grant_for_another_tool_is_refused_digest_mismatch() -> None:
    call = record()
    grant = Grant("toolu_1", "read_thing", "d1", GrantScope.CALL, 1)
    assert authorize_start(executing((call,), (grant,)), "toolu_1") == Refused(Violation.DIGEST_MISMATCH)


def test_auth_04_grant_from_another_iteration_is_refused_foreign_iteration() -> None:
    call = record(iteration=2)
    grant = grant_for_call(call, 1)
    state = executing((call,), (grant,), iteration=2)
    assert authorize_start(state, "toolu_1") == Refused(Violation.FOREIGN_ITERATION)


def test_auth_05_running_call_cannot_use_its_grant_again() -> None:
    call = record(status=CallStatus.RUNNING)
    state = executing((call,), (grant_for_call(call, 1),))
    assert authorize_start(state, "toolu_1") == Refused(Violation.GRANT_ALREADY_CONSUMED)


def test_used_grant_is_not_reusable_even_if_the_call_is_approved_again() -> None:
    call = record()
    grant = grant_for_call(call, 1)
    state = executing((call,), (grant,)).evolve(used_grants=(grant,))
    assert authorize_start(state, "toolu_1") == Refused(Violation.GRANT_ALREADY_CONSUMED)


def test_auth_06_denial_beats_a_matching_grant() -> None:
    call = record()
    state = executing((call,), (grant_for_call(call, 1),), (DenialRecord("update_thing", "d1"),))
    assert authorize_start(state, "toolu_1") == Refused(Violation.DENIED_REPLAY)


def test_auth_07_tool_missing_from_the_tool_set_is_refused_unknown_tool() -> None:
    call = record(tool="run_shell")
    state = executing((call,), (grant_for_call(call, 1),))
    assert authorize_start(state, "toolu_1") == Refused(Violation.UNKNOWN_TOOL)


def test_auth_08_grant_for_call_binds_every_field() -> None:
    assert grant_for_call(record(), 2) == Grant("toolu_1", "update_thing", "d1", GrantScope.CALL, 2)


def test_auth_09_batch_grants_follow_the_given_order() -> None:
    a, b = record("a"), record("b", digest="d2")
    grants = grant_for_batch([a, b], 1)
    assert [g.call_id for g in grants] == ["a", "b"]
    assert {g.scope for g in grants} == {GrantScope.BATCH}


def test_batch_grant_refuses_a_destructive_record() -> None:
    destructive = CallRecord("x", "delete_thing", "d", "s", ToolEffect.MUTATE, True, 1, CallStatus.PENDING)
    with pytest.raises(ValueError, match="destructive"):
        grant_for_batch([destructive], 1)


def test_auth_10_read_only_tool_gets_an_auto_grant() -> None:
    grant = auto_grant_read_only(READ, call_id="r1", input_digest="dr", iteration=1)
    assert grant == Grant("r1", "read_thing", "dr", GrantScope.AUTO, 1)


def test_auth_11_auto_grant_refuses_a_mutating_tool() -> None:
    with pytest.raises(ValueError, match="mutating tool"):
        auto_grant_read_only(UPDATE, call_id="c", input_digest="d", iteration=1)


def test_auth_12_auto_grant_refuses_a_destructive_read_tool() -> None:
    odd = FakeTool("read_and_wipe", effect=ToolEffect.READ, destructive=True)
    with pytest.raises(ValueError, match="destructive tool"):
        auto_grant_read_only(odd, call_id="c", input_digest="d", iteration=1)


def test_auth_13_is_denied_matches_only_the_exact_pair() -> None:
    denials = [DenialRecord("update_thing", "d1")]
    assert is_denied(denials, "update_thing", "d1")
    assert not is_denied(denials, "update_thing", "d2")
    assert not is_denied(denials, "read_thing", "d1")


def test_auth_14_every_production_read_tool_auto_grants_and_every_mutating_tool_is_refused() -> None:
    tools = default_registry().list()
    reads = [t for t in tools if t.effect is ToolEffect.READ]
    mutating = [t for t in tools if t.effect is ToolEffect.MUTATE]
    assert len(reads) == 4 and len(mutating) == 12
    for tool in reads:
        assert auto_grant_read_only(tool, call_id="c", input_digest="d", iteration=1).scope is GrantScope.AUTO
    for tool in mutating:
        with pytest.raises(ValueError, match="mutating tool"):
            auto_grant_read_only(tool, call_id="c", input_digest="d", iteration=1)


def test_violation_set_holds_every_reference_code() -> None:
    assert {v.value for v in Violation} >= {
        "no_grant", "digest_mismatch", "foreign_iteration", "grant_already_consumed",
        "unknown_tool", "denied_replay", "limit_exceeded", "duplicate_call_id",
        "post_settlement_event",
    }


def _plain_authorize(state: TurnState, call_id: str) -> Authorized | Refused:
    """`authorize_start` as its docstring defines it, over whole tuples (no shortcuts)."""
    call = next((c for c in state.calls if c.id == call_id), None)
    if call is None:
        return Refused(Violation.NO_GRANT)
    if state.tool_set.get(call.tool_name) is None:
        return Refused(Violation.UNKNOWN_TOOL)
    if is_denied(state.denials, call.tool_name, call.input_digest):
        return Refused(Violation.DENIED_REPLAY)
    named = [g for g in state.grants if g.call_id == call_id]
    if not named:
        return Refused(Violation.NO_GRANT)
    bound = [g for g in named if g.tool_name == call.tool_name and g.input_digest == call.input_digest]
    if not bound:
        return Refused(Violation.DIGEST_MISMATCH)
    current = [g for g in bound if g.iteration == state.iteration]
    if not current:
        return Refused(Violation.FOREIGN_ITERATION)
    unused = [g for g in current if g not in state.used_grants]
    if call.status is not CallStatus.APPROVED or not unused:
        return Refused(Violation.GRANT_ALREADY_CONSUMED)
    return Authorized(unused[0])


_IDS = st.sampled_from(["a", "b"])
_TOOLS = st.sampled_from(["update_thing", "read_thing", "gone_thing"])
_DIGESTS = st.sampled_from(["d1", "d2"])
_CALL = st.tuples(_IDS, st.sampled_from(["update_thing", "update_thing", "gone_thing"]), _DIGESTS,
                  st.sampled_from([CallStatus.APPROVED, CallStatus.APPROVED, CallStatus.RUNNING,
                                   CallStatus.PENDING]))
# A grant is usually one of a call's (id, tool, digest) with at most one field changed, so the
# shortcut's every branch is reached.
_GRANT_SEED = st.tuples(st.integers(0, 3), st.sampled_from(["", "id", "tool", "digest"]),
                        st.sampled_from(list(GrantScope)), st.integers(1, 2))


@settings(max_examples=examples(1000), deadline=None)
@given(
    st.lists(_CALL, min_size=1, max_size=3),
    st.lists(_GRANT_SEED, max_size=3),
    st.lists(st.integers(0, 2), max_size=2),
    st.lists(st.tuples(_TOOLS, _DIGESTS), max_size=1),
    st.integers(1, 2),
    st.integers(0, 3),
)
def test_authorize_start_decides_as_the_plain_definition(
    calls: list[tuple[str, str, str, CallStatus]], seeds: list[tuple[int, str, GrantScope, int]],
    used: list[int], denials: list[tuple[str, str]], iteration: int, pick: int,
) -> None:
    """The one-grant shortcut and the general path refuse and authorize exactly as the checks
    in the documented order do over whole tuples."""
    grants = []
    for i, changed, scope, grant_iteration in seeds:
        call_id, tool, digest, _ = calls[i % len(calls)]
        grants.append(Grant(
            "z" if changed == "id" else call_id, "read_thing" if changed == "tool" else tool,
            "d3" if changed == "digest" else digest, scope, grant_iteration,
        ))
    state = TurnState(
        phase=TurnPhase.EXECUTING, iteration=iteration, tool_set=TOOLS,
        calls=tuple(record(i, t, d, s) for i, t, d, s in calls),
        grants=tuple(grants),
        used_grants=tuple(grants[i] for i in used if i < len(grants)),
        denials=tuple(DenialRecord(t, d) for t, d in denials),
    )
    call_id = calls[pick % len(calls)][0] if pick < 3 else "z"
    plain = _plain_authorize(state, call_id)
    assert authorize_start(state, call_id) == plain
    found = grant_to_start(state, call_id, state.call(call_id))  # the reducer's form
    assert (found if isinstance(found, Refused) else Authorized(found)) == plain
    # Again, with the grants' table built above kept in the state (read in place), and in a
    # copy whose grants are others (the copied table is not theirs).
    found = grant_to_start(state, call_id, state.call(call_id))
    assert (found if isinstance(found, Refused) else Authorized(found)) == plain
    other = state.evolve(grants=tuple(reversed(grants[1:])))
    found = grant_to_start(other, call_id, other.call(call_id))
    assert (found if isinstance(found, Refused) else Authorized(found)) == _plain_authorize(
        other, call_id)
