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

Beyond the reference: a pending call's input can be replaced by a person's (`EditCall`, ADR
0007), a denial can carry the person's reason into the result the model reads, a headless
policy's denial is marked as one, and calls a stop leaves undecided or unstarted are `not_run`
(nobody said no), not denied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stockade.loop.authorization import (
    DenialReason,
    DenialRecord,
    Grant,
    Refused,
    Violation,
    auto_grant_for,
    grant_for_batch,
    grant_for_call,
    grant_to_start,
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
    EditCall,
    RefuseRequest,
    Retry,
    StartCall,
    StopTurn,
    StreamEnded,
    Submit,
    TurnCommand,
    UndoTurn,
)
from stockade.loop.edits import CallEdit, describe_changes, edited_result, prepare_edit
from stockade.loop.limits import (
    BoundKind,
    TurnBudget,
    _put_budget_dict,
    bounded_notice,
    budget_exhaustion,
    new_budget,
    refused_notice,
)
from stockade.loop.state import (
    LIVE_PHASES,
    TERMINAL_STATUSES,
    CallRecord,
    CallStatus,
    CallTable,
    ToolSet,
    TurnOutcome,
    TurnPhase,
    TurnState,
    ViolationRecord,
    _append_chunk,
    _Chunks,
    _new,
    _put_record_dict,
    _put_state_dict,
    _set_streamed_n,
    _Streamed,
    _ToolCallBlockFields,
    _ToolResultBlockFields,
    calls_of_iteration,
    new_call,
    new_message,
    new_text_block,
    state_values,
    tool_call_ids,
    with_status,
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
from stockade.protocol.messages import (
    ContentBlock,
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from stockade.tools.runtime import PreparedCall, ToolEffect, ToolOk, refusal_of
from stockade.tools.untrusted import sanitize

TurnInput = StreamEvent | TurnCommand

# Enum members as module globals: reading `TurnPhase.STREAMING` goes through the enum
# metaclass and costs several times a global lookup, on every input.
_IDLE = TurnPhase.IDLE
_REQUESTING = TurnPhase.REQUESTING
_STREAMING = TurnPhase.STREAMING
_AWAITING_APPROVAL = TurnPhase.AWAITING_APPROVAL
_EXECUTING = TurnPhase.EXECUTING
_SETTLED = TurnPhase.SETTLED
_PENDING = CallStatus.PENDING
_APPROVED = CallStatus.APPROVED
_RUNNING = CallStatus.RUNNING
_SUCCEEDED = CallStatus.SUCCEEDED
_FAILED = CallStatus.FAILED
_UNDONE = CallStatus.UNDONE
_DENIED = CallStatus.DENIED
_NOT_RUN = CallStatus.NOT_RUN
_READ = ToolEffect.READ
_MUTATE = ToolEffect.MUTATE


# Texts the model reads as tool results. Authored for Stockade.
UNKNOWN_TOOL_TEXT = 'There is no tool named "{name}". Use only the tools you were given.'
LIMIT_TEXT = "Not run: this turn has already made as many tool calls as it is allowed."
LIMIT_SUMMARY = "Not run (tool-call limit reached): {name}"
DECLINED_TEXT = "Not run: the user declined this action."
DECLINED_REASON_TEXT = 'Not run: the user declined this action. Their reason: "{reason}"'
DECLINED_TWIN_TEXT = "Not run: the user already declined an identical action in this turn."
POLICY_DENIED_TEXT = ("Not run: this run's approval policy denies every change "
                      "(--approve deny); nothing was changed.")
POLICY_TWIN_TEXT = "Not run: the approval policy already denied an identical action in this turn."
REASON_MAX_CODE_POINTS = 500
"""Longest denial reason passed to the model (a person typed it; it is not a document)."""
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



def _evolve(state: TurnState, changes: dict[str, Any]) -> TurnState:
    """A copy of `state` with instance-dict entries replaced: one dict copy, nothing validated.

    Reducer use only: keys are the state's stored names (public fields, and the draft parts
    `_blocks`/`_open`/`_chunks`/`_n`, the violation log `_log`, the call table `_index`, the
    used-grant log `_used`, the turn's own call ids `_seen_turn` and the last close-out `_closed`)."""
    values = state.__dict__.copy()
    if type(state) is _Streamed:
        values["_n"] = state._n
    values.update(changes)
    new = _new(TurnState)
    _put_state_dict(new, values)
    return new


_NO_DRAFT = {"_blocks": None, "_open": (), "_chunks": None, "_n": 0}
_EMPTY_DRAFT = {"_blocks": (), "_open": (), "_chunks": None, "_n": 0}


def _violation(state: TurnState, kind: Violation, call_id: str | None, detail: str) -> TurnState:
    return _evolve(state, {"_log": state._log.append(ViolationRecord(kind, call_id, detail))})


def _closed_blocks(state: TurnState) -> tuple[ContentBlock, ...]:
    """The draft's blocks with its open text run closed (the draft must exist)."""
    blocks = state._blocks or ()
    chunks = state._chunks
    if chunks is None:
        return blocks
    return (*blocks, new_text_block(chunks.text(state._n)))


def _append_call(state: TurnState, record: CallRecord, changes: dict[str, Any],
                 table: CallTable | None = None) -> TurnState:
    """`state` with `record` after its calls (`table`: the state's call table, if the caller
    holds it already)."""
    calls, index, tail = state._call_table() if table is None else table
    # Tuples are appended by concatenation here and below: one copy, where unpacking builds a
    # list and copies again (about half the cost for a turn's calls).
    new_calls = calls + (record,)  # noqa: RUF005
    new_index = index.copy()
    new_index.setdefault(record.id, len(calls))
    if tail is not None and calls:
        last = calls[-1].iteration
        if last > record.iteration:
            tail = None
        elif last < record.iteration:
            tail = len(calls)
    values = state.__dict__.copy()  # `_with_calls`, without its frame (one per opened call)
    if type(state) is _Streamed:
        values["_n"] = state._n
    values.update(changes)
    values["calls"] = new_calls
    values["_index"] = (new_calls, new_index, tail)
    new = _new(TurnState)
    _put_state_dict(new, values)
    return new


def _replace_calls(
    state: TurnState, replaced: dict[int, CallRecord], changes: dict[str, Any]
) -> TurnState:
    """Swap the records at the given positions (same ids and iterations, new status)."""
    calls, index, tail = state._call_table()
    as_list = list(calls)
    for i, record in replaced.items():
        as_list[i] = record
    return _with_calls(state, tuple(as_list), index, tail, changes)


def _with_calls(state: TurnState, calls: tuple[CallRecord, ...], index: dict[str, int],
                tail: int | None, changes: dict[str, Any]) -> TurnState:
    """A copy of `state` with these calls, their id table and `changes`."""
    values = state.__dict__.copy()
    if type(state) is _Streamed:
        values["_n"] = state._n
    values.update(changes)
    values["calls"] = calls
    values["_index"] = (calls, index, tail)
    new = _new(TurnState)
    _put_state_dict(new, values)
    return new


def _located(state: TurnState, call_id: str) -> tuple[int, CallRecord, CallTable] | None:
    table = state._call_table()
    i = table[1].get(call_id)
    return None if i is None else (i, table[0][i], table)


def _fold_draft(state: TurnState) -> TurnState:
    """Move the streaming assistant message into history (dropping it if it is empty)."""
    if state._blocks is None:
        return state
    blocks = _closed_blocks(state)
    history = (*state.history, new_message("assistant", blocks)) if blocks else state.history
    return _evolve(state, {"history": history, **_NO_DRAFT})


def _close_out(state: TurnState) -> TurnState:
    """Answer every opened call exactly once before anything else is sent.

    Calls that never ran become `not_run` (reason `turn_cancelled`, not sticky: nobody said
    no); each call without a result in history gets one, in call order, in a single user
    message.

    A close-out leaves every call terminal and answered, and the state remembers that
    (`_closed`: those calls, that history and the ids it answers). A later close-out whose
    calls and history begin with the remembered ones (compared element by element, by
    identity first) looks only at the calls and messages after them.
    """
    state = _fold_draft(state)
    calls = state.calls
    history = state.history
    start = 0
    answered: frozenset[str] | None = None
    cached = state.__dict__.get("_closed")
    if cached is not None:
        done_calls, done_history, done_answered = cached
        k, h = len(done_calls), len(done_history)
        if (len(calls) >= k and len(history) >= h
                and calls[:k] == done_calls and history[:h] == done_history):
            start = k
            answered = done_answered | _answered_ids(history[h:]) if len(history) > h \
                else done_answered
    if answered is None:
        answered = _answered_ids(history)
    fresh = calls[start:]
    for c in fresh:
        if c.status not in TERMINAL_STATUSES:
            replaced = {
                i: c.with_changes(
                    status=_NOT_RUN,
                    denial_reason=DenialReason.TURN_CANCELLED,
                    result=NOT_RUN_TEXT,
                    is_error=True,
                )
                for i, c in enumerate(fresh, start)
                if c.status not in TERMINAL_STATUSES
            }
            state = _replace_calls(state, replaced, {})
            calls = state.calls
            fresh = calls[start:]
            break
    # Each unanswered call's result block (`new_tool_result_block`, without its frame).
    results: list[ToolResultBlock] = []
    ids: list[str] = []
    for c in fresh:
        call_id = c.id
        if call_id not in answered:
            ids.append(call_id)
            block = _ToolResultBlockFields()
            block.tool_call_id = call_id
            result = c.result
            block.content = result if result is not None else c.summary
            block.is_error = c.is_error
            block.__class__ = ToolResultBlock
            results.append(block)
    if not results:
        state.__dict__["_closed"] = (calls, history, answered)  # benign cache write
        return state
    history = history + (new_message("user", tuple(results)),)  # noqa: RUF005
    answered = answered.union(ids)
    return _evolve(state, {"history": history, "_closed": (calls, history, answered)})


def _answered_ids(messages: tuple[Message, ...]) -> frozenset[str]:
    """Ids of the calls the tool results in `messages`' user messages answer."""
    return frozenset(
        b.tool_call_id
        for m in messages
        if m.role == "user"
        for b in m.content
        if isinstance(b, ToolResultBlock)
    )


def _settle(state: TurnState, outcome: TurnOutcome, reason: str, **extra: Any) -> TurnState:
    state = _close_out(state)
    return _evolve(state, {"phase": _SETTLED, "outcome": outcome, "reason": reason, **extra})


def _begin_message(state: TurnState, input_type: str) -> TurnState:
    """Content before `message_start`: open the message implicitly and note the deviation."""
    state = _violation(
        state,
        Violation.STREAM_WITHOUT_START,
        None,
        f'"{input_type}" arrived before the message began.',
    )
    return _evolve(state, {"phase": _STREAMING, **_EMPTY_DRAFT})


def _maybe_executing(state: TurnState) -> TurnState:
    """`state` executing once no call of its iteration is pending.

    `state` must be the one this transition has just built (nobody holds it yet), so the
    phase is set in its own dict rather than through another copy."""
    calls, _, tail = state._call_table()
    for c in calls_of_iteration(calls, tail, state.iteration):
        if c.status is _PENDING:
            return state
    state.__dict__["phase"] = _EXECUTING
    return state


# ---------------------------------------------------------------- stream events


def _on_message_start(state: TurnState, event: MessageStart) -> TurnState:
    if state.phase is _REQUESTING:
        return _evolve(state, {"phase": _STREAMING, **_EMPTY_DRAFT})
    return state


def _on_text_delta(state: TurnState, event: TextDelta) -> TurnState:
    # The hot path of a streamed reply: one dict copy and one list append per delta.
    if state.phase is not _STREAMING:
        if state.phase is not _REQUESTING:
            return state
        state = _begin_message(state, event.type)
    return _append_text(state, event.text)


def _append_text(state: TurnState, text: str) -> TurnState:
    """A streaming state with `text` added to the reply's text: one dict copy and one list
    append."""
    if not text:
        return state
    values = state_values(state)
    chunks = values["_chunks"]
    n = values["_n"]
    if chunks is None:
        values["_chunks"] = _Chunks([text])
    elif len(chunks.parts) == n:
        chunks.parts.append(text)  # the newest view: part n is free
    else:
        values["_chunks"] = _append_chunk(chunks, n, text)
    values["_n"] = n + 1
    if values["_blocks"] is None:
        values["_blocks"] = ()
    new = _new(TurnState)
    _put_state_dict(new, values)
    return new


def _on_tool_call_start(state: TurnState, event: ToolCallStart) -> TurnState:
    if state.phase is _REQUESTING:
        state = _begin_message(state, event.type)
    if state.phase is not _STREAMING:
        return state
    opened = state._open
    if opened and any(open_id == event.id for open_id, _ in opened):
        return state
    opened = opened + ((event.id, event.name),)  # noqa: RUF005
    return _evolve(state, {"_blocks": state._blocks or (), "_open": opened})


def _on_progress(state: TurnState, event: ToolCallInputDelta | Usage) -> TurnState:
    return state  # progress and usage never change the turn (the runner meters usage)


def _on_tool_call_complete(state: TurnState, event: ToolCallComplete) -> TurnState:
    phase = state.phase
    if phase is not _STREAMING:
        if phase is not _REQUESTING:
            return state
        state = _begin_message(state, event.type)
    call_id = event.id
    opened = state._open
    if len(opened) == 1 and opened[0][0] == call_id:
        open_ids: tuple[tuple[str, str], ...] = ()
    else:
        open_ids = tuple(o for o in opened if o[0] != call_id) if opened else ()
    seen_turn = state._seen_turn
    seen_at = seen_turn._first.get(call_id)  # `call_id in seen_turn`, without its frame
    if (seen_at is not None and seen_at < seen_turn._n) or call_id in state._seen:
        # (that is `state.has_seen_call(call_id)`)
        # The first record (and any grant) stays bound to the first input.
        state = _evolve(state, {"_blocks": state._blocks or (), "_open": open_ids})
        return _violation(
            state, Violation.DUPLICATE_CALL_ID, call_id, f"Reused tool call id {call_id!r}."
        )
    block = _ToolCallBlockFields()  # `new_tool_call_block(...)`, without its frame
    block.id = call_id
    block.name = event.name
    block.input = event.input
    block.__class__ = ToolCallBlock
    chunks = state._chunks
    if chunks is None:
        blocks = (state._blocks or ()) + (block,)
    else:  # the open text run closes before the call (`_closed_blocks`)
        blocks = (state._blocks or ()) + (new_text_block(chunks.text(state._n)), block)
    draft = {
        "_blocks": blocks,
        "_open": open_ids,
        "_chunks": None,
        "_n": 0,
        "_seen_turn": seen_turn.append(call_id),
    }
    return _open_call(state, draft, call_id, event.name, event.input)


def _open_call(
    state: TurnState, changes: dict[str, Any], call_id: str, name: str, raw: Any
) -> TurnState:
    """Create the record for a call whose tool_call block `changes` puts in the draft."""
    iteration = state.iteration
    table = state._call_table()
    # `state.tool_set.facts(name)`, without its frame:
    facts = state.tool_set._facts.get(name) if type(name) is str else None
    if facts is None:
        text = UNKNOWN_TOOL_TEXT.format(name=name)
        record = new_call(
            call_id, name, "", text, _MUTATE, False, iteration, _FAILED,
            raw_input=raw, result=text, is_error=True,
        )
        changes["_log"] = state._log.append(
            ViolationRecord(Violation.UNKNOWN_TOOL, call_id, f"Unknown tool {name!r}.")
        )
        return _append_call(state, record, changes, table)

    tool, effect, destructive = facts
    calls, _, tail = table
    if tail is not None and calls and calls[-1].iteration == iteration:
        in_iteration = len(calls) - tail  # `len(calls_of_iteration(...))` without the slice
    else:
        in_iteration = len(calls_of_iteration(calls, tail, iteration))
    limits, budget = state.limits, state.budget
    if (
        in_iteration >= limits.max_tool_calls_per_iteration
        or budget.tool_calls_accepted >= limits.max_tool_calls_per_turn
    ):
        record = new_call(
            call_id, name, "", LIMIT_SUMMARY.format(name=name), effect, destructive, iteration,
            _DENIED, raw_input=raw, result=LIMIT_TEXT, is_error=True,
            denial_reason=DenialReason.LIMIT_EXCEEDED,
        )
        changes["_log"] = state._log.append(
            ViolationRecord(Violation.LIMIT_EXCEEDED, call_id, "Tool-call limit reached.")
        )
        return _append_call(state, record, changes, table)

    try:
        prepared = tool.prepare(raw)
    except Exception:  # a tool bug must not make the reducer partial
        prepared = None
    if not isinstance(prepared, PreparedCall):
        text = "; ".join(prepared.issues) if prepared is not None else PREPARE_CRASH_TEXT
        record = new_call(
            call_id, name, "", text, effect, destructive, iteration, _FAILED,
            raw_input=raw, result=text, is_error=True,
        )
        state = _append_call(state, record, changes, table)
        if refusal_of(raw) is not None:
            return _violation(state, Violation.REFUSED_INPUT, call_id, text)
        return state

    # From here on the common case, with the frames of `new_budget` and `new_call` written
    # out (one of each per opened call).
    accepted = _new(TurnBudget)
    _put_budget_dict(accepted, {
        "iterations_started": budget.iterations_started,
        "tool_calls_accepted": budget.tool_calls_accepted + 1,
        "retries_used": budget.retries_used,
        "started_at_ms": budget.started_at_ms,
        "credits_spent": budget.credits_spent,
    })
    changes["budget"] = accepted
    digest = prepared.input_digest
    summary = prepared.summary
    denials = state.denials
    if denials and is_denied(denials, name, digest):
        by_policy = _denied_by_policy(state, name, digest)
        record = new_call(
            call_id, name, digest, summary, effect, destructive, iteration, _DENIED,
            raw, POLICY_TWIN_TEXT if by_policy else DECLINED_TWIN_TEXT, True,
            DenialReason.POLICY_DENIED if by_policy else DenialReason.USER_DECLINED, prepared,
        )
        return _append_call(state, record, changes, table)
    if effect is _READ and not destructive:
        status = _APPROVED
        grant = auto_grant_for(name, effect, destructive, call_id, digest, iteration)
        changes["grants"] = state.grants + (grant,)  # noqa: RUF005
    else:
        status = _PENDING
    record = _new(CallRecord)
    _put_record_dict(record, {
        "id": call_id, "tool_name": name, "input_digest": digest, "summary": summary,
        "effect": effect, "destructive": destructive, "iteration": iteration, "status": status,
        "raw_input": raw, "result": None, "is_error": False, "denial_reason": None,
        "edit": None, "prepared": prepared,
    })
    return _append_call(state, record, changes, table)


def _answer_dropped_calls(state: TurnState) -> TurnState:
    """Give every announced-but-never-completed call a block and an error record."""
    if state._blocks is None or not state._open:
        return state
    for call_id, name in state._open:
        if state.has_seen_call(call_id):
            state = _violation(
                state, Violation.DUPLICATE_CALL_ID, call_id, f"Reused tool call id {call_id!r}."
            )
            continue
        tool = state.tool_set.get(name)
        record = new_call(
            call_id, name, "", DROPPED_TEXT,
            tool.effect if tool is not None else _MUTATE,
            tool.destructive if tool is not None else False,
            state.iteration, _FAILED, raw_input={}, result=DROPPED_TEXT, is_error=True,
        )
        state = _append_call(
            state,
            record,
            {
                "_blocks": (*_closed_blocks(state), ToolCallBlock(call_id, name, {})),
                "_chunks": None,
                "_n": 0,
                "_seen_turn": state._seen_turn.append(call_id),
                "_log": state._log.append(
                    ViolationRecord(
                        Violation.DROPPED_TOOL_CALL, call_id, f"Tool call {call_id!r} arrived damaged."
                    )
                ),
            },
        )
    return _evolve(state, {"_open": ()})


def _on_message_stop(state: TurnState, event: MessageStop) -> TurnState:
    if state.phase is _REQUESTING:
        state = _begin_message(state, event.type)
    if state.phase is not _STREAMING:
        return state
    state = _fold_draft(_answer_dropped_calls(state))
    calls = state.iteration_calls()
    if event.stop_reason is not StopReason.TOOL_USE or not calls:
        # A tool_use stop with no calls completes: it never loops.
        return _settle(state, TurnOutcome.COMPLETED, "completed")
    if any(c.status is _PENDING for c in calls):
        return _evolve(state, {"phase": _AWAITING_APPROVAL})
    return _evolve(state, {"phase": _EXECUTING})


def _on_error(state: TurnState, event: StreamError) -> TurnState:
    if state.phase not in (_REQUESTING, _STREAMING):
        return state
    if not event.is_terminal:
        # A notice about one frame or one call; the stream goes on (dropped calls are
        # answered at message_stop).
        return _evolve(state, {"stream_notices": (*state.stream_notices, event.error)})
    return _settle(state, TurnOutcome.FAILED, "provider_error", error=event.error)


def _on_cancel(state: TurnState, event: Aborted | Cancel) -> TurnState:
    if state.phase in LIVE_PHASES:
        return _settle(state, TurnOutcome.CANCELLED, "cancelled")
    return state


# ---------------------------------------------------------------- commands


def _replace_call(state: TurnState, i: int, record: CallRecord, changes: dict[str, Any] | None,
                  table: CallTable) -> TurnState:
    """Swap in the new record of the call at position `i` (every record with its id, should a
    hand-built state repeat ids); `table` is the state's call table."""
    calls, index, tail = table
    if len(index) != len(calls):
        return _replace_calls(state, {j: record for j, c in enumerate(calls)
                                      if c.id == record.id}, changes or {})
    # One position: a list of every call and a tuple back (measured cheaper than three slices).
    as_list = list(calls)
    as_list[i] = record
    new_calls = tuple(as_list)
    values = state.__dict__.copy()
    if type(state) is _Streamed:
        values["_n"] = state._n
    if changes:
        values.update(changes)
    values["calls"] = new_calls
    values["_index"] = (new_calls, index, tail)
    new = _new(TurnState)
    _put_state_dict(new, values)
    return new


def _on_submit(state: TurnState, cmd: Submit) -> TurnState:
    if state.phase is not _IDLE:
        return state
    base = tuple(cmd.base_messages)
    tool_set = ToolSet.from_registry(cmd.tool_set) if cmd.tool_set is not None else ToolSet()
    return TurnState(
        phase=_REQUESTING,
        iteration=1,
        budget=TurnBudget(iterations_started=1, started_at_ms=cmd.now_ms),
        limits=cmd.limits,
        tool_set=tool_set,
        history=(*base, Message("user", (TextBlock(cmd.text),))),
        seen_call_ids=tool_call_ids(base),
    )


def _on_approve_call(state: TurnState, cmd: ApproveCall) -> TurnState:
    if state.phase is not _AWAITING_APPROVAL:
        return state
    found = _located(state, cmd.call_id)
    if found is None or found[1].status is not _PENDING:
        return state
    i, call, table = found
    state = _replace_call(
        state,
        i,
        with_status(call, _APPROVED),
        {"grants": state.grants + (grant_for_call(call, state.iteration),)},  # noqa: RUF005
        table,
    )
    return _maybe_executing(state)


def _on_approve_batch(state: TurnState, cmd: ApproveBatch) -> TurnState:
    if state.phase is not _AWAITING_APPROVAL:
        return state
    wanted = set(cmd.call_ids)
    calls, index, tail = state._call_table()
    if len(index) != len(calls):
        return _approve_batch_by_scan(state, wanted, calls)
    # Ids are unique (as the reducer keeps them): the wanted calls are found by position, in
    # call order, without a pass over the whole turn; one pass over them picks the eligible
    # ones and makes each one's approved record (`with_status`, without its frame).
    tools = state.tool_set._tools  # `tool_set.get(name) is not None`, without its frame
    eligible: list[CallRecord] = []
    as_list: list[CallRecord] | None = None
    for i in sorted([index[w] for w in wanted if w in index]):
        c = calls[i]
        if c.status is _PENDING and not c.destructive:
            name = c.tool_name
            if type(name) is str and name in tools:
                eligible.append(c)
                values = c.__dict__.copy()
                values["status"] = _APPROVED
                approved = _new(CallRecord)
                _put_record_dict(approved, values)
                if as_list is None:
                    as_list = list(calls)
                as_list[i] = approved
    if as_list is None:
        return state
    grants = grant_for_batch(eligible, state.iteration)
    new_calls = tuple(as_list)
    return _maybe_executing(_with_calls(state, new_calls, index, tail,
                                        {"grants": state.grants + grants}))


def _approve_batch_by_scan(state: TurnState, wanted: set[str],
                           calls: tuple[CallRecord, ...]) -> TurnState:
    """`_on_approve_batch` for a state whose calls repeat an id (built by hand): every call
    with a wanted id is looked at, and every record with an eligible id is approved."""
    tool_set = state.tool_set
    eligible = [
        c
        for c in calls
        if c.id in wanted
        and c.status is _PENDING
        and not c.destructive
        and tool_set.get(c.tool_name) is not None
    ]
    if not eligible:
        return state
    grants = grant_for_batch(eligible, state.iteration)
    ids = {c.id for c in eligible}
    replaced = {i: c.with_changes(status=_APPROVED) for i, c in enumerate(calls) if c.id in ids}
    state = _replace_calls(state, replaced, {"grants": state.grants + grants})
    return _maybe_executing(state)


def _on_deny_call(state: TurnState, cmd: DenyCall) -> TurnState:
    if state.phase is not _AWAITING_APPROVAL:
        return state
    found = _located(state, cmd.call_id)
    if found is None or found[1].status is not _PENDING:
        return state
    i, call, table = found
    reason = DenialReason.POLICY_DENIED if cmd.by_policy else DenialReason.USER_DECLINED
    denied = call.with_changes(
        status=_DENIED,
        denial_reason=reason,
        result=_denial_text(cmd),
        is_error=True,
    )
    state = _replace_call(
        state, i, denied,
        {"denials": (*state.denials, DenialRecord(call.tool_name, call.input_digest, reason))},
        table,
    )
    return _maybe_executing(state)


def _denial_text(cmd: DenyCall) -> str:
    if cmd.by_policy:
        return POLICY_DENIED_TEXT
    words = sanitize(cmd.reason.strip(), REASON_MAX_CODE_POINTS)[0] if cmd.reason else ""
    return DECLINED_REASON_TEXT.format(reason=words) if words else DECLINED_TEXT


def _denied_by_policy(state: TurnState, tool_name: str, digest: str) -> bool:
    return any(d.tool_name == tool_name and d.input_digest == digest
               and d.reason is DenialReason.POLICY_DENIED for d in state.denials)


def _on_edit_call(state: TurnState, cmd: EditCall) -> TurnState:
    """Replace a pending call's input with a person's, validated by the call's own tool.

    The record takes the edited input, summary, prepared call and digest and keeps the model's
    original in `edit`; no grant exists for a pending call, and the one its approval creates is
    bound to the edited digest. A refused edit leaves the call exactly as it was.
    """
    if state.phase is not _AWAITING_APPROVAL:
        return state
    found = _located(state, cmd.call_id)
    if found is None or found[1].status is not _PENDING:
        return state
    i, call, table = found
    tool = state.tool_set.get(call.tool_name)
    if tool is None:
        return state
    prepared = prepare_edit(tool, cmd.new_input)
    if not isinstance(prepared, PreparedCall):
        return _violation(state, Violation.INVALID_EDIT, call.id,
                          "The edited input was refused: " + "; ".join(prepared.issues))
    digest = prepared.input_digest
    if digest == call.input_digest:
        return state
    if is_denied(state.denials, call.tool_name, digest):
        return _violation(state, Violation.INVALID_EDIT, call.id,
                          "The edited input matches one already declined in this turn.")
    first = call.edit
    original_input = first.original_input if first is not None else call.raw_input
    original_digest = first.original_digest if first is not None else call.input_digest
    edit = CallEdit(actor=cmd.actor, original_digest=original_digest,
                    original_input=original_input,
                    changes=describe_changes(original_input, cmd.new_input))
    edited = call.with_changes(input_digest=digest, summary=prepared.summary,
                               raw_input=cmd.new_input, prepared=prepared, edit=edit)
    return _replace_call(state, i, edited, None, table)


def _on_start_call(state: TurnState, cmd: StartCall) -> TurnState:
    if state.phase is not _EXECUTING:
        return state
    call_id = cmd.call_id
    table = state._call_table()
    i = table[1].get(call_id)
    call = None if i is None else table[0][i]
    auth = grant_to_start(state, call_id, call)
    if type(auth) is Grant:
        assert call is not None and i is not None  # grant_to_start found it
        values = call.__dict__.copy()  # `with_status(call, _RUNNING)`, without its frame
        values["status"] = _RUNNING
        running = _new(CallRecord)
        _put_record_dict(running, values)
        return _replace_call(state, i, running, {"_used": state._used.append(auth)}, table)
    assert isinstance(auth, Refused)
    state = _violation(
        state, auth.violation, cmd.call_id, f"Start refused: {auth.violation.value}."
    )
    if call is not None and call.status is _APPROVED:
        # An approved call that was refused can never become startable later in this
        # iteration; settling it keeps the runner from asking forever.
        assert i is not None
        text = UNSTARTABLE_TEXT.get(auth.violation, UNSTARTABLE_DEFAULT)
        failed = call.with_changes(status=_FAILED, result=text, is_error=True)
        state = _replace_call(state, i, failed, None, state._call_table())
    return state


def _on_call_settled(state: TurnState, cmd: CallSettled) -> TurnState:
    if state.phase is not _EXECUTING:
        return state
    table = state._call_table()
    i = table[1].get(cmd.call_id)
    if i is None:
        return state
    call = table[0][i]
    if call.status is not _RUNNING:
        return state
    outcome = cmd.outcome
    ok = type(outcome) is ToolOk or isinstance(outcome, ToolOk)
    result = outcome.result
    edit = call.edit
    if edit is not None:
        result = edited_result(edit, result)  # the model learns it ran with other input
    values = call.__dict__.copy()
    values["status"] = _SUCCEEDED if ok else _FAILED
    values["result"] = result
    values["is_error"] = not ok
    settled = _new(CallRecord)
    _put_record_dict(settled, values)
    return _replace_call(state, i, settled, None, table)


def _on_advance(state: TurnState, cmd: Advance) -> TurnState:
    if state.phase is not _EXECUTING:
        return state
    for c in state.iteration_calls():
        if c.status not in TERMINAL_STATUSES:
            return state
    state = _close_out(state)
    bound = budget_exhaustion(state.budget, state.limits, cmd.now_ms)
    if bound is not None:
        return _evolve(state, {
            "phase": _SETTLED,
            "outcome": TurnOutcome.BOUNDED,
            "reason": bound.value,
            "notice": bounded_notice(bound),
        })
    b = state.budget
    return _evolve(state, {
        "phase": _REQUESTING,
        "iteration": state.iteration + 1,
        "budget": new_budget(
            b.iterations_started + 1,
            b.tool_calls_accepted,
            b.retries_used,
            b.started_at_ms,
            b.credits_spent,
        ),
    })


def _on_retry(state: TurnState, cmd: Retry) -> TurnState:
    if state.phase is not _REQUESTING:
        return state
    b = state.budget
    # The iteration being retried is already counted; gating on it would forbid any retry
    # on the last permitted iteration, so the check sees the budget without it.
    without_current = new_budget(
        b.iterations_started - 1, b.tool_calls_accepted, b.retries_used, b.started_at_ms,
        b.credits_spent,
    )
    if budget_exhaustion(without_current, state.limits, cmd.now_ms) is not None:
        error = cmd.error or ProtocolError(ErrorCode.TRANSPORT, RETRY_EXHAUSTED_TEXT)
        return _settle(state, TurnOutcome.FAILED, "provider_error", error=error)
    return _evolve(state, {
        "budget": new_budget(
            b.iterations_started, b.tool_calls_accepted, b.retries_used + 1, b.started_at_ms,
            b.credits_spent,
        )
    })


def _on_refuse_request(state: TurnState, cmd: RefuseRequest) -> TurnState:
    if state.phase is not _REQUESTING:
        return state
    return _settle(
        state, TurnOutcome.BOUNDED, cmd.reason, notice=refused_notice(cmd.message)
    )


def _on_charge_credits(state: TurnState, cmd: ChargeCredits) -> TurnState:
    if cmd.credits <= 0 or state.phase is _IDLE:
        return state
    b = state.budget
    return _evolve(state, {
        "budget": new_budget(
            b.iterations_started, b.tool_calls_accepted, b.retries_used, b.started_at_ms,
            b.credits_spent + cmd.credits,
        )
    })


def _on_stream_ended(state: TurnState, cmd: StreamEnded) -> TurnState:
    if state.phase is _REQUESTING:
        # The request already counted against the iteration bound; failing here (rather than
        # asking again) is what keeps a silent provider from looping for free.
        state = _violation(
            state, Violation.STREAM_WITHOUT_START, None, "The stream ended with no message."
        )
        error = ProtocolError(ErrorCode.MALFORMED_STREAM, EMPTY_STREAM_TEXT)
        return _settle(state, TurnOutcome.FAILED, "empty_stream", error=error)
    if state.phase is _STREAMING:
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
    if state.phase is not _AWAITING_APPROVAL or cmd.waited_ms <= 0:
        return state
    b = state.budget
    return _evolve(state, {
        "budget": new_budget(
            b.iterations_started, b.tool_calls_accepted, b.retries_used,
            b.started_at_ms + cmd.waited_ms, b.credits_spent,
        )
    })


def _on_stop_turn(state: TurnState, cmd: StopTurn) -> TurnState:
    if state.phase not in LIVE_PHASES:
        return state
    return _settle(state, TurnOutcome.FAILED, cmd.reason, notice=cmd.message)


def _on_undo_turn(state: TurnState, cmd: UndoTurn) -> TurnState:
    return state  # only meaningful once settled (handled by the settled guard)


def _mark_undone(state: TurnState, cmd: UndoTurn) -> TurnState:
    def reverted(c: CallRecord) -> bool:
        # Read calls changed nothing, so there is nothing of theirs to undo; they stay succeeded.
        return (c.status is _SUCCEEDED and c.effect is _MUTATE
                and c.id not in cmd.kept)

    replaced = {
        i: c.with_changes(status=_UNDONE) for i, c in enumerate(state.calls) if reverted(c)
    }
    if not replaced:
        return state
    return _replace_calls(state, replaced, {})


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
    EditCall: _on_edit_call,
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
    kind = type(input)
    phase = state.phase
    # The inputs a turn receives most (a reply's text deltas, argument deltas and usage) are
    # answered here: `_on_text_delta` and `_on_progress` do the same.
    if kind is TextDelta and phase is _STREAMING:
        text = input.text  # type: ignore[union-attr]
        chunks = state._chunks
        n = state._n
        if chunks is not None and text and len(chunks.parts) == n:
            # The newest view of its chunks (nearly every delta of a reply): the chunk goes
            # in place and the new state shares this one's fields (`_Streamed`).
            chunks.parts.append(text)
            new = _Streamed()  # `new_streamed(state, n + 1)` without its frame
            _put_state_dict(new, state.__dict__)
            _set_streamed_n(new, n + 1)
            return new
        return _append_text(state, text)
    if phase is not _SETTLED:
        if kind is ToolCallInputDelta or kind is Usage:
            return state
        return _LIVE_HANDLERS[kind](state, input)
    if kind is UndoTurn:
        return _mark_undone(state, input)  # type: ignore[arg-type]
    if kind is ChargeCredits:
        return _on_charge_credits(state, input)  # type: ignore[arg-type]
    name = getattr(input, "type", kind.__name__)
    return _violation(state, Violation.POST_SETTLEMENT_EVENT, None, f"Dropped {name!r}.")


class _Handlers(dict[type, Callable[[TurnState, Any], TurnState]]):
    """The handlers by input type; a type with none (not a turn input at all) gets one that
    ignores it, which keeps the reducer total (looked up by subscript: cheaper than `get`)."""

    def __missing__(self, kind: type) -> Callable[[TurnState, Any], TurnState]:
        return _on_progress


_LIVE_HANDLERS = _Handlers(_HANDLERS)


def initial_state() -> TurnState:
    """The idle state every turn starts from."""
    return TurnState()
