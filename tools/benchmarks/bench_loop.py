"""Loop benchmark: reducer throughput over a streamed reply, and read-tool latency on a large
document.

- `reducer events/s`: a 10,000-delta text stream (plus message_start/stop) reduced from a
  fresh turn, median of 7 runs. `ratio` is the reducer's time over a bare Python loop that
  only appends the same deltas' text to a list (the floor any consumer pays), so it reads as
  "times the cost of doing almost nothing".
- read tools: `search_entities` (a text search over every element, and a reference search over
  every flow) and `get_entity` on a generated document of about 50,000 entities, prepared
  once and run 15 times; median ms. `ratio` is value/target (at or below 1 meets the target).

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
    cases = [
        ("search_entities text over elements", "search_entities", {"kind": "elements", "text": "component 16"}),
        ("search_entities references over flows", "search_entities", {"kind": "data_flows", "references": "comp-8000"}),
        ("get_entity", "get_entity", {"kind": "elements", "id": f"comp-{ELEMENTS_FOR_50K_ENTITIES - 1}"}),
    ]
    rows = []
    for label, name, raw in cases:
        tool = registry.get(name)
        assert tool is not None
        prepared = tool.prepare(raw)
        assert isinstance(prepared, PreparedCall), prepared
        context = ToolContext(document=model)

        async def timed(call: PreparedCall = prepared, ctx: ToolContext = context) -> list[float]:
            out = []
            for _ in range(RUNS_READ):
                t0 = time.perf_counter()
                outcome = await call.run(ctx)
                out.append((time.perf_counter() - t0) * 1000)
                assert isinstance(outcome, ToolOk)
            return out

        median_ms = statistics.median(asyncio.run(timed()))
        rows.append(
            _row(f"{label} ({entities:,} entities) median", median_ms, "ms", TARGET_READ_MS, median_ms / TARGET_READ_MS)
        )
    return rows


def run() -> list[dict[str, Any]]:
    return _reducer_rows() + _read_rows()


if __name__ == "__main__":
    from main import print_table

    print_table(run())
