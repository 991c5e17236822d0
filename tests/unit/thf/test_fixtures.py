"""Every fixture in tests/fixtures/thf gives the outcome its MANIFEST states."""

from __future__ import annotations

import pytest

from stockade.thf import ThfError, ThfErrorCode, read_file, read_text, to_yaml
from tests.unit.thf.support import VALID_FIXTURES, fixture_bytes, fixture_path

# (fixture, code, exact message or None, section, id, field, reference)
INVALID = [
    (
        "unsupported-version",
        ThfErrorCode.UNSUPPORTED_VERSION,
        "Unsupported schema version '2.0'. Supported versions: [\"1.0\"]",
        None,
        None,
        "version",
        "2.0",
    ),
    (
        "duplicate-element-id",
        ThfErrorCode.DUPLICATE_ID,
        "Duplicate ID 'app' in section 'elements'",
        "elements",
        "app",
        None,
        None,
    ),
    (
        "unknown-flow-target",
        ThfErrorCode.INVALID_REFERENCE,
        "Invalid reference in 'data_flows[flow-1].to': 'missing-db' not found. "
        'Valid IDs: ["app"]',
        "data_flows",
        "flow-1",
        "data_flows[flow-1].to",
        "missing-db",
    ),
    ("truncated", ThfErrorCode.PARSE, None, None, None, None, None),
    ("missing-metadata", ThfErrorCode.MISSING_SECTION, None, "metadata", None, "metadata", None),
    (
        "duplicate-layer-id",
        ThfErrorCode.DUPLICATE_ID,
        "Duplicate ID 'data' in section 'layers'",
        "layers",
        "data",
        None,
        None,
    ),
    (
        "duplicate-group-id",
        ThfErrorCode.DUPLICATE_ID,
        "Duplicate ID 'cluster' in section 'groups'",
        "groups",
        "cluster",
        None,
        None,
    ),
    (
        "duplicate-relationship-id",
        ThfErrorCode.DUPLICATE_ID,
        "Duplicate ID 'rel-1' in section 'relationships'",
        "relationships",
        "rel-1",
        None,
        None,
    ),
    (
        "group-id-collides-with-element",
        ThfErrorCode.DUPLICATE_ID,
        "Duplicate ID 'web-app' in section 'groups'",
        "groups",
        "web-app",
        None,
        None,
    ),
    (
        "relationship-id-collides-with-flow",
        ThfErrorCode.DUPLICATE_ID,
        "Duplicate ID 'flow-1' in section 'relationships'",
        "relationships",
        "flow-1",
        None,
        None,
    ),
    (
        "unknown-element-layer",
        ThfErrorCode.INVALID_REFERENCE,
        "Invalid reference in 'elements[app].layer': 'presentation' not found. "
        'Valid IDs: ["data"]',
        "elements",
        "app",
        "elements[app].layer",
        "presentation",
    ),
    (
        "unknown-element-group",
        ThfErrorCode.INVALID_REFERENCE,
        "Invalid reference in 'elements[app].group': 'backend' not found. "
        'Valid IDs: ["frontend"]',
        "elements",
        "app",
        "elements[app].group",
        "backend",
    ),
    (
        "unknown-group-parent",
        ThfErrorCode.INVALID_REFERENCE,
        "Invalid reference in 'groups[cluster-1].parent': 'missing-cluster' not found. "
        'Valid IDs: ["cluster-1"]',
        "groups",
        "cluster-1",
        "groups[cluster-1].parent",
        "missing-cluster",
    ),
    (
        "unknown-relationship-endpoint",
        ThfErrorCode.INVALID_REFERENCE,
        "Invalid reference in 'relationships[rel-1].to': 'missing-service' not found. "
        'Valid IDs: ["app"]',
        "relationships",
        "rel-1",
        "relationships[rel-1].to",
        "missing-service",
    ),
    (
        "circular-group-nesting",
        ThfErrorCode.CIRCULAR_GROUP_NESTING,
        "Circular group nesting detected at group 'group-a'",
        "groups",
        "group-a",
        None,
        None,
    ),
]


@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_valid_fixture_loads(name: str) -> None:
    model = read_file(fixture_path(name))
    assert model.version == "1.0"


@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_valid_fixture_round_trips_to_an_equal_model(name: str) -> None:
    model = read_file(fixture_path(name), merge_sidecar=False)
    assert read_text(to_yaml(model)) == model


@pytest.mark.parametrize(
    ("name", "code", "message", "section", "entity_id", "field", "reference"), INVALID
)
def test_invalid_fixture_is_rejected_as_the_manifest_states(
    name: str,
    code: ThfErrorCode,
    message: str | None,
    section: str | None,
    entity_id: str | None,
    field: str | None,
    reference: str | None,
) -> None:
    with pytest.raises(ThfError) as caught:
        read_file(fixture_path(f"invalid/{name}.thf"))
    err = caught.value
    assert err.code is code
    if message is not None:
        assert err.message == message
        assert str(err) == message
    assert (err.section, err.id, err.field, err.reference) == (
        section,
        entity_id,
        field,
        reference,
    )


def test_invalid_reference_carries_the_valid_ids() -> None:
    with pytest.raises(ThfError) as caught:
        read_file(fixture_path("invalid/unknown-element-group.thf"))
    assert caught.value.valid_ids == ("frontend",)


@pytest.mark.parametrize("name", [row[0] for row in INVALID])
def test_error_messages_carry_no_path_and_no_parser_text(name: str) -> None:
    path = fixture_path(f"invalid/{name}.thf")
    with pytest.raises(ThfError) as caught:
        read_file(path)
    message = caught.value.message
    assert str(path.parent) not in message
    assert ".thf" not in message
    assert "\n" not in message
    assert "yaml_rs" not in message and "pydantic" not in message and "Traceback" not in message


def test_error_json_has_exactly_the_agreed_keys() -> None:
    with pytest.raises(ThfError) as caught:
        read_text(fixture_bytes("invalid/unknown-flow-target.thf"))
    assert caught.value.to_json() == {
        "code": "invalid_reference",
        "message": "Invalid reference in 'data_flows[flow-1].to': 'missing-db' not found. "
        'Valid IDs: ["app"]',
        "section": "data_flows",
        "id": "flow-1",
        "field": "data_flows[flow-1].to",
        "reference": "missing-db",
        "suggestion": None,
    }


def test_minimal_fixture_gets_the_documented_defaults() -> None:
    model = read_file(fixture_path("v1.0-minimal.thf"))
    assert model.metadata.description == ""
    assert model.metadata.created_by is None
    assert model.metadata.settings is None
    (app,) = model.elements
    assert (app.trust_zone, app.description, app.technologies) == ("", "", [])
    assert app.stores is None and app.position is None
    assert model.data_flows == model.trust_boundaries == model.threats == model.diagrams == []


def test_browser_roundtrip_fixture_keeps_its_dates_as_plain_strings() -> None:
    model = read_file(fixture_path("v1.0-browser-roundtrip.thf"))
    assert model.metadata.created == "2026-03-15"
    assert model.metadata.modified == "2026-03-20"


def test_browser_roundtrip_fixture_equals_the_canonical_model() -> None:
    browser = read_file(fixture_path("v1.0-browser-roundtrip.thf"))
    canonical = read_file(fixture_path("v1.0-canonical-full.thf"))
    assert browser == canonical


def test_canonical_full_fixture_threats_are_typed() -> None:
    model = read_file(fixture_path("v1.0-canonical-full.thf"))
    summary = [
        (
            t.id,
            t.category.value,
            t.severity.value,
            t.mitigation.status.value if t.mitigation else None,
        )
        for t in model.threats
    ]
    assert summary == [
        ("threat-1", "Tampering", "high", "mitigated"),
        ("threat-2", "Information Disclosure", "medium", "in_progress"),
        ("threat-3", "Elevation of Privilege", "critical", None),
    ]
    assert model.diagrams[0].viewport is not None
    assert model.diagrams[0].viewport.model_dump() == {"x": -40.0, "y": 25.0, "zoom": 0.85}


def test_large_e2e_fixture_has_its_documented_shape() -> None:
    model = read_file(fixture_path("e2e/large-model.thf"))
    assert len(model.elements) == 150 and len(model.data_flows) == 100
    assert model.elements[0].id == "element-000" and model.elements[149].id == "element-149"
    assert model.elements[16].position is not None
    assert (model.elements[16].position.x, model.elements[16].position.y) == (320.0, 260.0)
    assert model.data_flows[5].from_ == "element-005" and model.data_flows[5].to == "element-006"
    assert all(f.source_handle is None for f in model.data_flows)


def test_iso_timestamp_in_created_is_rejected_naming_the_field() -> None:
    text = fixture_bytes("v1.0-canonical-full.thf").decode()
    assert "created: 2026-03-15\n" in text
    bad = text.replace("created: 2026-03-15\n", "created: 2026-03-15T00:00:00.000Z\n")
    with pytest.raises(ThfError) as caught:
        read_text(bad)
    assert caught.value.code is ThfErrorCode.INVALID_FIELD
    assert caught.value.field == "metadata.created"
    assert "metadata.created" in caught.value.message
    assert "2026-03-15" in caught.value.message


def test_iso_timestamp_in_browser_output_is_rejected_too() -> None:
    text = fixture_bytes("v1.0-browser-roundtrip.thf").decode()
    bad = text.replace("created: 2026-03-15", "created: 2026-03-15T00:00:00.000Z", 1)
    assert bad != text
    with pytest.raises(ThfError) as caught:
        read_text(bad)
    assert caught.value.field == "metadata.created"
