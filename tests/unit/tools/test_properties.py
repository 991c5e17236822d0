"""Property tests: prepare is total, graph actions keep documents reopenable, reads never crash."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stockade.thf.model import ThreatModel
from stockade.thf.reader import read_file, read_text
from stockade.thf.validate import validate_references
from stockade.thf.writer import to_yaml
from stockade.tools.graph_tools import apply_call
from stockade.tools.registry import default_registry
from stockade.tools.runtime import PreparedCall, PrepareFailed, ToolContext, ToolOk
from tests.conftest import THF_FIXTURES, examples
from tests.unit.tools.conftest import END, START, el, flow, make_doc, threat

REGISTRY = default_registry()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REGISTRY.names()), json_values)
def test_prepare_never_raises_on_any_json(name: str, raw: Any) -> None:
    tool = REGISTRY.get(name)
    assert tool is not None
    result = tool.prepare(raw)
    assert isinstance(result, (PreparedCall, PrepareFailed))
    if isinstance(result, PrepareFailed):
        assert result.issues and all(isinstance(i, str) and i for i in result.issues)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(REGISTRY.names()[4:]),
       st.dictionaries(st.sampled_from(["id", "element", "threat", "data_flow", "trust_boundary", "updates", "cascade"]),
                       json_values, max_size=4))
def test_prepare_with_plausible_keys_never_raises(name: str, raw: dict[str, Any]) -> None:
    result = REGISTRY.get(name).prepare({"action": name, **raw})  # type: ignore[union-attr]
    assert isinstance(result, (PreparedCall, PrepareFailed))


IDS = ["a", "b", "c", "flow-1", "flow-2", "threat-1", "boundary-1", "ghost", "edge", "grp"]
ids = st.sampled_from(IDS)
names = st.sampled_from(["A", "New thing", "b", "Flow 1", "  ", "界面", "a-2"])
severities = st.sampled_from(["high", "LOW", "Critical", "info"])
categories = st.sampled_from(["Spoofing", "Tampering", "Denial of Service"])

actions_strategy = st.one_of(
    st.builds(lambda n: ("add_element", {"element": {"type": "process", "name": n}}), names),
    st.builds(lambda i, n, layer: ("update_element", {"id": i, "updates": {"name": n, "layer": layer}}),
              ids, names, st.sampled_from(["", "edge", "ghost"])),
    st.builds(lambda i, c: ("delete_element", {"id": i, "cascade": c}), ids, st.booleans()),
    st.builds(lambda a, b: ("add_data_flow", {"data_flow": {"from": a, "to": b}}), ids, ids),
    st.builds(lambda i, a: ("update_data_flow", {"id": i, "updates": {"to": a}}), ids, ids),
    st.builds(lambda i, c: ("delete_data_flow", {"id": i, "cascade": c}), ids, st.booleans()),
    st.builds(lambda n, m: ("add_trust_boundary", {"trust_boundary": {"name": n or "x", "contains": m}}),
              names, st.lists(ids, max_size=3)),
    st.builds(lambda i, m: ("update_trust_boundary", {"id": i, "updates": {"contains": m}}), ids, st.lists(ids, max_size=3)),
    st.builds(lambda i: ("delete_trust_boundary", {"id": i}), ids),
    st.builds(lambda e, f, s, c: ("add_threat", {"threat": {"title": "t", "category": c, "severity": s,
                                                             "description": "d", "element": e, "flow": f}}),
              ids, ids, severities, categories),
    st.builds(lambda i, e: ("update_threat", {"id": i, "updates": {"element": e}}), ids, st.sampled_from(["", "a", "ghost"])),
    st.builds(lambda i: ("delete_threat", {"id": i}), ids),
)


def _start() -> ThreatModel:
    return make_doc(
        layers=[{"id": "edge", "name": "Edge"}],
        groups=[{"id": "grp", "name": "G"}],
        elements=[el("a"), el("b"), el("c")],
        data_flows=[flow("flow-1", "a", "b"), flow("flow-2", "b", "c")],
        relationships=[{"id": "rel-1", "type": "uses", "from": "a", "to": "c"}],
        trust_boundaries=[{"id": "boundary-1", "name": "TB", "contains": ["a"]}],
        threats=[threat("threat-1", element="b", flow="flow-2")],
    )


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(actions_strategy, max_size=12))
def test_any_sequence_of_graph_actions_leaves_a_document_that_reopens(steps: list[tuple[str, dict[str, Any]]]) -> None:
    document = _start()
    for name, payload in steps:
        prepared = REGISTRY.get(name).prepare({"action": name, **payload})  # type: ignore[union-attr]
        if isinstance(prepared, PrepareFailed):
            continue
        outcome = apply_call(document, name, prepared.input)
        if hasattr(outcome, "document"):
            validate_references(outcome.document)  # type: ignore[union-attr]
            document = outcome.document  # type: ignore[union-attr]
    reopened = read_text(to_yaml(document))
    assert reopened.model_dump(by_alias=True) == document.model_dump(by_alias=True)
    assert all(t.severity.value == t.severity.value.lower() for t in document.threats)


VALID_FIXTURES = sorted(p for p in Path(THF_FIXTURES).rglob("*.thf") if "invalid" not in p.parts)


@pytest.mark.parametrize("path", VALID_FIXTURES, ids=lambda p: p.name)
def test_every_read_tool_answers_on_every_valid_fixture(path: Path) -> None:
    document = read_file(path)
    calls: list[tuple[str, dict[str, Any]]] = [("get_document_summary", {}), ("search_component_catalog", {})]
    for kind in ("elements", "data_flows", "trust_boundaries", "threats", "layers", "groups", "relationships", "diagrams"):
        calls.append(("search_entities", {"kind": kind, "limit": 50}))
        for entity in getattr(document, kind)[:5]:
            calls.append(("get_entity", {"kind": kind, "id": entity.id}))

    async def run_all() -> None:
        for name, raw in calls:
            prepared = REGISTRY.get(name).prepare(raw)  # type: ignore[union-attr]
            assert isinstance(prepared, PreparedCall)
            outcome = await prepared.run(ToolContext(document=document))
            assert isinstance(outcome, ToolOk), (name, raw, outcome)
            lines = outcome.result.split("\n")
            assert lines[0] == START and lines[-1] == END and len(lines) == 3
            json.loads(lines[1])

    asyncio.run(run_all())
