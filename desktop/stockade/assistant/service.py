"""`AssistantService`: start, park, list, decide, resume and write back governed turns.

This is the one application layer both front ends use (DESIGN.md, assistant/). It owns the
governance worker, so every database and keyring call of a turn runs off the caller's thread.

The one rule for parking: a parked run carries the document as the turn left it (every change
committed before the pause) and the digest of the file at the document's path as it is at the
moment of parking. A resume requires that file unchanged and restores the turn's document onto
it as one undoable step, so committed work is never stranded, whether the user saved, kept
editing elsewhere, discarded the window's changes or closed the app.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stockade.assistant import declined as memory
from stockade.assistant.config import TurnConfig, actor_for
from stockade.assistant.errors import ParkUnavailable
from stockade.assistant.parked import ParkedRun
from stockade.assistant.records import CallDecision, ParkedCall, RunDetails, RunInfo
from stockade.assistant.review import preview_calls
from stockade.assistant.turn import Turn
from stockade.governance.guards import SecretGuard, held_provider_keys
from stockade.governance.hooks import GovernedHooks
from stockade.governance.runstate import (
    DecisionRefused,
    DocumentChanged,
    PendingFacts,
    ResumeTicket,
)
from stockade.governance.services import Governance, wall_clock_ms
from stockade.governance.trajectory import (
    EventKind,
    TrajectoryError,
    TrajectoryEvent,
    VerifyResult,
)
from stockade.governance.worker import GovernanceWorker
from stockade.loop.history import DocumentSession
from stockade.loop.reasons import SettleReason
from stockade.loop.runner import TurnRunner
from stockade.loop.state import TurnState
from stockade.protocol.declined import DeclinedProposal
from stockade.protocol.endpoints import parse_endpoint
from stockade.protocol.messages import Message
from stockade.settings import Settings
from stockade.store import StoreError, StoreIdentity
from stockade.store.runs import Decision, PendingCallRow, RunRow, RunStatus
from stockade.thf.canonical import canonical_json, digest
from stockade.thf.digest import document_digest, file_digest
from stockade.thf.errors import SaveError, ThfError
from stockade.thf.model import ThreatModel

UNSAVED_PREFIX = memory.UNSAVED_PREFIX
"""The document path of a turn on a document that has no file yet (it cannot be parked)."""
RESTORED_LABEL = "Assistant changes before the pause"
CONFLICT_SUFFIX = ".stockade-conflict.thf"

ProviderFactory = Callable[[TurnConfig, DocumentSession], Any]
StateObserver = Callable[[TurnState], None]


@dataclass(frozen=True, slots=True)
class WriteBack:
    """What became of writing a turn's document to its file."""

    written: bool
    path: str
    conflict_path: str | None = None
    error: str | None = None


def default_provider(config: TurnConfig, document_session: DocumentSession) -> Any:
    """The real provider for `config` (keys from the keyring, endpoint as configured)."""
    from stockade.providers.factory import create_provider

    return create_provider(config.provider.value, base_url=config.endpoint_record(),
                           document_source=lambda: document_session.document)


def load_tools() -> Any:
    """The tool registry every turn uses, with its schemas built (a second of work)."""
    import stockade.tools.prompt  # noqa: F401  (imported here so it never loads on a UI thread)
    from stockade.tools.registry import default_registry

    registry = default_registry()
    registry.specs()
    return registry


def _system_prompt(registry: Any,
                   declined: Sequence[DeclinedProposal] = ()) -> Callable[[ThreatModel], str]:
    from stockade.tools.prompt import build_system_prompt

    specs = registry.specs()
    told = tuple(declined)

    def prompt(document: ThreatModel) -> str:
        return build_system_prompt(document, specs, told)

    return prompt


def _new_run_id() -> str:
    return f"run-{uuid.uuid4().hex[:16]}"


class AssistantService:
    """Governed turns for one front end (a window, or one command)."""

    def __init__(self, worker: GovernanceWorker | None = None, *,
                 provider_factory: ProviderFactory = default_provider,
                 clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self.worker = worker or GovernanceWorker()
        self.provider_factory = provider_factory
        self._clock_ms = clock_ms
        self._registry: Any = None
        self._loading: asyncio.Future[Any] | None = None
        # Runs whose write-back went to a conflict copy: a park then binds to that copy.
        self._write_conflicts: dict[str, str] = {}

    def close(self) -> None:
        self.worker.close()

    async def recover_interrupted(self, settings: Settings | None = None) -> list[str]:
        """Mark runs a crashed process left mid-step as interrupted, and finish parked runs
        past their expiry (writing commands do this)."""
        ttl = (settings or Settings()).parked_run_ttl_ms

        def recover(gov: Governance) -> list[str]:
            recovered = gov.runs.recover_interrupted()
            gov.runs.expire_parked(ttl)
            return recovered

        return await self.worker.call(recover)

    async def tools(self) -> Any:
        """The tool registry (built once, on the worker, with the provider SDKs imported)."""
        if self._registry is None:
            if self._loading is None:
                self._loading = asyncio.ensure_future(self.worker.run(load_tools))
            try:
                self._registry = await asyncio.shield(self._loading)
            except Exception:
                self._loading = None  # the next turn tries again
                raise
        return self._registry

    def warm_up(self) -> None:
        """Start building the tools and importing both SDKs now, on the worker (the app calls
        this while the user types: an SDK import would otherwise compete with the UI later)."""
        if self._registry is None and self._loading is None and not self.worker.closed:
            self._loading = asyncio.ensure_future(self.worker.run(_load_tools_and_sdks))
            self._loading.add_done_callback(_quiet)

    # -- turns ---------------------------------------------------------------------------------


    async def start_turn(self, config: TurnConfig, document_session: DocumentSession, *,
                         document_path: str, prompt: str, history: Sequence[Message] = (),
                         on_state: StateObserver | None = None,
                         write_back: bool = False) -> Turn:
        """`prepare_turn`, then `Turn.start`: the turn at its first rest point."""
        turn = await self.prepare_turn(config, document_session, document_path=document_path,
                                       prompt=prompt, history=history, on_state=on_state,
                                       write_back=write_back)
        await turn.start()
        return turn

    async def prepare_turn(self, config: TurnConfig, document_session: DocumentSession, *,
                           document_path: str, prompt: str, history: Sequence[Message] = (),
                           on_state: StateObserver | None = None,
                           write_back: bool = False) -> Turn:
        """Record a new turn (`run.started`, the prompt's guard decision); `turn.start()` then
        sends it. A front end holds the turn from here on, so Stop works from the first request.

        Raises `PriceBookError` (a model without a price is never sent to) or `StoreError`
        (the run could not be recorded, so nothing was sent and nothing spent).
        `write_back` (headless `--write`): the caller writes the document back, then calls
        `turn.finish()`.
        """
        registry = await self.tools()
        price = await self.worker.call(
            lambda gov: gov.price_book.price_for(config.provider.value, config.model))
        declined = await self.worker.call(lambda gov: memory.recall(gov, document_path))
        run_id = _new_run_id()
        guard = SecretGuard(config.guard_policy, await self.worker.run(held_provider_keys))
        hooks = GovernedHooks(self.worker, run_id, provider=config.provider.value,
                              model=config.model, price=price, budgets=config.budgets,
                              guard=guard)
        runner = TurnRunner(
            self.provider_factory(config, document_session), registry, document_session,
            hooks=hooks, limits=config.limits, model=config.model,
            provider_name=config.provider.value, system_prompt=_system_prompt(registry, declined),
            on_state=on_state, clock_ms=self._clock_ms, input_screen=guard.screen_tool_input)
        document = document_session.document
        start_digest = document_digest(document)
        turn = Turn(run_id=run_id, config=config, runner=runner, hooks=hooks, guard=guard,
                    worker=self.worker, document_path=document_path,
                    base_count=len(history), document_before_turn=document,
                    base_digest=start_digest, write_back=write_back, declined=declined)
        sendable, report = guard.check_prompt(prompt)
        payload = {
            "provider": config.provider.value, "model": config.model,
            "endpoint": config.endpoint_record(), "prompt_digest": digest(prompt),
            "document_digest": start_digest, "approve": config.approve.value,
            "credit_budget": config.budgets.per_turn, "base_messages": len(history),
        }

        def record(gov: Governance) -> None:
            gov.runs.start(run_id, document_path=document_path, document_digest=start_digest,
                           provider=config.provider.value, model=config.model, payload=payload)
            # The prompt's guard decision is on record even when clean.
            gov.trajectory.append(run_id, EventKind.GUARD_DECISION, report.to_payload())

        try:
            await self.worker.call(record)
        except TrajectoryError as exc:
            raise StoreError(f"the run could not be recorded, so it was not started ({exc})",
                             None) from None
        turn.stage_prompt(sendable, tuple(history))
        return turn

    # -- parking -------------------------------------------------------------------------------

    def _parked_record(self, turn: Turn, base_digest: str) -> ParkedRun:
        runner, config = turn.runner, turn.config
        return ParkedRun(
            run_id=turn.run_id, document_path=turn.document_path, provider=config.provider,
            model=config.model, endpoint=config.endpoint_record(), budgets=config.budgets,
            guard_policy=config.guard_policy, approve=config.approve,
            write_back=turn.write_back,
            base_count=turn.base_count, parked_at_ms=int(self._clock_ms()),
            waiting_since_ms=runner.waiting_since_ms, state=turn.state,
            document=turn.document_session.document,
            document_before_turn=turn.document_before_turn, base_digest=base_digest,
            conflict_path=self._write_conflicts.get(turn.run_id))

    def _park_on_worker(self, turn: Turn,
                        passphrase: str | None = None) -> Callable[[Governance], None]:
        if not turn.waiting:
            raise ParkUnavailable(f"only a turn waiting for a decision can be saved for later "
                                  f"(this one is {turn.phase.value})")
        path = turn.document_path
        if path.startswith(UNSAVED_PREFIX):
            raise ParkUnavailable("Save the document first: a turn can only wait for later on a "
                                  "document that is saved in a file.")
        pending = [PendingCallRow(c.id, i, c.tool_name, c.input_digest, c.destructive,
                                  c.iteration)
                   for i, c in enumerate(turn.pending())]
        conflict = self._write_conflicts.get(turn.run_id)

        def park(gov: Governance) -> None:
            if conflict is not None:
                # The file changed under the turn and its work went to the conflict copy: the
                # run continues only on that version (adopted as the file), never on the
                # user's edit, which a resume would otherwise overwrite.
                base = document_digest(turn.document_session.document)
            else:
                try:
                    base = file_digest(path)
                except ThfError as exc:
                    raise ParkUnavailable(f"the file {path} cannot be read as a model now "
                                          f"({exc.message}); save the document again, then "
                                          "choose Decide later") from None
            parked = self._parked_record(turn, base)
            gov.runs.park(turn.run_id, snapshot=parked.to_json(), document_digest=base,
                          pending=pending, passphrase=passphrase)

        return park

    async def park(self, turn: Turn, *, passphrase: str | None = None) -> None:
        """Seal the waiting turn and store it (see the module's rule for the base document).

        Raises `ParkUnavailable`, `PassphraseRequired` (no secure keyring: ask for one and
        call again with it), `SealError` or `StoreError`; the turn is then still waiting,
        untouched, in memory.
        """
        work = self._park_on_worker(turn, passphrase)
        turn.parking = True
        try:
            await self.worker.call(work)
        finally:
            turn.parking = False
        turn.parked = True

    def park_blocking(self, turn: Turn, *, passphrase: str | None = None) -> None:
        """`park`, waiting on the caller's thread (the app is closing; nothing else runs)."""
        self.worker.call_blocking(self._park_on_worker(turn, passphrase))
        turn.parked = True

    async def finish_unparked(self, turn: Turn, reason: SettleReason) -> None:
        """Close a waiting turn's run as failed when it could not be parked (headless)."""
        await self.worker.call(lambda gov: gov.runs.finish(
            turn.run_id, outcome="failed", reason=reason.value))
        turn.finished = True

    # -- parked runs ---------------------------------------------------------------------------

    async def list_runs(self, *, status: RunStatus | None = None,
                        document_path: str | None = None,
                        settings: Settings | None = None) -> list[RunInfo]:
        """Runs, newest first, with the pending calls of the parked ones (nothing decrypted);
        a parked run past its expiry is listed as expired."""

        cutoff = int(self._clock_ms()) - (settings or Settings()).parked_run_ttl_ms
        stored = None if status is RunStatus.EXPIRED else status

        def read(gov: Governance) -> list[RunInfo]:
            out = []
            for row in gov.runs.list_runs(status=stored, document_path=document_path):
                row = _shown(row, cutoff)
                if status is RunStatus.EXPIRED and row.status is not RunStatus.EXPIRED:
                    continue
                pending: tuple[ParkedCall, ...] = ()
                if row.status is RunStatus.PARKED:
                    decided = {d.call_id: d for d in gov.runs.decisions(row.run_id)}
                    pending = tuple(ParkedCall.of(p, decided.get(p.call_id))
                                    for p in gov.runs.pending_calls(row.run_id))
                out.append(RunInfo.of(row, pending))
            return out

        return await self.worker.read_if_present(read) or []

    async def declined(self, document_path: str) -> tuple[DeclinedProposal, ...]:
        """What the user declined on this document in earlier turns (an absent database: none)."""
        return await self.worker.read_if_present(
            lambda gov: memory.recall(gov, document_path)) or ()

    async def list_parked(self, document_path: str | None = None, *,
                          settings: Settings | None = None) -> list[RunInfo]:
        """Parked runs that can still be resumed (optionally of one document); an absent
        database means none."""
        cutoff = int(self._clock_ms()) - (settings or Settings()).parked_run_ttl_ms

        def read(gov: Governance) -> list[RunInfo]:
            out = []
            for row in gov.runs.list_runs(status=RunStatus.PARKED, document_path=document_path):
                if _shown(row, cutoff).status is RunStatus.EXPIRED:
                    continue
                decided = {d.call_id: d for d in gov.runs.decisions(row.run_id)}
                out.append(RunInfo.of(row, tuple(ParkedCall.of(p, decided.get(p.call_id))
                                                 for p in gov.runs.pending_calls(row.run_id))))
            return out

        return await self.worker.read_if_present(read) or []

    async def open_parked(self, run_id: str, *, passphrase: str | None = None) -> ParkedRun:
        """Decrypt and check a parked run (store, keyring, seal and layout errors raise;
        `PassphraseRequired` when it is sealed under a passphrase not given yet)."""
        registry = await self.tools()
        data = await self.worker.call(
            lambda gov: gov.runs.open_snapshot(run_id, passphrase=passphrase))
        return ParkedRun.from_json(data, registry, run_id=run_id)

    async def run_info(self, run_id: str) -> tuple[RunInfo, tuple[CallDecision, ...]]:
        """One run's record, its pending calls (if parked) and decisions; nothing decrypted."""

        def read(gov: Governance) -> tuple[RunInfo, tuple[CallDecision, ...]]:
            row = gov.runs.get(run_id)
            decided = {d.call_id: d for d in gov.runs.decisions(run_id)}
            pending = tuple(ParkedCall.of(p, decided.get(p.call_id))
                            for p in gov.runs.pending_calls(run_id)) \
                if row.status is RunStatus.PARKED else ()
            return RunInfo.of(row, pending), tuple(CallDecision.of(d) for d in decided.values())

        return await self.worker.call(read)

    async def show_run(self, run_id: str, *, passphrase: str | None = None) -> RunDetails:
        """One run with its decisions and, if parked, what each undecided call would change
        (marked when the user declined the same proposal in an earlier turn)."""
        info, decisions = await self.run_info(run_id)
        previews: tuple[Any, ...] = ()
        if info.status is RunStatus.PARKED:
            parked = await self.open_parked(run_id, passphrase=passphrase)
            declined = await self.declined(parked.document_path)
            previews = tuple(await preview_calls(parked.pending(), parked.document,
                                                 declined=declined))
        return RunDetails(info, decisions, previews)

    async def decide(self, run_id: str, call_id: str, *, approve: bool, actor: str,
                     reason: str | None = None, passphrase: str | None = None) -> bool:
        """Approve or deny one call of a parked run; False when it was already so decided.

        The decision is bound to the call as the sealed snapshot states it (tool, input digest,
        iteration), so the snapshot is opened first (`PassphraseRequired` without a keyring).
        """
        decision = Decision.APPROVED if approve else Decision.DENIED
        expected: PendingFacts | None = None
        status = (await self.worker.call(lambda gov: gov.runs.get(run_id))).status
        if status is RunStatus.PARKED:
            parked = await self.open_parked(run_id, passphrase=passphrase)
            call = next((c for c in parked.pending() if c.id == call_id), None)
            if call is not None:
                expected = PendingFacts(call.tool_name, call.input_digest, call.iteration)
        outcome = await self.worker.call(
            lambda gov: gov.runs.decide(run_id, call_id, decision, actor, reason,
                                        passphrase=passphrase, expected=expected))
        return not outcome.already_recorded

    # -- resuming ------------------------------------------------------------------------------

    async def resume(self, run_id: str, *, settings: Settings,
                     document_session: DocumentSession | None = None,
                     base_url: str | None = None,
                     on_state: StateObserver | None = None,
                     write_back: bool | None = None,
                     passphrase: str | None = None) -> Turn:
        """Check, claim and continue a decided parked run; returns it at its next rest point.

        `document_session` is the open document to continue in (the app); without one the file
        is read (the command line). Either way the document must be the file as it was when
        the run parked; the turn's earlier work is restored onto it as one undoable step.
        Everything that can refuse runs before the claim, so a refusal leaves the run parked.
        """
        registry = await self.tools()
        ttl = settings.parked_run_ttl_ms
        ticket: ResumeTicket = await self.worker.call(
            lambda gov: gov.runs.prepare_resume(run_id, passphrase=passphrase, ttl_ms=ttl))
        parked = ParkedRun.from_json(ticket.snapshot, registry, run_id=run_id)
        _check_decisions_cover(run_id, parked, ticket)
        path = parked.document_path

        def current_digest() -> str:
            try:
                return file_digest(path)
            except ThfError as exc:
                raise DocumentChanged(f"the document {path} can no longer be read as a valid "
                                      f"model ({exc.message}); the run cannot be resumed against "
                                      "it") from None

        if await self.worker.run(current_digest) != parked.base_digest:
            if parked.conflict_path is not None:
                raise DocumentChanged(
                    f"run {run_id} was parked after {path} changed under it; its work is in "
                    f"{parked.conflict_path}. To continue it, put that file in place of {path} "
                    "(or merge your edits into it), then resume")
            raise DocumentChanged(f"the document {path} changed since run {run_id} was parked; "
                                  "the run cannot be resumed against it")
        if document_session is None:
            from stockade.thf.reader import read_file

            document_session = DocumentSession(await self.worker.run(lambda: read_file(path)))
        restore = _restore_plan(parked, document_session)
        endpoint = base_url or parked.endpoint
        wallet = settings.credits.budgets()
        config = TurnConfig(
            provider=parked.provider, model=parked.model,
            endpoint=parse_endpoint(endpoint, what="--base-url" if base_url else
                                    "the saved endpoint") if endpoint else None,
            limits=parked.state.limits,
            # The turn keeps its own budget; day and month limits are today's settings, so a
            # limit lowered while the run was parked binds the resumed run too.
            budgets=dataclasses.replace(parked.budgets, per_day=wallet.per_day,
                                        per_month=wallet.per_month),
            guard_policy=parked.guard_policy, approve=parked.approve, actor=actor_for(settings))
        price = await self.worker.call(
            lambda gov: gov.price_book.price_for(config.provider.value, config.model))
        declined = await self.worker.call(lambda gov: memory.recall(gov, path))
        guard = SecretGuard(config.guard_policy, await self.worker.run(held_provider_keys))
        hooks = GovernedHooks(self.worker, run_id, provider=config.provider.value,
                              model=config.model, price=price, budgets=config.budgets,
                              guard=guard, prerecorded_decisions=[d.call_id for d in
                                                                  ticket.decisions])
        # The deadline measures working time: time spent parked is taken off the runner's
        # clock, or a run decided tomorrow would be out of time before it starts.
        parked_for = max(0, int(self._clock_ms()) - parked.parked_at_ms)

        def clock() -> int:
            return int(self._clock_ms()) - parked_for

        await self.worker.call(lambda gov: gov.runs.claim(ticket, {
            "endpoint": config.endpoint_record(),
            "restored": restore is not None and restore.apply}))
        undo_entry = restore.apply_to(document_session) if restore is not None else None
        provider = self.provider_factory(config, document_session)
        runner = TurnRunner.resume(
            parked.state, provider, document_session, waiting_since_ms=parked.waiting_since_ms,
            undo_entry=undo_entry, hooks=hooks, model=config.model,
            provider_name=config.provider.value, system_prompt=_system_prompt(registry, declined),
            on_state=on_state, clock_ms=clock, input_screen=guard.screen_tool_input)
        turn = Turn(run_id=run_id, config=config, runner=runner, hooks=hooks, guard=guard,
                    worker=self.worker, document_path=path, base_count=parked.base_count,
                    document_before_turn=parked.document_before_turn,
                    base_digest=parked.base_digest,
                    write_back=parked.write_back if write_back is None else write_back,
                    declined=declined)
        state = runner.state
        pending = {c.id: c for c in state.pending_calls()}
        order = {call_id: i for i, call_id in enumerate(pending)}
        denied: list[tuple[str, memory.Declined]] = []
        for decision in sorted(ticket.decisions, key=lambda d: order.get(d.call_id, 0)):
            if decision.call_id not in order:
                continue
            if decision.decision is Decision.APPROVED:
                state = await runner.approve_call(decision.call_id, decision.actor)
            else:
                state = await runner.deny_call(decision.call_id, decision.actor, decision.reason)
                denied.append((decision.actor,
                               memory.Declined(pending[decision.call_id], decision.reason)))
        for actor in dict.fromkeys(a for a, _ in denied):
            await turn.remember_declined([d for a, d in denied if a == actor], actor)
        await turn.rest(state)
        return turn

    async def store_identity(self) -> StoreIdentity:
        """Which store governance uses (the SQLite file, or the team database and our role)."""
        return await self.worker.call(lambda gov: gov.identity)

    # -- the audit trail -----------------------------------------------------------------------

    # Reads never create the database: looking at an empty data folder leaves it empty.

    async def verify_audit(self) -> VerifyResult:
        """Recompute the whole chain (read only: no recovery, nothing appended)."""
        result = await self.worker.read_if_present(lambda gov: gov.trajectory.verify_chain())
        return result if result is not None else VerifyResult(ok=True, checked=0)

    async def verify_audit_export(self, lines: Sequence[str]) -> VerifyResult:
        """Check an exported run against the head sealed into it (`audit verify --export`)."""

        from stockade.governance.services import machine_audit_key, store_database_url
        from stockade.governance.trajectory import verify_export_lines

        if await self.worker.run(store_database_url) is not None:
            # Team mode: the trail is keyed by the team's key, which the team store names.
            key = await self.worker.call(lambda gov: gov.trajectory.existing_key())
            return await self.worker.run(lambda: verify_export_lines(lines, key))
        return await self.worker.run(lambda: verify_export_lines(lines, machine_audit_key()))

    async def audit_events(self, run_id: str) -> list[TrajectoryEvent]:
        return await self.worker.read_if_present(lambda gov: gov.trajectory.events(run_id)) or []

    async def export_audit(self, run_id: str) -> list[str]:
        """One run's events as JSON lines, then the line sealing them with the chain head
        (empty when the run has none). Each `document.committed` line also carries what the
        change did (`changes`), opened from its sealed summary where this machine can."""

        def export(gov: Governance) -> list[str]:
            lines = list(gov.trajectory.export_lines(run_id))
            summaries = _change_summaries(gov, run_id)
            if not summaries:
                return lines
            out = []
            for line in lines:
                item = json.loads(line)
                if item.get("seq") in summaries:
                    item["changes"] = summaries[item["seq"]]
                out.append(canonical_json(item))
            return out

        return await self.worker.read_if_present(export) or []

    async def change_summaries(self, run_id: str) -> dict[int, list[str]]:
        """{event seq: what the change did} for a run's commits whose summaries open here."""
        return await self.worker.read_if_present(lambda gov: _change_summaries(gov, run_id)) \
            or {}

    async def wallet_spend(self) -> tuple[int, int]:
        """Credits committed today and this month (open holds in full)."""
        return await self.worker.read_if_present(lambda gov: gov.ledger.window_spend()) or (0, 0)

    # -- writing back --------------------------------------------------------------------------

    async def write_back(self, turn: Turn) -> WriteBack:
        """Save the turn's document to its file atomically, if the file is still the one the
        turn started (or resumed) on.

        A file someone changed meanwhile is never overwritten: the turn's document goes to
        `NAME.stockade-conflict.thf` beside it instead. Either write is audited as
        `document.written` with the digests of the path and of what was written.
        """
        path = turn.document_path
        document = turn.document_session.document
        run_id, expected_digest = turn.run_id, turn.base_digest

        def write(gov: Governance) -> WriteBack:
            from stockade.thf.writer import save

            try:
                current = file_digest(path)
            except ThfError:
                current = None
            target, conflict = path, None
            if current != expected_digest:
                target = conflict = _conflict_path(path)
            try:
                save(document, target)
            except SaveError as exc:
                return WriteBack(False, path, None, str(exc))
            gov.trajectory.append(run_id, EventKind.DOCUMENT_WRITTEN, {
                "path_digest": digest(os.fspath(target)),
                "document_digest": document_digest(document),
                "file_sha256": "sha256:" + _sha256_file(target),
                "conflict": conflict is not None})
            return WriteBack(conflict is None, path, conflict)

        try:
            result = await self.worker.call(write)
        except (StoreError, sqlite3.Error, TrajectoryError) as exc:
            return WriteBack(False, path, None, f"the write could not be recorded ({exc})")
        if result.conflict_path is not None:
            self._write_conflicts[turn.run_id] = result.conflict_path
        return result


@dataclass(frozen=True, slots=True)
class _RestorePlan:
    """How a resume puts the turn's earlier work back into the open document."""

    document: ThreatModel
    apply: bool  # False: the open document already is the turn's document
    continue_entry: int | None = None

    def apply_to(self, session: DocumentSession) -> int | None:
        if self.apply:
            return session.apply_edit(self.document, RESTORED_LABEL).serial
        return self.continue_entry


def _restore_plan(parked: ParkedRun, session: DocumentSession) -> _RestorePlan | None:
    """Check (before the claim) that the turn's document can be put into `session`."""
    current = document_digest(session.document)
    parked_digest = document_digest(parked.document)
    if current == parked_digest:
        # The same window that parked it: the turn's earlier commits may still be the newest
        # history entry; if so the resumed turn continues that entry (one undo for the turn).
        past = session.history.past
        before = parked.document_before_turn
        if past and before is not None and parked_digest != document_digest(before) and \
                document_digest(past[-1].document) == document_digest(before):
            return _RestorePlan(parked.document, False, past[-1].serial)
        return None
    if current != parked.base_digest:
        raise DocumentChanged("the open document has unsaved changes the waiting turn does not "
                              "know, and it can only continue on the file as it was saved; "
                              "reopen the file (discarding those changes) to continue it")
    return _RestorePlan(parked.document, True)


def _change_summaries(gov: Governance, run_id: str) -> dict[int, list[str]]:
    from stockade.governance.changes import open_changes
    from stockade.store.events import change_summaries

    sealed = change_summaries(gov.db.read(), run_id)
    master = gov.keys.existing_or_none() if gov.keys is not None and sealed else None
    if master is None:
        return {}
    out: dict[int, list[str]] = {}
    for seq, blob in sealed.items():
        event = gov.trajectory.event(seq)
        lines = open_changes(master, event, blob) if event is not None else None
        if lines is not None:
            out[seq] = lines
    return out


def _shown(row: RunRow, cutoff_ms: int) -> RunRow:
    """A run as listed: parked past its expiry, or finished because it expired, is expired."""
    if (row.status is RunStatus.PARKED and not row.claimed and row.updated_ms < cutoff_ms) or \
            (row.status is RunStatus.FINISHED and row.outcome == "expired"):
        return dataclasses.replace(row, status=RunStatus.EXPIRED)
    return row


def _check_decisions_cover(run_id: str, parked: ParkedRun, ticket: ResumeTicket) -> None:
    """Every call the sealed snapshot waits on needs a verified decision for exactly its input
    digest and iteration (the plaintext pending-call list may have been altered)."""
    decided = {d.call_id: d for d in ticket.decisions}
    for call in parked.pending():
        row = decided.get(call.id)
        if row is None:
            raise DecisionRefused(f"run {run_id} waits on call {call.id}, which has no "
                                  "authenticated decision; nothing was run")
        if row.input_digest != call.input_digest or row.iteration != call.iteration:
            raise DecisionRefused(
                f"the decision on call {call.id} of run {run_id} was made for another input or "
                "step than the call waiting in the sealed snapshot; nothing was run")


def _conflict_path(path: str) -> str:
    p = Path(path)
    name = p.name[:-4] if p.name.endswith(".thf") else p.name
    return os.fspath(p.with_name(name + CONFLICT_SUFFIX))


def _sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _load_tools_and_sdks() -> Any:
    # The factory imports provider modules only when one is chosen; import the two SDK-backed
    # ones here too, so choosing Anthropic or OpenAI later never imports an SDK on a UI thread.
    import stockade.providers.anthropic
    import stockade.providers.factory
    import stockade.providers.openai  # noqa: F401

    return load_tools()


def _quiet(task: asyncio.Future[Any]) -> None:
    """Retrieve a background warm-up's outcome (the turn that needs it reports failures)."""
    if not task.cancelled():
        task.exception()

