"""The asyncio runner (SEC-RUN-01..07), its hooks, deadline timer, cancellation and resume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from stockade.loop.authorization import GrantScope
from stockade.loop.history import DocumentSession
from stockade.loop.hooks import RefusalKind, RequestRefused, StepKind
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner
from stockade.loop.serialize import SnapshotError, turn_from_json, turn_to_json
from stockade.loop.state import CallStatus, ToolSet, TurnOutcome, TurnPhase, TurnState
from stockade.loop.transaction import UndoAvailability
from stockade.protocol.errors import ErrorCode, ProtocolError
from stockade.protocol.events import (
    MessageStart,
    MessageStop,
    StopReason,
    StreamError,
    TextDelta,
    ToolCallStart,
)
from stockade.protocol.messages import ToolResultBlock
from stockade.protocol.pairing import check_tool_pairing
from stockade.protocol.retry import RetryPolicy
from stockade.thf.model import ThreatModel
from stockade.tools.registry import default_registry
from stockade.tools.runtime import ToolContext, ToolEffect, ToolOk, ToolOutcome
from tests.unit.loop.fakes import FakeTool, base_model
from tests.unit.loop.scripted import (
    RecordingHooks,
    ScriptedProvider,
    Stall,
    Step,
    calls_reply,
    text_reply,
)

RATE = StreamError(ProtocolError(ErrorCode.RATE_LIMITED, "slow down"))


def add(name: str) -> dict[str, Any]:
    return {"action": "add_element", "element": {"type": "process", "name": name}}


FAST_RETRIES = RetryPolicy(base_delay_ms=1, max_delay_ms=5)
"""Backoff for tests that retry without being about the wait (tests of the wait set their own)."""


def make_runner(
    scripts: Sequence[Sequence[Step]],
    *,
    registry: Any = None,
    session: DocumentSession | None = None,
    hooks: RecordingHooks | None = None,
    limits: TurnLimits | None = None,
    clock: Callable[[], int] | None = None,
) -> tuple[TurnRunner, ScriptedProvider, DocumentSession, RecordingHooks]:
    provider = ScriptedProvider(scripts)
    session = session or DocumentSession(base_model())
    hooks = hooks or RecordingHooks()
    runner = TurnRunner(
        provider,
        registry if registry is not None else default_registry(),
        session,
        hooks=hooks,
        limits=limits or TurnLimits(),
        model="test-model",
        provider_name="scripted",
        system_prompt="You review threat models.",
        clock_ms=clock or (lambda: 0),
        request_check=None,
        retry_policy=FAST_RETRIES,
    )
    return runner, provider, session, hooks


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_run01_cancel_mid_execution_discards_the_outcome() -> None:
    async def scenario() -> None:
        gate, started = asyncio.Event(), asyncio.Event()

        async def slow(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            started.set()
            await gate.wait()
            hijacked = ctx.document.model_copy(update={"elements": []})
            return ToolOk("hijacked", hijacked)

        tools = ToolSet([FakeTool("add_thing", run=slow)])
        runner, provider, session, _ = make_runner([calls_reply(("c1", "add_thing", {"name": "A"}))], registry=tools)
        live = session.document
        state = await runner.submit("go")
        assert state.phase is TurnPhase.AWAITING_APPROVAL
        approving = asyncio.create_task(runner.approve_call("c1"))
        await started.wait()
        runner.cancel()
        gate.set()
        final = await approving
        assert final.outcome is TurnOutcome.CANCELLED
        assert session.document is live
        assert len(provider.requests) == 1
        assert check_tool_pairing(final.messages) == []

    run(scenario())


def test_run02_prepare_failure_reaches_the_model_as_one_error_result() -> None:
    runner, provider, _, _ = make_runner(
        [
            calls_reply(("c1", "add_element", {"action": "add_element", "element": {"type": "process"}})),
            text_reply("Sorry, fixed."),
        ]
    )
    state = run(runner.submit("add something"))
    assert state.outcome is TurnOutcome.COMPLETED
    second = provider.requests[1].messages
    results = [b for m in second for b in m.content if isinstance(b, ToolResultBlock)]
    assert len(results) == 1 and results[0].is_error and "name" in results[0].content


def test_run03_read_only_turn_never_pauses_and_changes_nothing() -> None:
    runner, provider, session, hooks = make_runner(
        [calls_reply(("r1", "search_entities", {"kind": "elements"})), text_reply("One element.")]
    )
    live = session.document
    state = run(runner.submit("what is there?"))
    assert state.outcome is TurnOutcome.COMPLETED
    assert all(s.kind is not StepKind.TOOL_APPROVED or s.payload["scope"] == "auto" for s in hooks.steps)
    assert state.call("r1").status is CallStatus.SUCCEEDED  # type: ignore[union-attr]
    assert [g.scope for g in state.grants] == [GrantScope.AUTO]
    assert check_tool_pairing(provider.requests[1].messages) == []
    assert session.document is live and session.history.past == []
    assert runner.undo_availability() is UndoAvailability.ALREADY_UNDONE


def test_run04_empty_tool_set_sends_no_tools() -> None:
    runner, provider, _, _ = make_runner([text_reply("Hi")], registry=ToolSet())
    state = run(runner.submit("hello"))
    assert state.outcome is TurnOutcome.COMPLETED and provider.requests[0].tools == ()


def test_run05_context_overflow_after_a_commit_keeps_it_and_one_undo_restores() -> None:
    overflow = StreamError(ProtocolError(ErrorCode.CONTEXT_OVERFLOW, "too long"))
    runner, _, session, _ = make_runner([calls_reply(("c1", "add_element", add("Cache"))), [overflow]])
    pre_turn = session.document

    async def scenario() -> None:
        await runner.submit("add a cache")
        state = await runner.approve_call("c1")
        assert state.outcome is TurnOutcome.FAILED
        assert [e.name for e in session.document.elements] == ["Web App", "Cache"]
        assert await runner.undo_turn()
        assert session.document == pre_turn
        assert runner.state.call("c1").status is CallStatus.UNDONE  # type: ignore[union-attr]

    run(scenario())


def test_run06_turn_retry_recovers_once_then_gives_up_at_the_ceiling() -> None:
    runner, provider, _, _ = make_runner([[RATE], text_reply("ok")], limits=TurnLimits(max_retries=2))
    state = run(runner.submit("hi"))
    assert (state.outcome, len(provider.requests), state.budget.retries_used) == (TurnOutcome.COMPLETED, 2, 1)

    runner, provider, _, _ = make_runner([[RATE], [RATE], [RATE]], limits=TurnLimits(max_retries=2))
    state = run(runner.submit("hi"))
    assert (state.outcome, len(provider.requests), state.budget.retries_used) == (TurnOutcome.FAILED, 3, 2)
    assert state.error is not None and state.error.code is ErrorCode.RATE_LIMITED


def test_run07_twin_calls_deny_one_approve_other_terminates() -> None:
    tools = ToolSet([FakeTool("add_thing")])
    runner, provider, _, _ = make_runner(
        [calls_reply(("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "A"})), text_reply("ok")],
        registry=tools,
    )

    async def scenario() -> None:
        await runner.submit("go")
        await runner.deny_call("c1")
        state = await asyncio.wait_for(runner.approve_call("c2"), timeout=5)
        assert state.outcome is TurnOutcome.COMPLETED
        assert state.call("c2").status is CallStatus.FAILED  # type: ignore[union-attr]
        assert len(provider.requests) == 2

    run(scenario())


def test_fix_b_runner_empty_stream_fails_after_exactly_one_request() -> None:
    runner, provider, _, _ = make_runner([[]])
    state = run(runner.submit("hi"))
    assert (state.outcome, state.reason, len(provider.requests)) == (TurnOutcome.FAILED, "empty_stream", 1)


def test_fix_c_runner_dropped_call_is_answered_and_the_turn_continues() -> None:
    notice = StreamError(ProtocolError(ErrorCode.MALFORMED_STREAM, "bad arguments"))
    runner, provider, _, _ = make_runner(
        [
            [MessageStart("m"), ToolCallStart("t1", "add_element"), notice, MessageStop(StopReason.TOOL_USE)],
            text_reply("retrying later"),
        ]
    )
    state = run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.COMPLETED
    results = [b for m in provider.requests[1].messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("t1", True)]


def test_fix_d_runner_retries_on_the_last_permitted_iteration() -> None:
    runner, provider, _, _ = make_runner([[RATE], text_reply("ok")], limits=TurnLimits(max_iterations=1))
    state = run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.COMPLETED and len(provider.requests) == 2


def test_deadline_is_enforced_mid_stream_by_a_timer() -> None:
    runner, provider, _, _ = make_runner(
        [[MessageStart("m"), TextDelta("thinking"), Stall()]],
        limits=TurnLimits(deadline_ms=100),
        clock=lambda: int(asyncio.get_running_loop().time() * 1000),
    )
    state = run(asyncio.wait_for(runner.submit("hi"), timeout=5))
    assert (state.outcome, state.reason) == (TurnOutcome.BOUNDED, "deadline")
    assert state.messages[-1].content[0].text == "thinking"  # type: ignore[union-attr]
    assert provider.closed == 1


def test_deadline_is_enforced_while_a_tool_runs() -> None:
    async def forever(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    tools = ToolSet([FakeTool("read_slow", effect=ToolEffect.READ, fields=("q",), run=forever)])
    runner, _, _, _ = make_runner(
        [calls_reply(("r1", "read_slow", {"q": "x"}))],
        registry=tools,
        limits=TurnLimits(deadline_ms=100),
        clock=lambda: int(asyncio.get_running_loop().time() * 1000),
    )
    state = run(asyncio.wait_for(runner.submit("hi"), timeout=5))
    assert (state.outcome, state.reason) == (TurnOutcome.BOUNDED, "deadline")
    assert check_tool_pairing(state.messages) == []


def test_steps_are_recorded_in_order_with_digests_only() -> None:
    runner, _, _, hooks = make_runner([calls_reply(("c1", "add_element", add("Cache"))), text_reply("Done.")])

    async def scenario() -> None:
        await runner.submit("add a cache")
        await runner.approve_call("c1", actor="alice")

    run(scenario())
    assert hooks.kinds() == [
        StepKind.MODEL_REQUEST, StepKind.TOOL_PROPOSED, StepKind.MODEL_USAGE,
        StepKind.TOOL_APPROVED, StepKind.TOOL_STARTED, StepKind.DOCUMENT_COMMITTED, StepKind.TOOL_RESULT,
        StepKind.MODEL_REQUEST, StepKind.MODEL_USAGE, StepKind.TURN_SETTLED,
    ]
    approved = hooks.steps[3].payload
    assert (approved["actor"], approved["scope"], approved["call_id"]) == ("alice", "call", "c1")
    committed = hooks.steps[5].payload
    assert committed["document_before"].startswith("sha256:") and committed["document_after"].startswith("sha256:")
    text = json.dumps([s.payload for s in hooks.steps])
    assert "Cache" not in text and "add a cache" not in text  # only ids, names, counts and digests


def test_chained_commits_link_their_digests_and_digest_each_document_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    digested: list[ThreatModel] = []

    def counting(document: ThreatModel) -> str:
        digested.append(document)
        return real_digest(document)

    from stockade.loop import runner as runner_module

    real_digest = runner_module.document_digest
    monkeypatch.setattr(runner_module, "document_digest", counting)
    runner, _, session, hooks = make_runner(
        [calls_reply(("c1", "add_element", add("A")), ("c2", "add_element", add("B"))), text_reply("ok")]
    )
    pre_turn = session.document

    async def scenario() -> None:
        await runner.submit("go")
        await runner.approve_batch(["c1", "c2"])
        after_both = session.document
        assert await runner.undo_turn()
        assert session.document is pre_turn and after_both is not pre_turn

    run(scenario())
    first, second = [s.payload for s in hooks.steps if s.kind is StepKind.DOCUMENT_COMMITTED]
    assert first["document_before"] == real_digest(pre_turn)
    assert second["document_before"] == first["document_after"]
    undone = next(s.payload for s in hooks.steps if s.kind is StepKind.TURN_UNDONE)
    assert undone["document_before"] == second["document_after"]
    assert len(digested) == len({id(d) for d in digested}) == 3


def test_hook_failure_stops_the_turn_before_the_tool_runs() -> None:
    ran: list[str] = []

    async def tracked(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        ran.append("ran")
        return ToolOk("ok")

    tools = ToolSet([FakeTool("read_thing", effect=ToolEffect.READ, fields=("q",), run=tracked)])
    hooks = RecordingHooks(fail_on=StepKind.TOOL_STARTED)
    runner, _, _, _ = make_runner([calls_reply(("r1", "read_thing", {"q": "x"}))], registry=tools, hooks=hooks)
    state = run(runner.submit("hi"))
    assert (state.outcome, state.reason) == (TurnOutcome.FAILED, "hook_failed")
    assert "could not be written" in (state.notice or "")
    assert ran == []
    assert check_tool_pairing(state.messages) == []


def test_hook_failure_on_the_request_record_sends_nothing() -> None:
    hooks = RecordingHooks(fail_on=StepKind.MODEL_REQUEST)
    runner, provider, _, _ = make_runner([text_reply("hi")], hooks=hooks)
    state = run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.FAILED and provider.requests == []
    assert hooks.settled and hooks.settled[0][2] is True  # the reservation was released


def test_refused_request_is_never_sent_and_settles_bounded() -> None:
    hooks = RecordingHooks(refuse=RequestRefused(RefusalKind.CREDITS, "The turn budget is spent."))
    runner, provider, _, _ = make_runner([text_reply("hi")], hooks=hooks)
    state = run(runner.submit("hi"))
    assert (state.outcome, state.reason, provider.requests) == (TurnOutcome.BOUNDED, "credits", [])


def test_credits_reported_after_each_request_are_charged_to_the_budget() -> None:
    hooks = RecordingHooks(credits_per_request=7)
    runner, _, _, _ = make_runner(
        [calls_reply(("r1", "search_entities", {"kind": "elements"})), text_reply("ok")], hooks=hooks
    )
    state = run(runner.submit("hi"))
    assert state.budget.credits_spent == 14


def test_cancel_while_waiting_for_approval_settles_and_records_it() -> None:
    runner, _, _, hooks = make_runner([calls_reply(("c1", "add_element", add("A")))])

    async def scenario() -> None:
        await runner.submit("go")
        state = runner.cancel()
        assert state.outcome is TurnOutcome.CANCELLED
        await runner.wait_settled_record()

    run(scenario())
    assert hooks.kinds()[-1] is StepKind.TURN_SETTLED
    assert runner.cancel() is runner.state  # a second cancel is a no-op


def test_a_tool_that_raises_fails_its_call_with_an_authored_message(log_guard: Any) -> None:
    log_guard.expect("raised while running")

    async def broken(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        raise RuntimeError("internal detail")

    tools = ToolSet([FakeTool("read_thing", effect=ToolEffect.READ, fields=("q",), run=broken)])
    runner, _provider, _, _ = make_runner([calls_reply(("r1", "read_thing", {"q": "x"})), text_reply("ok")], registry=tools)
    state = run(runner.submit("hi"))
    call = state.call("r1")
    assert call is not None and call.status is CallStatus.FAILED
    assert call.result == "The tool failed while running."


def test_denied_call_is_never_started_and_is_recorded_with_actor_and_reason() -> None:
    runner, _, session, hooks = make_runner([calls_reply(("c1", "add_element", add("A"))), text_reply("ok")])
    live = session.document

    async def scenario() -> None:
        await runner.submit("go")
        await runner.deny_call("c1", actor="bob", reason="not now")

    run(scenario())
    denied = [s for s in hooks.steps if s.kind is StepKind.TOOL_DENIED]
    assert denied[0].payload["actor"] == "bob" and denied[0].payload["reason"] == "not now"
    assert StepKind.TOOL_STARTED not in hooks.kinds()
    assert session.document is live


def test_approve_batch_uses_only_the_captured_ids() -> None:
    runner, _, _session, _ = make_runner(
        [
            calls_reply(("c1", "add_element", add("A")), ("c2", "add_element", add("B")), ("c3", "delete_element", {"action": "delete_element", "id": "web-app"})),
            text_reply("ok"),
        ]
    )

    async def scenario() -> None:
        await runner.submit("go")
        state = await runner.approve_batch(["c1", "c3"])
        assert state.phase is TurnPhase.AWAITING_APPROVAL
        assert [c.status for c in state.calls] == [CallStatus.APPROVED, CallStatus.PENDING, CallStatus.PENDING]

    run(scenario())


def saved(runner: TurnRunner, registry: Any = None) -> TurnState:
    """The runner's waiting turn after a trip through JSON, as a parked run stores it."""
    data = json.loads(json.dumps(turn_to_json(runner.state)))
    return turn_from_json(data, registry if registry is not None else default_registry())


def test_runner_resumes_a_saved_turn_and_continues_it() -> None:
    runner, _, session, _ = make_runner([calls_reply(("c1", "add_element", add("A")))], limits=TurnLimits(max_iterations=4))
    waiting = run(runner.submit("go"))

    provider = ScriptedProvider([text_reply("done")])
    resumed = TurnRunner.resume(
        saved(runner), provider, session, model="m", provider_name="scripted",
        clock_ms=lambda: 0, request_check=None,
    )
    assert resumed.state == waiting
    assert resumed.state.limits.max_iterations == 4
    state = run(resumed.approve_call("c1"))
    assert state.outcome is TurnOutcome.COMPLETED and state.iteration == 2
    assert [e.name for e in session.document.elements] == ["Web App", "A"]


def test_undo_of_a_resumed_turn_reverts_and_marks_only_what_it_committed_after_the_resume() -> None:
    runner, _, session, _ = make_runner(
        [calls_reply(("c1", "add_element", add("A"))), calls_reply(("c2", "add_element", add("B")))]
    )

    async def park() -> None:
        await runner.submit("go")
        state = await runner.approve_call("c1")
        assert state.phase is TurnPhase.AWAITING_APPROVAL and state.call("c2") is not None

    run(park())
    # Another process: the live document arrives without the history of the run that parked.
    parked = session.document
    elsewhere = DocumentSession(parked)
    hooks = RecordingHooks()
    resumed = TurnRunner.resume(
        saved(runner), ScriptedProvider([text_reply("done")]), elsewhere, model="m",
        provider_name="scripted", hooks=hooks, clock_ms=lambda: 0, request_check=None,
    )

    async def finish_and_undo() -> None:
        state = await resumed.approve_call("c2")
        assert state.outcome is TurnOutcome.COMPLETED
        assert [e.name for e in elsewhere.document.elements] == ["Web App", "A", "B"]
        assert await resumed.undo_turn()

    run(finish_and_undo())
    assert elsewhere.document is parked
    assert resumed.state.call("c1").status is CallStatus.SUCCEEDED  # type: ignore[union-attr]
    assert resumed.state.call("c2").status is CallStatus.UNDONE  # type: ignore[union-attr]
    undone = [s for s in hooks.steps if s.kind is StepKind.TURN_UNDONE]
    assert len(undone) == 1 and undone[0].payload["calls"] == ["c2"]


def test_a_resumed_turn_that_continues_its_history_entry_undoes_everything_in_one_step() -> None:
    runner, _, session, _ = make_runner(
        [calls_reply(("c1", "add_element", add("A"))), calls_reply(("c2", "add_element", add("B")))]
    )
    before = session.document

    async def park() -> None:
        await runner.submit("go")
        await runner.approve_call("c1")

    run(park())
    entry = runner.undo_entry
    assert entry is not None
    resumed = TurnRunner.resume(
        saved(runner), ScriptedProvider([text_reply("done")]), session, undo_entry=entry,
        model="m", provider_name="scripted", clock_ms=lambda: 0, request_check=None,
    )

    async def finish_and_undo() -> None:
        assert (await resumed.approve_call("c2")).outcome is TurnOutcome.COMPLETED
        assert await resumed.undo_turn()

    run(finish_and_undo())
    assert session.document is before
    assert {c.id: c.status for c in resumed.state.calls} == {
        "c1": CallStatus.UNDONE, "c2": CallStatus.UNDONE}


def test_a_saved_turn_whose_input_was_altered_is_refused() -> None:
    runner, _, _session, _ = make_runner([calls_reply(("c1", "add_element", add("A")))])
    run(runner.submit("go"))
    data = turn_to_json(runner.state)
    data["calls"][0]["raw_input"] = add("Something else")
    with pytest.raises(SnapshotError, match="no longer matches"):
        turn_from_json(data, default_registry())


def test_a_saved_turn_naming_a_missing_tool_is_refused() -> None:
    runner, _, _session, _ = make_runner([calls_reply(("c1", "add_element", add("A")))])
    run(runner.submit("go"))
    with pytest.raises(SnapshotError, match="not available"):
        turn_from_json(turn_to_json(runner.state), ToolSet())


def test_system_prompt_may_be_built_from_the_live_document() -> None:
    seen: list[ThreatModel] = []

    def prompt(document: ThreatModel) -> str:
        seen.append(document)
        return f"{len(document.elements)} elements"

    provider = ScriptedProvider([text_reply("hi")])
    session = DocumentSession(base_model())
    runner = TurnRunner(
        provider, ToolSet(), session, model="m", provider_name="scripted", system_prompt=prompt,
        clock_ms=lambda: 0, request_check=None,
    )
    run(runner.submit("hi"))
    assert provider.requests[0].system == "1 elements" and seen == [session.document]


def test_time_spent_waiting_for_approval_does_not_count_against_the_deadline() -> None:
    now = [0]
    runner, provider, _, _ = make_runner(
        [calls_reply(("c1", "add_element", add("A"))), text_reply("done")],
        limits=TurnLimits(deadline_ms=1000),
        clock=lambda: now[0],
    )

    async def scenario() -> None:
        await runner.submit("go")
        now[0] = 60_000  # the analyst took a minute to decide
        state = await runner.approve_call("c1")
        assert state.outcome is TurnOutcome.COMPLETED
        assert state.budget.started_at_ms == 60_000
        assert len(provider.requests) == 2

    run(scenario())


def test_the_wait_survives_a_snapshot_and_resume() -> None:
    now = [0]
    runner, _, session, _ = make_runner(
        [calls_reply(("c1", "add_element", add("A")))], limits=TurnLimits(deadline_ms=1000), clock=lambda: now[0]
    )
    run(runner.submit("go"))
    state = saved(runner)
    now[0] = 3_600_000  # parked for an hour
    provider = ScriptedProvider([text_reply("done")])
    resumed = TurnRunner.resume(state, provider, session, waiting_since_ms=runner.waiting_since_ms,
                                model="m", provider_name="scripted", clock_ms=lambda: now[0],
                                request_check=None)
    state = run(resumed.approve_call("c1"))
    assert state.outcome is TurnOutcome.COMPLETED


def test_cancel_while_governance_decides_releases_the_reservation_and_sends_nothing() -> None:
    class SlowHooks(RecordingHooks):
        def __init__(self) -> None:
            super().__init__()
            self.entered = asyncio.Event()
            self.gate = asyncio.Event()

        async def before_request(self, request: Any, iteration: int) -> Any:
            self.entered.set()
            await self.gate.wait()
            return await super().before_request(request, iteration)

    hooks = SlowHooks()
    runner, provider, _, _ = make_runner([text_reply("hi")], hooks=hooks)

    async def scenario() -> None:
        submitting = asyncio.create_task(runner.submit("hi"))
        await hooks.entered.wait()
        runner.cancel()
        hooks.gate.set()
        state = await submitting
        assert state.outcome is TurnOutcome.CANCELLED

    run(scenario())
    assert provider.requests == []
    assert [failed for _, _, failed in hooks.settled] == [True]


def test_a_system_prompt_that_raises_stops_the_turn_with_an_authored_message(log_guard: Any) -> None:
    log_guard.expect("building the provider request failed")

    def broken(document: ThreatModel) -> str:
        raise KeyError("internal")

    provider = ScriptedProvider([text_reply("hi")])
    runner = TurnRunner(
        provider, ToolSet(), DocumentSession(base_model()), model="m", provider_name="scripted",
        system_prompt=broken, clock_ms=lambda: 0, request_check=None,
    )
    state = run(runner.submit("hi"))
    assert (state.outcome, state.reason) == (TurnOutcome.FAILED, "request_failed")
    assert provider.requests == []


def test_state_observer_sees_every_transition_and_its_failure_does_not_break_the_turn(log_guard: Any) -> None:
    log_guard.expect("observer raised")
    seen: list[TurnPhase] = []

    def observer(state: Any) -> None:
        seen.append(state.phase)
        raise RuntimeError("ui bug")

    provider = ScriptedProvider([text_reply("hi")])
    runner = TurnRunner(
        provider, ToolSet(), DocumentSession(base_model()), model="m", provider_name="scripted",
        clock_ms=lambda: 0, request_check=None, on_state=observer,
    )
    state = run(runner.submit("hi"))
    assert state.outcome is TurnOutcome.COMPLETED
    assert seen[0] is TurnPhase.REQUESTING and seen[-1] is TurnPhase.SETTLED
