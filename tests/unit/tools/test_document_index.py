"""The read tools' per-section tables: identity, fresh answers after edits, bounds, scan parity."""

from __future__ import annotations

import gc
import json
import weakref
from itertools import pairwise
from typing import Any

from stockade.thf.model import SECTION_NAMES, ThreatModel
from stockade.tools import actions
from stockade.tools.document_index import (
    CACHED_SECTIONS,
    cached_section_count,
    section_index,
)
from stockade.tools.registry import ToolRegistry
from stockade.tools.runtime import ToolOk
from tests.unit.tools.conftest import call, el, flow, make_doc, threat


def read(registry: ToolRegistry, document: ThreatModel, name: str, raw: dict[str, Any]) -> dict[str, Any]:
    outcome = call(registry, name, raw, document)
    assert isinstance(outcome, ToolOk), outcome
    parsed: dict[str, Any] = json.loads(outcome.result.split("\n")[1])
    return parsed


def entity(registry: ToolRegistry, document: ThreatModel, kind: str, entity_id: str) -> dict[str, Any]:
    found: dict[str, Any] = read(registry, document, "get_entity", {"kind": kind, "id": entity_id})["entity"]
    return found


def result_ids(registry: ToolRegistry, document: ThreatModel, raw: dict[str, Any]) -> list[str]:
    return [r["id"] for r in read(registry, document, "search_entities", raw)["results"]]


def fresh_copy(document: ThreatModel) -> ThreatModel:
    return document.model_copy(update={name: list(getattr(document, name)) for name in SECTION_NAMES})


def test_one_section_list_gets_one_set_of_tables(shop: ThreatModel) -> None:
    assert section_index(shop, "elements") is section_index(shop, "elements")
    assert section_index(shop, "elements") is not section_index(shop, "data_flows")


def test_equal_content_in_new_lists_gets_its_own_tables(shop: ThreatModel) -> None:
    assert section_index(fresh_copy(shop), "elements") is not section_index(shop, "elements")


def test_an_edit_keeps_the_tables_of_sections_it_did_not_touch(shop: ThreatModel) -> None:
    before = {kind: section_index(shop, kind) for kind in SECTION_NAMES}
    outcome = actions.add_threat(shop, actions.NewThreat.model_validate(
        {"title": "New", "category": "Tampering", "severity": "low", "description": "d", "element": "db"}))
    assert isinstance(outcome, actions.ActionResult)
    after = {kind: section_index(outcome.document, kind) for kind in SECTION_NAMES}
    assert after["threats"] is not before["threats"]
    assert all(after[kind] is before[kind] for kind in SECTION_NAMES if kind != "threats")


def test_get_entity_on_an_edited_document_sees_the_edit_and_the_old_one_does_not(
    registry: ToolRegistry, shop: ThreatModel
) -> None:
    assert entity(registry, shop, "elements", "db")["incoming_flow_ids"] == ["flow-2"]
    outcome = actions.add_data_flow(shop, actions.NewDataFlow.model_validate({"from": "browser", "to": "db"}))
    assert isinstance(outcome, actions.ActionResult)
    edited = outcome.document
    assert entity(registry, edited, "elements", "db")["incoming_flow_ids"] == ["flow-2", outcome.new_id]
    assert entity(registry, edited, "elements", "browser")["outgoing_flow_ids"] == ["flow-1", outcome.new_id]
    assert entity(registry, shop, "elements", "db")["incoming_flow_ids"] == ["flow-2"]
    assert result_ids(registry, edited, {"kind": "data_flows", "references": "db"}) == ["flow-2", outcome.new_id]
    assert result_ids(registry, shop, {"kind": "data_flows", "references": "db"}) == ["flow-2"]


def test_text_search_on_an_edited_document_finds_the_new_text_only_there(
    registry: ToolRegistry, shop: ThreatModel
) -> None:
    query = {"kind": "elements", "text": "LEDGER"}
    assert result_ids(registry, shop, query) == []
    outcome = actions.update_element(shop, "api", actions.ElementUpdates.model_validate({"name": "Ledger API"}))
    assert isinstance(outcome, actions.ActionResult)
    assert result_ids(registry, outcome.document, query) == ["api"]
    assert result_ids(registry, shop, query) == []


def test_deleted_entities_are_unknown_on_the_new_document_only(registry: ToolRegistry, shop: ThreatModel) -> None:
    entity(registry, shop, "threats", "threat-1")
    outcome = actions.delete_threat(shop, "threat-1")
    assert isinstance(outcome, actions.ActionResult)
    failed = call(registry, "get_entity", {"kind": "threats", "id": "threat-1"}, outcome.document)
    assert not isinstance(failed, ToolOk)
    assert entity(registry, outcome.document, "elements", "api")["threat_ids"] == []
    assert entity(registry, shop, "elements", "api")["threat_ids"] == ["threat-1"]


def test_a_section_mutated_in_place_is_indexed_again_not_read_stale(registry: ToolRegistry) -> None:
    document = make_doc(elements=[el("a"), el("b")], data_flows=[flow("f1", "a", "b")])
    assert entity(registry, document, "elements", "b")["incoming_flow_ids"] == ["f1"]
    # Against the model's rules, but a stale answer would be worse than the rebuild.
    document.data_flows.append(make_doc(data_flows=[flow("f2", "a", "b")]).data_flows[0])
    assert entity(registry, document, "elements", "b")["incoming_flow_ids"] == ["f1", "f2"]


def test_the_cache_is_bounded_and_forgets_the_oldest_sections(shop: ThreatModel) -> None:
    first = section_index(shop, "elements")
    for _ in range(CACHED_SECTIONS):
        section_index(fresh_copy(shop), "elements")
    assert cached_section_count() <= CACHED_SECTIONS
    assert section_index(shop, "elements") is not first


def test_the_cache_never_keeps_a_document_alive(registry: ToolRegistry, shop: ThreatModel) -> None:
    document = fresh_copy(shop)
    for kind in ("elements", "data_flows", "threats"):
        read(registry, document, "search_entities", {"kind": kind, "text": "a"})
    entity(registry, document, "elements", "api")
    alive = weakref.ref(document)
    del document
    gc.collect()
    assert alive() is None


def test_derived_ids_match_a_scan_on_awkward_shapes(registry: ToolRegistry) -> None:
    document = make_doc(
        elements=[el("a"), el("b"), el("a", name="Second A")],
        data_flows=[flow("loop", "a", "a"), flow("f1", "b", "a"), flow("f2", "a", "b")],
        trust_boundaries=[{"id": "tb", "name": "TB", "contains": ["a", "a", "b"]},
                          {"id": "tb2", "name": "TB2", "contains": ["b"]}],
        threats=[threat("t1", element="a", flow="loop"), threat("t2", flow="loop"), threat("t3", element="b")],
    )
    a = entity(registry, document, "elements", "a")
    assert a["name"] == "A"  # duplicate ids: the first one is the one read
    assert a["incoming_flow_ids"] == ["loop", "f1"]
    assert a["outgoing_flow_ids"] == ["loop", "f2"]
    assert a["trust_boundary_ids"] == ["tb"]
    assert a["threat_ids"] == ["t1"]
    assert entity(registry, document, "data_flows", "loop")["threat_ids"] == ["t1", "t2"]
    assert result_ids(registry, document, {"kind": "data_flows", "references": "a"}) == ["loop", "f1", "f2"]
    assert result_ids(registry, document, {"kind": "trust_boundaries", "references": "a"}) == ["tb"]
    assert result_ids(registry, document, {"kind": "threats", "references": "loop"}) == ["t1", "t2"]
    assert result_ids(registry, document, {"kind": "threats", "references": "a", "text": "T1"}) == ["t1"]


def test_many_elements_are_counted_past_the_list_cap(registry: ToolRegistry) -> None:
    flows = [flow(f"f{i}", "hub", "hub") for i in range(25)]
    document = make_doc(elements=[el("hub")], data_flows=flows)
    hub = entity(registry, document, "elements", "hub")
    assert hub["incoming_flow_ids"] == [f"f{i}" for i in range(10)]
    assert hub["incoming_flow_ids_total"] == 25
    assert hub["outgoing_flow_ids_total"] == 25


def test_the_first_lookup_scans_and_later_ones_use_the_table_with_the_same_answers() -> None:
    from stockade.tools.document_index import SCANS_BEFORE_TABLE

    document = make_doc(
        elements=[el("a"), el("b"), el("a", name="Second A")],
        data_flows=[flow("loop", "a", "a"), flow("f1", "b", "a"), flow("f2", "a", "b")],
        trust_boundaries=[{"id": "tb", "name": "TB", "contains": ["a", "a", "b"]},
                          {"id": "tb2", "name": "TB2", "contains": ["b"]}],
        threats=[threat("t1", element="a", flow="loop"), threat("t2", flow="loop"), threat("t3", element="b")],
    )
    cases = [
        ("data_flows", "to", "a", [0, 1]), ("data_flows", "from_", "a", [0, 2]),
        ("data_flows", "to", "nowhere", []), ("trust_boundaries", "contains", "a", [0]),
        ("trust_boundaries", "contains", "b", [0, 1]), ("threats", "element", "a", [0]),
        ("threats", "flow", "loop", [0, 1]),
    ]
    for kind, field, value, expected in cases:
        index = section_index(fresh_copy(document), kind)
        answers = [index.holding(field, value) for _ in range(SCANS_BEFORE_TABLE + 2)]
        assert answers == [expected] * len(answers), (kind, field, value)
        assert field in index._reverse  # the table was built after the scans
    elements = section_index(fresh_copy(document), "elements")
    assert [elements.position("a") for _ in range(3)] == [0, 0, 0]
    assert [elements.position("zz") for _ in range(3)] == [-1, -1, -1]
    flows = section_index(fresh_copy(document), "data_flows")
    assert [flows.referrers("a") for _ in range(3)] == [[0, 1, 2]] * 3
    # A table's lists are not handed out: changing an answer changes no later answer.
    flows.holding("to", "a").append(99)
    assert flows.holding("to", "a") == [0, 1]


def _varied_document() -> ThreatModel:
    """A valid document whose references repeat, miss, and point at every kind."""
    return make_doc(
        layers=[{"id": "edge", "name": "Edge"}, {"id": "core", "name": "Core"}],
        groups=[{"id": "g1", "name": "G1"}, {"id": "g2", "name": "G2", "parent": "g1"}],
        elements=[el("a", layer="edge", group="g1"), el("b", layer="core"), el("c", group="g2"),
                  el("d", subtype=None, tags=["x"], stores=["s"], description="")],
        data_flows=[flow("loop", "a", "a"), flow("f1", "b", "a"), flow("f2", "a", "b"),
                    flow("f3", "c", "d", data=["token"])],
        relationships=[{"id": "r1", "type": "uses", "from": "a", "to": "c"}],
        trust_boundaries=[{"id": "tb", "name": "TB", "contains": ["a", "a", "b"]},
                          {"id": "tb2", "name": "TB2", "contains": ["b", "d"]}],
        threats=[threat("t1", element="a", flow="loop"), threat("t2", flow="loop"),
                 threat("t3", element="b", mitigation={"status": "mitigated", "description": "Fix"})],
    )


def test_a_document_just_read_answers_its_first_lookups_from_the_kept_columns() -> None:
    from stockade.thf.reader import read_text
    from stockade.thf.writer import to_yaml

    original = _varied_document()
    just_read = read_text(to_yaml(original))
    lookups = [
        ("data_flows", "to", "a"), ("data_flows", "from_", "a"), ("data_flows", "to", "zz"),
        ("trust_boundaries", "contains", "b"), ("threats", "element", "a"),
        ("threats", "flow", "loop"), ("elements", "layer", "edge"), ("elements", "group", "g2"),
        ("groups", "parent", "g1"), ("relationships", "from_", "a"),
    ]
    for kind, field, value in lookups:
        read_index = section_index(just_read, kind)
        assert read_index._columns, kind  # started from what validation read
        scanned = section_index(fresh_copy(original), kind)
        assert not scanned._columns
        assert [read_index.holding(field, value) for _ in range(3)] == [
            scanned.holding(field, value) for _ in range(3)
        ], (kind, field, value)
    for kind in SECTION_NAMES:
        read_index = section_index(just_read, kind)
        scanned = section_index(fresh_copy(original), kind)
        for entity_id in [*(e.id for e in getattr(original, kind)), "missing"]:
            assert read_index.position(entity_id) == scanned.position(entity_id), (kind, entity_id)
            assert read_index.referrers(entity_id) == scanned.referrers(entity_id), (kind, entity_id)


def test_section_texts_are_each_entitys_haystack() -> None:
    from stockade.tools.document_index import SectionIndex, raw_haystack, section_texts

    document = _varied_document()
    document = document.model_copy(
        update={"elements": [*document.elements, document.elements[0].model_copy(
            update={"subtype": "Sub", "technologies": ["Go", "ÉCOLE"], "description": "Line 1\nΣΑΣ"})]}
    )
    for kind in SECTION_NAMES:
        section = getattr(document, kind)
        assert section_texts(kind, section) == [raw_haystack(kind, e) for e in section], kind
        text, starts = SectionIndex(kind, section).search_text()
        assert [text[a:b - 1] for a, b in pairwise(starts)] == [
            raw_haystack(kind, e).lower() for e in section], kind
