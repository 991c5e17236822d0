"""The governed turn hooks: guard → meter → audit, once per request, every write on the worker.

The runner calls these hooks before each step (see `loop.hooks`). Each provider request is
guarded once (the permit carries the request that may be sent), priced and reserved against
the turn budget and the wallet, and recorded; every other step is appended to the trajectory
before it proceeds. Any failure to record stops the turn (fail-closed).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from stockade.governance.changes import seal_changes, sealed_digest
from stockade.governance.guards import GuardAction, GuardReport, SecretGuard, blocked_message
from stockade.governance.ledger import CreditBudgets, Hold, LimitRefusal
from stockade.governance.meter import quote, usage_cost
from stockade.governance.pricebook import ModelPrice
from stockade.governance.sealing import SealError
from stockade.governance.services import Governance
from stockade.governance.trajectory import MAX_PAYLOAD_STRING, EventKind, TrajectoryError
from stockade.governance.worker import GovernanceWorker
from stockade.loop.hooks import (
    RefusalKind,
    RequestPermit,
    RequestRefused,
    StepKind,
    TurnStep,
    TurnStopped,
)
from stockade.protocol.events import Usage
from stockade.protocol.request import ChatRequest
from stockade.store import StoreError
from stockade.store import events as event_sql
from stockade.thf.canonical import digest

EVENT_FOR_STEP: dict[StepKind, EventKind] = {
    StepKind.MODEL_REQUEST: EventKind.MODEL_REQUEST,
    StepKind.MODEL_USAGE: EventKind.MODEL_USAGE,
    StepKind.MODEL_RETRY: EventKind.MODEL_RETRY,
    StepKind.TOOL_PROPOSED: EventKind.TOOL_PROPOSED,
    StepKind.TOOL_APPROVED: EventKind.TOOL_APPROVED,
    StepKind.TOOL_DENIED: EventKind.TOOL_DENIED,
    StepKind.TOOL_EDITED: EventKind.TOOL_EDITED,
    StepKind.TOOL_STARTED: EventKind.TOOL_STARTED,
    StepKind.TOOL_RESULT: EventKind.TOOL_RESULT,
    StepKind.DOCUMENT_COMMITTED: EventKind.DOCUMENT_COMMITTED,
    StepKind.TURN_UNDONE: EventKind.TURN_UNDONE,
    StepKind.TURN_SETTLED: EventKind.TURN_SETTLED,
}
"""Every runner step is exactly one audit event kind (a test keeps the mapping total)."""


class GovernedHooks:
    """`TurnHooks` that guard, meter and audit one run through the governance worker."""

    def __init__(self, worker: GovernanceWorker, run_id: str, *, provider: str, model: str,
                 price: ModelPrice, budgets: CreditBudgets, guard: SecretGuard,
                 prerecorded_decisions: Iterable[str] = ()) -> None:
        self._worker = worker
        self.run_id = run_id
        self._provider = provider
        self._model = model
        self._price = price
        self._budgets = budgets
        self._guard = guard
        self._prerecorded = frozenset(prerecorded_decisions)
        self._holds: dict[str, Hold] = {}

    async def append(self, kind: EventKind, payload: dict[str, Any]) -> None:
        """Append one event for this run; a failure stops the turn before its step."""
        run_id = self.run_id

        def append(gov: Governance) -> object:
            if kind in (EventKind.TOOL_APPROVED, EventKind.TOOL_DENIED) and \
                    gov.identity.role is not None:
                # Team store: who decided is the authenticated database role, not only a name.
                return gov.trajectory.append(run_id, kind, {**payload,
                                                            "actor_role": gov.identity.role})
            return gov.trajectory.append(run_id, kind, payload)

        try:
            await self._worker.call(append)
        except (TrajectoryError, StoreError, sqlite3.Error) as exc:
            raise TurnStopped(f"the audit trail could not be written ({exc})") from None

    async def record_guard(self, report: GuardReport, *, always: bool = False,
                           **extra: Any) -> None:
        """Audit a guard decision (kinds and counts only); clean ones only when `always`."""
        if report.count or always:
            await self.append(EventKind.GUARD_DECISION, {**report.to_payload(), **extra})

    async def before_request(self, request: ChatRequest,
                             iteration: int) -> RequestPermit | RequestRefused:
        sendable, report = self._guard.check_request(request)
        await self.record_guard(report, iteration=iteration)
        if report.action is GuardAction.BLOCKED:
            return RequestRefused(RefusalKind.GUARD, blocked_message(report))
        offer = quote(sendable, self._price)
        run_id, budgets = self.run_id, self._budgets

        def reserve(gov: Governance) -> Hold | LimitRefusal:
            with gov.db.write() as conn:
                outcome = gov.ledger.reserve_in(
                    conn, run_id=run_id, provider=self._provider, model=self._model,
                    credits=offer.reserve, estimated=offer.estimate, budgets=budgets)
                if isinstance(outcome, LimitRefusal):
                    # The refusal and its audit event commit together, or neither does.
                    gov.trajectory.append_in(conn, run_id, EventKind.METER_REFUSED, {
                        "iteration": iteration, "limit": outcome.limit.value,
                        "needed": outcome.needed, "committed": outcome.committed,
                        "allowed": outcome.allowed})
            return outcome

        try:
            outcome = await self._worker.call(reserve)
        except (StoreError, sqlite3.Error, TrajectoryError) as exc:
            raise TurnStopped(f"credits could not be reserved ({exc})") from None
        if isinstance(outcome, LimitRefusal):
            return RequestRefused(RefusalKind.CREDITS, outcome.message)
        self._holds[outcome.id] = outcome
        return RequestPermit(handle=outcome.id, reserved_credits=offer.reserve,
                             estimated_credits=offer.estimate, request=sendable)

    async def after_request(self, permit: RequestPermit, usage: Usage | None,
                            failed: bool) -> int:
        hold = self._holds.pop(permit.handle, None)
        if hold is None:
            return 0
        actual = None if usage is None else usage_cost(
            self._price, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)

        run_id = self.run_id

        def settle(gov: Governance) -> int:
            with gov.db.write() as conn:
                settlement = gov.ledger.settle_in(
                    conn, hold.id, actual=actual, failed=failed,
                    input_tokens=usage.input_tokens if usage else 0,
                    output_tokens=usage.output_tokens if usage else 0,
                    cached_input_tokens=usage.cached_input_tokens if usage else 0)
                if settlement.overrun:
                    # The charge above the hold and its audit flag commit together.
                    gov.trajectory.append_in(conn, run_id, EventKind.METER_OVERRUN, {
                        "reserved": settlement.reserved, "actual": settlement.actual,
                        "overrun": settlement.overrun,
                        "input_tokens": usage.input_tokens if usage else 0,
                        "output_tokens": usage.output_tokens if usage else 0})
            return settlement.charged

        try:
            return await self._worker.call(settle)
        except (StoreError, sqlite3.Error, TrajectoryError) as exc:
            raise TurnStopped(f"credits could not be settled ({exc})") from None

    async def record(self, step: TurnStep) -> None:
        payload = dict(step.payload)
        if step.kind in (StepKind.TOOL_APPROVED, StepKind.TOOL_DENIED) and \
                payload.get("call_id") in self._prerecorded:
            return  # decided while parked: that decision and its event were committed together
        if step.kind in (StepKind.TOOL_APPROVED, StepKind.TOOL_DENIED):
            payload["os_user"] = _os_user()  # beside the actor a front end named
        if step.kind is StepKind.TOOL_DENIED:
            reason = payload.pop("reason", None)
            if reason:
                payload["reason_digest"] = digest(reason)
        if step.kind is StepKind.DOCUMENT_COMMITTED:
            await self._record_commit(payload, list(step.confidential))
            return
        await self.append(EVENT_FOR_STEP[step.kind], compact_payload(payload))

    async def _record_commit(self, payload: dict[str, Any], lines: list[str]) -> None:
        """`document.committed`, with its entity-level change lines sealed beside it (see
        `governance.changes`); the event itself holds their count and digest only."""
        body = compact_payload(payload)
        run_id = self.run_id

        def commit(gov: Governance) -> None:
            master = gov.keys.existing_or_none() if gov.keys is not None else None
            sealed = None
            if lines:
                body["changes"] = len(lines)
                if master is not None:
                    sealed = seal_changes(master, run_id, str(body.get("call_id")),
                                          str(body.get("document_after")), lines)
                    body["changes_digest"] = sealed_digest(sealed)
            with gov.db.write() as conn:
                event = gov.trajectory.append_in(conn, run_id, EventKind.DOCUMENT_COMMITTED,
                                                 body)
                if sealed is not None:
                    event_sql.insert_change_summary(conn, event.seq, run_id, sealed)

        try:
            await self._worker.call(commit)
        except (TrajectoryError, StoreError, SealError, sqlite3.Error) as exc:
            raise TurnStopped(f"the audit trail could not be written ({exc})") from None


def _os_user() -> str:
    import getpass

    try:
        return getpass.getuser()[:64]
    except (KeyError, OSError):  # no user database entry (containers)
        return "unknown"


def compact_payload(value: Any) -> Any:
    """Over-long strings (a model can send any tool name or call id) become their digest, so
    model output can neither stuff the audit nor stop a turn by failing its payload check."""
    if isinstance(value, str):
        return value if len(value) <= MAX_PAYLOAD_STRING else digest(value)
    if isinstance(value, dict):
        return {k: compact_payload(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [compact_payload(v) for v in value]
    return value
