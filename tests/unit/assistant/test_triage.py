"""Triage through `AssistantService` and `Turn`: edits that survive a park and a resume in
another process, the declined-proposal memory (people's denials only), reasons, previews."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from stockade.assistant.parked import ParkedRun
from stockade.assistant.policy import ApprovePolicy
from stockade.assistant.service import AssistantService
from stockade.governance.services import Governance, open_governance
from stockade.governance.worker import GovernanceWorker
from stockade.loop.authorization import DenialReason
from stockade.loop.history import DocumentSession
from stockade.loop.state import CallStatus, TurnPhase
from stockade.store import declined as declined_sql
from stockade.thf.canonical import digest
from stockade.thf.reader import read_file
from tests.unit.assistant.conftest import Scripts, config, kinds, run, settings
from tests.unit.governance.scripted import ScriptedProvider, add_threat, text_reply, tool_reply


def _start(service: AssistantService, model_file: Path, scripts: Scripts,
           *calls: tuple[str, str, dict[str, Any]], approve: ApprovePolicy = ApprovePolicy.READ,
           follow: tuple[list[Any], ...] = ()) -> Any:
    scripts.add(ScriptedProvider(tool_reply(*calls), *follow))
    return run(service.start_turn(config(approve=approve),
                                  DocumentSession(read_file(model_file)),
                                  document_path=str(model_file), prompt="triage"))


def test_an_edit_is_audited_and_only_the_edited_input_runs(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = _start(service, model_file, scripts, ("c1", "add_threat", add_threat()),
                  follow=(text_reply("ok"),))
    edited = copy.deepcopy(add_threat())
    edited["threat"]["severity"] = "low"
    bad = run(turn.edit("c1", {"action": "add_threat", "threat": {"title": "x"}}, "user:ana"))
    assert not bad.ok and any("category" in i for i in bad.issues)
    good = run(turn.edit("c1", edited, "user:ana"))
    assert good.ok and good.changed
    [preview] = run(turn.previews())
    assert preview.edited == ('threat.severity: "high" → "low"',) and preview.severity == "low"
    run(turn.approve("c1", "user:ana"))
    assert turn.phase is TurnPhase.SETTLED
    [threat] = turn.document_session.document.threats
    assert threat.severity.value == "low"
    events = gov.trajectory.events(turn.run_id)
    [edit] = [e.payload for e in events if e.kind == "tool.edited"]
    assert (edit["input_digest_before"], edit["input_digest"], edit["actor"]) == (
        digest(add_threat()), digest(edited), "user:ana")
    started = [e.payload["input_digest"] for e in events if e.kind == "tool.started"]
    assert started == [digest(edited)]


def test_an_edit_survives_parking_and_a_resume_in_another_service(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path,
        secrets: Any) -> None:
    turn = _start(service, model_file, scripts, ("c1", "add_threat", add_threat()))
    edited = copy.deepcopy(add_threat())
    edited["threat"]["title"] = "Token theft from the mobile app"
    assert run(turn.edit("c1", edited, "user:ana")).ok
    run(service.park(turn))
    assert [p.input_digest for p in gov.runs.pending_calls(turn.run_id)] == [digest(edited)]
    parked = run(service.open_parked(turn.run_id))
    [call] = parked.pending()
    assert call.raw_input == edited and call.edit is not None
    assert call.edit.original_input == add_threat() and call.edit.actor == "user:ana"
    # The typed record round-trips the edit exactly.
    registry = run(service.tools())
    again = ParkedRun.from_json(parked.to_json(), registry, run_id=turn.run_id)
    assert again.pending()[0] == call

    run(service.decide(turn.run_id, "c1", approve=True, actor="bob"))
    other_scripts = Scripts()
    other = other_scripts.add(ScriptedProvider(text_reply("Added it.")))
    elsewhere = AssistantService(GovernanceWorker(lambda: open_governance(secrets=secrets)),
                                 provider_factory=other_scripts.factory)
    try:
        resumed = run(elsewhere.resume(turn.run_id, settings=settings()))
    finally:
        elsewhere.close()
    assert [t.title for t in resumed.document_session.document.threats] == [
        "Token theft from the mobile app"]
    told = other.requests[0].messages[-1].content[0].content  # type: ignore[union-attr]
    assert "The user changed this call before approving it" in told
    assert [e.payload["input_digest"] for e in gov.trajectory.events(turn.run_id)
            if e.kind == "tool.started"] == [digest(edited)]


def test_a_persons_denials_are_remembered_for_the_document_and_told_to_the_next_turn(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = _start(service, model_file, scripts, ("c1", "add_threat", add_threat()),
                  ("c2", "add_threat", add_threat("Second")), follow=(text_reply("ok"),))
    run(turn.deny_batch(["c1", "c2"], "user:ana", "out of scope"))
    rows = declined_sql.declined_for(gov.db.read(), str(model_file))
    assert [(r.title, r.reason, r.actor, r.target, r.category) for r in rows] == [
        ("Token theft", "out of scope", "user:ana", "app", "Spoofing"),
        ("Second", "out of scope", "user:ana", "app", "Spoofing")]

    again = _start(service, model_file, scripts, ("c7", "add_threat", add_threat("token THEFT")))
    [preview] = run(again.previews())
    assert preview.declined_earlier is not None
    assert preview.declined_earlier.reason == "out of scope"
    system = scripts.made[-1].requests[0].system
    assert "- add_threat on element app (Spoofing): Token theft; the user's reason: out of " \
        "scope" in system


def test_a_policy_denial_is_marked_and_not_remembered(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = _start(service, model_file, scripts, ("c1", "add_threat", add_threat()),
                  approve=ApprovePolicy.DENY, follow=(text_reply("ok"),))
    assert turn.phase is TurnPhase.SETTLED
    [call] = turn.state.calls
    assert (call.status, call.denial_reason) == (CallStatus.DENIED, DenialReason.POLICY_DENIED)
    assert declined_sql.declined_for(gov.db.read(), str(model_file)) == []
    [denied] = [e.payload for e in gov.trajectory.events(turn.run_id) if e.kind == "tool.denied"]
    assert (denied["actor"], denied["denial"]) == ("policy:deny", "policy_denied")


def test_denials_decided_on_a_parked_run_are_remembered_when_it_resumes(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = _start(service, model_file, scripts, ("c1", "add_threat", add_threat()))
    run(service.park(turn))
    run(service.decide(turn.run_id, "c1", approve=False, actor="bob", reason="duplicate"))
    scripts.add(ScriptedProvider(text_reply("Understood.")))
    resumed = run(service.resume(turn.run_id, settings=settings()))
    assert resumed.phase is TurnPhase.SETTLED
    [row] = declined_sql.declined_for(gov.db.read(), str(model_file))
    assert (row.title, row.reason, row.actor, row.run_id) == ("Token theft", "duplicate", "bob",
                                                              turn.run_id)
    assert "tool.denied" in kinds(gov, turn.run_id)


def test_deny_all_and_stop_records_denials_and_sends_nothing_more(
        service: AssistantService, scripts: Scripts, gov: Governance, model_file: Path) -> None:
    turn = _start(service, model_file, scripts, ("c1", "add_threat", add_threat()),
                  ("c2", "add_threat", add_threat("Second")))
    provider = scripts.made[-1]
    run(turn.deny_all_and_stop("user:ana"))
    assert turn.phase is TurnPhase.SETTLED and turn.state.outcome is not None
    assert turn.state.outcome.value == "cancelled"
    assert {c.status for c in turn.state.calls} == {CallStatus.DENIED}
    assert len(provider.requests) == 1
    assert declined_sql.declined_for(gov.db.read(), str(model_file)) == []  # nobody judged them
    assert kinds(gov, turn.run_id)[-1] == "run.finished"
