"""The turn reducer: `reduce_turn(state, input) -> state`, total and pure.

It is the only writer of the phase and of every call status. It does no I/O and reads no clock
(time arrives as `now_ms` on commands). Every input is handled in every phase: input that does
not apply is ignored, and input after settlement is dropped with a recorded violation. Nothing is
ever raised for bad input.

Deliberate differences from the reference loop (each has a test):
- an approved call refused at start for a reason that cannot change is settled `failed`, so a
  runner never spins on it (the reference left it `approved` forever: a livelock);
- content before `message_start` opens the message implicitly (the request already counted
  against the iteration bound) and a stream that ends with no message fails the turn instead of
  being re-requested for free;
- a `malformed_stream` notice is kept as a notice and does not fail the turn; a tool call the
  provider announced but could not decode is answered with an error result the model sees;
- the retry gate ignores the iteration that is being retried, so the last iteration can retry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stockade.loop.authorization import (
    Authorized,
    DenialReason,
    DenialRecord,
    Violation,
    authorize_start,
    auto_grant_read_only,
    grant_for_batch,
    grant_for_call,
    is_denied,
)
from stockade.loop.commands import (
    Advance,
    ApprovalWaited,
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
    TurnCommand,
    UndoTurn,
)
from stockade.loop.limits import (
    BoundKind,
    TurnBudget,
    bounded_notice,
    budget_exhaustion,
    refused_notice,
)
from stockade.loop.state import (
    LIVE_PHASES,
    TERMINAL_STATUSES,
    AssistantDraft,
    CallRecord,
    CallStatus,
    TextRun,
    ToolSet,
    TurnOutcome,
    TurnPhase,
    TurnState,
    ViolationRecord,
    tool_call_ids,
)
from stockade.protocol.errors import ErrorCode, ProtocolError
from stockade.protocol.events import (
    Aborted,
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
)
from stockade.protocol.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from stockade.tools.runtime import PreparedCall, ToolEffect, ToolOk, refusal_of

TurnInput = StreamEvent | TurnCommand

# Texts the model reads as tool results. Authored for Stockade.
UNKNOWN_TOOL_TEXT = 'There is no tool named "{name}". Use only the tools you were given.'
LIMIT_TEXT = "Not run: this turn has already made as many tool calls as it is allowed."
LIMIT_SUMMARY = "Not run (tool-call limit reached): {name}"
DECLINED_TEXT = "Not run: the user declined this action."
DECLINED_TWIN_TEXT = "Not run: the user already declined an identical action in this turn."
NOT_RUN_TEXT = "Not run: the turn ended before this tool call could run."
DROPPED_TEXT = (
    "Not run: the arguments of this tool call arrived damaged and could not be read. "
    "Send the call again if it is still needed."
)
PREPARE_CRASH_TEXT = "Not run: the tool could not check this input."
UNSTARTABLE_TEXT = {
    Violation.DENIED_REPLAY: DECLINED_TWIN_TEXT,
    Violation.UNKNOWN_TOOL: "Not run: this tool is not available in this turn.",
}
UNSTARTABLE_DEFAULT = "Not run: the approval on record does not match this call."
EMPTY_STREAM_TEXT = "The provider closed its response without sending a message."
TRUNCATED_STREAM_TEXT = "The provider's response ended before it was complete."
RETRY_EXHAUSTED_TEXT = "The provider kept failing, so the request was not retried again."


# ---------------------------------------------------------------- helpers


def _violation(state: TurnState, kind: Violation, call_id: str | None, detail: str) -> TurnState:
    return state.evolve(
        violations=(*state.violations, ViolationRecord(kind, call_id, detail))
    )


def _replace_call(state: TurnState, call: CallRecord) -> tuple[CallRecord, ...]:
    return tuple(call if c.id == call.id else c for c in state.calls)


def _with_call(c: CallRecord, **changes: Any) -> CallRecord:
    values = {name: getattr(c, name) for name in CallRecord.__dataclass_fields__}
    values.update(changes)
    return CallRecord(**values)


def _fold_draft(state: TurnState) -> TurnState:
    """Move the streaming assistant message into history (dropping it if it is empty)."""
    draft = state.draft
    if draft is None:
        return state
    blocks = draft.closed_blocks()
    history = (*state.history, Message("assistant", blocks)) if blocks else state.history
    return state.evolve(history=history, draft=None)


def _close_out(state: TurnState) -> TurnState:
    """Answer every opened call exactly once before anything else is sent.

    Calls that never ran become `denied(turn_cancelled)` (not sticky); each call without a
    result in history gets one, in call order, in a single user message.
    """
    state = _fold_draft(state)
    calls = tuple(
        _with_call(
            c,
            status=CallStatus.DENIED,
            denial_reason=DenialReason.TURN_CANCELLED,
            result=NOT_RUN_TEXT,
            is_error=True,
        )
        if c.status not in TERMINAL_STATUSES
        else c
        for c in state.calls
    )
    answered = {
        b.tool_call_id
        for m in state.history
        if m.role == "user"
        for b in m.content
        if isinstance(b, ToolResultBlock)
    }
    results = tuple(
        ToolResultBlock(c.id, c.result if c.result is not None else c.summary, c.is_error)
        for c in calls
        if c.id not in answered
    )
    history = (*state.history, Message("user", results)) if results else state.history
    return state.evolve(calls=calls, history=history)


def _settle(state: TurnState, outcome: TurnOutcome, reason: str, **extra: Any) -> TurnState:
    state = _close_out(state)
    return state.evolve(phase=TurnPhase.SETTLED, outcome=outcome, reason=reason, **extra)


def _begin_message(state: TurnState, input_type: str) -> TurnState:
    """Content before `message_start`: open the message implicitly and note the deviation."""
    state = _violation(
        state,
        Violation.STREAM_WITHOUT_START,
        None,
        f'"{input_type}" arrived before the message began.',
    )
    return state.evolve(phase=TurnPhase.STREAMING, draft=AssistantDraft())


def _maybe_executing(state: TurnState) -> TurnState:
    if any(c.status is CallStatus.PENDING for c in state.iteration_calls()):
        return state
    return state.evolve(phase=TurnPhase.EXECUTING)


# ---------------------------------------------------------------- stream events


def _on_message_start(state: TurnState, event: MessageStart) -> TurnState:
    if state.phase is TurnPhase.REQUESTING:
        return state.evolve(phase=TurnPhase.STREAMING, draft=AssistantDraft())
    return state


def _on_text_delta(state: TurnState, event: TextDelta) -> TurnState:
    # The hot path of a streamed reply: one small draft and one dict copy per delta.
    if state.phase is not TurnPhase.STREAMING:
        if state.phase is not TurnPhase.REQUESTING:
            return state
        state = _begin_message(state, event.type)
    text = event.text
    if not text:
        return state
    draft = state.draft or AssistantDraft()
    run = draft.text
    new_draft = AssistantDraft(
        draft.blocks, TextRun(text) if run is None else TextRun(text, run), draft.open_call_ids
    )
    return state.evolve(draft=new_draft)


def _on_tool_call_start(state: TurnState, event: ToolCallStart) -> TurnState:
    if state.phase is TurnPhase.REQUESTING:
        state = _begin_message(state, event.type)
    if state.phase is not TurnPhase.STREAMING:
        return state
    draft = state.draft or AssistantDraft()
    if any(open_id == event.id for open_id, _ in draft.open_call_ids):
        return state
    return state.evolve(
        draft=AssistantDraft(
            draft.blocks, draft.text, (*draft.open_call_ids, (event.id, event.name))
        )
    )


def _on_progress(state: TurnState, event: ToolCallInputDelta | Usage) -> TurnState:
    return state  # progress and usage never change the turn (the runner meters usage)


def _on_tool_call_complete(state: TurnState, event: ToolCallComplete) -> TurnState:
    if state.phase is TurnPhase.REQUESTING:
        state = _begin_message(state, event.type)
    if state.phase is not TurnPhase.STREAMING:
        return state
    draft = state.draft or AssistantDraft()
    open_ids = tuple(o for o in draft.open_call_ids if o[0] != event.id)
    if event.id in state.seen_call_ids:
        # The first record (and any grant) stays bound to the first input.
        state = state.evolve(draft=AssistantDraft(draft.blocks, draft.text, open_ids))
        return _violation(
            state, Violation.DUPLICATE_CALL_ID, event.id, f"Reused tool call id {event.id!r}."
        )
    blocks = draft.closed_blocks()
    new_draft = AssistantDraft((*blocks, ToolCallBlock(event.id, event.name, event.input)), None, open_ids)
    state = state.evolve(draft=new_draft, seen_call_ids=state.seen_call_ids | {event.id})
    return _open_call(state, event.id, event.name, event.input)


def _open_call(state: TurnState, call_id: str, name: str, raw: Any) -> TurnState:
    """Create the record for a call whose tool_call block is already in the draft."""
    iteration = state.iteration
    tool = state.tool_set.get(name)
    if tool is None:
        text = UNKNOWN_TOOL_TEXT.format(name=name)
        record = CallRecord(
            call_id, name, "", text, ToolEffect.MUTATE, False, iteration, CallStatus.FAILED,
            raw_input=raw, result=text, is_error=True,
        )
        state = state.evolve(calls=(*state.calls, record))
        return _violation(state, Violation.UNKNOWN_TOOL, call_id, f"Unknown tool {name!r}.")

    effect, destructive = tool.effect, tool.destructive
    in_iteration = sum(1 for c in state.calls if c.iteration == iteration)
    limits, budget = state.limits, state.budget
    if (
        in_iteration >= limits.max_tool_calls_per_iteration
        or budget.tool_calls_accepted >= limits.max_tool_calls_per_turn
    ):
        record = CallRecord(
            call_id, name, "", LIMIT_SUMMARY.format(name=name), effect, destructive, iteration,
            CallStatus.DENIED, raw_input=raw, result=LIMIT_TEXT, is_error=True,
            denial_reason=DenialReason.LIMIT_EXCEEDED,
        )
        state = state.evolve(calls=(*state.calls, record))
        return _violation(state, Violation.LIMIT_EXCEEDED, call_id, "Tool-call limit reached.")

    try:
        prepared = tool.prepare(raw)
    except Exception:  # a tool bug must not make the reducer partial
        prepared = None
    if not isinstance(prepared, PreparedCall):
        text = "; ".join(prepared.issues) if prepared is not None else PREPARE_CRASH_TEXT
        record = CallRecord(
            call_id, name, "", text, effect, destructive, iteration, CallStatus.FAILED,
            raw_input=raw, result=text, is_error=True,
        )
        state = state.evolve(calls=(*state.calls, record))
        if refusal_of(raw) is not None:
            return _violation(state, Violation.REFUSED_INPUT, call_id, text)
        return state

    budget = TurnBudget(
        budget.iterations_started,
        budget.tool_calls_accepted + 1,
        budget.retries_used,
        budget.started_at_ms,
        budget.credits_spent,
    )
    digest = prepared.input_digest
    base = dict(
        input_digest=digest, summary=prepared.summary, effect=effect, destructive=destructive,
        iteration=iteration, raw_input=raw, prepared=prepared,
    )
    grants = state.grants
    if is_denied(state.denials, name, digest):
        record = CallRecord(
            call_id, name, status=CallStatus.DENIED, result=DECLINED_TWIN_TEXT, is_error=True,
            denial_reason=DenialReason.USER_DECLINED, **base,
        )
    elif effect is ToolEffect.READ and not destructive:
        record = CallRecord(call_id, name, status=CallStatus.APPROVED, **base)
        grants = (
            *grants,
            auto_grant_read_only(tool, call_id=call_id, input_digest=digest, iteration=iteration),
        )
    else:
        record = CallRecord(call_id, name, status=CallStatus.PENDING, **base)
    return state.evolve(calls=(*state.calls, record), budget=budget, grants=grants)


def _answer_dropped_calls(state: TurnState) -> TurnState:
    """Give every announced-but-never-completed call a block and an error record."""
    draft = state.draft
    if draft is None or not draft.open_call_ids:
        return state
    for call_id, name in draft.open_call_ids:
        draft = state.draft or AssistantDraft()
        if call_id in state.seen_call_ids:
            state = _violation(
                state, Violation.DUPLICATE_CALL_ID, call_id, f"Reused tool call id {call_id!r}."
            )
            continue
        tool = state.tool_set.get(name)
        record = CallRecord(
            call_id, name, "", DROPPED_TEXT,
            tool.effect if tool is not None else ToolEffect.MUTATE,
            tool.destructive if tool is not None else False,
            state.iteration, CallStatus.FAILED, raw_input={}, result=DROPPED_TEXT, is_error=True,
        )
        state = state.evolve(
            draft=AssistantDraft((*draft.closed_blocks(), ToolCallBlock(call_id, name, {})), None, ()),
            calls=(*state.calls, record),
            seen_call_ids=state.seen_call_ids | {call_id},
        )
        state = _violation(
            state, Violation.DROPPED_TOOL_CALL, call_id, f"Tool call {call_id!r} arrived damaged."
        )
    draft = state.draft or AssistantDraft()
    return state.evolve(draft=AssistantDraft(draft.blocks, draft.text, ()))


def _on_message_stop(state: TurnState, event: MessageStop) -> TurnState:
    if state.phase is TurnPhase.REQUESTING:
        state = _begin_message(state, event.type)
    if state.phase is not TurnPhase.STREAMING:
        return state
    state = _fold_draft(_answer_dropped_calls(state))
    calls = state.iteration_calls()
    if event.stop_reason is not StopReason.TOOL_USE or not calls:
        # A tool_use stop with no calls completes: it never loops.
        return _settle(state, TurnOutcome.COMPLETED, "completed")
    if any(c.status is CallStatus.PENDING for c in calls):
        return state.evolve(phase=TurnPhase.AWAITING_APPROVAL)
    return state.evolve(phase=TurnPhase.EXECUTING)


def _on_error(state: TurnState, event: StreamError) -> TurnState:
    if state.phase not in (TurnPhase.REQUESTING, TurnPhase.STREAMING):
        return state
    if not event.is_terminal:
        # A notice about one frame or one call; the stream goes on (dropped calls are
        # answered at message_stop).
        return state.evolve(stream_notices=(*state.stream_notices, event.error))
    return _settle(state, TurnOutcome.FAILED, "provider_error", error=event.error)


def _on_cancel(state: TurnState, event: Aborted | Cancel) -> TurnState:
    if state.phase in LIVE_PHASES:
        return _settle(state, TurnOutcome.CANCELLED, "cancelled")
    return state


# ---------------------------------------------------------------- commands


def _on_submit(state: TurnState, cmd: Submit) -> TurnState:
    if state.phase is not TurnPhase.IDLE:
        return state
    base = tuple(cmd.base_messages)
    tool_set = ToolSet.from_registry(cmd.tool_set) if cmd.tool_set is not None else ToolSet()
    return TurnState(
        phase=TurnPhase.REQUESTING,
        iteration=1,
        budget=TurnBudget(iterations_started=1, started_at_ms=cmd.now_ms),
        limits=cmd.limits,
        tool_set=tool_set,
        history=(*base, Message("user", (TextBlock(cmd.text),))),
        seen_call_ids=tool_call_ids(base),
    )


def _on_approve_call(state: TurnState, cmd: ApproveCall) -> TurnState:
    if state.phase is not TurnPhase.AWAITING_APPROVAL:
        return state
    call = state.call(cmd.call_id)
    if call is None or call.status is not CallStatus.PENDING:
        return state
    state = state.evolve(
        grants=(*state.grants, grant_for_call(call, state.iteration)),
        calls=_replace_call(state, _with_call(call, status=CallStatus.APPROVED)),
    )
    return _maybe_executing(state)


def _on_approve_batch(state: TurnState, cmd: ApproveBatch) -> TurnState:
    if state.phase is not TurnPhase.AWAITING_APPROVAL:
        return state
    wanted = set(cmd.call_ids)
    eligible = [
        c
        for c in state.calls
        if c.id in wanted
        and c.status is CallStatus.PENDING
        and not c.destructive
        and state.tool_set.get(c.tool_name) is not None
    ]
    if not eligible:
        return state
    ids = {c.id for c in eligible}
    state = state.evolve(
        grants=(*state.grants, *grant_for_batch(eligible, state.iteration)),
        calls=tuple(
            _with_call(c, status=CallStatus.APPROVED) if c.id in ids else c for c in state.calls
        ),
    )
    return _maybe_executing(state)


def _on_deny_call(state: TurnState, cmd: DenyCall) -> TurnState:
    if state.phase is not TurnPhase.AWAITING_APPROVAL:
        return state
    call = state.call(cmd.call_id)
    if call is None or call.status is not CallStatus.PENDING:
        return state
    denied = _with_call(
        call,
        status=CallStatus.DENIED,
        denial_reason=DenialReason.USER_DECLINED,
        result=DECLINED_TEXT,
        is_error=True,
    )
    state = state.evolve(
        denials=(*state.denials, DenialRecord(call.tool_name, call.input_digest)),
        calls=_replace_call(state, denied),
    )
    return _maybe_executing(state)


def _on_start_call(state: TurnState, cmd: StartCall) -> TurnState:
    if state.phase is not TurnPhase.EXECUTING:
        return state
    auth = authorize_start(state, cmd.call_id)
    if isinstance(auth, Authorized):
        call = state.call(cmd.call_id)
        assert call is not None  # authorize_start found it
        return state.evolve(
            calls=_replace_call(state, _with_call(call, status=CallStatus.RUNNING)),
            used_grants=(*state.used_grants, auth.grant),
        )
    state = _violation(
        state, auth.violation, cmd.call_id, f"Start refused: {auth.violation.value}."
    )
    call = state.call(cmd.call_id)
    if call is not None and call.status is CallStatus.APPROVED:
        # An approved call that was refused can never become startable later in this
        # iteration; settling it keeps the runner from asking forever.
        text = UNSTARTABLE_TEXT.get(auth.violation, UNSTARTABLE_DEFAULT)
        failed = _with_call(call, status=CallStatus.FAILED, result=text, is_error=True)
        state = state.evolve(calls=_replace_call(state, failed))
    return state


def _on_call_settled(state: TurnState, cmd: CallSettled) -> TurnState:
    if state.phase is not TurnPhase.EXECUTING:
        return state
    call = state.call(cmd.call_id)
    if call is None or call.status is not CallStatus.RUNNING:
        return state
    ok = isinstance(cmd.outcome, ToolOk)
    settled = _with_call(
        call,
        status=CallStatus.SUCCEEDED if ok else CallStatus.FAILED,
        result=cmd.outcome.result,
        is_error=not ok,
    )
    return state.evolve(calls=_replace_call(state, settled))


def _on_advance(state: TurnState, cmd: Advance) -> TurnState:
    if state.phase is not TurnPhase.EXECUTING:
        return state
    if any(c.status not in TERMINAL_STATUSES for c in state.iteration_calls()):
        return state
    state = _close_out(state)
    bound = budget_exhaustion(state.budget, state.limits, cmd.now_ms)
    if bound is not None:
        return state.evolve(
            phase=TurnPhase.SETTLED,
            outcome=TurnOutcome.BOUNDED,
            reason=bound.value,
            notice=bounded_notice(bound),
        )
    b = state.budget
    return state.evolve(
        phase=TurnPhase.REQUESTING,
        iteration=state.iteration + 1,
        budget=TurnBudget(
            b.iterations_started + 1,
            b.tool_calls_accepted,
            b.retries_used,
            b.started_at_ms,
            b.credits_spent,
        ),
    )


def _on_retry(state: TurnState, cmd: Retry) -> TurnState:
    if state.phase is not TurnPhase.REQUESTING:
        return state
    b = state.budget
    # The iteration being retried is already counted; gating on it would forbid any retry
    # on the last permitted iteration, so the check sees the budget without it.
    without_current = TurnBudget(
        b.iterations_started - 1, b.tool_calls_accepted, b.retries_used, b.started_at_ms,
        b.credits_spent,
    )
    if budget_exhaustion(without_current, state.limits, cmd.now_ms) is not None:
        error = cmd.error or ProtocolError(ErrorCode.TRANSPORT, RETRY_EXHAUSTED_TEXT)
        return _settle(state, TurnOutcome.FAILED, "provider_error", error=error)
    return state.evolve(
        budget=TurnBudget(
            b.iterations_started, b.tool_calls_accepted, b.retries_used + 1, b.started_at_ms,
            b.credits_spent,
        )
    )


def _on_refuse_request(state: TurnState, cmd: RefuseRequest) -> TurnState:
    if state.phase is not TurnPhase.REQUESTING:
        return state
    return _settle(
        state, TurnOutcome.BOUNDED, cmd.reason, notice=refused_notice(cmd.message)
    )


def _on_charge_credits(state: TurnState, cmd: ChargeCredits) -> TurnState:
    if cmd.credits <= 0 or state.phase is TurnPhase.IDLE:
        return state
    b = state.budget
    return state.evolve(
        budget=TurnBudget(
            b.iterations_started, b.tool_calls_accepted, b.retries_used, b.started_at_ms,
            b.credits_spent + cmd.credits,
        )
    )


def _on_stream_ended(state: TurnState, cmd: StreamEnded) -> TurnState:
    if state.phase is TurnPhase.REQUESTING:
        # The request already counted against the iteration bound; failing here (rather than
        # asking again) is what keeps a silent provider from looping for free.
        state = _violation(
            state, Violation.STREAM_WITHOUT_START, None, "The stream ended with no message."
        )
        error = ProtocolError(ErrorCode.MALFORMED_STREAM, EMPTY_STREAM_TEXT)
        return _settle(state, TurnOutcome.FAILED, "empty_stream", error=error)
    if state.phase is TurnPhase.STREAMING:
        error = ProtocolError(ErrorCode.MALFORMED_STREAM, TRUNCATED_STREAM_TEXT)
        return _settle(state, TurnOutcome.FAILED, "truncated_stream", error=error)
    return state


def _on_check_deadline(state: TurnState, cmd: CheckDeadline) -> TurnState:
    if state.phase not in LIVE_PHASES:
        return state
    if cmd.now_ms - state.budget.started_at_ms < state.limits.deadline_ms:
        return state
    return _settle(
        state,
        TurnOutcome.BOUNDED,
        BoundKind.DEADLINE.value,
        notice=bounded_notice(BoundKind.DEADLINE),
    )


def _on_approval_waited(state: TurnState, cmd: ApprovalWaited) -> TurnState:
    if state.phase is not TurnPhase.AWAITING_APPROVAL or cmd.waited_ms <= 0:
        return state
    b = state.budget
    return state.evolve(
        budget=TurnBudget(
            b.iterations_started, b.tool_calls_accepted, b.retries_used,
            b.started_at_ms + cmd.waited_ms, b.credits_spent,
        )
    )


def _on_stop_turn(state: TurnState, cmd: StopTurn) -> TurnState:
    if state.phase not in LIVE_PHASES:
        return state
    return _settle(state, TurnOutcome.FAILED, cmd.reason, notice=cmd.message)


def _on_undo_turn(state: TurnState, cmd: UndoTurn) -> TurnState:
    return state  # only meaningful once settled (handled by the settled guard)


def _mark_undone(state: TurnState, cmd: UndoTurn) -> TurnState:
    def reverted(c: CallRecord) -> bool:
        # Read calls changed nothing, so there is nothing of theirs to undo; they stay succeeded.
        return (c.status is CallStatus.SUCCEEDED and c.effect is ToolEffect.MUTATE
                and c.id not in cmd.kept)

    if not any(reverted(c) for c in state.calls):
        return state
    return state.evolve(
        calls=tuple(
            _with_call(c, status=CallStatus.UNDONE) if reverted(c) else c for c in state.calls
        )
    )


_HANDLERS: dict[type, Callable[[TurnState, Any], TurnState]] = {
    MessageStart: _on_message_start,
    TextDelta: _on_text_delta,
    ToolCallStart: _on_tool_call_start,
    ToolCallInputDelta: _on_progress,
    ToolCallComplete: _on_tool_call_complete,
    Usage: _on_progress,
    MessageStop: _on_message_stop,
    StreamError: _on_error,
    Aborted: _on_cancel,
    Submit: _on_submit,
    ApproveCall: _on_approve_call,
    ApproveBatch: _on_approve_batch,
    DenyCall: _on_deny_call,
    StartCall: _on_start_call,
    CallSettled: _on_call_settled,
    Advance: _on_advance,
    Retry: _on_retry,
    Cancel: _on_cancel,
    UndoTurn: _on_undo_turn,
    RefuseRequest: _on_refuse_request,
    ChargeCredits: _on_charge_credits,
    StreamEnded: _on_stream_ended,
    CheckDeadline: _on_check_deadline,
    ApprovalWaited: _on_approval_waited,
    StopTurn: _on_stop_turn,
}


def reduce_turn(state: TurnState, input: TurnInput) -> TurnState:
    """The next state of the turn after `input`. Total and pure."""
    handler = _HANDLERS.get(type(input))
    if state.phase is TurnPhase.SETTLED:
        if type(input) is UndoTurn:
            return _mark_undone(state, input)
        if type(input) is ChargeCredits:
            return _on_charge_credits(state, input)
        kind = getattr(input, "type", type(input).__name__)
        return _violation(state, Violation.POST_SETTLEMENT_EVENT, None, f"Dropped {kind!r}.")
    if handler is None:
        return state  # not a turn input at all; ignoring it keeps the reducer total
    return handler(state, input)


def initial_state() -> TurnState:
    """The idle state every turn starts from."""
    return TurnState()
