"""Reducer safety (SEC-TM-01..16) and the four deliberate fixes, as pure synchronous tests."""

from __future__ import annotations

from stockade.loop.authorization import DenialReason, GrantScope, Violation
from stockade.loop.commands import (
    Advance,
    ApproveBatch,
    ApproveCall,
    CallSettled,
    Cancel,
    ChargeCredits,
    CheckDeadline,
    DenyCall,
    RefuseRequest,
    Retry,
    StartCall,
    StopTurn,
    StreamEnded,
    Submit,
    UndoTurn,
)
from stockade.loop.limits import TurnLimits
from stockade.loop.reducer import reduce_turn
from stockade.loop.state import CallStatus, ToolSet, TurnOutcome, TurnPhase, TurnState
from stockade.protocol.errors import ErrorCode, ProtocolError
from stockade.protocol.events import (
    Aborted,
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
)
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.protocol.pairing import check_tool_pairing
from stockade.tools.runtime import ToolFailed, ToolOk
from tests.unit.loop.fakes import Driver, FakeTool, generic_tools

RATE = ProtocolError(ErrorCode.RATE_LIMITED, "slow down")


def statuses(state: TurnState) -> dict[str, CallStatus]:
    return {c.id: c.status for c in state.calls}


def run_read_iteration(d: Driver, call_id: str, now_ms: int) -> TurnState:
    d.stream_calls([(call_id, "read_thing", {"q": call_id})])
    return d.apply(StartCall(call_id), CallSettled(call_id, ToolOk("r")), Advance(now_ms))


# ---------------------------------------------------------------- SEC-TM


def test_tm01_settled_turn_drops_late_input_with_one_violation_each(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), MessageStop(StopReason.END_TURN))
    settled = d.state
    assert settled.outcome is TurnOutcome.COMPLETED
    d.apply(
        TextDelta("late"),
        ToolCallComplete("late", "add_thing", {"name": "X"}),
        MessageStop(StopReason.TOOL_USE),
    )
    assert d.state.messages == settled.messages
    assert d.state.calls == ()
    assert [v.violation for v in d.state.violations] == [Violation.POST_SETTLEMENT_EVENT] * 3


def test_settled_turn_ignores_submit_and_cancel_as_violations(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(Cancel())
    d.apply(Submit("again", (), generic), Cancel())
    assert d.state.outcome is TurnOutcome.CANCELLED
    assert len(d.state.violations) == 2


def test_tm02_cancel_while_executing_answers_every_call(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"})])
    d.apply(ApproveCall("c1"), ApproveCall("c2"))
    assert d.state.phase is TurnPhase.EXECUTING
    d.apply(Cancel())
    assert (d.state.phase, d.state.outcome) == (TurnPhase.SETTLED, TurnOutcome.CANCELLED)
    assert {c.denial_reason for c in d.state.calls} == {DenialReason.TURN_CANCELLED}
    # Nobody said no: calls the stop left undecided or unstarted are "not run", not "denied".
    assert {c.status for c in d.state.calls} == {CallStatus.NOT_RUN}
    assert d.state.denials == ()
    assert check_tool_pairing(d.state.messages) == []


def test_tm03_denial_is_sticky_for_identical_input_across_iterations(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    d.apply(DenyCall("c1"))
    assert d.state.phase is TurnPhase.EXECUTING
    d.apply(Advance(10))
    d.stream_calls([("c2", "add_thing", {"name": "A"}), ("c3", "add_thing", {"name": "B"})])
    c2, c3 = d.state.call("c2"), d.state.call("c3")
    assert c2 is not None and c2.status is CallStatus.DENIED and c2.denial_reason is DenialReason.USER_DECLINED
    assert c3 is not None and c3.status is CallStatus.PENDING


def test_tm04_deny_records_one_sticky_denial(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    d.apply(DenyCall("c1"))
    call = d.state.call("c1")
    assert call is not None and call.status is CallStatus.DENIED and call.denial_reason is DenialReason.USER_DECLINED
    assert len(d.state.denials) == 1


def test_tm05_batch_by_id_excludes_destructive_and_unlisted(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls(
        [
            ("c1", "add_thing", {"name": "A"}),
            ("c2", "add_thing", {"name": "B"}),
            ("c3", "delete_thing", {"id": "x"}),
            ("c4", "add_thing", {"name": "C"}),
        ]
    )
    d.apply(ApproveBatch(("c1", "c2", "c3")))
    assert statuses(d.state) == {
        "c1": CallStatus.APPROVED, "c2": CallStatus.APPROVED, "c3": CallStatus.PENDING, "c4": CallStatus.PENDING,
    }


def test_tm06_mutating_call_waits_for_approval_with_no_grant(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    assert d.state.phase is TurnPhase.AWAITING_APPROVAL
    assert d.state.call("c1").status is CallStatus.PENDING  # type: ignore[union-attr]
    assert d.state.grants == ()


def test_tm07_read_tool_is_auto_approved(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("r1", "read_thing", {"q": "x"})])
    assert d.state.phase is TurnPhase.EXECUTING
    assert d.state.call("r1").status is CallStatus.APPROVED  # type: ignore[union-attr]
    assert [g.scope for g in d.state.grants] == [GrantScope.AUTO]


def test_tm08_unknown_tool_fails_with_a_violation(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), ToolCallComplete("c1", "nope", {}))
    call = d.state.call("c1")
    assert call is not None and call.status is CallStatus.FAILED and "no tool named" in (call.result or "")
    assert [v.violation for v in d.state.violations] == [Violation.UNKNOWN_TOOL]


def test_tm09_invalid_input_fails_naming_the_field(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), ToolCallComplete("c1", "add_thing", {"name": 42}))
    call = d.state.call("c1")
    assert call is not None and call.status is CallStatus.FAILED and "name" in (call.result or "")
    assert d.state.violations == ()
    assert d.state.budget.tool_calls_accepted == 0


def test_tm10_reused_id_in_one_stream_keeps_one_record(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(
        MessageStart("m"),
        ToolCallComplete("c1", "add_thing", {"name": "A"}),
        ToolCallComplete("c1", "add_thing", {"name": "B"}),
    )
    assert len(d.state.calls) == 1
    assert [v.violation for v in d.state.violations] == [Violation.DUPLICATE_CALL_ID]


def test_reused_id_from_the_base_history_is_a_duplicate(generic: ToolSet) -> None:
    base = (
        Message("user", (TextBlock("hi"),)),
        Message("assistant", (ToolCallBlock("old", "read_thing", {"q": "x"}),)),
        Message("user", (ToolResultBlock("old", "r"),)),
    )
    state = reduce_turn(TurnState(), Submit("again", base, generic))
    state = reduce_turn(state, MessageStart("m"))
    state = reduce_turn(state, ToolCallComplete("old", "read_thing", {"q": "x"}))
    assert state.calls == ()
    assert [v.violation for v in state.violations] == [Violation.DUPLICATE_CALL_ID]


def test_tm11_tool_use_stop_with_no_calls_completes(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), TextDelta("done"), MessageStop(StopReason.TOOL_USE))
    assert d.state.outcome is TurnOutcome.COMPLETED and d.state.iteration == 1


def _ceiling(max_iterations: int) -> Driver:
    d = Driver(generic_tools(), TurnLimits(max_iterations=max_iterations))
    n = 0
    while d.state.phase is not TurnPhase.SETTLED:
        n += 1
        run_read_iteration(d, f"r{n}", n)
        assert n < 50
    return d


def test_tm12_iteration_ceiling_is_real() -> None:
    d = _ceiling(3)
    assert d.state.outcome is TurnOutcome.BOUNDED and d.state.reason == "iterations"
    assert d.requesting_entries() == 3
    assert "steps allowed" in (d.state.notice or "")
    assert _ceiling(4).requesting_entries() == 4


def test_tm13_deadline_bounds_the_turn_at_advance() -> None:
    d = Driver(generic_tools(), TurnLimits(deadline_ms=10_000))
    run_read_iteration(d, "r1", 10_001)
    assert d.state.outcome is TurnOutcome.BOUNDED and d.state.reason == "deadline"
    assert "longer than the time allowed" in (d.state.notice or "")


def test_tm14_two_iteration_turn_alternates_roles_and_pairs_cleanly(generic: ToolSet) -> None:
    d = Driver(generic)
    run_read_iteration(d, "r1", 5)
    d.apply(MessageStart("m"), TextDelta("All set."), MessageStop(StopReason.END_TURN))
    assert [m.role for m in d.state.messages] == ["user", "assistant", "user", "assistant"]
    assert d.requesting_entries() == 2
    assert check_tool_pairing(d.state.messages) == []


def test_tm15_per_iteration_cap_denies_without_preparing() -> None:
    add = FakeTool("add_thing")
    d = Driver(ToolSet([add]), TurnLimits(max_tool_calls_per_iteration=2))
    d.apply(
        MessageStart("m"),
        ToolCallComplete("c1", "add_thing", {"name": "A"}),
        ToolCallComplete("c2", "add_thing", {"name": "B"}),
        ToolCallComplete("c3", "add_thing", {"name": "C"}),
    )
    c3 = d.state.call("c3")
    assert c3 is not None and c3.status is CallStatus.DENIED and c3.denial_reason is DenialReason.LIMIT_EXCEEDED
    assert c3.result == "Not run: this turn has already made as many tool calls as it is allowed."
    assert len(add.prepare_calls) == 2
    assert [v.violation for v in d.state.violations] == [Violation.LIMIT_EXCEEDED]
    assert d.state.denials == ()


def test_tm16_per_turn_cap_counts_accepted_calls_only() -> None:
    add = FakeTool("add_thing")
    d = Driver(ToolSet([add]), TurnLimits(max_tool_calls_per_turn=2))
    d.apply(
        MessageStart("m"),
        ToolCallComplete("bad", "add_thing", {"name": ""}),  # prepare failure: not accepted
        ToolCallComplete("c1", "add_thing", {"name": "A"}),
        ToolCallComplete("c2", "add_thing", {"name": "B"}),
        ToolCallComplete("c3", "add_thing", {"name": "C"}),
    )
    assert d.state.budget.tool_calls_accepted == 2
    assert d.state.call("c3").denial_reason is DenialReason.LIMIT_EXCEEDED  # type: ignore[union-attr]
    assert len(add.prepare_calls) == 3


def test_tool_call_cap_reached_bounds_the_turn_at_advance() -> None:
    d = Driver(generic_tools(), TurnLimits(max_tool_calls_per_turn=1))
    run_read_iteration(d, "r1", 1)
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.BOUNDED, "tool_calls")


# ---------------------------------------------------------------- ordinary semantics


def test_text_then_call_then_text_makes_three_blocks(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(
        MessageStart("m"),
        TextDelta("Let me "),
        TextDelta("look."),
        ToolCallComplete("r1", "read_thing", {"q": "x"}),
        TextDelta("Then more."),
    )
    assert d.state.messages[-1].content == (
        TextBlock("Let me look."),
        ToolCallBlock("r1", "read_thing", {"q": "x"}),
        TextBlock("Then more."),
    )


def test_progress_and_usage_events_change_nothing(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"))
    before = d.state
    d.apply(ToolCallInputDelta("c1", '{"na'), Usage(10, 2))
    assert d.state is before


def test_approve_and_deny_of_unknown_or_decided_calls_change_nothing(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"})])
    d.apply(DenyCall("c1"))
    before = d.state
    d.apply(ApproveCall("c1"), ApproveCall("ghost"), DenyCall("ghost"), ApproveBatch(("ghost",)))
    assert d.state is before


def test_start_refused_for_a_pending_call_leaves_it_pending_and_records_why(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("r1", "read_thing", {"q": "x"})])
    d.apply(DenyCall("c1"))
    d.apply(StartCall("c1"))
    assert d.state.call("c1").status is CallStatus.DENIED  # type: ignore[union-attr]
    assert d.state.violations[-1].violation is Violation.DENIED_REPLAY


def test_call_settled_for_a_call_that_is_not_running_is_ignored(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("r1", "read_thing", {"q": "x"})])
    before = d.state
    d.apply(CallSettled("r1", ToolOk("forged")))
    assert d.state is before


def test_failed_tool_outcome_is_an_error_result(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("r1", "read_thing", {"q": "x"})])
    d.apply(StartCall("r1"), CallSettled("r1", ToolFailed("no such thing")), Advance(1))
    assert d.state.call("r1").status is CallStatus.FAILED  # type: ignore[union-attr]
    assert d.state.history[-1].content == (ToolResultBlock("r1", "no such thing", True),)


def test_advance_waits_for_every_call_of_the_iteration(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("r1", "read_thing", {"q": "x"})])
    before = d.state
    d.apply(Advance(1))
    assert d.state is before


def test_terminal_provider_error_fails_the_turn_and_answers_open_calls(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(
        MessageStart("m"),
        ToolCallComplete("c1", "add_thing", {"name": "A"}),
        StreamError(ProtocolError(ErrorCode.CONTEXT_OVERFLOW, "too long")),
    )
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.FAILED, "provider_error")
    assert d.state.error is not None and d.state.error.code is ErrorCode.CONTEXT_OVERFLOW
    assert check_tool_pairing(d.state.messages) == []


def test_aborted_event_settles_cancelled(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), TextDelta("partial"), Aborted())
    assert d.state.outcome is TurnOutcome.CANCELLED
    assert d.state.messages[-1] == Message("assistant", (TextBlock("partial"),))


def test_cancel_when_idle_changes_nothing() -> None:
    idle = TurnState()
    assert reduce_turn(idle, Cancel()) is idle


def test_undo_turn_marks_succeeded_calls_undone_without_a_violation(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    d.apply(ApproveCall("c1"), StartCall("c1"), CallSettled("c1", ToolOk("added")), Advance(1))
    d.apply(MessageStart("m"), MessageStop(StopReason.END_TURN), UndoTurn())
    assert d.state.call("c1").status is CallStatus.UNDONE  # type: ignore[union-attr]
    assert d.state.violations == ()


def test_undo_turn_leaves_kept_calls_succeeded(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"})])
    d.apply(ApproveCall("c1"), ApproveCall("c2"))
    for call_id in ("c1", "c2"):
        d.apply(StartCall(call_id), CallSettled(call_id, ToolOk("added")))
    d.apply(Advance(1), MessageStart("m"), MessageStop(StopReason.END_TURN))
    d.apply(UndoTurn(kept=frozenset({"c1"})))
    assert d.state.call("c1").status is CallStatus.SUCCEEDED  # type: ignore[union-attr]
    assert d.state.call("c2").status is CallStatus.UNDONE  # type: ignore[union-attr]


def test_undo_before_settlement_does_nothing(generic: ToolSet) -> None:
    d = Driver(generic)
    before = d.state
    assert d.apply(UndoTurn()) is before


def test_refused_request_settles_bounded_and_keeps_the_reason(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(RefuseRequest("credits", "The turn budget of 10 credits would be exceeded."))
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.BOUNDED, "credits")
    assert "10 credits" in (d.state.notice or "") and "undo" in (d.state.notice or "")


def test_credits_charged_count_against_the_credit_budget(generic: ToolSet) -> None:
    d = Driver(generic, TurnLimits(credit_budget=100))
    d.stream_calls([("r1", "read_thing", {"q": "x"})])
    d.apply(ChargeCredits(60), StartCall("r1"), CallSettled("r1", ToolOk("r")), Advance(1))
    assert d.state.phase is TurnPhase.REQUESTING
    d.apply(ChargeCredits(40))
    run_read_iteration(d, "r2", 2)
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.BOUNDED, "credits")
    assert d.state.budget.credits_spent == 100


def test_credits_for_the_final_request_are_accepted_after_settlement(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), MessageStop(StopReason.END_TURN), ChargeCredits(7))
    assert d.state.budget.credits_spent == 7 and d.state.violations == ()


def test_deadline_timer_settles_bounded_mid_stream(generic: ToolSet) -> None:
    d = Driver(generic, TurnLimits(deadline_ms=1000))
    d.apply(MessageStart("m"), ToolCallComplete("c1", "add_thing", {"name": "A"}), CheckDeadline(999))
    assert d.state.phase is TurnPhase.STREAMING
    d.apply(CheckDeadline(1000))
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.BOUNDED, "deadline")
    assert check_tool_pairing(d.state.messages) == []


def test_stop_turn_fails_with_the_runner_message(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(StopTurn("audit unavailable", reason="hook_failed"))
    assert (d.state.outcome, d.state.reason, d.state.notice) == (
        TurnOutcome.FAILED, "hook_failed", "audit unavailable",
    )


def test_retries_are_bounded_by_max_retries(generic: ToolSet) -> None:
    d = Driver(generic, TurnLimits(max_retries=2))
    d.apply(Retry(0, RATE), Retry(0, RATE))
    assert d.state.phase is TurnPhase.REQUESTING and d.state.budget.retries_used == 2
    d.apply(Retry(0, RATE))
    assert (d.state.outcome, d.state.error) == (TurnOutcome.FAILED, RATE)


def test_retry_after_the_deadline_fails_the_turn(generic: ToolSet) -> None:
    d = Driver(generic, TurnLimits(deadline_ms=100))
    d.apply(Retry(100, RATE))
    assert d.state.outcome is TurnOutcome.FAILED


# ---------------------------------------------------------------- deliberate fixes


def test_fix_a_approved_twin_of_a_denied_input_is_settled_failed_not_left_runnable(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "A"})])
    d.apply(DenyCall("c1"), ApproveCall("c2"))
    assert d.state.phase is TurnPhase.EXECUTING
    d.apply(StartCall("c2"))
    c2 = d.state.call("c2")
    assert c2 is not None and c2.status is CallStatus.FAILED
    assert c2.result == "Not run: the user already declined an identical action in this turn."
    assert d.state.runnable_calls() == ()
    assert d.state.violations[-1].violation is Violation.DENIED_REPLAY
    d.apply(Advance(1))
    assert d.state.phase is TurnPhase.REQUESTING


def test_fix_b_content_without_message_start_still_counts_against_the_iteration_bound() -> None:
    d = Driver(generic_tools(), TurnLimits(max_iterations=2))
    for n in (1, 2):
        # No message_start at all: the first call opens the message implicitly.
        d.apply(ToolCallComplete(f"r{n}", "read_thing", {"q": str(n)}), MessageStop(StopReason.TOOL_USE))
        d.apply(StartCall(f"r{n}"), CallSettled(f"r{n}", ToolOk("r")), Advance(n))
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.BOUNDED, "iterations")
    assert d.requesting_entries() == 2
    assert Violation.STREAM_WITHOUT_START in [v.violation for v in d.state.violations]


def test_fix_b_stream_that_ends_with_no_message_fails_instead_of_re_requesting(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(StreamEnded())
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.FAILED, "empty_stream")
    assert d.state.error is not None and d.state.error.code is ErrorCode.MALFORMED_STREAM


def test_truncated_stream_fails_and_pairs_open_calls(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), ToolCallComplete("c1", "add_thing", {"name": "A"}), StreamEnded())
    assert (d.state.outcome, d.state.reason) == (TurnOutcome.FAILED, "truncated_stream")
    assert check_tool_pairing(d.state.messages) == []


def test_fix_c_malformed_notice_does_not_fail_and_the_dropped_call_is_answered(generic: ToolSet) -> None:
    notice = StreamError(ProtocolError(ErrorCode.MALFORMED_STREAM, "bad arguments"))
    d = Driver(generic)
    d.apply(
        MessageStart("m"),
        ToolCallStart("bad", "add_thing"),
        ToolCallInputDelta("bad", '{"name": '),
        notice,
        ToolCallStart("r1", "read_thing"),
        ToolCallComplete("r1", "read_thing", {"q": "x"}),
        MessageStop(StopReason.TOOL_USE),
    )
    assert d.state.phase is TurnPhase.EXECUTING
    assert d.state.stream_notices == (notice.error,)
    bad = d.state.call("bad")
    assert bad is not None and bad.status is CallStatus.FAILED and bad.is_error
    assert "damaged" in (bad.result or "")
    assert Violation.DROPPED_TOOL_CALL in [v.violation for v in d.state.violations]
    d.apply(StartCall("r1"), CallSettled("r1", ToolOk("r")), Advance(1))
    results = {b.tool_call_id: b for b in d.state.history[-1].content}  # type: ignore[union-attr]
    assert results["bad"].is_error and "damaged" in results["bad"].content
    assert check_tool_pairing(d.state.messages) == []


def test_fix_c_a_stream_ending_malformed_error_still_fails(generic: ToolSet) -> None:
    d = Driver(generic)
    d.apply(MessageStart("m"), StreamError(ProtocolError(ErrorCode.MALFORMED_STREAM, "cut"), ends_stream=True))
    assert d.state.outcome is TurnOutcome.FAILED


def test_fix_d_the_last_permitted_iteration_can_still_retry() -> None:
    d = Driver(generic_tools(), TurnLimits(max_iterations=1, max_retries=2))
    d.apply(Retry(0, RATE))
    assert d.state.phase is TurnPhase.REQUESTING and d.state.budget.retries_used == 1
    d.apply(MessageStart("m"), TextDelta("ok"), MessageStop(StopReason.END_TURN))
    assert d.state.outcome is TurnOutcome.COMPLETED


def test_undo_leaves_read_calls_succeeded(generic: ToolSet) -> None:
    d = Driver(generic)
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("r1", "read_thing", {"q": "x"})])
    d.apply(ApproveCall("c1"))
    for call_id in ("c1", "r1"):
        d.apply(StartCall(call_id), CallSettled(call_id, ToolOk("ok")))
    d.apply(Advance(1), MessageStart("m"), MessageStop(StopReason.END_TURN), UndoTurn())
    assert statuses(d.state) == {"c1": CallStatus.UNDONE, "r1": CallStatus.SUCCEEDED}


def test_approval_wait_moves_the_clock_start_only_while_awaiting_approval(generic: ToolSet) -> None:
    from stockade.loop.commands import ApprovalWaited

    d = Driver(generic, TurnLimits(deadline_ms=1000))
    before = d.state
    assert d.apply(ApprovalWaited(500)) is before  # requesting: ignored
    d.stream_calls([("c1", "add_thing", {"name": "A"})])
    d.apply(ApprovalWaited(5000))
    assert d.state.budget.started_at_ms == 5000
