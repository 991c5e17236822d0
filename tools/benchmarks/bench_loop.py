"""Loop benchmark: reducer throughput on two turns, loop overhead through the runner, and
read-tool latency on a large document.

- `reducer inputs/s`: the two sequences of `loop_sequences` reduced from an idle state, median
  of 31 runs: the streamed reply (10,003 inputs, 10,000 text deltas) and the tool-heavy turn
  (927 inputs, 96 calls over 8 iterations with approvals and results; its calls are prepared by
  the production tools, whose input validation and digest are reported on their own row). The
  app screens each tool input for secrets before it is prepared (`governance.guards`); the
  reducer sequence and the runner rows run without that screen, so it has a row of its own.
  Targets are twice ThreatForge's recorded `reduceTurn` figures (docs/performance.md, "Peer");
  `ratio` is value/target, so at or above 1 meets it. `bare loop` is a Python loop that only
  collects the same deltas' text (the floor any consumer pays).
- `runner per iteration`: the tool-heavy turn driven through `TurnRunner` with a provider that
  replays the recorded events without waiting, in-memory hooks and the production tools, per
  iteration of 12 calls (median of 7 turns). `loop overhead` replaces each tool's body with one
  that returns its result at once (the preparation stays real), so it is runner + reducer +
  hooks alone; target 1 ms, `ratio` value/target. `with tool bodies` runs the real tools
  committing on a 220-element model (reference checks and audit digests included).
- graph edits on a generated document of about 50,000 entities: `update_threat` on a document no action has produced
  (it runs the whole-document reference check) and on the result of an earlier action (it
  relies on the actions' own checks), and the document digest each commit records: per commit
  (an action's result, whose unchanged entities' canonical texts are kept from the previous
  digest) and the first digest of a document whose entities were never digested.

`python tools/benchmarks/bench_loop.py` prints the rows on its own.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "desktop"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGET_STREAM_INPUTS_PER_S = 770_000  # 2x ThreatForge's recorded 385k inputs/s
TARGET_TOOL_TURN_INPUTS_PER_S = 134_000  # 2x ThreatForge's recorded 67k inputs/s
TARGET_ITERATION_MS = 1.0
ELEMENTS_FOR_50K_ENTITIES = 16_500  # generate_model adds 1.5x flows, 0.5x threats, groups...
RUNS_REDUCER = 31
RUNS_RUNNER = 7
RUNS_COLD = 5


def _row(metric: str, value: float, unit: str, target: float | None, ratio: float | None) -> dict[str, Any]:
    return {
        "benchmark": "loop",
        "metric": metric,
        "value": round(value, 3),
        "unit": unit,
        "target": target,
        "ratio": None if ratio is None else round(ratio, 3),
    }


def reducer_rates() -> dict[str, float]:
    """inputs/s of both sequences and the bare loop, plus the tool-heavy turn's prepare time."""
    from loop_sequences import streaming_inputs, tool_heavy_inputs

    from stockade.loop.reducer import reduce_turn
    from stockade.loop.state import ToolSet, TurnState
    from stockade.protocol.events import TextDelta
    from stockade.tools.registry import default_registry

    stream = streaming_inputs()
    tools = ToolSet.from_registry(default_registry())
    heavy = tool_heavy_inputs(tools)
    expected = "".join(e.text for e in stream if type(e) is TextDelta)

    def reduce_s(inputs: list[Any]) -> float:
        state = TurnState()
        t0 = time.perf_counter()
        for item in inputs:
            state = reduce_turn(state, item)
        elapsed = time.perf_counter() - t0
        assert state.outcome == "completed", state.outcome
        return elapsed

    def bare_s() -> float:
        parts: list[str] = []
        t0 = time.perf_counter()
        for event in stream:
            if type(event) is TextDelta:
                parts.append(event.text)
        text = "".join(parts)
        elapsed = time.perf_counter() - t0
        assert text == expected
        return elapsed

    def prepare_s() -> float:
        calls = [(tools.get(i.name), i.input) for i in heavy if getattr(i, "type", "") == "tool_call_complete"]
        t0 = time.perf_counter()
        for tool, raw in calls:
            tool.prepare(raw)  # type: ignore[union-attr]
        return time.perf_counter() - t0

    from stockade.governance.guards import SecretGuard

    guard = SecretGuard()
    completed = [(i.name, i.input) for i in heavy if getattr(i, "type", "") == "tool_call_complete"]

    def screen_s() -> float:
        t0 = time.perf_counter()
        for name, raw in completed:
            assert guard.screen_tool_input(name, raw) is raw  # nothing secret in them
        return time.perf_counter() - t0

    stream_s = statistics.median(reduce_s(stream) for _ in range(RUNS_REDUCER))
    heavy_s = statistics.median(reduce_s(heavy) for _ in range(RUNS_REDUCER))
    return {
        "stream": len(stream) / stream_s,
        "tool_heavy": len(heavy) / heavy_s,
        "bare": len(stream) / statistics.median(bare_s() for _ in range(RUNS_REDUCER)),
        "prepare_ms": statistics.median(prepare_s() for _ in range(RUNS_REDUCER)) * 1000,
        "screen_ms": statistics.median(screen_s() for _ in range(RUNS_REDUCER)) * 1000,
        "tool_heavy_ms": heavy_s * 1000,
    }


def _reducer_rows() -> list[dict[str, Any]]:
    rates = reducer_rates()
    stream, heavy = rates["stream"], rates["tool_heavy"]
    return [
        _row("reducer inputs/s, streamed reply (10,003 inputs) [in-process]", stream, "inputs/s",
             TARGET_STREAM_INPUTS_PER_S, stream / TARGET_STREAM_INPUTS_PER_S),
        _row("reducer inputs/s, tool-heavy turn (927 inputs, 96 calls) [in-process]", heavy, "inputs/s",
             TARGET_TOOL_TURN_INPUTS_PER_S, heavy / TARGET_TOOL_TURN_INPUTS_PER_S),
        _row("  of which preparing the 96 calls (tool input validation + digest)",
             rates["prepare_ms"], "ms", None, rates["prepare_ms"] / rates["tool_heavy_ms"]),
        _row("  screening the 96 inputs for secrets (the app's input screen; not in the turn above)",
             rates["screen_ms"], "ms", None, rates["screen_ms"] / rates["tool_heavy_ms"]),
        _row("bare loop inputs/s (the streamed deltas' text only)", rates["bare"], "inputs/s",
             None, None),
    ]


class _ReplayProvider:
    """Plays one recorded reply per request with no waiting: the provider costs nothing."""

    name = "anthropic"

    def __init__(self, replies: list[list[Any]]) -> None:
        self._replies = list(replies)

    async def stream(self, request: Any) -> Any:
        for event in self._replies.pop(0):
            yield event


class _MemoryHooks:
    """Governance's seam with nothing behind it: permits each request, keeps each step."""

    def __init__(self) -> None:
        self.steps: list[Any] = []
        self._requests = 0

    async def before_request(self, request: Any, iteration: int) -> Any:
        from stockade.loop.hooks import RequestPermit

        self._requests += 1
        # Reserves what `after_request` charges: the runner stops a turn whose request cost
        # more than its reservation.
        return RequestPermit(handle=f"bench-{self._requests}", reserved_credits=3)

    async def after_request(self, permit: Any, usage: Any, failed: bool) -> int:
        return 0 if failed else 3

    async def record(self, step: Any) -> None:
        self.steps.append(step)


def _instant_tool(tool: Any, result: str) -> Any:
    """The production tool defined again with a body that returns its result at once: the
    same input model, summary and `prepare` (validation, canonical input, digest), no
    document work."""
    from stockade.tools.registry import define_tool
    from stockade.tools.runtime import ToolOk

    outcome = ToolOk(result)

    async def execute(value: Any, context: Any) -> Any:
        return outcome

    return define_tool(tool.name, tool.description, tool.input_model, tool.effect,
                       tool.destructive, tool._summarize, execute)


def runner_iteration_ms(*, instant_tools: bool) -> float:
    """Median ms per iteration of the tool-heavy turn through `TurnRunner`."""
    from generate import generate_model
    from loop_sequences import (
        READ_RESULT,
        RUNNER_MODEL_ELEMENTS,
        TOOL_HEAVY_LIMITS,
        tool_heavy_replies,
    )

    from stockade.loop.history import DocumentSession
    from stockade.loop.runner import TurnRunner
    from stockade.loop.state import ToolSet
    from stockade.tools.registry import default_registry

    registry: Any = default_registry()
    if instant_tools:
        registry = ToolSet(
            _instant_tool(t, READ_RESULT if t.effect == "read" else f"Done: {t.name}.")
            for t in registry.list()
        )
    model = generate_model(RUNNER_MODEL_ELEMENTS)
    iterations, closing = tool_heavy_replies()

    async def turn_s() -> float:
        replies = [planned.reply for planned in iterations] + [closing]
        runner = TurnRunner(
            _ReplayProvider(replies), registry, DocumentSession(model), hooks=_MemoryHooks(),
            limits=TOOL_HEAVY_LIMITS, model="claude-sonnet-5", provider_name="anthropic",
        )
        t0 = time.perf_counter()
        state = await runner.submit("Review the payment flows.")
        for planned in iterations:
            state = await runner.approve_batch(planned.batch_ids())
            for call_id in planned.single_ids():
                state = await runner.approve_call(call_id)
        elapsed = time.perf_counter() - t0
        assert state.outcome == "completed", (state.outcome, state.reason, state.notice)
        assert all(c.status == "succeeded" for c in state.calls), state.calls
        return elapsed

    times = [asyncio.run(turn_s()) for _ in range(RUNS_RUNNER)]
    return statistics.median(times) / len(iterations) * 1000


def _runner_rows() -> list[dict[str, Any]]:
    overhead = runner_iteration_ms(instant_tools=True)
    full = runner_iteration_ms(instant_tools=False)
    return [
        _row("runner per iteration, 12 calls: loop overhead (runner + reducer + hooks) [in-process]", overhead,
             "ms", TARGET_ITERATION_MS, overhead / TARGET_ITERATION_MS),
        _row("runner per iteration, 12 calls: with tool bodies committing (220-element model) [in-process]",
             full, "ms", None, None),
    ]


def _fresh_copy(model: Any) -> Any:
    """The same content in a new document with new section lists: nothing cached applies."""
    from stockade.thf.model import SECTION_NAMES

    return model.model_copy(update={name: list(getattr(model, name)) for name in SECTION_NAMES})


def _fresh_entities(model: Any) -> Any:
    """The same content with new entity objects throughout (nothing digested before)."""
    from stockade.thf.model import ThreatModel

    return ThreatModel.model_validate(model.model_dump(by_alias=True))


def _action_rows(model: Any, entities: int) -> list[dict[str, Any]]:
    from stockade.thf.digest import document_digest
    from stockade.tools import actions

    updates = actions.ThreatUpdates(severity="low")
    threat_id = model.threats[0].id

    def edit_ms(document: Any) -> tuple[float, Any]:
        t0 = time.perf_counter()
        outcome = actions.update_threat(document, threat_id, updates)
        elapsed = (time.perf_counter() - t0) * 1000
        assert isinstance(outcome, actions.ActionResult), outcome
        return elapsed, outcome.document

    first, chained = [], []
    for _ in range(RUNS_COLD):
        first_ms, produced = edit_ms(_fresh_copy(model))
        first.append(first_ms)
        chained.append(edit_ms(produced)[0])
    # Per commit: the digest of an action's result, the previous document's digest taken (as
    # the runner records "before" and "after"). First: a document none of whose entities was
    # digested before (new entity objects, as after opening a file).
    digests, first_digests = [], []
    for _ in range(RUNS_COLD):
        fresh = _fresh_entities(model)
        t0 = time.perf_counter()
        document_digest(fresh)
        first_digests.append((time.perf_counter() - t0) * 1000)
        _, edited = edit_ms(fresh)
        t0 = time.perf_counter()
        document_digest(edited)
        digests.append((time.perf_counter() - t0) * 1000)
        del fresh, edited
    size = f"{entities:,} entities"
    return [
        _row(f"update_threat, document not from an action ({size}) [in-process]", statistics.median(first),
             "ms", None, None),
        _row(f"update_threat, result of an earlier action ({size}) [in-process]", statistics.median(chained),
             "ms", None, None),
        _row(f"document digest per commit, one threat edited ({size}) [in-process]",
             statistics.median(digests), "ms", None, None),
        _row(f"document digest, first of a document ({size}) [in-process]",
             statistics.median(first_digests), "ms", None, None),
    ]


def run() -> list[dict[str, Any]]:
    from generate import generate_model

    from stockade.thf.model import SECTION_NAMES

    # The turn rows first: with the 50,004-entity model alive every garbage collection of the
    # reducer's allocations would walk it too, which no turn in the app pays.
    rows = _reducer_rows() + _runner_rows()
    model = generate_model(ELEMENTS_FOR_50K_ENTITIES)
    entities = sum(len(getattr(model, section)) for section in SECTION_NAMES)
    return rows + _action_rows(model, entities)


if __name__ == "__main__":
    from main import print_table

    print_table(run())
