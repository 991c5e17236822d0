"""Read-tool latency on a generated document of about 50,000 entities (rows of `tools/bench thf`).

The summary, `get_entity` on an element and on a threat, `search_entities` unfiltered, by
severity, by text and by reference, and a catalog search, each reported twice: `warm` is the
median of 15 calls on one document (after one unmeasured call), `cold` is the median of 5 first
calls on a document just read from its file by `read_text` (as after opening it: one read per
sample, the read tools' tables emptied before each call, so each call pays for whatever tables
it needs; validating the read keeps the id and reference columns, see `thf.columns`). `cold,
not read` is the first call on a copy with new section lists that no read or commit validated
(no kept columns: one scan of the entities). A section answers its first lookup of a field by
one scan and builds that field's table on the second (see `document_index`): the table is
built inside the first measured warm call, which the median leaves out, and its cost is in
`read index build`. `after a threat edit` is the first `get_entity` on a document whose
threats section alone is new (as after an AI edit). `read index build` is every table of every
section built at once. A text search's first call builds its section's search text (one pass
over the text fields of every entity: most of the cold row); `every element matches` is the
densest text search, which pages 20 of 16,500 matches. Targets: warm 20 ms, cold 10 ms; `ratio` is value/target (at or below 1
meets the target).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from typing import Any

ELEMENTS_FOR_50K_ENTITIES = 16_500  # generate_model adds 1.5x flows, 0.5x threats, groups...
TARGET_READ_MS = 20.0
TARGET_COLD_MS = 10.0
RUNS_READ = 15
RUNS_COLD = 5
NOT_READ_CASES = frozenset({"get_entity element", "search_entities references over flows"})


def _row(metric: str, value: float, unit: str, target: float | None, ratio: float | None) -> dict[str, Any]:
    return {
        "benchmark": "thf",
        "metric": metric,
        "value": round(value, 3),
        "unit": unit,
        "target": target,
        "ratio": None if ratio is None else round(ratio, 3),
    }


def read_tool_rows() -> list[dict[str, Any]]:
    return _read_rows()


def _read_rows() -> list[dict[str, Any]]:
    from tools.benchmarks.generate import generate_model

    from stockade.thf.model import SECTION_NAMES
    from stockade.thf.reader import read_text
    from stockade.thf.writer import to_yaml
    from stockade.tools.document_index import clear_cache
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
        ("search_entities text over elements, every element matches", "search_entities",
         {"kind": "elements", "text": "component"}),
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

    prepared_calls = []
    for label, name, raw in cases:
        tool = registry.get(name)
        assert tool is not None
        prepared = tool.prepare(raw)
        assert isinstance(prepared, PreparedCall), prepared
        prepared_calls.append((label, prepared))

    # Cold: each sample reads the file anew, then every case makes its first call on it.
    text = to_yaml(model)
    cold: dict[str, list[float]] = {label: [] for label, _ in prepared_calls}
    not_read: dict[str, list[float]] = {label: [] for label, _ in prepared_calls}
    for _ in range(RUNS_COLD):
        document = read_text(text)
        for label, prepared in prepared_calls:
            clear_cache()
            cold[label].append(asyncio.run(call_ms(prepared, document)))
        del document
    for _ in range(RUNS_COLD):
        for label, prepared in prepared_calls:
            if label in NOT_READ_CASES:
                not_read[label].append(asyncio.run(call_ms(prepared, _fresh_copy(model))))

    async def warm_ms(call: PreparedCall) -> float:
        await call_ms(call, model)
        return statistics.median([await call_ms(call, model) for _ in range(RUNS_READ)])

    rows = []
    size = f"{entities:,} entities"
    for label, prepared in prepared_calls:
        warm = asyncio.run(warm_ms(prepared))
        first = statistics.median(cold[label])
        rows.append(_row(f"{label} ({size}) warm median [in-process]", warm, "ms", TARGET_READ_MS,
                         warm / TARGET_READ_MS))
        rows.append(_row(f"{label} ({size}) cold first call after read_text [in-process]", first,
                         "ms", TARGET_COLD_MS, first / TARGET_COLD_MS))
        if not_read[label]:
            unseen = statistics.median(not_read[label])
            rows.append(_row(f"{label} ({size}) cold first call, lists not read [in-process]",
                             unseen, "ms", None, None))
    rows += _edit_rows(model, entities, registry)
    rows += _index_rows(model, entities)
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
    return [_row(f"get_entity element, first call after a threat edit ({entities:,} entities) [in-process]",
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
    return [_row(f"read index build, every part ({entities:,} entities) [in-process]", build_ms, "ms", None, None)]


