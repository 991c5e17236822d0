"""Entity-level diff: kinds, field changes, order, and the one-line description."""

from __future__ import annotations

from stockade.thf import EntityChange, FieldChange, describe, diff, read_file
from tests.unit.thf.support import element, fixture_path, flow, model_of


def test_identical_models_have_no_changes() -> None:
    model = read_file(fixture_path("architecture-canonical-full.thf"))
    assert diff(model, model) == []


def test_added_removed_and_changed_entities_are_reported_in_section_then_document_order() -> None:
    a = model_of(
        elements=[element("a"), element("b"), element("c")],
        data_flows=[flow("f1", "a", "b")],
    )
    b = model_of(
        elements=[element("c", name="Renamed"), element("a"), element("d")],
        data_flows=[flow("f1", "a", "c", protocol="HTTPS")],
    )
    changes = diff(a, b)
    assert [(c.section, c.id, c.change) for c in changes] == [
        ("elements", "c", "changed"),
        ("elements", "d", "added"),
        ("elements", "b", "removed"),
        ("data_flows", "f1", "changed"),
    ]
    assert changes[0].fields == (FieldChange("name", "C", "Renamed"),)
    assert changes[3].fields == (FieldChange("to", "b", "c"), FieldChange("protocol", "", "HTTPS"))


def test_added_entity_lists_its_dumped_fields() -> None:
    a = model_of(elements=[element("a")])
    b = model_of(elements=[element("a"), element("n", position={"x": 1, "y": 2})])
    (change,) = diff(a, b)
    fields = {f.name: f.after for f in change.fields}
    assert fields["position"] == {"x": 1.0, "y": 2.0}
    assert all(f.before is None for f in change.fields)


def test_metadata_and_document_changes_have_an_empty_id() -> None:
    a = model_of()
    b = a.model_copy(
        update={"metadata": a.metadata.model_copy(update={"title": "New"}), "future": 1}
    )
    changes = diff(a, b)
    assert changes == [
        EntityChange("document", "", "changed", (FieldChange("future", None, 1),)),
        EntityChange("metadata", "", "changed", (FieldChange("title", "T", "New"),)),
    ]


def test_flow_endpoint_change_uses_the_file_key_name() -> None:
    a = model_of(elements=[element("a"), element("b")], data_flows=[flow("f", "a", "b")])
    b = model_of(elements=[element("a"), element("b")], data_flows=[flow("f", "b", "b")])
    assert diff(a, b)[0].fields == (FieldChange("from", "a", "b"),)


def test_severity_and_enums_are_dumped_as_plain_strings() -> None:
    threat = {"id": "t", "title": "T", "category": "Spoofing", "severity": "low"}
    a = model_of(threats=[threat])
    b = model_of(threats=[{**threat, "severity": "HIGH"}])
    assert diff(a, b)[0].fields == (FieldChange("severity", "low", "high"),)


def test_describe_gives_one_plain_line() -> None:
    a = model_of(elements=[element("a"), element("b")], data_flows=[flow("f", "a", "b")])
    b = model_of(
        elements=[element("a"), element("z", name="Zed")],
        data_flows=[flow("f", "a", "a", protocol="gRPC")],
    )
    lines = [describe(c) for c in diff(a, b)]
    assert lines == [
        "Added element 'z' (Zed)",
        "Removed element 'b' (B)",
        "Changed data flow 'f': to, protocol",
    ]
    assert describe(EntityChange("metadata", "", "changed", (FieldChange("title", 1, 2),))) == (
        "Changed metadata: title"
    )
