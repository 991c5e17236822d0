"""Benchmark (not a test): read tools and graph actions over a 50,000-element document.

Run: `.venv/bin/python -m tests.unit.tools.bench_read_tools`. Reports the median CPU time of
each call (thread time, so other processes on a busy machine distort it less than wall time).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from stockade.tools.registry import default_registry
from stockade.tools.runtime import PreparedCall, ToolContext

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools" / "benchmarks"))
from generate import generate_model

ROUNDS = 21


async def _median_ms(prepared: PreparedCall, context: ToolContext, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.thread_time()
        await prepared.run(context)
        times.append((time.thread_time() - start) * 1000)
    return statistics.median(times)


async def main() -> None:
    document = generate_model(50_000)
    print(f"elements {len(document.elements)}, flows {len(document.data_flows)}, threats {len(document.threats)}")
    registry = default_registry()
    middle = document.elements[len(document.elements) // 2].id
    calls: list[tuple[str, dict[str, Any], int]] = [
        ("get_document_summary", {}, ROUNDS),
        ("get_entity", {"kind": "elements", "id": middle}, ROUNDS),
        ("get_entity", {"kind": "threats", "id": document.threats[-1].id}, ROUNDS),
        ("search_entities", {"kind": "elements"}, ROUNDS),
        ("search_entities", {"kind": "threats", "severity": "high", "offset": 100}, ROUNDS),
        ("search_entities", {"kind": "elements", "text": "postgres"}, ROUNDS),
        ("search_component_catalog", {"query": "db"}, ROUNDS),
        ("add_element", {"action": "add_element", "element": {"type": "process", "name": "New"}}, 5),
        ("delete_threat", {"action": "delete_threat", "id": document.threats[10].id}, 5),
    ]
    context = ToolContext(document=document)
    for name, raw, rounds in calls:
        tool = registry.get(name)
        assert tool is not None
        prepared = tool.prepare(raw)
        assert isinstance(prepared, PreparedCall)
        median = await _median_ms(prepared, context, rounds)
        print(f"{name:26} {str(raw)[:58]:58} median {median:7.2f} ms")


if __name__ == "__main__":
    asyncio.run(main())
