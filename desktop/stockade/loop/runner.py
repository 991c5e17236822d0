"""The asyncio turn runner: performs only the effects the reducer allowed.

It sends provider requests while the reducer says `requesting`, feeds every stream event back
in, runs approved calls strictly one at a time (each only after the reducer moved it to
`running`), commits outcomes through the transaction, and reports every step to the hooks
before the step proceeds. Streams, tool runs and retry waits are awaited in the driving task
itself (no task per call): one timer at the turn deadline and Stop cancel that task while it
waits there, so the deadline still cuts a stream or a tool mid-way, not only between
iterations, and cancellation is honoured at every await.

It is also the one place a request is retried: a transient failure that arrives before the
first event is reported to the reducer (which counts it against `max_retries`), recorded,
waited out with backoff (or the provider's `retry-after`, clamped to the deadline; Stop cuts
the wait short) and sent again, reserved and audited as a new attempt.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import operator
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from stockade.loop.authorization import GrantScope, Refused, grant_to_start
from stockade.loop.commands import (
    Advance,
    ApprovalWaited,
    ApproveBatch,
    ApproveCall,
    Cancel,
    ChargeCredits,
    CheckDeadline,
    DenyCall,
    EditCall,
    RefuseRequest,
    Retry,
    StopTurn,
    StreamEnded,
    Submit,
    UndoTurn,
    call_settled,
    start_call,
)
from stockade.loop.edits import prepare_edit
from stockade.loop.history import DocumentSession
from stockade.loop.hooks import (
    NoHooks,
    RequestPermit,
    RequestRefused,
    StepKind,
    TurnHooks,
    new_step,
)
from stockade.loop.limits import TurnLimits
from stockade.loop.reasons import SettleReason
from stockade.loop.reducer import TurnInput, reduce_turn
from stockade.loop.state import (
    LIVE_PHASES,
    CallRecord,
    CallStatus,
    ToolSet,
    TurnPhase,
    TurnState,
)
from stockade.loop.transaction import (
    Committed,
    ProposedCommit,
    TurnUndoLedger,
    Unchanged,
    UndoAvailability,
    Validator,
    apply_commit,
    review_tool_outcome,
    turn_undo_availability,
)
from stockade.loop.transaction import undo_turn as undo_ledger_turn
from stockade.protocol.budget import budget_messages, estimate_tokens
from stockade.protocol.errors import ProtocolError, ProtocolException
from stockade.protocol.events import (
    Aborted,
    MessageStart,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallComplete,
    ToolCallInputDelta,
    ToolCallStart,
    Usage,
    is_terminal,
)
from stockade.protocol.messages import (
    Message,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    message_to_json,
)
from stockade.protocol.request import ChatRequest, ToolSpec
from stockade.protocol.retry import RetryPolicy, is_retryable, retry_delay_ms
from stockade.thf.canonical import canonical_json, digest
from stockade.thf.diff import describe, diff
from stockade.thf.digest import document_digest
from stockade.thf.model import ThreatModel
from stockade.tools.registry import ToolRegistry
from stockade.tools.runtime import (
    MAX_CALL_ID_LENGTH,
    MAX_TOOL_NAME_LENGTH,
    PreparedCall,
    ToolContext,
    ToolEffect,
    ToolFailed,
    ToolOk,
    ToolOutcome,
    call_problem,
    plainly_bounded,
    refusal_of,
    refused_input,
)

logger = logging.getLogger(__name__)

TOOL_CRASH_TEXT = "The tool failed while running."
NO_PREPARED_TEXT = "Not run: this call has no validated input to run with."
STALLED_TEXT = "The assistant stopped because the turn could not make progress."
REQUEST_FAILED_TEXT = "The assistant stopped because the request to the model could not be prepared."
HOOK_FAILED_TEXT = "The assistant stopped because a required record could not be written: {detail}"
OVERRUN_TEXT = (
    "The assistant stopped: the provider reported usage costing {charged} credits for one "
    "request, more than the {reserved} credits reserved for it (the most it could have cost). "
    "The full cost was recorded; check the model's price and the provider's usage report."
)


class StreamingProvider(Protocol):
    """The slice of `stockade.providers.base.Provider` the runner needs (loop may not import
    providers)."""

    name: str

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]: ...


SystemPrompt = str | Callable[[ThreatModel], str]
RequestCheck = Callable[[ChatRequest], None]
InputScreen = Callable[[str, Any], Any]
"""(tool name, raw input) -> the input a tool may see (governance's secret screen)."""


def _default_request_check(request: ChatRequest) -> None:
    from stockade.protocol.models import preflight

    preflight(request)


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop
        return None


class _Ending(Enum):
    """How a bounded await ended (see `TurnRunner._bounded`)."""

    FINISHED = "finished"
    RAISED = "raised"
    STOPPED = "stopped"
    TIMED_OUT = "timed_out"


# Enum members read on every call and event: reading one from its class costs about ten times
# a module global's (the enum's own lookup), and a turn reads them hundreds of times.
_IDLE, _REQUESTING, _STREAMING = TurnPhase.IDLE, TurnPhase.REQUESTING, TurnPhase.STREAMING
_EXECUTING, _AWAITING, _SETTLED = (
    TurnPhase.EXECUTING, TurnPhase.AWAITING_APPROVAL, TurnPhase.SETTLED)
_PENDING, _APPROVED = CallStatus.PENDING, CallStatus.APPROVED
_RUNNING, _SUCCEEDED = CallStatus.RUNNING, CallStatus.SUCCEEDED
_TOOL_PROPOSED, _TOOL_APPROVED = StepKind.TOOL_PROPOSED, StepKind.TOOL_APPROVED
_TOOL_STARTED, _TOOL_RESULT = StepKind.TOOL_STARTED, StepKind.TOOL_RESULT
_BY_AUTO, _BY_BATCH, _BY_CALL = GrantScope.AUTO, GrantScope.BATCH, GrantScope.CALL
_FINISHED, _RAISED = _Ending.FINISHED, _Ending.RAISED
_STOPPED, _TIMED_OUT = _Ending.STOPPED, _Ending.TIMED_OUT


@dataclass(slots=True)
class _StreamTally:
    usage: Usage | None = None
    held_error: Any = None
    terminal: bool = False
    failed: bool = False
    started: bool = False
    """The provider answered with something other than an error: it will bill the request."""


class TurnRunner:
    """Runs one turn (a runner is single-use: a new turn needs a new runner)."""

    def __init__(
        self,
        provider: StreamingProvider,
        registry: Any,
        session: DocumentSession,
        *,
        hooks: TurnHooks | None = None,
        limits: TurnLimits | None = None,
        model: str,
        provider_name: str,
        system_prompt: SystemPrompt = "",
        clock_ms: Callable[[], int] = _wall_clock_ms,
        on_state: Callable[[TurnState], None] | None = None,
        request_check: RequestCheck | None = _default_request_check,
        validator: Validator | None = None,
        undo_label: str = "Assistant changes",
        retry_policy: RetryPolicy | None = None,
        rng: random.Random | None = None,
        input_screen: InputScreen | None = None,
    ) -> None:
        self._provider = provider
        self._input_screen = input_screen
        self._tool_set = _frozen_tools(registry)
        self._session = session
        self._hooks: TurnHooks = hooks if hooks is not None else NoHooks()
        self._limits = limits or TurnLimits()
        self.model = model
        self.provider_name = provider_name
        self._system_prompt = system_prompt
        self._clock_ms = clock_ms
        self._on_state = on_state
        self._request_check = request_check
        self._validator = validator
        self._state = TurnState()
        self._ledger = TurnUndoLedger(label=undo_label)
        # Calls a resumed turn had already run: their commits sit under an undo entry of the
        # run that parked, which this runner's ledger never saw (see `resume`).
        self._done_before_resume: frozenset[str] = frozenset()
        # Digesting a whole document costs about a second at 50,000 entities, and the document
        # one commit produced is the next commit's (and a turn undo's) "before": keep the last.
        self._last_digest: tuple[ThreatModel, str] | None = None
        # Each request repeats the messages of the one before: their audit JSON and the hash
        # over them are kept instead of rebuilt per request.
        self._request_digests = _RequestDigests()
        self._token_estimates: dict[int, tuple[Message, int]] = {}
        self._counted: tuple[tuple[Message, ...], int] = ((), 0)
        self._schema_chars: int | None = None
        self._resolved_model: tuple[Any] | None = None
        self._context: ToolContext | None = None  # frozen: calls on one document share it
        self._driving = False
        # The driving task while it awaits a stream, a tool or a retry wait (see `_bounded`);
        # Stop and the deadline timer cancel it there, and only there.
        self._driver: asyncio.Task[Any] | None = None
        self._region: asyncio.Task[Any] | None = None
        self._region_cancels = 0
        self._region_timed_out = False
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._cancelled = asyncio.Event()
        self._settled_recorded = False
        self._finishing: asyncio.Future[Any] | None = None
        self.audit_error: BaseException | None = None
        self._waiting_since_ms: int | None = None
        self._retry_policy = retry_policy or RetryPolicy()
        self._rng = rng or random.Random()

    # ------------------------------------------------------------------ public API

    @property
    def state(self) -> TurnState:
        return self._state

    @property
    def session(self) -> DocumentSession:
        return self._session

    def undo_availability(self) -> UndoAvailability:
        return turn_undo_availability(self._ledger, self._session)

    async def submit(self, text: str, base_messages: Sequence[Message] = ()) -> TurnState:
        """Start the turn; returns at the next rest point (awaiting approval or settled)."""
        if self._state.phase is not _IDLE:
            return self._state
        self._dispatch(
            Submit(text, tuple(base_messages), self._tool_set, self._limits, self._clock_ms())
        )
        return await self.drive()

    async def approve_call(self, call_id: str, actor: str = "user") -> TurnState:
        self._account_wait()
        call = self._pending(call_id)
        if call is not None:
            if not await self._record(
                _TOOL_APPROVED, self._decision_payload(call, actor, _BY_CALL)
            ):
                return await self._after_stop()
            self._dispatch(ApproveCall(call_id))
        return await self.drive()

    async def approve_batch(self, call_ids: Sequence[str], actor: str = "user") -> TurnState:
        """Approve exactly the ids captured when the user clicked (destructive ones excluded)."""
        self._account_wait()
        wanted = set(call_ids)
        calls, index, _ = self._state._call_table()
        if len(index) == len(calls):
            # Ids are unique: the wanted calls by position, in call order (`pending_calls()`
            # filtered by id, without a pass over the whole turn).
            named = [calls[i] for i in sorted([index[w] for w in wanted if w in index])]
        else:
            named = [c for c in calls if c.id in wanted]
        eligible = [
            c
            for c in named
            if c.status is _PENDING and not c.destructive and self._tool_set.get(c.tool_name)
        ]
        if self._state.phase is _AWAITING and eligible:
            for call in eligible:
                if not await self._record(
                    _TOOL_APPROVED, self._decision_payload(call, actor, _BY_BATCH)
                ):
                    return await self._after_stop()
            self._dispatch(ApproveBatch(tuple(c.id for c in eligible)))
        return await self.drive()

    async def deny_call(
        self, call_id: str, actor: str = "user", reason: str | None = None, *,
        by_policy: bool = False,
    ) -> TurnState:
        return await self.deny_batch((call_id,), actor, reason, by_policy=by_policy)

    async def deny_batch(
        self, call_ids: Sequence[str], actor: str = "user", reason: str | None = None, *,
        by_policy: bool = False, proceed: bool = True,
    ) -> TurnState:
        """Deny these pending calls with one reason (each recorded before it is denied).

        `proceed=False` leaves the turn where the denials put it without driving on (the app
        is quitting: the caller stops the turn next, so no request follows the denials).
        """
        self._account_wait()
        for call_id in dict.fromkeys(call_ids):
            call = self._pending(call_id)
            if call is None:
                continue
            payload = {
                "call_id": call.id,
                "tool": call.tool_name,
                "input_digest": call.input_digest,
                "iteration": call.iteration,
                "actor": actor,
                "denial": "policy_denied" if by_policy else "user_declined",
                "reason": reason,
            }
            if not await self._record(StepKind.TOOL_DENIED, payload):
                return await self._after_stop()
            self._dispatch(DenyCall(call_id, reason, by_policy))
        if not proceed:
            return self._state
        return await self.drive()

    async def edit_call(self, call_id: str, new_input: Any, actor: str) -> tuple[str, ...]:
        """Replace a pending call's input with a person's; the problems, or () when applied.

        The tool's own `prepare` checks the input first; nothing is recorded or changed for an
        input it refuses. An accepted edit is audited (`tool.edited`, both digests and the
        actor) before the reducer applies it.
        """
        call = self._pending(call_id)
        if call is None:
            return ("This call is no longer waiting for a decision.",)
        tool = self._tool_set.get(call.tool_name)
        if tool is None:
            return ("This call's tool is not available in this turn.",)
        prepared = prepare_edit(tool, new_input)
        if not isinstance(prepared, PreparedCall):
            return prepared.issues or ("The tool refused this input.",)
        if prepared.input_digest == call.input_digest:
            return ()
        if any(d.tool_name == call.tool_name and d.input_digest == prepared.input_digest
               for d in self._state.denials):
            return ("An identical call was already declined in this turn.",)
        payload = {
            "call_id": call.id,
            "tool": call.tool_name,
            "input_digest_before": call.input_digest,
            "input_digest": prepared.input_digest,
            "original_digest": call.edit.original_digest if call.edit else call.input_digest,
            "iteration": call.iteration,
            "actor": actor,
        }
        if not await self._record(StepKind.TOOL_EDITED, payload):
            await self._after_stop()
            return ("The edit could not be recorded, so the turn stopped.",)
        self._dispatch(EditCall(call_id, new_input, actor))
        edited = self._state.call(call_id)
        if edited is None or edited.input_digest != prepared.input_digest:
            return ("The edit was refused.",)
        return ()

    def cancel(self) -> TurnState:
        """Stop now: cancel the in-flight stream or tool, keep what arrived, settle `cancelled`.

        Synchronous on purpose, so a UI can call it straight from a click handler.
        """
        if self._state.phase not in LIVE_PHASES:
            return self._state
        self._cancelled.set()
        region = self._region
        if region is not None and not region.done() and region is not _current_task():
            # Called from outside the driving task (a click): it is suspended in the stream,
            # tool or wait it runs, which the cancellation ends there. From inside it (an
            # observer, a tool) the phase checks after the work end it instead.
            self._region_cancels += 1
            region.cancel()
        self._dispatch(Cancel())
        if not self._driving:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                self._finishing = loop.create_task(self._record_settled())
        return self._state

    async def wait_settled_record(self) -> None:
        """Await the settlement record scheduled by a `cancel()` made while at rest."""
        if self._finishing is not None:
            await self._finishing

    async def undo_turn(self) -> bool:
        """Revert everything the turn committed, in one step, if nothing newer sits on top."""
        state = self._state
        if state.phase is not _SETTLED:
            return False
        if self.undo_availability() is not UndoAvailability.UNDOABLE:
            return False
        kept = self._done_before_resume
        payload = {
            "calls": [c.id for c in state.calls
                      if c.status is _SUCCEEDED and c.id not in kept],
            "document_before": self._digest(self._session.document),
        }
        if not await self._record(StepKind.TURN_UNDONE, payload):
            return False
        if not undo_ledger_turn(self._ledger, self._session):
            return False
        self._dispatch(UndoTurn(kept=kept))
        return True

    async def drive(self) -> TurnState:
        """Run until the next rest point. Re-entrant calls return at once."""
        if self._driving:
            return self._state
        self._driving = True
        self._driver = asyncio.current_task()
        try:
            while True:
                before = self._state
                if before.phase is _REQUESTING:
                    await self._request()
                elif before.phase is _EXECUTING:
                    # The first approved call of this iteration (not a scan of the whole turn).
                    for call in before.iteration_calls():
                        if call.status is _APPROVED:
                            await self._execute(call)
                            break
                    else:
                        self._dispatch(Advance(self._clock_ms()))
                else:
                    break
                if self._state is before:
                    # Backstop: every pass must change the state, or the turn stops.
                    self._dispatch(StopTurn(STALLED_TEXT, reason=SettleReason.STALLED))
        except asyncio.CancelledError:
            # Whoever awaited us went away: stop the turn rather than leave it half-driven.
            self._cancelled.set()
            self._dispatch(Cancel())
            raise
        finally:
            self._driving = False
            self._driver = None
            self._disarm_deadline()
        if self._state.phase is _AWAITING:
            self._waiting_since_ms = self._clock_ms()
        await self._record_settled()
        return self._state

    # ------------------------------------------------------------------ park / resume

    @property
    def waiting_since_ms(self) -> int | None:
        """When the turn began waiting for the decisions it waits on now (runner clock)."""
        return self._waiting_since_ms

    @property
    def undo_entry(self) -> int | None:
        """The serial of the history entry this turn's commits sit under (None: none yet)."""
        return self._ledger.serial

    @classmethod
    def resume(
        cls,
        state: TurnState,
        provider: StreamingProvider,
        session: DocumentSession,
        *,
        waiting_since_ms: int | None = None,
        undo_entry: int | None = None,
        **options: Any,
    ) -> TurnRunner:
        """A runner continuing a saved turn under the same budget and limits.

        `undo_entry` is the history entry that already holds the turn's earlier commits (the
        work done before it was parked, restored into `session` as one entry): later commits
        join it, so one undo reverts the whole turn. Without it the earlier commits sit
        outside this runner's reach and a turn undo leaves them (and their calls) as they are.
        """
        options.setdefault("limits", state.limits)
        runner = cls(provider, state.tool_set, session, **options)
        runner._state = state
        runner._limits = state.limits
        if undo_entry is not None:
            runner._ledger.serial = undo_entry
            runner._ledger.commits = 1
        else:
            runner._done_before_resume = frozenset(
                c.id for c in state.calls if c.status is _SUCCEEDED
            )
        runner._waiting_since_ms = waiting_since_ms
        return runner

    # ------------------------------------------------------------------ internals

    def _dispatch(self, item: TurnInput) -> TurnState:
        new = reduce_turn(self._state, item)
        if new is not self._state:
            self._state = new
            if self._on_state is not None:
                self._notify(new)
        return new

    def _notify(self, new: TurnState) -> None:
        observer = self._on_state
        if observer is None:
            return
        try:
            observer(new)
        except Exception:
            # An observer's bug must not leave the turn half-driven.
            logger.warning("a turn state observer raised", exc_info=True)

    def _model_info(self) -> Any:
        # The runner's provider and model are fixed, and the model list is read once a process.
        if self._resolved_model is None:
            from stockade.protocol.models import resolve_model

            self._resolved_model = (resolve_model(self.provider_name, self.model),)
        return self._resolved_model[0]

    def _conversation_tokens(self, messages: Sequence[Message]) -> int:
        """The estimate of all `messages`, adding only those past the last request's (each
        request's conversation extends the one before)."""
        counted, total = self._counted
        if len(messages) < len(counted) or not all(map(operator.is_, counted, messages)):
            counted, total = (), 0
        for message in messages[len(counted):]:
            total += self._estimate_tokens(message)
        self._counted = (tuple(messages), total)
        return total

    def _estimate_tokens(self, message: Message) -> int:
        # Every request budgets the whole conversation again; its messages are immutable. A
        # screened input's JSON is the one its request digest encodes (encoded once for both).
        kept = self._token_estimates.get(id(message))
        if kept is None or kept[0] is not message:
            kept = (message, estimate_tokens(message, self._request_digests.plain_json))
            self._token_estimates[id(message)] = kept
        return kept[1]

    def _digest(self, document: ThreatModel) -> str:
        last = self._last_digest
        if last is not None and last[0] is document:
            return last[1]
        value = document_digest(document)
        self._last_digest = (document, value)
        return value

    def _account_wait(self) -> None:
        """Move the turn's clock start past the time spent waiting for this decision."""
        if self._waiting_since_ms is None or self._state.phase is not _AWAITING:
            return
        now = self._clock_ms()
        self._dispatch(ApprovalWaited(now - self._waiting_since_ms))
        self._waiting_since_ms = now

    def _pending(self, call_id: str) -> CallRecord | None:
        if self._state.phase is not _AWAITING:
            return None
        call = self._state.call(call_id)
        if call is None or call.status is not _PENDING:
            return None
        return call

    @staticmethod
    def _decision_payload(call: CallRecord, actor: str, scope: GrantScope) -> dict[str, Any]:
        return {
            "call_id": call.id,
            "tool": call.tool_name,
            "input_digest": call.input_digest,
            "iteration": call.iteration,
            "actor": actor,
            "scope": _PLAIN[scope],
        }

    async def _record(self, kind: StepKind, payload: dict[str, Any],
                      confidential: tuple[str, ...] = ()) -> bool:
        """Report one step before it proceeds; a failing hook stops a live turn (a cancellation
        is not an `Exception`: it propagates)."""
        try:
            await self._hooks.record(new_step(kind, payload, confidential))
        except Exception as exc:
            self._stop_for(exc)
            return False
        return True

    def _stop_for(self, exc: BaseException) -> None:
        detail = str(exc) or type(exc).__name__
        if self._state.phase in LIVE_PHASES:
            self._dispatch(
                StopTurn(HOOK_FAILED_TEXT.format(detail=detail), reason=SettleReason.HOOK_FAILED)
            )
        else:
            self.audit_error = exc

    async def _after_stop(self) -> TurnState:
        await self._record_settled()
        return self._state

    async def _record_settled(self) -> None:
        state = self._state
        if state.phase is not _SETTLED or self._settled_recorded:
            return
        self._settled_recorded = True
        payload = {
            "outcome": state.outcome.value if state.outcome else None,
            "reason": state.reason,
            "iterations": state.iteration,
            "calls": len(state.calls),
            "credits_spent": state.budget.credits_spent,
        }
        try:
            await self._hooks.record(new_step(StepKind.TURN_SETTLED, payload))
        except Exception as exc:
            self.audit_error = exc

    def _remaining_s(self) -> float:
        b, limits = self._state.budget, self._state.limits
        return max(0.0, (b.started_at_ms + limits.deadline_ms - self._clock_ms()) / 1000)

    def _deadline_hit(self) -> None:
        b, limits = self._state.budget, self._state.limits
        # The timer is authoritative: an injected test clock may not have moved.
        self._dispatch(CheckDeadline(max(self._clock_ms(), b.started_at_ms + limits.deadline_ms)))

    async def _bounded(self, work: Awaitable[Any]) -> tuple[_Ending, Any]:
        """Await `work` in the driving task itself, under the turn deadline; Stop ends it.

        Returns (ending, value): the work's result when FINISHED, its exception when RAISED.
        The deadline timer (one per drive, see `_arm_deadline`) and `cancel` cancel the
        driving task only while it is in here, count what they asked for and withdraw exactly
        that afterwards, so a cancellation from anyone else (whoever awaits the turn) still
        propagates. Work that ignores the cancellation is waited out and its result discarded.
        """
        task = self._driver
        if task is None:
            raise RuntimeError("a turn is driven inside an asyncio task")
        if self._deadline_timer is None:
            self._arm_deadline(task.get_loop())
        outside = task.cancelling()
        self._region, self._region_cancels, self._region_timed_out = task, 0, False
        ending: _Ending
        value: Any = None
        try:
            try:
                value = await work
                ending = _FINISHED
            except asyncio.CancelledError as exc:
                value, ending = exc, _STOPPED
            except Exception as exc:
                value, ending = exc, _RAISED
        finally:
            self._region = None
            for _ in range(self._region_cancels):
                task.uncancel()
            self._region_cancels = 0
        if ending is _STOPPED and task.cancelling() > outside:
            raise value  # not ours: whoever awaits the turn went away
        if self._region_timed_out:
            return _TIMED_OUT, None
        return ending, value

    def _arm_deadline(self, loop: asyncio.AbstractEventLoop) -> None:
        """One timer at the turn deadline for the rest of this drive: the deadline moves only
        between drives (time spent waiting for a decision is given back before one starts)."""
        self._deadline_timer = loop.call_later(self._remaining_s(), self._on_deadline)

    def _disarm_deadline(self) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    def _on_deadline(self) -> None:
        # Fired outside a bounded await (a hook was slow): the next one arms a timer at the
        # deadline already passed, which ends work that waits at all.
        self._deadline_timer = None
        region = self._region
        if region is not None and not region.done() and self._state.phase in LIVE_PHASES:
            self._region_timed_out = True
            self._region_cancels += 1
            region.cancel()

    def _build_request(self, state: TurnState) -> ChatRequest:
        prompt = self._system_prompt
        system = prompt(self._session.document) if callable(prompt) else prompt
        messages = state.messages
        info = self._model_info()
        tools = self._tool_set.specs()
        if info is not None:
            if self._schema_chars is None:  # the tool set is frozen for the runner
                self._schema_chars = _schema_chars(tools)
            overhead = (len(system) + self._schema_chars) // 4
            reserve = state.limits.reserve_output_tokens
            available = info.context_window - reserve - overhead
            # When the whole conversation fits, budgeting keeps all of it: skip cutting it
            # into exchanges again (that walk grows with the conversation, every request).
            if not messages or self._conversation_tokens(messages) > available:
                messages = budget_messages(
                    messages,
                    max_input_tokens=info.context_window,
                    reserve_output_tokens=reserve,
                    overhead_tokens=overhead,
                    estimate=self._estimate_tokens,
                )
        return ChatRequest(
            provider=self.provider_name,
            model=self.model,
            system=system,
            messages=tuple(messages),
            tools=tools,
            max_output_tokens=state.limits.reserve_output_tokens,
        )

    async def _request(self) -> None:
        state = self._state
        if self._remaining_s() <= 0:
            self._deadline_hit()
            return
        try:
            request = self._build_request(state)
            check = self._request_check
            if check is not None:
                check(request)
                if check is _default_request_check:
                    # Its verdict depends only on the provider, the model and whether tools
                    # are offered, all fixed for the runner: once it passed, it passes.
                    self._request_check = None
        except ProtocolException as exc:
            self._dispatch(StreamError(exc.error))
            return
        except Exception:
            logger.warning("building the provider request failed", exc_info=True)
            self._dispatch(StopTurn(REQUEST_FAILED_TEXT, reason=SettleReason.REQUEST_FAILED))
            return
        try:
            decision = await self._hooks.before_request(request, state.iteration)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._stop_for(exc)
            return
        if isinstance(decision, RequestRefused):
            if self._state.phase is _REQUESTING:
                self._dispatch(RefuseRequest(decision.reason, decision.message))
            return
        if self._state.phase is not _REQUESTING:
            # Cancelled while governance was deciding: release the reservation unused.
            await self._settle_credits(decision, None, failed=True)
            return
        permit: RequestPermit = decision
        sendable = permit.request if permit.request is not None else request
        payload = {
            "iteration": state.iteration,
            "attempt": state.budget.retries_used + 1,
            "model": self.model,
            "provider": self.provider_name,
            "request_digest": self._request_digests.of(sendable),
            "messages": len(sendable.messages),
            "tools": len(sendable.tools),
            "reserved_credits": permit.reserved_credits,
            "estimated_credits": permit.estimated_credits,
        }
        if not await self._record(StepKind.MODEL_REQUEST, payload):
            await self._settle_credits(permit, None, failed=True)
            return
        tally = _StreamTally()
        ending, _value = await self._bounded(self._pump(sendable, tally))
        if ending is _RAISED:
            logger.warning("provider stream raised instead of yielding an error event")
            tally.failed = True
        finished = ending is not _TIMED_OUT
        if not finished:
            tally.failed = True
        # Only a request the provider never started is refunded; one that failed after it
        # started is charged at the usage reported, or at the whole reservation without one.
        await self._settle_credits(permit, tally.usage, failed=not tally.started)
        if self._state.phase is _SETTLED:
            return
        if not finished:
            self._deadline_hit()
            return
        phase = self._state.phase
        if tally.held_error is not None and phase is _REQUESTING:
            self._dispatch(Retry(self._clock_ms(), tally.held_error))
            if self._state.phase is _REQUESTING:
                await self._wait_before_retry(tally.held_error)
        elif phase in (_REQUESTING, _STREAMING):
            self._dispatch(StreamEnded())

    async def _wait_before_retry(self, error: ProtocolError) -> None:
        """Back off before the next attempt; the deadline clamps the wait and Stop ends it."""
        attempt = self._state.budget.retries_used
        delay_ms = retry_delay_ms(attempt, self._retry_policy, error.retry_after_ms, self._rng)
        remaining_ms = int(self._remaining_s() * 1000)
        payload = {
            "iteration": self._state.iteration,
            "attempt": attempt,
            "code": error.code.value,
            "status": error.status,
            "retry_after_ms": error.retry_after_ms,
            "delay_ms": min(delay_ms, remaining_ms),
        }
        if not await self._record(StepKind.MODEL_RETRY, payload):
            return
        if delay_ms <= 0:
            return
        ending, _value = await self._bounded(asyncio.sleep(delay_ms / 1000))
        if ending is _TIMED_OUT:
            self._deadline_hit()

    async def _settle_credits(
        self, permit: RequestPermit, usage: Usage | None, *, failed: bool
    ) -> None:
        try:
            credits = await self._hooks.after_request(permit, usage, failed)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._stop_for(exc)
            return
        self._dispatch(ChargeCredits(credits))
        if usage is not None:
            await self._record(
                StepKind.MODEL_USAGE,
                {
                    "iteration": self._state.iteration,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "cached_input_tokens": usage.cached_input_tokens,
                    "credits": credits,
                },
            )
        if credits > permit.reserved_credits and self._state.phase in LIVE_PHASES:
            # The reservation was the most the request could cost: stop before anything the
            # answer asked for runs (governance flagged the overrun in the audit).
            self._dispatch(StopTurn(OVERRUN_TEXT.format(charged=credits,
                                                        reserved=permit.reserved_credits),
                                    reason=SettleReason.CREDITS))

    async def _pump(self, request: ChatRequest, tally: _StreamTally) -> None:
        produced = False
        stream = self._provider.stream(request)
        dispatch = self._dispatch
        try:
            async for event in stream:
                kind = type(event)
                if kind in _CONTENT_EVENTS:
                    # Most of a stream: no error, usage, completed call or end to look at;
                    # dispatched as `_dispatch` does, without its frame for each event.
                    tally.started = produced = True
                    state = self._state
                    if kind is ToolCallInputDelta and state.phase is not _SETTLED:
                        # The reducer answers an argument delta before settlement with the
                        # state it was given: there is nothing to reduce.
                        new = state
                    else:
                        new = reduce_turn(state, event)
                        if new is not state:
                            self._state = new
                            if self._on_state is not None:
                                self._notify(new)
                    if new.phase not in _STREAM_PHASES:
                        break
                    continue
                if isinstance(event, ToolCallComplete):
                    # Bills, is never terminal, and is screened before the reducer sees it.
                    tally.started = produced = True
                    event = self._screen(event)
                    known = len(self._state.calls)
                    dispatch(event)
                    if len(self._state.calls) > known:
                        await self._record_proposal(self._state.calls[-1])
                    if self._state.phase not in _STREAM_PHASES:
                        break
                    continue
                if not isinstance(event, (StreamError, Aborted)):
                    tally.started = True
                if isinstance(event, Usage):
                    tally.usage = event
                    continue
                if (
                    isinstance(event, StreamError)
                    and event.is_terminal
                    and not produced
                    and is_retryable(event.error)
                ):
                    tally.held_error = event.error
                    tally.terminal = tally.failed = True
                    break
                if not isinstance(event, (StreamError, Aborted)):
                    produced = True
                dispatch(event)
                if is_terminal(event):
                    tally.terminal = True
                    tally.failed = isinstance(event, (StreamError, Aborted))
                    break
                if self._state.phase not in _STREAM_PHASES:
                    break
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:
                    logger.debug("closing a provider stream failed", exc_info=True)

    def _screen(self, event: ToolCallComplete) -> ToolCallComplete:
        event, plain = _screened(event)
        if self._input_screen is not None and refusal_of(event.input) is None:
            screened = self._input_screen(event.name, event.input)
            if screened is not event.input:
                return ToolCallComplete(id=event.id, name=event.name, input=screened)
        if plain:
            self._request_digests.note_plain(event.input)
        return event

    async def _record_proposal(self, call: CallRecord) -> None:
        payload = {
            "call_id": call.id,
            "tool": call.tool_name,
            "input_digest": call.input_digest,
            "effect": _PLAIN[call.effect],
            "destructive": call.destructive,
            "iteration": call.iteration,
            "status": _PLAIN[call.status],
        }
        # The steps of every call are recorded here rather than through `_record` (the same
        # handling without its coroutine for each of the turn's most frequent steps).
        record = self._hooks.record
        try:
            await record(new_step(_TOOL_PROPOSED, payload))
            if call.status is _APPROVED:
                await record(
                    new_step(_TOOL_APPROVED, self._decision_payload(call, "policy", _BY_AUTO))
                )
        except Exception as exc:
            self._stop_for(exc)

    async def _execute(self, call: CallRecord) -> None:
        # `call` is the current state's record (drive found it there just now). Whether
        # `authorize_found` would authorize it: the grant itself, without its `Authorized`.
        if not isinstance(grant_to_start(self._state, call.id, call), Refused):
            payload = {
                "call_id": call.id,
                "tool": call.tool_name,
                "input_digest": call.input_digest,
                "iteration": call.iteration,
            }
            try:
                await self._hooks.record(new_step(_TOOL_STARTED, payload))
            except Exception as exc:  # as `_record` (see `_record_proposal`)
                self._stop_for(exc)
                return
            if self._state.phase is not _EXECUTING:
                return
        self._dispatch(start_call(call.id))
        table = self._state._call_table()  # `self._state.call(call.id)`, without its frames
        at = table[1].get(call.id)
        current = None if at is None else table[0][at]
        if current is None or current.status is not _RUNNING:
            return  # refused: the reducer settled it and recorded why
        prepared = current.prepared
        if prepared is None:
            await self._finish_call(current, ToolFailed(NO_PREPARED_TEXT))
            return
        document = self._session.document
        context = self._context
        if context is None or context.document is not document:
            context = self._context = ToolContext(document=document, cancelled=self._cancelled)
        ending, value = await self._bounded(prepared.run(context))
        if ending is _TIMED_OUT:
            self._deadline_hit()
            return
        if ending is _STOPPED or self._state.phase is not _EXECUTING:
            return  # cancelled mid-run: the outcome is discarded, nothing was committed
        outcome: ToolOutcome
        if ending is _RAISED:
            logger.warning("tool %s raised while running", current.tool_name, exc_info=value)
            outcome = ToolFailed(TOOL_CRASH_TEXT)
        else:
            outcome = value
            if type(outcome) is ToolOk and outcome.document is None:
                # A read's (or a no-op's) result: the review would find it `Unchanged` and
                # settle the call with this outcome itself.
                await self._finish_call(current, outcome)
                return
            if not isinstance(outcome, (ToolOk, ToolFailed)):
                outcome = ToolFailed(TOOL_CRASH_TEXT)
        review = review_tool_outcome(
            outcome,
            expected=document,
            effect=current.effect,
            session=self._session,
            validator=self._validator,
        )
        final: ToolOutcome
        if isinstance(review, ProposedCommit):
            payload = {
                "call_id": current.id,
                "tool": current.tool_name,
                "document_before": self._digest(review.expected),
                "document_after": self._digest(review.document),
            }
            # Entity-level lines for the audit viewer: document text, so confidential.
            lines = tuple(describe(c) for c in diff(review.expected, review.document))
            if not await self._record(StepKind.DOCUMENT_COMMITTED, payload, lines):
                return
            if self._state.phase is not _EXECUTING:
                return
            applied = apply_commit(review, session=self._session, ledger=self._ledger)
            final = (
                ToolOk(applied.result)
                if isinstance(applied, Committed)
                else ToolFailed(applied.message)
            )
        elif isinstance(review, Unchanged):
            final = outcome if type(outcome) is ToolOk else ToolOk(review.result)
        else:
            final = ToolFailed(review.message)
        await self._finish_call(current, final)

    async def _finish_call(self, call: CallRecord, final: ToolOutcome) -> None:
        payload = {
            "call_id": call.id,
            "tool": call.tool_name,
            "ok": isinstance(final, ToolOk),
            "result_digest": _text_digest(final.result),
        }
        try:
            await self._hooks.record(new_step(_TOOL_RESULT, payload))
        except Exception as exc:  # as `_record` (see `_record_proposal`)
            self._stop_for(exc)
            return
        self._dispatch(call_settled(call.id, final))


_PLAIN: dict[str, str] = {m: m.value for e in (GrantScope, CallStatus, ToolEffect) for m in e}
"""Each member's plain value, for the audit payloads of every call (reading `.value` goes
through the enum's property each time)."""
_CONTENT_EVENTS = frozenset({MessageStart, TextDelta, ToolCallStart, ToolCallInputDelta})
"""Exact event types `_pump` only dispatches (subclasses take the general path)."""
_STREAM_PHASES = (_REQUESTING, _STREAMING)


_last_frozen: tuple[ToolRegistry, ToolSet] | None = None


def _frozen_tools(registry: Any) -> ToolSet:
    """`ToolSet.from_registry(registry)`, the same one for every runner given the same
    `ToolRegistry` (immutable, and the app passes one per process): the set's specs copy every
    schema, about a millisecond a turn for the production tools, and are then built once."""
    global _last_frozen
    if type(registry) is not ToolRegistry:
        return ToolSet.from_registry(registry)
    kept = _last_frozen
    if kept is None or kept[0] is not registry:
        kept = _last_frozen = (registry, ToolSet.from_registry(registry))
    return kept[1]


_last_schema_chars: tuple[tuple[ToolSpec, ...], int] = ((), 0)


def _schema_chars(specs: tuple[ToolSpec, ...]) -> int:
    """The characters of every spec's schema as printed (the request overhead's estimate).

    A frozen tool set builds its specs once and every turn on it offers that same tuple, so
    the last one's figure is kept (printing the sixteen production schemas costs about 0.2 ms).
    """
    global _last_schema_chars
    kept, chars = _last_schema_chars
    if kept is not specs:
        chars = sum(len(str(t.input_schema)) for t in specs)
        _last_schema_chars = (specs, chars)
    return chars


def _screened(event: ToolCallComplete) -> tuple[ToolCallComplete, bool]:
    """A call the model sent that no tool may see (non-finite numbers, nesting past the bound,
    oversized, an over-long id or name) keeps its id and name but carries a stand-in input, so
    the model gets an error result naming the problem and the next request stays valid JSON.

    Also says whether the input is plain JSON (`plainly_bounded`: exact JSON types, string
    keys, finite numbers), which `_RequestDigests` may then encode without normalizing it.
    """
    raw = event.input
    plain = plainly_bounded(raw)
    call_id, name = event.id, event.name
    if (plain and type(call_id) is str and len(call_id) <= MAX_CALL_ID_LENGTH
            and type(name) is str and len(name) <= MAX_TOOL_NAME_LENGTH):
        return event, True  # within every bound `call_problem` checks
    problem = call_problem(call_id, name, raw)
    if problem is None:
        return event, plain
    return ToolCallComplete(id=event.id, name=event.name, input=refused_input(problem)), False


_encode_string = json.encoder.encode_basestring


def _text_digest(text: str) -> str:
    """`digest(text)`: the canonical JSON of a string is the string JSON-quoted with non-ASCII
    kept, which is what its encoder does to one (property test against `digest`)."""
    if type(text) is not str:
        return digest(text)
    return "sha256:" + hashlib.sha256(_encode_string(text).encode("utf-8")).hexdigest()


# The C encoder `thf.canonical` encodes with (sorted keys, no whitespace, non-ASCII kept, no
# NaN), made here for values that need no normalizing first (see `_RequestDigests`).
_make_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_SORTED_JSON = None if _make_c_encoder is None else _make_c_encoder(
    None, json.JSONEncoder().default, json.encoder.encode_basestring, None, ":", ",",
    True, False, False,
)



class _RequestDigests:
    """`digest` of each request's audit form `{provider, model, system, messages, tools,
    max_output_tokens}`, assembled from the canonical JSON of its parts (canonical JSON of an
    object is its members in key order, so the bytes are the same).

    Each request repeats the one before and adds to it: the hash of the head and the messages
    so far is kept, and a request that starts with the same head and the same message objects
    hashes only what follows them (the same bytes in the same order, so the same digest).

    Canonical JSON normalizes a value before encoding it, and differs from the value's plain
    sorted encoding only in keys that are not strings and in integral floats below 2**53
    (printed as integers; plainly encoded, each prints with `.0`). A message whose fields are
    exact strings and booleans and whose tool inputs are ones the runner found plain (exact
    JSON types, string keys: `note_plain`) has no such keys: its plain encoding, when that
    holds no `.0` at all, is its canonical JSON (property test against `canonical_json`). That
    encoding is spelled around each input's own plain JSON, which is encoded once and also
    gives the input's length to the token estimate (`plain_json`): a sorted encoding has the
    same characters as the unsorted one `estimate_tokens` measures.
    """

    def __init__(self) -> None:
        # Canonical JSON per message, by identity (kept with the message so the id stays its).
        self._message_json: dict[int, tuple[Message, str]] = {}
        # Tool inputs `plainly_bounded` cleared, by identity (kept, as above), with their plain
        # sorted JSON once encoded (None until then).
        self._plain_inputs: dict[int, tuple[Any, str | None]] = {}
        self._head = ""
        self._head_of: tuple[int, str] | None = None  # an exact int limit and its head
        self._hashed: list[Message] = []
        self._hasher: Any = None
        self._tail_key: tuple[Any, ...] = ()
        self._tail = ""

    def note_plain(self, value: Any) -> None:
        """`value` is a tool input `plainly_bounded` cleared."""
        self._plain_inputs[id(value)] = (value, None)

    def plain_json(self, value: Any) -> str | None:
        """The plain sorted JSON of a noted input (encoded once, for the request digest and the
        token estimate alike), or None for an input that was not noted."""
        kept = self._plain_inputs.get(id(value))
        if kept is None or kept[0] is not value or _SORTED_JSON is None:
            return None
        text = kept[1]
        if text is None:
            text = "".join(_SORTED_JSON(value, 0))
            self._plain_inputs[id(value)] = (value, text)
        return text

    def message_json(self, message: Message) -> str:
        kept = self._message_json.get(id(message))
        if kept is None or kept[0] is not message:
            kept = (message, self._encoded(message))
            self._message_json[id(message)] = kept
        return kept[1]

    def _encoded(self, message: Message) -> str:
        text = self._plain_text(message)
        if text is not None and ".0" not in text:
            return text
        return canonical_json(message_to_json(message))

    def _plain_text(self, message: Message) -> str | None:
        """The message's plain sorted encoding, spelled block by block around its inputs'
        kept JSON (each block's keys in sorted order, as the encoder would put them); None
        unless every field is an exact string or boolean and every input was noted."""
        role = message.role
        if type(role) is not str:
            return None
        quote = _encode_string
        parts: list[str] = []
        plain_inputs = self._plain_inputs
        for block in message.content:
            if type(block) is ToolCallBlock:
                call_id, name = block.id, block.name
                # `self.plain_json(block.input)`, its kept text read here when there is one.
                raw = block.input
                kept = plain_inputs.get(id(raw))
                if kept is not None and kept[0] is raw and kept[1] is not None:
                    value: str | None = kept[1]
                else:
                    value = self.plain_json(raw)
                if value is None or type(call_id) is not str or type(name) is not str:
                    return None
                parts.append(f'{{"id":{quote(call_id)},"input":{value},'
                             f'"name":{quote(name)},"type":"tool_call"}}')
            elif type(block) is TextBlock:
                text = block.text
                if type(text) is not str:
                    return None
                parts.append(f'{{"text":{quote(text)},"type":"text"}}')
            elif type(block) is ToolResultBlock:
                content, call_id, is_error = block.content, block.tool_call_id, block.is_error
                if type(content) is not str or type(call_id) is not str or type(is_error) is not bool:
                    return None
                parts.append(f'{{"content":{quote(content)},'
                             f'"is_error":{"true" if is_error else "false"},'
                             f'"tool_call_id":{quote(call_id)},"type":"tool_result"}}')
            else:
                return None
        return f'{{"content":[{",".join(parts)}],"role":{quote(role)}}}'

    def of(self, request: ChatRequest) -> str:
        limit = request.max_output_tokens
        kept_head = self._head_of
        if type(limit) is int and kept_head is not None and kept_head[0] == limit:
            head = kept_head[1]  # equal ints print the same (every request of a turn)
        else:
            head = canonical_json({"max_output_tokens": limit})[:-1]
            self._head_of = (limit, head) if type(limit) is int else None
        messages = request.messages
        hashed = self._hashed
        kept = len(hashed)
        if (
            self._hasher is None
            or head != self._head
            or len(messages) < kept
            or any(a is not b for a, b in zip(hashed, messages, strict=False))
        ):
            self._head, self._hashed, kept = head, [], 0
            self._hasher = hashlib.sha256(f'{head},"messages":['.encode())
        hasher = self._hasher
        for index in range(kept, len(messages)):
            message = messages[index]
            text = self.message_json(message)
            hasher.update((text if index == 0 else "," + text).encode())
            self._hashed.append(message)
        key = (request.provider, request.model, request.system, request.tools)
        if key != self._tail_key:
            self._tail_key = key
            self._tail = canonical_json(
                {
                    "provider": request.provider,
                    "model": request.model,
                    "system": request.system,
                    "tools": [t.name for t in request.tools],
                }
            )[1:]
        tail = self._tail
        whole = hasher.copy()
        whole.update(f"],{tail}".encode())
        return "sha256:" + whole.hexdigest()
