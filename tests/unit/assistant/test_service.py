"""The application layer end to end in one process: metering, audit, guards, park, resume,
write-back — through `AssistantService` and `Turn`, the API both front ends use."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stockade.assistant.errors import ConflictError, DocumentChanged, ParkUnavailable
from stockade.assistant.policy import ApprovePolicy
from stockade.assistant.service import UNSAVED_PREFIX, AssistantService
from stockade.assistant.summary import RunOutcome
from stockade.assistant.turn import Turn
from stockade.governance.guards import REDACTED, GuardPolicy
from stockade.governance.pricebook import PriceBookError
from stockade.governance.services import Governance
from stockade.governance.trajectory import Trajectory, TrajectoryError
from stockade.loop.history import DocumentSession
from stockade.loop.limits import TurnLimits
from stockade.loop.state import CallStatus, TurnPhase
from stockade.settings import CreditSettings
from stockade.store.runs import RunStatus
from stockade.thf.digest import document_digest
from stockade.thf.reader import read_file
from stockade.thf.writer import save
from tests.unit.assistant.conftest import (
    Scripts,
    balanced,
    config,
    kinds,
    run,
    settings,
)
from tests.unit.governance.scripted import ScriptedProvider, add_threat, text_reply, tool_reply

DESTRUCTIVE = ("c9", "delete_element", {"action": "delete_element", "id": "app"})


def start(service: AssistantService, model_file: Path, prompt: str = "review the model", *,
          session: DocumentSession | None = None, **config_args: Any) -> Turn:
    session = session or DocumentSession(read_file(model_file))
    return run(service.start_turn(config(**config_args), session,
                                  document_path=str(model_file), prompt=prompt))


def test_a_text_turn_completes_metered_and_audited(service: AssistantService, scripts: Scripts,
                                                   gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(text_reply("All flows look fine.")))
    turn = start(service, model_file)
    summary = run(turn.summary())
    assert turn.phase is TurnPhase.SETTLED and summary.outcome is RunOutcome.COMPLETED
    assert summary.text == "All flows look fine."
    assert (summary.input_tokens, summary.output_tokens) == (1000, 50)
    # $3/MTok in + $15/MTok out: 30 + 8 (7.5 rounded up) credits
    assert summary.credits_spent == 38
    assert kinds(gov, turn.run_id) == ["run.started", "guard.decision", "model.request",
                                       "model.usage", "turn.settled", "run.finished"]
    started, _guard, request = gov.trajectory.events(turn.run_id)[:3]
    assert started.payload["endpoint"] == "https://api.anthropic.com"
    assert request.payload["reserved_credits"] >= request.payload["estimated_credits"] > 0
    assert summary.last_reserved == request.payload["reserved_credits"]
    assert gov.runs.get(turn.run_id).status is RunStatus.FINISHED
    assert balanced(gov) and gov.trajectory.verify_chain().ok


def test_the_trajectory_holds_no_prompt_text(service: AssistantService, scripts: Scripts,
                                             gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(text_reply("ok")))
    start(service, model_file, "a very particular prompt phrase")
    payloads = [p for (p,) in gov.db.read().execute("SELECT payload FROM event").fetchall()]
    assert payloads and not any("particular" in p for p in payloads)


def test_a_model_without_a_price_is_refused_before_anything_runs(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    with pytest.raises(PriceBookError):
        start(service, model_file, model="claude-unpriced")
    assert gov.trajectory.count() == 0 and scripts.made == []


def test_a_turn_stops_bounded_by_credits_and_never_overspends(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(text_reply("x")))
    probe = start(service, model_file, "summarize")
    first_hold = next(e for e in gov.trajectory.events(probe.run_id)
                      if e.kind == "model.request").payload["reserved_credits"]
    budget = first_hold + 10  # room for one request, not two
    provider = scripts.add(ScriptedProvider(tool_reply(("c1", "get_document_summary", {})),
                                            text_reply("done")))
    turn = start(service, model_file, "summarize",
                 credits=CreditSettings(per_turn=budget, per_day=None, per_month=None))
    summary = run(turn.summary())
    assert summary.outcome is RunOutcome.BOUNDED and summary.reason == "credits"
    assert summary.credits_spent <= budget and len(provider.requests) == 1
    assert "meter.refused" in kinds(gov, turn.run_id)
    assert balanced(gov)


def test_a_first_request_over_the_turn_budget_is_explained_with_the_figure(
        service: AssistantService, scripts: Scripts, model_file: Path) -> None:
    provider = scripts.add(ScriptedProvider(text_reply("never")))
    turn = start(service, model_file, credits=CreditSettings(per_turn=5, per_day=None,
                                                             per_month=None))
    summary = run(turn.summary())
    assert provider.requests == [] and summary.outcome is RunOutcome.BOUNDED
    assert summary.notice is not None and "per-turn budget of 5 credits" in summary.notice
    assert "--budget" in summary.notice and "Settings" in summary.notice


def test_the_iteration_bound_stops_a_model_that_never_finishes(
        service: AssistantService, scripts: Scripts, model_file: Path) -> None:
    provider = scripts.add(ScriptedProvider(*[tool_reply((f"c{i}", "get_document_summary", {}))
                                              for i in range(5)]))
    turn = start(service, model_file, "loop", max_iterations=2)
    summary = run(turn.summary())
    assert summary.outcome is RunOutcome.BOUNDED and summary.reason == "iterations"
    assert len(provider.requests) == 2


def test_a_blocked_secret_stops_the_turn_before_any_request_or_spend(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    provider = scripts.add(ScriptedProvider(text_reply("never")))
    cfg = config()
    turn = run(service.start_turn(
        type(cfg)(**{**{f: getattr(cfg, f) for f in cfg.__slots__},
                     "guard_policy": GuardPolicy.BLOCK}),
        DocumentSession(read_file(model_file)), document_path=str(model_file),
        prompt="deploy with AKIAIOSFODNN7EXAMPLE"))
    summary = run(turn.summary())
    assert summary.outcome is RunOutcome.BOUNDED and summary.reason == "guard"
    assert provider.requests == [] and summary.credits_spent == 0
    guard_events = [e.payload for e in gov.trajectory.events(turn.run_id)
                    if e.kind == "guard.decision"]
    assert [g["action"] for g in guard_events] == ["blocked", "blocked"]  # prompt, request
    assert "AKIA" not in str(guard_events)


def test_each_request_is_guarded_once_and_redacted_secrets_never_reach_the_provider(
        service: AssistantService, scripts: Scripts, model_file: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from stockade.governance.guards import SecretGuard

    scans: list[int] = []
    original = SecretGuard.check_request

    def counting(self: SecretGuard, request: Any) -> Any:
        scans.append(1)
        return original(self, request)

    monkeypatch.setattr(SecretGuard, "check_request", counting)
    provider = scripts.add(ScriptedProvider(
        tool_reply(("c1", "get_document_summary", {})),
        text_reply("ok, key AKIAIOSFODNN7EXAMPLE noted")))
    turn = start(service, model_file, "use sk-ant-api03-Zq8vX2mN4bL7kJ9hG3fD1sA5 to deploy")
    for sent in provider.requests:
        text = "".join(b.text for m in sent.messages for b in m.content if hasattr(b, "text"))
        assert "sk-ant" not in text and REDACTED in text
    assert run(turn.summary()).text == f"ok, key {REDACTED} noted"  # output guard
    assert len(scans) == len(provider.requests) == 2


def test_a_failing_audit_append_stops_the_turn(service: AssistantService, scripts: Scripts,
                                               gov: Governance, model_file: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    scripts.add(ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                 text_reply("x")))
    original = Trajectory.append

    def failing(self: Trajectory, run_id: str, kind: Any, payload: Any = None) -> Any:
        if str(kind) == "tool.started":
            raise TrajectoryError("disk full")
        return original(self, run_id, kind, payload)

    monkeypatch.setattr(Trajectory, "append", failing)
    session = DocumentSession(read_file(model_file))
    before = len(session.document.threats)
    turn = start(service, model_file, "add a threat", session=session,
                 approve=ApprovePolicy.MUTATE)
    assert turn.state.outcome is not None and turn.state.outcome.value == "failed"
    assert len(session.document.threats) == before
    assert balanced(gov)


def test_mutate_policy_approves_safe_mutations_and_runs_them(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                 text_reply("Added one threat.")))
    turn = start(service, model_file, "add a threat", approve=ApprovePolicy.MUTATE)
    summary = run(turn.summary())
    assert summary.outcome is RunOutcome.COMPLETED
    assert [c.status for c in summary.calls] == [CallStatus.SUCCEEDED]
    assert any(t.title == "Token theft" for t in turn.document_session.document.threats)
    approved = [e for e in gov.trajectory.events(turn.run_id) if e.kind == "tool.approved"]
    assert approved[0].payload["actor"] == "policy:mutate"


def test_deny_policy_denies_every_mutation(service: AssistantService, scripts: Scripts,
                                           model_file: Path) -> None:
    scripts.add(ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                 text_reply("Understood.")))
    turn = start(service, model_file, "add a threat", approve=ApprovePolicy.DENY)
    summary = run(turn.summary())
    assert summary.outcome is RunOutcome.COMPLETED
    assert summary.calls[0].status is CallStatus.DENIED
    assert len(turn.document_session.document.threats) == 0


# -- parking and resuming ----------------------------------------------------------------------


def park_with(service: AssistantService, scripts: Scripts, model_file: Path,
              *calls: tuple[str, str, dict[str, Any]], session: DocumentSession | None = None,
              ) -> Turn:
    scripts.add(ScriptedProvider(tool_reply(*calls)))
    turn = start(service, model_file, "change things", session=session,
                 approve=ApprovePolicy.MUTATE)
    assert turn.phase is TurnPhase.AWAITING_APPROVAL
    run(service.park(turn))
    assert run(turn.summary()).outcome is RunOutcome.PARKED
    return turn


def test_a_parked_run_is_listed_decided_and_resumed_in_another_service(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path,
        secrets: Any) -> None:
    turn = park_with(service, scripts, model_file, ("c1", "add_threat", add_threat()),
                     ("c2", "add_threat", add_threat("Second")), DESTRUCTIVE)
    [listed] = run(service.list_parked(str(model_file)))
    assert [p.call_id for p in listed.pending] == ["c9"] and listed.undecided == 1
    assert run(service.decide(turn.run_id, "c9", approve=False, actor="alice",
                              reason="keep app"))
    assert not run(service.decide(turn.run_id, "c9", approve=False, actor="alice"))

    other_scripts = Scripts()
    other_scripts.add(ScriptedProvider(text_reply("Done; the delete was refused.")))
    from stockade.governance.services import open_governance
    from stockade.governance.worker import GovernanceWorker

    other = AssistantService(GovernanceWorker(lambda: open_governance(secrets=secrets)),
                             provider_factory=other_scripts.factory)
    try:
        resumed = run(other.resume(turn.run_id, settings=settings()))
        summary = run(resumed.summary())
    finally:
        other.close()
    assert summary.outcome is RunOutcome.COMPLETED
    assert {c.id: c.status for c in summary.calls} == {
        "c1": CallStatus.SUCCEEDED, "c2": CallStatus.SUCCEEDED, "c9": CallStatus.DENIED}
    titles = {t.title for t in resumed.document_session.document.threats}
    assert titles == {"Token theft", "Second"}
    run_kinds = kinds(gov, turn.run_id)
    assert run_kinds.count("tool.denied") == 1 and "run.resumed" in run_kinds
    assert run_kinds[-1] == "run.finished"
    assert gov.runs.get(turn.run_id).status is RunStatus.FINISHED
    assert gov.trajectory.verify_chain().ok and balanced(gov)


def _committed_then_waiting(service: AssistantService, scripts: Scripts, model_file: Path,
                            session: DocumentSession) -> Turn:
    """A turn that committed one threat (approved in iteration 1) and waits on a second."""
    scripts.add(ScriptedProvider(tool_reply(("c1", "add_threat", add_threat("First"))),
                                 tool_reply(("c2", "add_threat", add_threat("Second")))))
    turn = start(service, model_file, "two threats", session=session)
    assert [c.id for c in turn.pending()] == ["c1"]
    run(turn.approve("c1", "user:alice"))
    assert turn.phase is TurnPhase.AWAITING_APPROVAL and [c.id for c in turn.pending()] == ["c2"]
    assert [t.title for t in session.document.threats] == ["First"]
    return turn


def test_work_committed_before_a_pause_is_never_stranded(
        service: AssistantService, scripts: Scripts, model_file: Path) -> None:
    # The app's "approve one, then open another file and Discard": the file never got the
    # approved change, the run parks, and a later resume (a fresh read of the file) restores
    # it and continues.
    session = DocumentSession(read_file(model_file))
    on_disk = document_digest(session.document)
    turn = _committed_then_waiting(service, scripts, model_file, session)
    run(service.park(turn))
    assert document_digest(read_file(model_file)) == on_disk
    run(service.decide(turn.run_id, "c2", approve=True, actor="alice"))
    scripts.add(ScriptedProvider(text_reply("Both added.")))
    resumed = run(service.resume(turn.run_id, settings=settings()))
    assert resumed.phase is TurnPhase.SETTLED
    assert [t.title for t in resumed.document_session.document.threats] == ["First", "Second"]
    # One undo of the turn reverts all of it, the restored pre-pause work included.
    assert run(resumed.undo())
    assert document_digest(resumed.document_session.document) == on_disk
    assert {c.id: c.status for c in resumed.state.calls} == {
        "c1": CallStatus.UNDONE, "c2": CallStatus.UNDONE}


def test_a_turn_resumed_in_the_window_that_parked_it_undoes_as_one_step(
        service: AssistantService, scripts: Scripts, model_file: Path) -> None:
    session = DocumentSession(read_file(model_file))
    before = session.document
    turn = _committed_then_waiting(service, scripts, model_file, session)
    run(service.park(turn))
    run(service.decide(turn.run_id, "c2", approve=True, actor="alice"))
    scripts.add(ScriptedProvider(text_reply("Both added.")))
    resumed = run(service.resume(turn.run_id, settings=settings(), document_session=session))
    assert [t.title for t in session.document.threats] == ["First", "Second"]
    assert run(resumed.undo())
    assert session.document is before


def test_a_resume_into_a_document_with_other_unsaved_changes_is_refused(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = park_with(service, scripts, model_file, DESTRUCTIVE)
    run(service.decide(turn.run_id, "c9", approve=False, actor="alice"))
    edited = read_file(model_file)
    session = DocumentSession(edited)
    session.apply_edit(edited.model_copy(update={"threats": []}).model_copy(
        update={"metadata": edited.metadata.model_copy(update={"title": "Edited"})}), "edit")
    with pytest.raises(DocumentChanged, match="unsaved"):
        run(service.resume(turn.run_id, settings=settings(), document_session=session))
    assert gov.runs.get(turn.run_id).status is RunStatus.PARKED


def test_resume_is_refused_when_the_file_changed_and_nothing_runs(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = park_with(service, scripts, model_file, DESTRUCTIVE)
    run(service.decide(turn.run_id, "c9", approve=True, actor="alice"))
    document = read_file(model_file)
    save(document.model_copy(update={"metadata": document.metadata.model_copy(
        update={"title": "Changed meanwhile"})}), model_file)
    late = scripts.add(ScriptedProvider(text_reply("should not run")))
    with pytest.raises(DocumentChanged, match="changed"):
        run(service.resume(turn.run_id, settings=settings()))
    assert gov.runs.get(turn.run_id).status is RunStatus.PARKED and late.requests == []


def test_a_second_resume_of_the_same_run_is_refused_and_runs_nothing(
        service: AssistantService, scripts: Scripts, model_file: Path) -> None:
    turn = park_with(service, scripts, model_file, DESTRUCTIVE)
    run(service.decide(turn.run_id, "c9", approve=True, actor="alice"))
    scripts.add(ScriptedProvider(text_reply("ok")))
    run(service.resume(turn.run_id, settings=settings()))
    late = scripts.add(ScriptedProvider(text_reply("should not run")))
    with pytest.raises(ConflictError):
        run(service.resume(turn.run_id, settings=settings()))
    assert late.requests == []


def test_an_unsaved_document_cannot_be_parked_and_keeps_waiting(
        service: AssistantService, scripts: Scripts, model_file: Path) -> None:
    scripts.add(ScriptedProvider(tool_reply(DESTRUCTIVE)))
    turn = run(service.start_turn(config(), DocumentSession(read_file(model_file)),
                                  document_path=f"{UNSAVED_PREFIX}Untitled", prompt="go"))
    with pytest.raises(ParkUnavailable, match="Save the document first"):
        run(service.park(turn))
    assert turn.waiting and not turn.parked


def test_the_turn_budget_spans_park_and_resume(service: AssistantService, scripts: Scripts,
                                               gov: Governance, model_file: Path) -> None:
    turn = park_with(service, scripts, model_file, DESTRUCTIVE)
    spent_before = gov.ledger.spent_for_run(turn.run_id)
    run(service.decide(turn.run_id, "c9", approve=False, actor="alice"))
    scripts.add(ScriptedProvider(text_reply("fine")))
    resumed = run(service.resume(turn.run_id, settings=settings()))
    assert run(resumed.summary()).credits_spent > spent_before > 0
    assert resumed.config.budgets.per_turn == 100_000


def test_a_day_limit_lowered_while_parked_binds_the_resumed_run(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = park_with(service, scripts, model_file, DESTRUCTIVE)
    run(service.decide(turn.run_id, "c9", approve=False, actor="alice"))
    provider = scripts.add(ScriptedProvider(text_reply("should not be asked")))
    today = settings(credits=CreditSettings(per_turn=100_000, per_day=0, per_month=None))
    resumed = run(service.resume(turn.run_id, settings=today))
    # The turn keeps its own budget; the wallet limit is today's, and it refuses the request.
    assert resumed.config.budgets.per_turn == 100_000 and resumed.config.budgets.per_day == 0
    summary = run(resumed.summary())
    assert summary.outcome is RunOutcome.BOUNDED and summary.reason == "credits"
    assert provider.requests == [] and balanced(gov)


def test_time_spent_parked_does_not_count_against_the_turn_deadline(
        service: AssistantService, scripts: Scripts, model_file: Path, secrets: Any) -> None:
    import time

    from stockade.governance.services import open_governance
    from stockade.governance.worker import GovernanceWorker

    turn = park_with(service, scripts, model_file, DESTRUCTIVE)
    run(service.decide(turn.run_id, "c9", approve=False, actor="alice"))
    ten_days_later = 10 * 86_400_000
    later = Scripts()
    later.add(ScriptedProvider(text_reply("fine")))
    other = AssistantService(GovernanceWorker(lambda: open_governance(secrets=secrets)),
                             provider_factory=later.factory,
                             clock_ms=lambda: time.time_ns() // 1_000_000 + ten_days_later)
    try:
        resumed = run(other.resume(turn.run_id, settings=settings()))
        assert run(resumed.summary()).outcome is RunOutcome.COMPLETED
    finally:
        other.close()


def test_an_absurd_tool_name_from_the_model_is_audited_as_a_digest(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(tool_reply(("c1", "x" * 5000, {})), text_reply("ok")))
    turn = start(service, model_file, "hi")
    assert run(turn.summary()).outcome is RunOutcome.COMPLETED
    proposed = next(e for e in gov.trajectory.events(turn.run_id) if e.kind == "tool.proposed")
    assert proposed.payload["tool"].startswith("sha256:")


def test_a_request_that_never_started_is_refunded(service: AssistantService, scripts: Scripts,
                                                  gov: Governance, model_file: Path) -> None:
    from stockade.protocol.errors import ErrorCode, ProtocolError
    from stockade.protocol.events import StreamError

    scripts.add(ScriptedProvider([StreamError(
        ProtocolError(ErrorCode.HTTP_STATUS, "bad request", status=400))]))
    turn = start(service, model_file, "hello")
    summary = run(turn.summary())
    assert summary.outcome is RunOutcome.FAILED and summary.credits_spent == 0
    row = gov.db.read().execute("SELECT status, reserved, settled FROM reservation").fetchone()
    assert row[0] == "refunded" and row[1] > 0 and row[2] == 0
    assert balanced(gov)


def test_a_stream_that_fails_after_it_started_is_charged_at_the_reservation(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    from stockade.protocol.errors import ErrorCode, ProtocolError
    from stockade.protocol.events import MessageStart, StreamError

    scripts.add(ScriptedProvider([MessageStart("m"), StreamError(
        ProtocolError(ErrorCode.HTTP_STATUS, "boom", status=500))]))
    turn = start(service, model_file, "hello")
    summary = run(turn.summary())
    row = gov.db.read().execute("SELECT status, reserved, settled FROM reservation").fetchone()
    assert row[0] == "settled" and row[1] > 0 and row[2] == row[1]
    assert summary.outcome is RunOutcome.FAILED and summary.credits_spent == row[1]
    assert balanced(gov)


def test_reported_usage_above_the_reservation_is_charged_in_full_and_stops_the_turn(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(text_reply("big", usage=(50_000_000, 9_000_000))))
    cfg = config()
    import dataclasses

    small = dataclasses.replace(cfg, limits=TurnLimits(reserve_output_tokens=100,
                                                       credit_budget=100_000))
    turn = run(service.start_turn(small, DocumentSession(read_file(model_file)),
                                  document_path=str(model_file), prompt="hello"))
    hold = gov.db.read().execute(
        "SELECT reserved, settled, actual, overrun FROM reservation").fetchone()
    assert hold[1] == hold[0] < hold[2] and hold[3] == hold[2] - hold[0]
    summary = run(turn.summary())
    assert summary.credits_spent == hold[2] and summary.credits_over_reservation == hold[3]
    assert "above what was reserved" in summary.usage_line()
    assert [e.kind for e in gov.trajectory.events(turn.run_id)].count("meter.overrun") == 1


# -- writing back --------------------------------------------------------------------------------


def test_write_back_saves_atomically_and_is_audited(service: AssistantService, scripts: Scripts,
                                                    gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                 text_reply("Added.")))
    turn = start(service, model_file, approve=ApprovePolicy.MUTATE)
    assert turn.changed
    result = run(service.write_back(turn))
    assert result.written and result.conflict_path is None
    on_disk = read_file(model_file)
    assert document_digest(on_disk) == document_digest(turn.document_session.document)
    [written] = [e for e in gov.trajectory.events(turn.run_id) if e.kind == "document.written"]
    assert written.payload["document_digest"] == document_digest(on_disk)
    assert written.payload["path_digest"].startswith("sha256:")
    assert written.payload["file_sha256"].startswith("sha256:") and not written.payload["conflict"]
    assert gov.trajectory.verify_chain().ok


def test_write_back_never_overwrites_a_file_changed_meanwhile(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    scripts.add(ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                 text_reply("Added.")))
    turn = start(service, model_file, approve=ApprovePolicy.MUTATE)
    document = read_file(model_file)
    mine = document.model_copy(update={"metadata": document.metadata.model_copy(
        update={"title": "My own edit"})})
    save(mine, model_file)
    result = run(service.write_back(turn))
    assert not result.written and result.conflict_path is not None
    assert read_file(model_file).metadata.title == "My own edit"
    assert os.path.basename(result.conflict_path) == "model.stockade-conflict.thf"
    kept = read_file(result.conflict_path)
    assert document_digest(kept) == document_digest(turn.document_session.document)
    [written] = [e for e in gov.trajectory.events(turn.run_id) if e.kind == "document.written"]
    assert written.payload["conflict"] is True
