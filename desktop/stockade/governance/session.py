"""The one chokepoint around the turn runner: governed hooks and the `AssistantSession`.

Both the desktop app and `stockade assist` run every assistant turn through an
`AssistantSession`. It wires the meter (reserve before every provider request, settle after),
the trajectory (every step appended before it proceeds; an append failure stops the turn) and
the guards (input before any spend, output on the final text) into the runner's hooks; it parks
a turn that waits for a decision (sealed snapshot, key in the keyring) and resumes it later in
any process. asyncio only: the app drives it from qasync, the CLI from `asyncio.run`.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from stockade.governance.guards import GuardPolicy, GuardReport, SecretGuard, blocked_message
from stockade.governance.ledger import CreditBudgets, Hold, Ledger, LimitRefusal
from stockade.governance.meter import quote, usage_cost
from stockade.governance.pricebook import ModelPrice, PriceBook, PriceBookError, load_price_book
from stockade.governance.runstate import ResumeTicket, RunStates
from stockade.governance.sealing import SecretStore, SnapshotKeys
from stockade.governance.trajectory import (
    MAX_PAYLOAD_STRING,
    EventKind,
    Trajectory,
    TrajectoryError,
)
from stockade.loop.history import DocumentSession
from stockade.loop.hooks import RequestPermit, RequestRefused, StepKind, TurnStep, TurnStopped
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner, document_digest
from stockade.loop.state import CallStatus, TurnPhase, TurnState
from stockade.protocol.events import StreamEvent, Usage
from stockade.protocol.messages import Message, flatten_text
from stockade.protocol.request import ChatRequest
from stockade.store import Database, StoreError, open_database
from stockade.store.runs import Decision, PendingCallRow, RunStatus
from stockade.thf.model import ThreatModel
from stockade.tools.canonical import digest


class ApprovePolicy(StrEnum):
    """Who decides a proposed mutation. Read tools are always approved by the reducer."""

    MANUAL = "manual"  # the app: the user decides each call
    READ = "read"  # mutations wait for a decision (headless: the run parks)
    MUTATE = "mutate"  # non-destructive mutations are approved; destructive ones wait
    DENY = "deny"  # every mutation is denied


POLICY_ACTOR = {ApprovePolicy.MUTATE: "policy:mutate", ApprovePolicy.DENY: "policy:deny"}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Governance:
    """The governance services over one open database."""

    def __init__(self, db: Database, *, price_book: PriceBook | None = None,
                 secrets: SecretStore | None = None,
                 clock_ms: Callable[[], int] | None = None) -> None:
        self.db = db
        self.clock_ms = clock_ms or _now_ms
        self.price_book = price_book or load_price_book()
        self.trajectory = Trajectory(db, self.clock_ms)
        self.ledger = Ledger(db, self.clock_ms)
        self.keys = SnapshotKeys(secrets) if secrets is not None else None
        self.runs = RunStates(db, self.trajectory, self.ledger, self.keys, self.clock_ms)

    def close(self) -> None:
        self.db.close()


def open_governance(*, secrets: SecretStore | None = None, recover: bool = True,
                    clock_ms: Callable[[], int] | None = None) -> Governance:
    """Open the database (migrating it) and, by default, recover runs a crash left mid-step.

    `secrets` defaults to the keyring-backed `stockade.secrets.KeyStore`.
    """
    if secrets is None:
        from stockade.secrets import KeyStore

        secrets = KeyStore()
    gov = Governance(open_database(), secrets=secrets, clock_ms=clock_ms)
    if recover:
        gov.runs.recover_interrupted()
    return gov


# -- hooks -------------------------------------------------------------------------------------


class GovernedHooks:
    """`TurnHooks` that meter, audit and guard one run. Every failure to record is fail-closed."""

    def __init__(self, gov: Governance, run_id: str, *, provider_name: str, model: str,
                 budgets: CreditBudgets, guard: SecretGuard,
                 prerecorded_decisions: Sequence[str] = ()) -> None:
        self._gov = gov
        self.run_id = run_id
        self._provider_name = provider_name
        self._model = model
        self._budgets = budgets
        self._guard = guard
        self._prerecorded = set(prerecorded_decisions)
        self._holds: dict[str, tuple[Hold, ModelPrice]] = {}
        self._last_permit: RequestPermit | None = None

    def _append(self, kind: EventKind | str, payload: dict[str, Any]) -> None:
        try:
            self._gov.trajectory.append(self.run_id, kind, payload)
        except TrajectoryError as exc:
            raise TurnStopped(f"the audit trail could not be written ({exc})") from None

    @property
    def last_permit(self) -> RequestPermit | None:
        """The newest permit: its reservation (upper bound) beside the chars/4 estimate."""
        return self._last_permit

    def record_guard(self, report: GuardReport, *, always: bool = False, **extra: Any) -> None:
        """Audit a guard decision (kinds and counts only); clean ones only when `always`."""
        if report.count or always:
            self._append(EventKind.GUARD_DECISION, {**report.to_payload(), **extra})

    async def before_request(self, request: ChatRequest,
                             iteration: int) -> RequestPermit | RequestRefused:
        sendable, report = self._guard.check_request(request)
        self.record_guard(report, iteration=iteration)
        if report.action == "blocked":
            return RequestRefused(reason="guard", message=blocked_message(report))
        try:
            price = self._gov.price_book.price_for(self._provider_name, self._model)
        except PriceBookError as exc:
            self._append(EventKind.METER_REFUSED, {"iteration": iteration, "limit": "price"})
            return RequestRefused(reason="price", message=str(exc))
        offer = quote(sendable, price)
        try:
            with self._gov.db.write() as conn:
                outcome = self._gov.ledger.reserve_in(
                    conn, run_id=self.run_id, provider=self._provider_name, model=self._model,
                    credits=offer.reserve, estimated=offer.estimate, budgets=self._budgets)
                if isinstance(outcome, LimitRefusal):
                    # The refusal and its audit event commit together, or neither does.
                    self._gov.trajectory.append_in(conn, self.run_id, EventKind.METER_REFUSED, {
                        "iteration": iteration, "limit": outcome.limit.value,
                        "needed": outcome.needed, "committed": outcome.committed,
                        "allowed": outcome.allowed})
        except (StoreError, sqlite3.Error, TrajectoryError) as exc:
            raise TurnStopped(f"credits could not be reserved ({exc})") from None
        if isinstance(outcome, LimitRefusal):
            return RequestRefused(reason="credits", message=outcome.message)
        self._holds[outcome.id] = (outcome, price)
        permit = RequestPermit(handle=outcome.id, reserved_credits=offer.reserve,
                               estimated_credits=offer.estimate)
        self._last_permit = permit
        return permit

    async def after_request(self, permit: RequestPermit, usage: Usage | None,
                            failed: bool) -> int:
        held = self._holds.pop(permit.handle, None)
        if held is None:
            return 0
        hold, price = held
        actual = None if usage is None else usage_cost(
            price, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
        try:
            settlement = self._gov.ledger.settle(
                hold.id, actual=actual, failed=failed,
                input_tokens=usage.input_tokens if usage else 0,
                output_tokens=usage.output_tokens if usage else 0,
                cached_input_tokens=usage.cached_input_tokens if usage else 0)
        except (StoreError, sqlite3.Error) as exc:
            raise TurnStopped(f"credits could not be settled ({exc})") from None
        return settlement.settled

    async def record(self, step: TurnStep) -> None:
        payload = dict(step.payload)
        if step.kind in (StepKind.TOOL_APPROVED, StepKind.TOOL_DENIED) and \
                payload.get("call_id") in self._prerecorded:
            return  # decided while parked: that decision and its event were committed together
        if step.kind is StepKind.TOOL_DENIED:
            reason = payload.pop("reason", None)
            if reason:
                payload["reason_digest"] = digest(reason)
        if step.kind is StepKind.MODEL_REQUEST and self._last_permit is not None:
            payload["reserved_credits"] = self._last_permit.reserved_credits
            payload["estimated_credits"] = self._last_permit.estimated_credits
        self._append(step.kind.value, _compact(payload))


def _compact(value: Any) -> Any:
    """Over-long strings (a model can send any tool name or call id) become their digest, so
    model output can neither stuff the audit nor stop a turn by failing its payload check."""
    if isinstance(value, str):
        return value if len(value) <= MAX_PAYLOAD_STRING else digest(value)
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_compact(v) for v in value]
    return value


class GuardedProvider:
    """Sends each request only after the input guard redacted it (the hooks already audited)."""

    def __init__(self, inner: Any, guard: SecretGuard) -> None:
        self._inner = inner
        self._guard = guard
        self.name: str = getattr(inner, "name", "provider")

    def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        sendable, _ = self._guard.check_request(request)
        result: AsyncIterator[StreamEvent] = self._inner.stream(sendable)
        return result


# -- summaries ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TurnSummary:
    """What `stockade assist --json` prints and the chat pane shows at the end of a turn."""

    run_id: str
    outcome: str
    reason: str | None
    iterations: int
    calls: list[dict[str, Any]]
    violations: list[dict[str, Any]]
    text: str
    notice: str | None
    usage: dict[str, int]
    credits_spent: int
    document: dict[str, Any]
    pending: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "outcome": self.outcome, "reason": self.reason,
            "iterations": self.iterations, "calls": self.calls, "violations": self.violations,
            "text": self.text, "notice": self.notice, "usage": self.usage,
            "credits_spent": self.credits_spent, "document": self.document,
            "pending": self.pending, "error": self.error,
        }


def final_text(state: TurnState, base_count: int = 0) -> str:
    """The text of the turn's last assistant message (earlier history excluded)."""
    for message in reversed(state.history[base_count:]):
        if message.role == "assistant":
            text = flatten_text(message)
            if text:
                return text
    return ""


# -- the session -------------------------------------------------------------------------------


class AssistantSession:
    """One governed turn over a document: start, decide, park, resume, undo, summarize."""

    def __init__(self, gov: Governance, runner: TurnRunner, hooks: GovernedHooks, *,
                 run_id: str, document_path: str, provider_name: str, model: str,
                 budgets: CreditBudgets, guard: SecretGuard, approve: ApprovePolicy,
                 base_url: str | None, extra: dict[str, Any] | None = None,
                 base_count: int = 0, clock_ms: Callable[[], int] = _now_ms) -> None:
        self.gov = gov
        self.runner = runner
        self.hooks = hooks
        self.run_id = run_id
        self.document_path = document_path
        self.provider_name = provider_name
        self.model = model
        self.budgets = budgets
        self.guard = guard
        self.approve_policy = approve
        self.base_url = base_url
        self.extra = dict(extra or {})
        self.parked = False
        self.finished = False
        self.audit_error: BaseException | None = None
        self._base_count = base_count
        self._clock_ms = clock_ms
        self._output_text: str | None = None

    # construction ----------------------------------------------------------------------

    @classmethod
    def create(cls, gov: Governance, *, document_session: DocumentSession,
               document_path: str | Path, provider: Any, provider_name: str, model: str,
               limits: TurnLimits | None = None, budgets: CreditBudgets,
               guard_policy: GuardPolicy = GuardPolicy.REDACT,
               approve: ApprovePolicy = ApprovePolicy.MANUAL, registry: Any = None,
               system_prompt: Any = None, on_state: Callable[[TurnState], None] | None = None,
               clock_ms: Callable[[], int] | None = None, base_url: str | None = None,
               extra: dict[str, Any] | None = None) -> AssistantSession:
        """A session ready to `start`. A model with no price row is refused here (fail closed)."""
        gov.price_book.price_for(provider_name, model)
        registry = registry if registry is not None else _default_registry()
        run_id = f"run-{uuid.uuid4().hex[:16]}"
        guard = SecretGuard(guard_policy)
        hooks = GovernedHooks(gov, run_id, provider_name=provider_name, model=model,
                              budgets=budgets, guard=guard)
        base_limits = limits or TurnLimits()
        turn_limits = dataclasses.replace(base_limits, credit_budget=budgets.per_turn)
        clock = clock_ms or _now_ms
        runner = TurnRunner(
            GuardedProvider(provider, guard), registry, document_session, hooks=hooks,
            limits=turn_limits, model=model, provider_name=provider_name,
            system_prompt=system_prompt if system_prompt is not None
            else _system_prompt_for(registry),
            on_state=on_state, clock_ms=clock)
        return cls(gov, runner, hooks, run_id=run_id, document_path=str(document_path),
                   provider_name=provider_name, model=model, budgets=budgets, guard=guard,
                   approve=approve, base_url=base_url, extra=extra, clock_ms=clock)

    # running ---------------------------------------------------------------------------

    @property
    def state(self) -> TurnState:
        return self.runner.state

    @property
    def document_session(self) -> DocumentSession:
        return self.runner.session

    async def start(self, prompt: str, base_messages: Sequence[Message] = ()) -> TurnState:
        """Guard the prompt, record `run.started`, and run until the next rest point.

        Raises `StoreError` (nothing sent, nothing spent) when the run cannot be recorded.
        """
        sendable, report = self.guard.check_prompt(prompt)
        document = self.runner.session.document
        try:
            self.gov.runs.start(
                self.run_id, document_path=self.document_path,
                document_digest=document_digest(document), provider=self.provider_name,
                model=self.model, payload={
                    "provider": self.provider_name, "model": self.model,
                    "prompt_digest": digest(prompt), "document_digest": document_digest(document),
                    "approve": self.approve_policy.value, "credit_budget": self.budgets.per_turn,
                    "base_messages": len(base_messages),
                })
        except TrajectoryError as exc:
            raise StoreError(f"the run could not be recorded, so it was not started ({exc})",
                             self.gov.db.path) from None
        self._base_count = len(base_messages)
        try:
            self.hooks.record_guard(report, always=True)
        except TurnStopped as exc:
            self.gov.runs.finish(self.run_id, outcome="failed", reason="hook_failed")
            raise StoreError(str(exc), self.gov.db.path) from None
        state = await self.runner.submit(sendable, base_messages)
        return await self._rest(state)

    async def approve(self, call_id: str, actor: str) -> TurnState:
        return await self._rest(await self.runner.approve_call(call_id, _actor(actor)))

    async def approve_batch(self, call_ids: Sequence[str], actor: str) -> TurnState:
        return await self._rest(await self.runner.approve_batch(call_ids, _actor(actor)))

    async def deny(self, call_id: str, actor: str, reason: str | None = None) -> TurnState:
        return await self._rest(await self.runner.deny_call(call_id, _actor(actor), reason))

    def cancel(self) -> TurnState:
        return self.runner.cancel()

    async def wait_cancelled(self) -> TurnState:
        """After `cancel()` at rest: wait for the settlement record and close the run."""
        await self.runner.wait_settled_record()
        return await self._rest(self.runner.state)

    async def undo(self) -> bool:
        """Revert the whole turn's document changes in one step (recorded before it happens)."""
        return await self.runner.undo_turn()

    async def _rest(self, state: TurnState) -> TurnState:
        state = await self._apply_policy(state)
        if state.phase is TurnPhase.SETTLED and not self.finished:
            self._finish(state)
        return state

    async def _apply_policy(self, state: TurnState) -> TurnState:
        # Bounded by the turn's own call cap: each pass decides at least one call or stops.
        while state.phase is TurnPhase.AWAITING_APPROVAL:
            pending = state.pending_calls()
            if self.approve_policy is ApprovePolicy.MUTATE:
                eligible = [c.id for c in pending if not c.destructive]
                if not eligible:
                    break
                state = await self.runner.approve_batch(eligible, POLICY_ACTOR[ApprovePolicy.MUTATE])
            elif self.approve_policy is ApprovePolicy.DENY:
                before = state
                for call in pending:
                    state = await self.runner.deny_call(
                        call.id, POLICY_ACTOR[ApprovePolicy.DENY], "denied by --approve deny")
                if state is before:
                    break
            else:
                break
            if state.phase is TurnPhase.AWAITING_APPROVAL and \
                    [c.id for c in state.pending_calls()] == [c.id for c in pending]:
                break
        return state

    def _finish(self, state: TurnState) -> None:
        self.finished = True
        text, report = self.guard.check_output(final_text(state, self._base_count))
        self._output_text = text
        try:
            if report.count:
                self.gov.trajectory.append(self.run_id, EventKind.GUARD_DECISION,
                                           report.to_payload())
            self.gov.runs.finish(self.run_id, outcome=state.outcome.value if state.outcome
                                 else "failed", reason=state.reason, payload={
                                     "iterations": state.iteration, "calls": len(state.calls),
                                     "output_digest": digest(text)})
        except (StoreError, sqlite3.Error, TrajectoryError) as exc:
            self.audit_error = exc

    # text ------------------------------------------------------------------------------

    @property
    def final_text(self) -> str:
        """The final answer after the output guard (only once the turn settled)."""
        if self._output_text is not None:
            return self._output_text
        text, _ = self.guard.check_output(final_text(self.state, self._base_count))
        return text

    # parking ---------------------------------------------------------------------------

    def park(self, *, base_document: ThreatModel | None = None,
             write_back: bool = False) -> None:
        """Seal the waiting turn and store it; the runner must not be used afterwards.

        `base_document` is the document a resume will find at `document_path` (default: the
        live document); the live document itself travels inside the sealed snapshot.
        """
        state = self.state
        if state.phase is not TurnPhase.AWAITING_APPROVAL:
            raise RuntimeError(f"only a turn awaiting approval can be parked (it is "
                               f"{state.phase.value})")
        live = self.runner.session.document
        base = base_document if base_document is not None else live
        snapshot = {
            "runner": self.runner.snapshot(),
            "document": live.model_dump(mode="json", by_alias=True, exclude_none=True),
            "document_path": self.document_path,
            "provider_name": self.provider_name,
            "model": self.model,
            "base_url": self.base_url,
            "budgets": {"per_turn": self.budgets.per_turn, "per_day": self.budgets.per_day,
                        "per_month": self.budgets.per_month},
            "guard_policy": self.guard.policy.value,
            "approve": self.approve_policy.value,
            "write_back": write_back,
            "base_count": self._base_count,
            "extra": self.extra,
            "parked_at_ms": int(self._clock_ms()),
        }
        pending = [PendingCallRow(c.id, i, c.tool_name, c.input_digest, c.destructive)
                   for i, c in enumerate(state.pending_calls())]
        self.gov.runs.park(self.run_id, snapshot=snapshot,
                           document_digest=document_digest(base), pending=pending)
        self.parked = True

    @staticmethod
    def prepare_resume(gov: Governance, run_id: str,
                       current_digest: Callable[[str], str] | None = None) -> ResumeTicket:
        """Every check that can refuse a resume, before anything is claimed (see runstate)."""
        return gov.runs.prepare_resume(run_id, current_digest or digest_of_file)

    @classmethod
    async def resume(cls, gov: Governance, ticket: ResumeTicket, *, provider: Any,
                     document_session: DocumentSession | None = None, registry: Any = None,
                     on_state: Callable[[TurnState], None] | None = None,
                     clock_ms: Callable[[], int] | None = None,
                     wallet: CreditBudgets | None = None) -> AssistantSession:
        """Claim the run (CAS), rebuild the same turn, apply the recorded decisions, continue.

        The turn keeps the per-turn budget it was started with. `wallet` carries the day and
        month limits in force now (from settings): a limit the user lowered while the run was
        parked must bind the resumed run too.
        """
        snap = ticket.snapshot
        run_id = ticket.run.run_id
        registry = registry if registry is not None else _default_registry()
        if document_session is None:
            document_session = DocumentSession(ThreatModel.model_validate(snap["document"]))
        budgets = CreditBudgets(**snap["budgets"])
        if wallet is not None:
            budgets = dataclasses.replace(budgets, per_day=wallet.per_day,
                                          per_month=wallet.per_month)
        guard = SecretGuard(GuardPolicy(snap["guard_policy"]))
        approved_ids = [d.call_id for d in ticket.decisions]
        hooks = GovernedHooks(gov, run_id, provider_name=snap["provider_name"],
                              model=snap["model"], budgets=budgets, guard=guard,
                              prerecorded_decisions=approved_ids)
        # The turn deadline measures working time: the time spent parked is taken off the
        # runner's clock, or a run decided tomorrow would be out of time before it starts.
        base_clock = clock_ms or _now_ms
        parked_for = max(0, int(base_clock()) - int(snap.get("parked_at_ms", base_clock())))

        def clock() -> int:
            return int(base_clock()) - parked_for

        options: dict[str, Any] = {"hooks": hooks, "on_state": on_state,
                                   "system_prompt": _system_prompt_for(registry),
                                   "clock_ms": clock}
        # Rebuild before claiming: a snapshot whose tools no longer match is refused untouched.
        runner = TurnRunner.resume(snap["runner"], GuardedProvider(provider, guard), registry,
                                   document_session, **options)
        gov.runs.claim(ticket)
        session = cls(gov, runner, hooks, run_id=run_id, document_path=ticket.run.document_path,
                      provider_name=snap["provider_name"], model=snap["model"], budgets=budgets,
                      guard=guard, approve=ApprovePolicy(snap["approve"]),
                      base_url=snap.get("base_url"), extra=snap.get("extra"),
                      base_count=int(snap.get("base_count", 0)), clock_ms=clock)
        state = runner.state
        order = {c.id: i for i, c in enumerate(state.pending_calls())}
        for decision in sorted(ticket.decisions, key=lambda d: order.get(d.call_id, 0)):
            if decision.call_id not in order:
                continue
            if decision.decision is Decision.APPROVED:
                state = await runner.approve_call(decision.call_id, decision.actor)
            else:
                state = await runner.deny_call(decision.call_id, decision.actor,
                                               decision.reason)
        await session._rest(state)
        return session

    # reporting -------------------------------------------------------------------------

    def summary(self, *, document_written: bool = False,
                display_path: str | None = None) -> TurnSummary:
        state = self.state
        reason: str | None
        if self.parked:
            outcome, reason = "parked", "approval"
        elif state.phase is TurnPhase.SETTLED:
            outcome = state.outcome.value if state.outcome else "failed"
            reason = state.reason
        else:
            outcome, reason = state.phase.value, None
        calls = [{"id": c.id, "tool": c.tool_name, "status": c.status.value,
                  "denial": c.denial_reason.value if c.denial_reason else None,
                  "input_digest": c.input_digest} for c in state.calls]
        pending = [{"id": c.id, "tool": c.tool_name, "summary": c.summary,
                    "destructive": c.destructive, "input_digest": c.input_digest}
                   for c in state.calls if c.status is CallStatus.PENDING]
        violations = [{"kind": v.violation.value, "call_id": v.call_id} for v in state.violations]
        tokens_in, tokens_out, _cached = self.gov.ledger.usage_for_run(self.run_id)
        return TurnSummary(
            run_id=self.run_id, outcome=outcome, reason=reason, iterations=state.iteration,
            calls=calls, violations=violations,
            text=self.final_text if state.phase is TurnPhase.SETTLED else "",
            notice=state.notice,
            usage={"input_tokens": tokens_in, "output_tokens": tokens_out},
            credits_spent=self.gov.ledger.spent_for_run(self.run_id),
            document={"path": display_path or self.document_path,
                      "digest": document_digest(self.runner.session.document),
                      "written": document_written},
            pending=pending,
            error=state.error.message if state.error is not None else None,
        )


def _actor(actor: str) -> str:
    cleaned = actor.strip()
    if not cleaned:
        raise ValueError("an actor name is required for every decision")
    return cleaned


def _default_registry() -> Any:
    from stockade.tools.registry import default_registry

    return default_registry()


def _system_prompt_for(registry: Any) -> Callable[[ThreatModel], str]:
    from stockade.tools.prompt import build_system_prompt

    specs = registry.specs()

    def prompt(document: ThreatModel) -> str:
        return build_system_prompt(document, specs)

    return prompt


def digest_of_file(path: str) -> str:
    """The document digest of the `.thf` file at `path` as it is now."""
    from stockade.thf.reader import read_file

    return document_digest(read_file(path))


def parked_runs(gov: Governance, document_path: str | None = None) -> list[dict[str, Any]]:
    """Parked runs (optionally for one document) with their pending calls, no decryption."""
    out = []
    for run in gov.runs.list_runs(status=RunStatus.PARKED, document_path=document_path):
        decided = {d.call_id: d for d in gov.runs.decisions(run.run_id)}
        out.append({
            "run_id": run.run_id, "document_path": run.document_path,
            "provider": run.provider, "model": run.model, "parked_ms": run.updated_ms,
            "pending": [{"call_id": p.call_id, "tool": p.tool, "destructive": p.destructive,
                         "input_digest": p.input_digest,
                         "decision": decided[p.call_id].decision.value
                         if p.call_id in decided else None}
                        for p in gov.runs.pending_calls(run.run_id)],
        })
    return out


def decide_parked(gov: Governance, run_id: str, call_id: str, *, approve: bool, actor: str,
                  reason: str | None = None) -> bool:
    """Approve or deny one call of a parked run; returns False if it was already so decided."""
    outcome = gov.runs.decide(run_id, call_id, Decision.APPROVED if approve else Decision.DENIED,
                              actor, reason)
    return not outcome.already_recorded
