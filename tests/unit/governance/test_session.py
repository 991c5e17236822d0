"""The governed session end to end in one process: metering, audit, guards, park and resume."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from stockade.governance.guards import REDACTED, GuardPolicy
from stockade.governance.ledger import CreditBudgets
from stockade.governance.pricebook import PriceBookError
from stockade.governance.runstate import DocumentChanged
from stockade.governance.session import (
    ApprovePolicy,
    AssistantSession,
    Governance,
    decide_parked,
    open_governance,
    parked_runs,
)
from stockade.loop.history import DocumentSession
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import document_digest
from stockade.loop.state import TurnPhase
from stockade.store import ConflictError
from stockade.store.runs import RunStatus
from stockade.thf.reader import read_file
from tests.conftest import THF_FIXTURES
from tests.unit.governance.conftest import DictSecrets
from tests.unit.governance.scripted import ScriptedProvider, add_threat, text_reply, tool_reply

MODEL_FILE = THF_FIXTURES / "v1.0-minimal.thf"
BIG = CreditBudgets(per_turn=100_000, per_day=None, per_month=None)


@pytest.fixture
def gov(stockade_home: Path, secrets: DictSecrets) -> Any:
    governance = open_governance(secrets=secrets)
    yield governance
    governance.close()


def _session(gov: Governance, provider: ScriptedProvider, *, budgets: CreditBudgets = BIG,
             approve: ApprovePolicy = ApprovePolicy.READ, policy: GuardPolicy = GuardPolicy.REDACT,
             limits: TurnLimits | None = None, model: str = "claude-sonnet-5") -> AssistantSession:
    return AssistantSession.create(
        gov, document_session=DocumentSession(read_file(MODEL_FILE)), document_path=MODEL_FILE,
        provider=provider, provider_name="anthropic", model=model, limits=limits,
        budgets=budgets, guard_policy=policy, approve=approve)


def _kinds(gov: Governance, run_id: str) -> list[str]:
    return [e.kind for e in gov.trajectory.events(run_id)]


def _balanced(gov: Governance) -> bool:
    totals = gov.ledger.totals()
    return totals.open_count == 0 and totals.reserved == totals.settled + totals.released


def test_a_text_turn_completes_metered_and_audited(gov: Governance) -> None:
    provider = ScriptedProvider(text_reply("All flows look fine."))
    session = _session(gov, provider)
    state = asyncio.run(session.start("review the model"))
    summary = session.summary()
    assert state.phase is TurnPhase.SETTLED and summary.outcome == "completed"
    assert summary.text == "All flows look fine."
    assert summary.usage == {"input_tokens": 1000, "output_tokens": 50}
    # $3/MTok in + $15/MTok out: 30 + 8 (7.5 rounded up) credits
    assert summary.credits_spent == 38
    assert _kinds(gov, session.run_id) == ["run.started", "guard.decision", "model.request",
                                           "model.usage", "turn.settled", "run.finished"]
    request_event = gov.trajectory.events(session.run_id)[2]
    assert request_event.payload["reserved_credits"] >= request_event.payload["estimated_credits"]
    assert gov.runs.get(session.run_id).status is RunStatus.FINISHED
    assert _balanced(gov) and gov.trajectory.verify_chain().ok


def test_the_trajectory_holds_no_prompt_text(gov: Governance) -> None:
    session = _session(gov, ScriptedProvider(text_reply("ok")))
    asyncio.run(session.start("a very particular prompt phrase"))
    raw = gov.db.read().execute("SELECT group_concat(payload) FROM event").fetchone()[0]
    assert "particular" not in raw


def test_a_model_without_a_price_is_refused_before_anything_runs(gov: Governance) -> None:
    with pytest.raises(PriceBookError):
        _session(gov, ScriptedProvider(), model="claude-unpriced")
    assert gov.trajectory.count() == 0


def test_a_turn_stops_bounded_by_credits_and_never_overspends(gov: Governance) -> None:
    provider = ScriptedProvider(tool_reply(("c1", "get_document_summary", {})),
                                text_reply("done"))
    probe = _session(gov, ScriptedProvider(text_reply("x")))
    asyncio.run(probe.start("summarize"))
    first_hold = next(e for e in gov.trajectory.events(probe.run_id)
                      if e.kind == "model.request").payload["reserved_credits"]
    budget = first_hold + 10  # room for one request, not two
    session = _session(gov, provider, budgets=CreditBudgets(per_turn=budget))
    asyncio.run(session.start("summarize"))
    summary = session.summary()
    assert summary.outcome == "bounded" and summary.reason == "credits"
    assert summary.credits_spent <= budget and len(provider.requests) == 1
    assert "meter.refused" in _kinds(gov, session.run_id)
    assert _balanced(gov)


def test_the_iteration_bound_stops_a_model_that_never_finishes(gov: Governance) -> None:
    provider = ScriptedProvider(*[tool_reply((f"c{i}", "get_document_summary", {}))
                                  for i in range(5)])
    session = _session(gov, provider, limits=TurnLimits(max_iterations=2))
    asyncio.run(session.start("loop"))
    summary = session.summary()
    assert summary.outcome == "bounded" and summary.reason == "iterations"
    assert len(provider.requests) == 2


def test_a_blocked_secret_stops_the_turn_before_any_request_or_spend(gov: Governance) -> None:
    provider = ScriptedProvider(text_reply("never"))
    session = _session(gov, provider, policy=GuardPolicy.BLOCK)
    asyncio.run(session.start("deploy with AKIAIOSFODNN7EXAMPLE"))
    summary = session.summary()
    assert summary.outcome == "bounded" and summary.reason == "guard"
    assert provider.requests == [] and summary.credits_spent == 0
    guard_events = [e.payload for e in gov.trajectory.events(session.run_id)
                    if e.kind == "guard.decision"]
    assert [g["action"] for g in guard_events] == ["blocked", "blocked"]  # prompt, request
    assert "AKIA" not in str(guard_events)


def test_redacted_secrets_never_reach_the_provider(gov: Governance) -> None:
    provider = ScriptedProvider(text_reply("ok, key AKIAIOSFODNN7EXAMPLE noted"))
    session = _session(gov, provider)
    asyncio.run(session.start("use sk-ant-api03-Zq8vX2mN4bL7kJ9hG3fD1sA5 to deploy"))
    sent = provider.requests[0]
    text = "".join(b.text for m in sent.messages for b in m.content if hasattr(b, "text"))
    assert "sk-ant" not in text and REDACTED in text
    assert session.summary().text == f"ok, key {REDACTED} noted"  # output guard


def test_a_failing_audit_append_stops_the_turn(gov: Governance,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from stockade.governance.trajectory import Trajectory, TrajectoryError

    provider = ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())), text_reply("x"))
    session = _session(gov, provider, approve=ApprovePolicy.MUTATE)
    original = Trajectory.append

    def failing(self: Trajectory, run_id: str, kind: Any, payload: Any = None) -> Any:
        if str(kind) == "tool.started":
            raise TrajectoryError("disk full")
        return original(self, run_id, kind, payload)

    monkeypatch.setattr(Trajectory, "append", failing)
    before = len(session.document_session.document.threats)
    asyncio.run(session.start("add a threat"))
    assert session.state.outcome is not None and session.state.outcome.value == "failed"
    assert len(session.document_session.document.threats) == before
    assert _balanced(gov)


def test_mutate_policy_approves_safe_mutations_and_runs_them(gov: Governance) -> None:
    provider = ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                text_reply("Added one threat."))
    session = _session(gov, provider, approve=ApprovePolicy.MUTATE)
    asyncio.run(session.start("add a threat"))
    summary = session.summary()
    assert summary.outcome == "completed"
    assert [c["status"] for c in summary.calls] == ["succeeded"]
    assert any(t.title == "Token theft" for t in session.document_session.document.threats)
    approved = [e for e in gov.trajectory.events(session.run_id) if e.kind == "tool.approved"]
    assert approved[0].payload["actor"] == "policy:mutate"


def test_deny_policy_denies_every_mutation(gov: Governance) -> None:
    provider = ScriptedProvider(tool_reply(("c1", "add_threat", add_threat())),
                                text_reply("Understood."))
    session = _session(gov, provider, approve=ApprovePolicy.DENY)
    asyncio.run(session.start("add a threat"))
    summary = session.summary()
    assert summary.outcome == "completed" and summary.calls[0]["status"] == "denied"
    assert len(session.document_session.document.threats) == 0


def _park(gov: Governance, calls: tuple[tuple[str, str, dict[str, Any]], ...]) -> str:
    provider = ScriptedProvider(tool_reply(*calls))
    session = _session(gov, provider, approve=ApprovePolicy.MUTATE)
    state = asyncio.run(session.start("change things"))
    assert state.phase is TurnPhase.AWAITING_APPROVAL
    session.park()
    assert session.summary().outcome == "parked"
    return session.run_id


DESTRUCTIVE = ("c9", "delete_element", {"action": "delete_element", "id": "app"})


def test_parked_run_is_listed_and_resumed_after_approval(gov: Governance,
                                                          secrets: DictSecrets) -> None:
    run_id = _park(gov, (("c1", "add_threat", add_threat()),
                         ("c2", "add_threat", add_threat("Second")), DESTRUCTIVE))
    listed = parked_runs(gov, str(MODEL_FILE))
    assert [p["call_id"] for p in listed[0]["pending"]] == ["c9"]
    assert decide_parked(gov, run_id, "c9", approve=False, actor="alice", reason="keep app")
    assert not decide_parked(gov, run_id, "c9", approve=False, actor="alice")

    fresh = open_governance(secrets=secrets)  # as another process would
    try:
        ticket = AssistantSession.prepare_resume(fresh, run_id)
        provider = ScriptedProvider(text_reply("Done; the delete was refused."))
        session = asyncio.run(AssistantSession.resume(fresh, ticket, provider=provider))
        summary = session.summary()
        assert summary.outcome == "completed"
        assert {c["id"]: c["status"] for c in summary.calls} == {
            "c1": "succeeded", "c2": "succeeded", "c9": "denied"}
        titles = {t.title for t in session.document_session.document.threats}
        assert titles == {"Token theft", "Second"}
        kinds = _kinds(fresh, run_id)
        assert kinds.count("tool.denied") == 1 and "run.resumed" in kinds
        assert kinds[-1] == "run.finished"
        assert fresh.runs.get(run_id).status is RunStatus.FINISHED
        assert fresh.trajectory.verify_chain().ok and _balanced(fresh)
    finally:
        fresh.close()


def test_a_second_resume_of_the_same_run_is_refused_and_runs_nothing(gov: Governance) -> None:
    run_id = _park(gov, (DESTRUCTIVE,))
    decide_parked(gov, run_id, "c9", approve=True, actor="alice")
    first = AssistantSession.prepare_resume(gov, run_id)
    second = AssistantSession.prepare_resume(gov, run_id)
    asyncio.run(AssistantSession.resume(gov, first, provider=ScriptedProvider(text_reply("ok"))))
    late = ScriptedProvider(text_reply("should not run"))
    with pytest.raises(ConflictError):
        asyncio.run(AssistantSession.resume(gov, second, provider=late))
    assert late.requests == []


def test_resume_is_refused_when_the_document_changed(gov: Governance) -> None:
    run_id = _park(gov, (DESTRUCTIVE,))
    decide_parked(gov, run_id, "c9", approve=True, actor="alice")
    with pytest.raises(DocumentChanged):
        AssistantSession.prepare_resume(gov, run_id, lambda _p: "sha256:" + "0" * 64)
    assert gov.runs.get(run_id).status is RunStatus.PARKED


def test_the_turn_budget_spans_park_and_resume(gov: Governance) -> None:
    run_id = _park(gov, (DESTRUCTIVE,))
    spent_before = gov.ledger.spent_for_run(run_id)
    decide_parked(gov, run_id, "c9", approve=False, actor="alice")
    ticket = AssistantSession.prepare_resume(gov, run_id)
    session = asyncio.run(AssistantSession.resume(
        gov, ticket, provider=ScriptedProvider(text_reply("fine"))))
    assert session.summary().credits_spent > spent_before > 0
    assert session.budgets == BIG


def test_document_digest_survives_the_snapshot_round_trip(gov: Governance) -> None:
    from stockade.thf.model import ThreatModel

    document = read_file(MODEL_FILE)
    again = ThreatModel.model_validate(
        document.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert document_digest(again) == document_digest(document)


def test_a_failed_request_is_refunded(gov: Governance) -> None:
    from stockade.protocol.errors import ErrorCode, ProtocolError
    from stockade.protocol.events import MessageStart, StreamError

    failing = [MessageStart("m"), StreamError(ProtocolError(ErrorCode.HTTP_STATUS, "boom", status=500))]
    session = _session(gov, ScriptedProvider(failing))
    asyncio.run(session.start("hello"))
    summary = session.summary()
    assert summary.outcome == "failed" and summary.credits_spent == 0
    row = gov.db.read().execute("SELECT status, reserved, settled FROM reservation").fetchone()
    assert row[0] == "refunded" and row[1] > 0 and row[2] == 0
    assert _balanced(gov)


def test_reported_usage_above_the_reservation_is_charged_at_the_reservation(
    gov: Governance,
) -> None:
    session = _session(gov, ScriptedProvider(text_reply("big", usage=(50_000_000, 9_000_000))),
                       limits=TurnLimits(reserve_output_tokens=100))
    asyncio.run(session.start("hello"))
    hold = gov.db.read().execute("SELECT reserved, settled, actual FROM reservation").fetchone()
    assert hold[1] == hold[0] < hold[2]
    assert session.summary().credits_spent == hold[0] <= BIG.per_turn


def test_time_spent_parked_does_not_count_against_the_turn_deadline(gov: Governance) -> None:
    import time

    run_id = _park(gov, (DESTRUCTIVE,))
    decide_parked(gov, run_id, "c9", approve=False, actor="alice")
    ticket = AssistantSession.prepare_resume(gov, run_id)
    ten_days_later = 10 * 86_400_000
    session = asyncio.run(AssistantSession.resume(
        gov, ticket, provider=ScriptedProvider(text_reply("fine")),
        clock_ms=lambda: time.time_ns() // 1_000_000 + ten_days_later))
    assert session.summary().outcome == "completed"


def test_an_absurd_tool_name_from_the_model_is_audited_as_a_digest(gov: Governance) -> None:
    name = "x" * 5000
    provider = ScriptedProvider(tool_reply(("c1", name, {})), text_reply("ok"))
    session = _session(gov, provider)
    asyncio.run(session.start("hi"))
    assert session.summary().outcome == "completed"
    proposed = next(e for e in gov.trajectory.events(session.run_id)
                    if e.kind == "tool.proposed")
    assert proposed.payload["tool"].startswith("sha256:")


def test_a_day_limit_lowered_while_parked_binds_the_resumed_run(gov: Governance) -> None:
    run_id = _park(gov, (DESTRUCTIVE,))
    decide_parked(gov, run_id, "c9", approve=False, actor="alice")
    ticket = AssistantSession.prepare_resume(gov, run_id)
    provider = ScriptedProvider(text_reply("should not be asked"))
    wallet = CreditBudgets(per_turn=BIG.per_turn, per_day=0, per_month=None)
    session = asyncio.run(AssistantSession.resume(gov, ticket, provider=provider, wallet=wallet))
    # The turn keeps its own budget; the wallet limit is today's, and it refuses the request.
    assert session.budgets == CreditBudgets(per_turn=BIG.per_turn, per_day=0, per_month=None)
    summary = session.summary()
    assert summary.outcome == "bounded" and summary.reason == "credits"
    assert provider.requests == []
    assert _balanced(gov)
