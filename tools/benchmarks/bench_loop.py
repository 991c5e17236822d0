"""Loop benchmark: reducer throughput over a streamed reply, and read-tool latency on a large
document.

- `reducer events/s`: a 10,000-delta text stream (plus message_start/stop) reduced from a
  fresh turn, median of 7 runs. `ratio` is the reducer's time over a bare Python loop that
  only appends the same deltas' text to a list (the floor any consumer pays), so it reads as
  "times the cost of doing almost nothing".
- read tools on a generated document of about 50,000 entities: the summary, `get_entity` on
  an element and on a threat, `search_entities` unfiltered, by severity, by text and by
  reference, and a catalog search. Each is reported twice: `warm` is the median of 15 calls
  on one document (its read tables already built), `cold` is the median of 5 first calls,
  each on a fresh copy of the document with new section lists (as after opening a file, so
  it includes building whatever tables that call needs). `after a threat edit` is the first
  `get_entity` on a document whose threats section alone is new (as after an AI edit).
  `read index build` is every table of every section built at once.
  `ratio` is value/target (at or below 1 meets the target).
- graph edits on the same document: `update_threat` on a document no action has produced
  (it runs the whole-document reference check) and on the result of an earlier action (it
  relies on the actions' own checks), and the document digest each commit records.

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

DELTAS = 10_000
TARGET_EVENTS_PER_S = 100_000
TARGET_READ_MS = 20.0
ELEMENTS_FOR_50K_ENTITIES = 16_500  # generate_model adds 1.5x flows, 0.5x threats, groups...
RUNS_REDUCER = 7
RUNS_READ = 15
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


def _reducer_rows() -> list[dict[str, Any]]:
    from stockade.loop.commands import Submit
    from stockade.loop.reducer import reduce_turn
    from stockade.loop.state import TurnState
    from stockade.protocol.events import MessageStart, MessageStop, StopReason, TextDelta

    events: list[Any] = [MessageStart("m")]
    events += [TextDelta(f"token {i} ") for i in range(DELTAS)]
    events.append(MessageStop(StopReason.END_TURN))
    start = reduce_turn(TurnState(), Submit("bench", ()))
    expected = "".join(e.text for e in events[1:-1])

    def reducer_pass() -> float:
        state = start
        t0 = time.perf_counter()
        for event in events:
            state = reduce_turn(state, event)
        elapsed = time.perf_counter() - t0
        assert state.messages[-1].content[0].text == expected  # type: ignore[union-attr]
        return elapsed

    def bare_pass() -> float:
        parts: list[str] = []
        t0 = time.perf_counter()
        for event in events:
            if type(event) is TextDelta:
                parts.append(event.text)
        text = "".join(parts)
        elapsed = time.perf_counter() - t0
        assert text == expected
        return elapsed

    reducer_s = statistics.median(reducer_pass() for _ in range(RUNS_REDUCER))
    bare_s = statistics.median(bare_pass() for _ in range(RUNS_REDUCER))
    rate = len(events) / reducer_s
    return [
        _row("reducer events/s (10,000-delta stream)", rate, "events/s", TARGET_EVENTS_PER_S, reducer_s / bare_s),
        _row("bare loop events/s (same events)", len(events) / bare_s, "events/s", None, None),
    ]


def _read_rows() -> list[dict[str, Any]]:
    from generate import generate_model

    from stockade.thf.model import SECTION_NAMES
    from stockade.tools.registry import default_registry
    from stockade.tools.runtime import PreparedCall, ToolContext, ToolOk

    model = generate_model(ELEMENTS_FOR_50K_ENTITIES)
    entities = sum(len(getattr(model, section)) for section in SECTION_NAMES)
    registry = default_registry()
    last_element = f"comp-{ELEMENTS_FOR_50K_ENTITIES - 1}"
    cases = [
        ("get_document_summary", "get_document_summary", {}),
        ("get_entity element", "get_entity", {"kind": "elements", "id": last_element}),
        ("get_entity threat", "get_entity", {"kind": "threats", "id": model.threats[-1].id}),
        ("search_entities elements unfiltered", "search_entities", {"kind": "elements"}),
        ("search_entities threats severity high, offset 100", "search_entities",
         {"kind": "threats", "severity": "high", "offset": 100}),
        ("search_entities text over elements", "search_entities", {"kind": "elements", "text": "component 16"}),
        ("search_entities references over flows", "search_entities", {"kind": "data_flows", "references": "comp-8000"}),
        ("search_component_catalog", "search_component_catalog", {"query": "db"}),
    ]

    async def call_ms(call: PreparedCall, document: Any) -> float:
        context = ToolContext(document=document)
        t0 = time.perf_counter()
        outcome = await call.run(context)
        elapsed = (time.perf_counter() - t0) * 1000
        assert isinstance(outcome, ToolOk), outcome
        return elapsed

    async def measure(call: PreparedCall) -> tuple[float, float]:
        cold = [await call_ms(call, _fresh_copy(model)) for _ in range(RUNS_COLD)]
        await call_ms(call, model)
        warm = [await call_ms(call, model) for _ in range(RUNS_READ)]
        return statistics.median(warm), statistics.median(cold)

    rows = []
    for label, name, raw in cases:
        tool = registry.get(name)
        assert tool is not None
        prepared = tool.prepare(raw)
        assert isinstance(prepared, PreparedCall), prepared
        warm_ms, cold_ms = asyncio.run(measure(prepared))
        size = f"{entities:,} entities"
        rows.append(_row(f"{label} ({size}) warm median", warm_ms, "ms", TARGET_READ_MS,
                         warm_ms / TARGET_READ_MS))
        rows.append(_row(f"{label} ({size}) cold first call", cold_ms, "ms", None, None))
    rows += _edit_rows(model, entities, registry)
    rows += _index_rows(model, entities)
    rows += _action_rows(model, entities)
    return rows


def _fresh_copy(model: Any) -> Any:
    """The same content in a new document with new section lists: nothing cached applies."""
    from stockade.thf.model import SECTION_NAMES

    return model.model_copy(update={name: list(getattr(model, name)) for name in SECTION_NAMES})


def _edit_rows(model: Any, entities: int, registry: Any) -> list[dict[str, Any]]:
    from stockade.tools.runtime import PreparedCall, ToolContext, ToolOk

    tool = registry.get("get_entity")
    prepared = tool.prepare({"kind": "elements", "id": f"comp-{ELEMENTS_FOR_50K_ENTITIES - 1}"})
    assert isinstance(prepared, PreparedCall), prepared

    async def first_call_after_edit() -> float:
        await prepared.run(ToolContext(document=model))
        # What an edit to one threat leaves behind: a new threats list, every other section
        # the same list as before.
        edited = model.model_copy(update={"threats": [*model.threats[1:], model.threats[0]]})
        t0 = time.perf_counter()
        outcome = await prepared.run(ToolContext(document=edited))
        elapsed = (time.perf_counter() - t0) * 1000
        assert isinstance(outcome, ToolOk), outcome
        return elapsed

    times = [asyncio.run(first_call_after_edit()) for _ in range(RUNS_COLD)]
    value = statistics.median(times)
    return [_row(f"get_entity element, first call after a threat edit ({entities:,} entities)",
                 value, "ms", None, None)]


def _index_rows(model: Any, entities: int) -> list[dict[str, Any]]:
    try:
        from stockade.tools.document_index import build_full_index
    except ImportError:
        return []
    times = []
    for _ in range(RUNS_COLD):
        t0 = time.perf_counter()
        build_full_index(model)
        times.append((time.perf_counter() - t0) * 1000)
    build_ms = statistics.median(times)
    return [_row(f"read index build, every part ({entities:,} entities)", build_ms, "ms", None, None)]


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
    digests = []
    for _ in range(RUNS_COLD):
        t0 = time.perf_counter()
        document_digest(model)
        digests.append((time.perf_counter() - t0) * 1000)
    size = f"{entities:,} entities"
    return [
        _row(f"update_threat, document not from an action ({size})", statistics.median(first),
             "ms", None, None),
        _row(f"update_threat, result of an earlier action ({size})", statistics.median(chained),
             "ms", None, None),
        _row(f"document digest per commit ({size})", statistics.median(digests), "ms", None, None),
    ]


def run() -> list[dict[str, Any]]:
    return _reducer_rows() + _read_rows()


if __name__ == "__main__":
    from main import print_table

    print_table(run())
