"""Edit before approve, deny with a reason, and "not run": the reducer, the runner, snapshots.

Adversarial cases in the style of `spec/injection-cases.md` (EDIT-nn): each states what must
happen and what must not (no grant, no run, the document untouched).
"""

from __future__ import annotations

import asyncio
from typing import Any

from stockade.loop.authorization import (
    Authorized,
    DenialReason,
    Grant,
    GrantScope,
    Refused,
    Violation,
    authorize_start,
)
from stockade.loop.commands import (
    Advance,
    ApproveBatch,
    ApproveCall,
    CallSettled,
    Cancel,
    DenyCall,
    EditCall,
    StartCall,
)
from stockade.loop.hooks import StepKind
from stockade.loop.serialize import SnapshotError, turn_from_json, turn_to_json
from stockade.loop.state import CallStatus, ToolSet, TurnPhase
from stockade.protocol.events import MessageStart, MessageStop, StopReason, ToolCallComplete
from stockade.protocol.messages import ToolResultBlock
from stockade.thf.canonical import digest
from stockade.tools.runtime import ToolContext, ToolOk, ToolOutcome
from tests.unit.loop.fakes import Driver, FakeTool, generic_tools
from tests.unit.loop.scripted import calls_reply, text_reply
from tests.unit.loop.test_runner import make_runner

ORIGINAL = {"name": "A"}
EDITED = {"name": "B"}


def waiting(tools: ToolSet | None = None) -> Driver:
    d = Driver(tools or generic_tools())
    d.stream_calls([("c1", "add_thing", dict(ORIGINAL))])
    assert d.state.phase is TurnPhase.AWAITING_APPROVAL
    return d


def results(driver: Driver) -> dict[str, ToolResultBlock]:
    return {b.tool_call_id: b for m in driver.state.history if m.role == "user"
            for b in m.content if isinstance(b, ToolResultBlock)}


def test_an_edit_gets_its_own_digest_and_keeps_the_original() -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"))
    call = d.state.call("c1")
    assert call is not None and call.status is CallStatus.PENDING
    assert call.raw_input == EDITED and call.input_digest == digest(EDITED)
    assert call.prepared is not None and call.prepared.input == EDITED
    assert call.edit is not None
    assert call.edit.original_digest == digest(ORIGINAL)
    assert call.edit.original_input == ORIGINAL
    assert call.edit.actor == "user:ana"
    assert call.edit.changes == ('name: "A" → "B"',)
    assert d.state.grants == ()  # an edit never approves


def test_approving_an_edited_call_binds_the_grant_to_the_edited_input() -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"), ApproveCall("c1"))
    (grant,) = d.state.grants
    assert grant.input_digest == digest(EDITED)
    d.apply(StartCall("c1"))
    assert d.state.call("c1").status is CallStatus.RUNNING  # type: ignore[union-attr]


def test_edit01_a_grant_for_the_original_input_never_runs_the_edited_one() -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"))
    state = d.state
    call = state.call("c1")
    assert call is not None
    forged = Grant("c1", "add_thing", digest(ORIGINAL), GrantScope.CALL, state.iteration)
    approved = state.evolve(
        phase=TurnPhase.EXECUTING, grants=(forged,),
        calls=tuple(c.__class__(**{**{f: getattr(c, f) for f in c.__dataclass_fields__},
                                   "status": CallStatus.APPROVED}) for c in state.calls))
    assert authorize_start(approved, "c1") == Refused(Violation.DIGEST_MISMATCH)
    # Control: a grant for the edited digest is accepted, so the refusal above is the binding.
    good = approved.evolve(grants=(Grant("c1", "add_thing", digest(EDITED), GrantScope.CALL,
                                         state.iteration),))
    assert isinstance(authorize_start(good, "c1"), Authorized)


def test_edit02_the_edited_grant_never_runs_the_original_input() -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"), ApproveCall("c1"))
    state = d.state
    (grant,) = state.grants
    # Someone swaps the record back to the model's original input under the edited grant.
    reverted = state.evolve(calls=tuple(
        c.__class__(**{**{f: getattr(c, f) for f in c.__dataclass_fields__},
                       "input_digest": digest(ORIGINAL), "raw_input": ORIGINAL})
        for c in state.calls))
    assert authorize_start(reverted, "c1") == Refused(Violation.DIGEST_MISMATCH)
    assert grant.input_digest == digest(EDITED)


def test_edit03_the_model_re_emitting_the_original_input_after_an_edit_needs_a_new_decision(
) -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"), ApproveCall("c1"), StartCall("c1"),
            CallSettled("c1", ToolOk("added B")), Advance(1000))
    assert d.state.iteration == 2
    d.stream_calls([("c9", "add_thing", dict(ORIGINAL))])
    again = d.state.call("c9")
    assert again is not None and again.status is CallStatus.PENDING
    assert again.input_digest == digest(ORIGINAL)
    assert [g.call_id for g in d.state.grants] == ["c1"]  # nothing carried over to c9
    assert authorize_start(d.state, "c9") == Refused(Violation.NO_GRANT)
    d.apply(StartCall("c9"))  # not even asked to run while it waits for the user
    assert d.state.call("c9").status is CallStatus.PENDING  # type: ignore[union-attr]


def test_edit04_a_reused_call_id_after_an_edit_changes_nothing() -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"))
    # Same iteration: the provider re-sends c1 with the original input (a second stream frame).
    d.apply(ToolCallComplete("c1", "add_thing", dict(ORIGINAL)))
    call = d.state.call("c1")
    assert call is not None and call.input_digest == digest(EDITED)
    d.apply(ApproveCall("c1"), StartCall("c1"), CallSettled("c1", ToolOk("added B")),
            Advance(1000))
    # Next iteration: the model reuses c1 with the original input.
    d.apply(MessageStart("m"), ToolCallComplete("c1", "add_thing", dict(ORIGINAL)),
            MessageStop(StopReason.TOOL_USE))
    assert [c.id for c in d.state.calls].count("c1") == 1
    assert d.state.call("c1").status is CallStatus.SUCCEEDED  # type: ignore[union-attr]
    assert sum(1 for v in d.state.violations if v.violation is Violation.DUPLICATE_CALL_ID) >= 1
    assert [g.input_digest for g in d.state.used_grants] == [digest(EDITED)]


def test_edit05_an_edit_that_makes_the_input_invalid_is_refused_and_changes_nothing() -> None:
    d = waiting()
    before = d.state.call("c1")
    d.apply(EditCall("c1", {"name": ""}, "user:ana"),
            EditCall("c1", {"name": "B", "extra": "x"}, "user:ana"),
            EditCall("c1", "not an object", "user:ana"))
    assert d.state.call("c1") == before
    assert [v.violation for v in d.state.violations] == [Violation.INVALID_EDIT] * 3
    d.apply(ApproveCall("c1"))
    assert d.state.grants[0].input_digest == digest(ORIGINAL)  # the original, as shown


def test_edit06_an_edit_into_an_input_declined_this_turn_is_refused() -> None:
    d = Driver(generic_tools())
    d.stream_calls([("c1", "add_thing", dict(ORIGINAL)), ("c2", "add_thing", dict(EDITED))])
    d.apply(DenyCall("c2"), EditCall("c1", dict(EDITED), "user:ana"))
    assert d.state.call("c1").input_digest == digest(ORIGINAL)  # type: ignore[union-attr]
    assert d.state.violations[-1].violation is Violation.INVALID_EDIT


def test_edits_apply_only_to_pending_calls_in_awaiting_approval() -> None:
    d = waiting()
    d.apply(ApproveCall("c1"))
    before = d.state
    d.apply(EditCall("c1", dict(EDITED), "user:ana"), EditCall("nope", dict(EDITED), "x"))
    assert d.state.calls == before.calls


def test_the_model_is_told_the_call_ran_with_the_users_changes() -> None:
    d = waiting()
    d.apply(EditCall("c1", dict(EDITED), "user:ana"), ApproveCall("c1"), StartCall("c1"),
            CallSettled("c1", ToolOk("added B")), Advance(1000))
    text = results(d)["c1"].content
    assert text.startswith("The user changed this call before approving it (name: \"A\" → \"B\")")
    assert text.endswith("Result: added B")


def test_a_second_edit_keeps_the_models_original() -> None:
    d = waiting()
    d.apply(EditCall("c1", {"name": "B"}, "user:ana"), EditCall("c1", {"name": "C"}, "user:bo"))
    call = d.state.call("c1")
    assert call is not None and call.edit is not None
    assert call.edit.original_input == ORIGINAL and call.edit.actor == "user:bo"
    assert call.edit.changes == ('name: "A" → "C"',)


def test_a_denial_reason_reaches_the_model_and_policy_denials_are_marked() -> None:
    d = Driver(generic_tools())
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"}),
                    ("c3", "add_thing", {"name": "C"})])
    d.apply(DenyCall("c1", "duplicate of threat-3"), DenyCall("c2"),
            DenyCall("c3", "ignored", by_policy=True), Advance(1000))
    r = results(d)
    assert r["c1"].content == ('Not run: the user declined this action. Their reason: '
                               '"duplicate of threat-3"')
    assert r["c2"].content == "Not run: the user declined this action."
    assert "approval policy" in r["c3"].content and "ignored" not in r["c3"].content
    reasons = {c.id: c.denial_reason for c in d.state.calls}
    assert reasons == {"c1": DenialReason.USER_DECLINED, "c2": DenialReason.USER_DECLINED,
                       "c3": DenialReason.POLICY_DENIED}


def test_a_reason_with_control_characters_is_cleaned_and_capped() -> None:
    d = waiting()
    d.apply(DenyCall("c1", "bad\x00\u202e reason\n" + "x" * 2000), Advance(1000))
    text = results(d)["c1"].content
    assert "\x00" not in text and "\u202e" not in text and "\n" not in text
    assert len(text) < 700


def test_calls_left_undecided_by_a_stop_are_not_run_not_denied() -> None:
    d = Driver(generic_tools())
    d.stream_calls([("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"})])
    d.apply(ApproveBatch(("c1",)), Cancel())
    assert {c.id: c.status for c in d.state.calls} == {"c1": CallStatus.NOT_RUN,
                                                        "c2": CallStatus.NOT_RUN}
    assert d.state.denials == ()


def test_an_edited_call_survives_a_snapshot_and_a_tampered_one_is_refused() -> None:
    tools = generic_tools()
    d = waiting(tools)
    d.apply(EditCall("c1", dict(EDITED), "user:ana"))
    data = turn_to_json(d.state)
    loaded = turn_from_json(data, tools)
    call = loaded.call("c1")
    assert call == d.state.call("c1")
    assert call is not None and call.prepared is not None and call.prepared.input == EDITED
    # Swapping the model's original back in under the edited digest is caught on load.
    data["calls"][0]["raw_input"] = dict(ORIGINAL)
    try:
        turn_from_json(data, tools)
    except SnapshotError as exc:
        assert "no longer matches what was reviewed" in str(exc)
    else:
        raise AssertionError("a tampered edit loaded")


def test_the_runner_audits_an_edit_then_runs_exactly_the_edited_input() -> None:
    ran: list[dict[str, Any]] = []

    async def record(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        ran.append(args)
        return ToolOk(f"added {args['name']}")

    tools = ToolSet([FakeTool("add_thing", run=record)])

    async def scenario() -> None:
        runner, provider, _, hooks = make_runner(
            [calls_reply(("c1", "add_thing", dict(ORIGINAL))), text_reply("done")],
            registry=tools)
        await runner.submit("go")
        assert await runner.edit_call("c1", {"name": ""}, "user:ana") == (
            "name: must be a non-empty string",)
        assert StepKind.TOOL_EDITED not in hooks.kinds()  # a refused edit records nothing
        assert await runner.edit_call("c1", dict(EDITED), "user:ana") == ()
        edited = [s for s in hooks.steps if s.kind is StepKind.TOOL_EDITED]
        assert [s.payload for s in edited] == [{
            "call_id": "c1", "tool": "add_thing", "input_digest_before": digest(ORIGINAL),
            "input_digest": digest(EDITED), "original_digest": digest(ORIGINAL),
            "iteration": 1, "actor": "user:ana"}]
        state = await runner.approve_call("c1", "user:ana")
        assert state.phase is TurnPhase.SETTLED
        approved = [s for s in hooks.steps if s.kind is StepKind.TOOL_APPROVED]
        started = [s for s in hooks.steps if s.kind is StepKind.TOOL_STARTED]
        assert approved[0].payload["input_digest"] == digest(EDITED)
        assert started[0].payload["input_digest"] == digest(EDITED)
        assert ran == [EDITED]
        second = provider.requests[1].messages[-1].content[0]
        assert isinstance(second, ToolResultBlock) and "ran with the user's input" in \
            second.content

    asyncio.run(scenario())


def test_the_runner_denies_a_batch_with_one_reason_and_can_stop_without_a_request() -> None:
    async def scenario() -> None:
        runner, provider, _, hooks = make_runner(
            [calls_reply(("c1", "add_thing", {"name": "A"}), ("c2", "add_thing", {"name": "B"}))],
            registry=generic_tools())
        await runner.submit("go")
        state = await runner.deny_batch(["c1", "c2"], "user:ana", "out of scope", proceed=False)
        assert state.phase is TurnPhase.EXECUTING
        runner.cancel()
        await runner.wait_settled_record()
        assert len(provider.requests) == 1  # no request followed the denials
        denied = [s.payload for s in hooks.steps if s.kind is StepKind.TOOL_DENIED]
        assert [(p["call_id"], p["denial"], p["reason"]) for p in denied] == [
            ("c1", "user_declined", "out of scope"), ("c2", "user_declined", "out of scope")]
        assert {c.status for c in runner.state.calls} == {CallStatus.DENIED}

    asyncio.run(scenario())
