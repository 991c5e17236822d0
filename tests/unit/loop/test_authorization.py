"""Grant constructors, sticky denials and `authorize_start` (SEC-AUTH-01..14)."""

from __future__ import annotations

import pytest

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
    is_denied,
)
from stockade.loop.state import CallRecord, CallStatus, ToolSet, TurnPhase, TurnState
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolEffect
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
