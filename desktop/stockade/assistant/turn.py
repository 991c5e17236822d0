"""`Turn`: one governed assistant turn over a document, as both front ends drive it.

A turn is started (or resumed) by `AssistantService`. From then on a front end only calls
`approve`, `approve_batch`, `deny`, `deny_batch`, `edit`, `cancel` and `undo`, each returning
the next rest point (waiting for decisions, or settled; `edit` keeps the turn waiting). A
headless approve policy decides at every rest point; when the turn settles its run is closed in
the audit trail with the guarded final answer. A person's denials are remembered for the
document (`assistant.declined`) so later turns are told about them.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stockade.assistant import declined as memory
from stockade.assistant.policy import (
    POLICY_ACTORS,
    POLICY_DENIAL_REASON,
    ApprovePolicy,
    decide_by_policy,
)
from stockade.assistant.review import CallPreview, preview_calls
from stockade.assistant.summary import (
    CallLine,
    PendingLine,
    RunOutcome,
    TurnSummary,
    final_text,
    outcome_of,
)
from stockade.governance.guards import SecretGuard
from stockade.governance.hooks import GovernedHooks
from stockade.governance.services import Governance
from stockade.governance.trajectory import EventKind, TrajectoryError
from stockade.governance.worker import GovernanceWorker
from stockade.loop.history import DocumentSession
from stockade.loop.runner import TurnRunner
from stockade.loop.state import CallRecord, CallStatus, TurnOutcome, TurnPhase, TurnState
from stockade.loop.transaction import UndoAvailability
from stockade.protocol.declined import DeclinedProposal
from stockade.protocol.messages import Message
from stockade.store import StoreError
from stockade.thf.canonical import digest
from stockade.thf.digest import document_digest
from stockade.thf.model import ThreatModel

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from stockade.assistant.config import TurnConfig

QUIT_DENIAL_REASON = "denied when the app was closed with this call still waiting"


@dataclass(frozen=True, slots=True)
class EditResult:
    """What became of an edit: the tool's problems with the input, or none (applied)."""

    issues: tuple[str, ...] = ()
    changed: bool = False

    @property
    def ok(self) -> bool:
        return not self.issues


class Turn:
    """A turn in progress, parked, or settled. Single-use: a new prompt is a new turn."""

    def __init__(self, *, run_id: str, config: TurnConfig, runner: TurnRunner,
                 hooks: GovernedHooks, guard: SecretGuard, worker: GovernanceWorker,
                 document_path: str, base_count: int,
                 document_before_turn: ThreatModel | None, base_digest: str,
                 write_back: bool = False,
                 declined: Sequence[DeclinedProposal] = ()) -> None:
        self.run_id = run_id
        self.config = config
        self.runner = runner
        self.hooks = hooks
        self.guard = guard
        self._worker = worker
        self.document_path = document_path
        self.base_count = base_count
        self.document_before_turn = document_before_turn
        self.base_digest = base_digest
        """The digest of the document the turn was started (or resumed) on: a write-back
        requires the file to still be that, and "changed" means different from it."""
        self.parked = False
        self.parking = False
        """A park is on its way to the worker (Decide later was chosen a moment ago)."""
        self.finished = False
        self.write_back = write_back
        """A headless run writes its document back to the file (`--write`): its run is closed
        by `finish()` after the write, so `document.written` comes before `run.finished`."""
        self.audit_error: BaseException | None = None
        self.declined: tuple[DeclinedProposal, ...] = tuple(declined)
        """What the user declined on this document in earlier turns (as the turn was told)."""
        self.memory_error: BaseException | None = None
        """Set when a denial could not be remembered for later turns (the denial itself is
        recorded and in force)."""
        self._output_text: str | None = None
        self._staged: tuple[str, tuple[Message, ...]] | None = None

    def stage_prompt(self, prompt: str, history: tuple[Message, ...]) -> None:
        """The guarded prompt and earlier conversation `start` sends (set by the service)."""
        self._staged = (prompt, history)

    async def start(self) -> TurnState:
        """Send the staged prompt; returns at the first rest point (once per turn)."""
        if self._staged is None:
            return self.state
        prompt, history = self._staged
        self._staged = None
        return await self.rest(await self.runner.submit(prompt, history))

    # -- state ---------------------------------------------------------------------------------

    @property
    def state(self) -> TurnState:
        return self.runner.state

    @property
    def phase(self) -> TurnPhase:
        return self.runner.state.phase

    @property
    def document_session(self) -> DocumentSession:
        return self.runner.session

    @property
    def live(self) -> bool:
        """Being started or running, not settled and not parked (a front end may still decide
        or stop it)."""
        if self.parked or self.phase is TurnPhase.SETTLED:
            return False
        return self.phase is not TurnPhase.IDLE or self._staged is not None

    @property
    def waiting(self) -> bool:
        """Waiting for decisions in memory (not parked, and no park on its way)."""
        return not self.parked and not self.parking and \
            self.phase is TurnPhase.AWAITING_APPROVAL

    def pending(self) -> tuple[CallRecord, ...]:
        return self.state.pending_calls()

    @property
    def changed(self) -> bool:
        """Whether the document differs from the one the turn started (or resumed) on."""
        return document_digest(self.document_session.document) != self.base_digest

    async def previews(self, skip: Iterable[str] = ()) -> list[CallPreview]:
        """What each pending call would change, in call order on the successive documents
        (calls in `skip`, about to be denied, do not advance the document), with the ones
        declined in an earlier turn marked."""
        return await preview_calls(self.pending(), self.document_session.document,
                                   declined=self.declined, skip=frozenset(skip))

    @property
    def final_text(self) -> str:
        """The final answer after the output guard (empty until the turn settled)."""
        if self._output_text is not None:
            return self._output_text
        if self.phase is not TurnPhase.SETTLED:
            return ""
        text, _ = self.guard.check_output(final_text(self.state, self.base_count))
        return text

    # -- decisions -----------------------------------------------------------------------------

    def _actor(self, actor: str | None) -> str:
        cleaned = (actor if actor is not None else self.config.actor).strip()
        if not cleaned:
            raise ValueError("an actor name is required for every decision")
        return cleaned

    async def approve(self, call_id: str, actor: str | None = None) -> TurnState:
        return await self.rest(await self.runner.approve_call(call_id, self._actor(actor)))

    async def approve_batch(self, call_ids: Sequence[str], actor: str | None = None) -> TurnState:
        """Approve exactly these ids (destructive calls are never approved in bulk)."""
        return await self.rest(await self.runner.approve_batch(call_ids, self._actor(actor)))

    async def deny(self, call_id: str, actor: str | None = None,
                   reason: str | None = None) -> TurnState:
        """Deny one call; `reason` is told to the model and remembered for the document."""
        return await self.deny_batch((call_id,), actor, reason)

    async def deny_batch(self, call_ids: Sequence[str], actor: str | None = None,
                         reason: str | None = None) -> TurnState:
        """Deny these calls (destructive ones too) with one optional reason."""
        who = self._actor(actor)
        calls = [c for c in self.pending() if c.id in set(call_ids)]
        state = await self.runner.deny_batch([c.id for c in calls], who, reason)
        denied = [memory.Declined(c, reason) for c in calls
                  if (now := state.call(c.id)) is not None and now.status is CallStatus.DENIED]
        await self.remember_declined(denied, who)
        return await self.rest(state)

    async def deny_all_and_stop(self, actor: str | None = None,
                                reason: str = QUIT_DENIAL_REASON) -> TurnState:
        """Deny every waiting call and stop the turn with no further request (the app is
        closing). Not remembered as declined proposals: nobody judged them."""
        who = self._actor(actor)
        await self.runner.deny_batch([c.id for c in self.pending()], who, reason, proceed=False)
        self.cancel()
        return await self.wait_cancelled()

    async def edit(self, call_id: str, new_input: Any, actor: str | None = None) -> EditResult:
        """Replace a pending call's input with the user's before deciding on it.

        The tool's own `prepare` validates it (its problems come back, nothing changes); an
        accepted edit gets its own digest, is audited as `tool.edited` with both digests and
        the actor, and any approval afterwards is bound to the edited input only.
        """
        who = self._actor(actor)
        before = self.state.call(call_id)
        issues = await self.runner.edit_call(call_id, new_input, who)
        after = self.state.call(call_id)
        changed = before is not None and after is not None and \
            after.input_digest != before.input_digest
        return EditResult(tuple(issues), changed)

    async def remember_declined(self, declined: Sequence[memory.Declined], actor: str) -> None:
        """Keep a person's denials for later turns on this document (never a policy's)."""
        if not declined or actor in POLICY_ACTORS.values():
            return
        path, run_id = self.document_path, self.run_id
        try:
            await self._worker.call(lambda gov: memory.remember(gov, path, declined,
                                                                actor=actor, run_id=run_id))
        except (StoreError, sqlite3.Error) as exc:
            # The denial itself is recorded and in force; only the memory of it is missing.
            log.info("a denial could not be remembered for later turns: %s",
                     type(exc).__name__)
            self.memory_error = exc

    def cancel(self) -> TurnState:
        """Stop now (synchronous, so a click handler can call it); see `wait_cancelled`."""
        self._staged = None  # a turn stopped before its first request never sends it
        return self.runner.cancel()

    async def wait_cancelled(self) -> TurnState:
        """After `cancel()` at rest: wait for the settlement record and close the run."""
        await self.runner.wait_settled_record()
        return await self.rest(self.runner.state)

    def undo_availability(self) -> UndoAvailability:
        return self.runner.undo_availability()

    @property
    def undoable(self) -> bool:
        return (not self.parked and self.phase is TurnPhase.SETTLED
                and self.undo_availability() is UndoAvailability.UNDOABLE)

    async def undo(self) -> bool:
        """Revert the whole turn's document changes in one step (recorded before it happens)."""
        return await self.runner.undo_turn()

    # -- rest points ---------------------------------------------------------------------------

    async def rest(self, state: TurnState) -> TurnState:
        """Let the headless policy decide what it may, and close the run once it settled."""
        state = await self._apply_policy(state)
        if state.phase is TurnPhase.SETTLED and not self.write_back:
            await self.finish()
        return state

    async def _apply_policy(self, state: TurnState) -> TurnState:
        policy = self.config.approve
        if policy in (ApprovePolicy.MANUAL, ApprovePolicy.READ):
            return state
        # Each pass decides at least one pending call, or stops: bounded by the call cap.
        while state.phase is TurnPhase.AWAITING_APPROVAL:
            pending = state.pending_calls()
            decisions = decide_by_policy(policy, pending)
            if decisions.empty:
                break
            actor = POLICY_ACTORS[policy]
            if decisions.approve:
                state = await self.runner.approve_batch(decisions.approve, actor)
            if decisions.deny:
                state = await self.runner.deny_batch(decisions.deny, actor,
                                                     POLICY_DENIAL_REASON, by_policy=True)
            if state.phase is TurnPhase.AWAITING_APPROVAL and \
                    [c.id for c in state.pending_calls()] == [c.id for c in pending]:
                break
        return state

    async def finish(self) -> None:
        """Close a settled turn's run with its guarded final answer (once)."""
        state = self.state
        if self.finished or state.phase is not TurnPhase.SETTLED:
            return
        self.finished = True
        text, report = self.guard.check_output(final_text(state, self.base_count))
        self._output_text = text
        run_id = self.run_id
        outcome = state.outcome.value if state.outcome else TurnOutcome.FAILED.value
        payload = {"iterations": state.iteration, "calls": len(state.calls),
                   "output_digest": digest(text)}

        def finish(gov: Governance) -> None:
            if report.count:
                gov.trajectory.append(run_id, EventKind.GUARD_DECISION, report.to_payload())
            gov.runs.finish(run_id, outcome=outcome, reason=state.reason, payload=payload)

        try:
            await self._worker.call(finish)
        except (StoreError, sqlite3.Error, TrajectoryError) as exc:
            self.audit_error = exc

    # -- reporting -----------------------------------------------------------------------------

    async def summary(self, *, document_written: bool = False,
                      display_path: str | None = None) -> TurnSummary:
        state = self.state
        run_id = self.run_id

        def read(gov: Governance) -> tuple[tuple[int, int, int], int, tuple[int, int] | None,
                                           int]:
            return (gov.ledger.usage_for_run(run_id), gov.ledger.spent_for_run(run_id),
                    gov.ledger.last_reservation(run_id), gov.ledger.totals(run_id).overrun)

        (tokens_in, tokens_out, _cached), spent, last, overrun = await self._worker.call(read)
        outcome = outcome_of(state, parked=self.parked)
        reason = "approval" if outcome is RunOutcome.PARKED else (
            state.reason if state.phase is TurnPhase.SETTLED else None)
        return TurnSummary(
            run_id=run_id, outcome=outcome, reason=reason, iterations=state.iteration,
            calls=tuple(CallLine(c.id, c.tool_name, c.status,
                                 c.denial_reason.value if c.denial_reason else None,
                                 c.input_digest) for c in state.calls),
            violations=tuple((v.violation.value, v.call_id) for v in state.violations),
            text=self.final_text, notice=state.notice,
            input_tokens=tokens_in, output_tokens=tokens_out, credits_spent=spent,
            last_reserved=last[0] if last else None, last_estimated=last[1] if last else None,
            document_path=display_path or self.document_path,
            document_digest=document_digest(self.document_session.document),
            document_written=document_written,
            pending=tuple(PendingLine(c.id, c.tool_name, c.summary, c.destructive,
                                      c.input_digest)
                          for c in state.calls if c.status is CallStatus.PENDING),
            error=state.error.message if state.error is not None else None,
            credits_over_reservation=overrun,
        )
