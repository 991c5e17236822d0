"""The runner awaits tool runs in the task driving the turn: Stop, the deadline timer and a
caller's own cancellation each end a run there, and only the runner's own are withdrawn."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from stockade.loop.history import DocumentSession
from stockade.loop.hooks import StepKind, TurnStep
from stockade.loop.limits import TurnLimits
from stockade.loop.runner import TurnRunner
from stockade.loop.state import ToolSet, TurnOutcome, TurnPhase
from stockade.protocol.pairing import check_tool_pairing
from stockade.tools.runtime import ToolContext, ToolEffect, ToolOk, ToolOutcome
from tests.unit.loop.fakes import FakeTool, base_model
from tests.unit.loop.scripted import RecordingHooks, ScriptedProvider, calls_reply, text_reply


def _loop_clock() -> int:
    return int(asyncio.get_running_loop().time() * 1000)


def _runner(tools: ToolSet, scripts: list[Any], *, hooks: RecordingHooks | None = None,
            deadline_ms: int = 120_000) -> tuple[TurnRunner, DocumentSession, RecordingHooks]:
    session = DocumentSession(base_model())
    hooks = hooks or RecordingHooks()
    runner = TurnRunner(
        ScriptedProvider(scripts), tools, session, hooks=hooks,
        limits=TurnLimits(deadline_ms=deadline_ms), model="test-model", provider_name="scripted",
        clock_ms=_loop_clock, request_check=None,
    )
    return runner, session, hooks


def _hijacked(ctx: ToolContext) -> ToolOutcome:
    return ToolOk("hijacked", ctx.document.model_copy(update={"elements": []}))


def test_stop_mid_tool_hands_the_caller_a_cancelled_turn_and_an_uncancelled_task() -> None:
    async def scenario() -> None:
        gate, started = asyncio.Event(), asyncio.Event()

        async def slow(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            started.set()
            await gate.wait()
            return _hijacked(ctx)

        runner, session, hooks = _runner(ToolSet([FakeTool("add_thing", run=slow)]),
                                         [calls_reply(("c1", "add_thing", {"name": "A"}))])
        live = session.document
        await runner.submit("go")

        async def approve_then_keep_working() -> tuple[Any, int]:
            state = await runner.approve_call("c1")
            cancelling = asyncio.current_task().cancelling()  # type: ignore[union-attr]
            await asyncio.sleep(0)  # would raise if the runner's cancellation were left behind
            return state, cancelling

        approving = asyncio.create_task(approve_then_keep_working())
        await started.wait()
        runner.cancel()
        state, cancelling = await approving
        assert state.outcome is TurnOutcome.CANCELLED and cancelling == 0
        assert session.document is live
        assert StepKind.TOOL_RESULT not in hooks.kinds()
        assert hooks.kinds()[-1] is StepKind.TURN_SETTLED
        assert check_tool_pairing(state.messages) == []

    asyncio.run(scenario())


def test_a_caller_cancelling_its_await_mid_tool_gets_its_cancellation() -> None:
    async def scenario() -> None:
        started, seen = asyncio.Event(), []

        async def slow(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                seen.append("cancelled")
                raise
            raise AssertionError("unreachable")

        runner, session, _ = _runner(ToolSet([FakeTool("add_thing", run=slow)]),
                                     [calls_reply(("c1", "add_thing", {"name": "A"}))])
        live = session.document
        await runner.submit("go")
        approving = asyncio.create_task(runner.approve_call("c1"))
        await started.wait()
        approving.cancel()
        with pytest.raises(asyncio.CancelledError):
            await approving
        assert seen == ["cancelled"]
        assert runner.state.outcome is TurnOutcome.CANCELLED
        assert session.document is live

    asyncio.run(scenario())


def test_a_callers_own_timeout_around_the_turn_stays_the_callers() -> None:
    async def scenario() -> None:
        async def forever(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        runner, _, _ = _runner(
            ToolSet([FakeTool("read_slow", effect=ToolEffect.READ, fields=("q",), run=forever)]),
            [calls_reply(("r1", "read_slow", {"q": "x"}))])
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await runner.submit("hi")
        assert runner.state.outcome is TurnOutcome.CANCELLED

    asyncio.run(scenario())


def test_a_tool_that_ignores_the_deadline_is_waited_out_and_its_outcome_discarded() -> None:
    async def scenario() -> None:
        async def stubborn(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            with contextlib.suppress(asyncio.CancelledError):  # keeps going past the deadline
                await asyncio.Event().wait()
            await asyncio.sleep(0.01)
            return _hijacked(ctx)

        runner, session, hooks = _runner(ToolSet([FakeTool("add_thing", run=stubborn)]),
                                         [calls_reply(("c1", "add_thing", {"name": "A"}))],
                                         deadline_ms=100)
        live = session.document
        await runner.submit("go")
        state = await asyncio.wait_for(runner.approve_call("c1"), timeout=5)
        assert (state.outcome, state.reason) == (TurnOutcome.BOUNDED, "deadline")
        assert session.document is live
        assert StepKind.DOCUMENT_COMMITTED not in hooks.kinds()
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]

    asyncio.run(scenario())


def test_a_deadline_passed_while_a_hook_was_slow_cuts_the_next_waiting_tool_at_once() -> None:
    class SlowStartHooks(RecordingHooks):
        async def record(self, step: TurnStep) -> None:
            await super().record(step)
            if step.kind is StepKind.TOOL_STARTED:
                await asyncio.sleep(0.15)  # past the 100 ms deadline, outside any tool run

    async def scenario() -> None:
        ran = []

        async def waits(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
            ran.append("started")
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

        runner, _, _ = _runner(
            ToolSet([FakeTool("read_slow", effect=ToolEffect.READ, fields=("q",), run=waits)]),
            [calls_reply(("r1", "read_slow", {"q": "x"}))], hooks=SlowStartHooks(),
            deadline_ms=100)
        state = await asyncio.wait_for(runner.submit("hi"), timeout=5)
        assert (state.outcome, state.reason) == (TurnOutcome.BOUNDED, "deadline")
        assert ran == ["started"]

    asyncio.run(scenario())


def test_stop_from_inside_a_running_tool_discards_its_outcome() -> None:
    runner_box: list[TurnRunner] = []

    async def stops(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        runner_box[0].cancel()  # an observer or the tool itself, in the driving task
        return _hijacked(ctx)

    async def scenario() -> None:
        runner, session, _ = _runner(ToolSet([FakeTool("add_thing", run=stops)]),
                                     [calls_reply(("c1", "add_thing", {"name": "A"}))])
        runner_box.append(runner)
        live = session.document
        await runner.submit("go")
        state = await runner.approve_call("c1")
        await asyncio.sleep(0)  # the driving task is not left with a cancellation
        assert state.outcome is TurnOutcome.CANCELLED and session.document is live

    asyncio.run(scenario())


def test_every_call_of_a_batch_runs_in_the_task_that_drives_the_turn() -> None:
    tasks: list[Any] = []

    async def read(args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        tasks.append(asyncio.current_task())
        return ToolOk("read")

    async def scenario() -> Any:
        tools = ToolSet([FakeTool("read_thing", effect=ToolEffect.READ, fields=("q",), run=read)])
        runner, _, _ = _runner(tools, [
            calls_reply(*((f"r{i}", "read_thing", {"q": str(i)}) for i in range(5))),
            text_reply("done"),
        ])
        state = await runner.submit("hi")
        assert state.outcome is TurnOutcome.COMPLETED and state.phase is TurnPhase.SETTLED
        return asyncio.current_task()

    driver = asyncio.run(scenario())
    assert tasks == [driver] * 5
