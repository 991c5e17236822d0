"""Starter templates: six valid, canonical models with the shape spec §4.4 describes."""

from __future__ import annotations

import datetime as dt

import pytest

from stockade.thf.model import MitigationStatus, Severity, ThreatModel
from stockade.thf.reader import read_file
from stockade.thf.templates import get_template, list_templates, new_from_template

# id → (metadata title, elements, flows)
EXPECTED = {
    "ecommerce-platform": ("E-Commerce Platform", 13, 13),
    "cloud-microservices": ("Cloud Microservices", 13, 12),
    "mobile-banking": ("Mobile Banking Application", 12, 12),
    "saas-platform": ("SaaS Platform", 13, 12),
    "iot-smart-building": ("IoT Smart Building", 12, 12),
    "healthcare-system": ("Healthcare Data Platform", 12, 12),
}
TODAY = dt.date(2027, 5, 6)


def _load(template_id: str) -> ThreatModel:
    return read_file(get_template(template_id).path)


def test_six_templates_in_picker_order_with_bundled_files() -> None:
    templates = list_templates()
    assert [t.id for t in templates] == list(EXPECTED)
    for template in templates:
        assert template.path.is_file()
        assert template.name and template.description


@pytest.mark.parametrize("template_id", list(EXPECTED))
def test_template_has_the_documented_shape(template_id: str) -> None:
    model = _load(template_id)
    title, elements, flows = EXPECTED[template_id]
    assert model.metadata.title == title
    assert model.metadata.author == ""
    assert len(model.metadata.description.strip().splitlines()) == 2
    assert (len(model.elements), len(model.data_flows)) == (elements, flows)
    assert len(model.trust_boundaries) == 3
    assert len(model.threats) == 5
    assert (model.layers, model.groups, model.relationships) == ([], [], [])
    (diagram,) = model.diagrams
    assert (diagram.id, diagram.name) == ("main-dfd", "Level 0 DFD")
    assert diagram.viewport is not None
    assert (diagram.viewport.x, diagram.viewport.y, diagram.viewport.zoom) == (0.0, 0.0, 1.0)
    assert all(e.position is not None and e.description for e in model.elements)
    assert [f.flow_number for f in model.data_flows] == list(range(1, flows + 1))
    assert all(f.source_handle and f.target_handle for f in model.data_flows)
    for boundary in model.trust_boundaries:
        assert boundary.position and boundary.size and boundary.fill_color and boundary.contains
    assert all(t.mitigation is not None and t.mitigation.description for t in model.threats)


@pytest.mark.parametrize("template_id", list(EXPECTED))
def test_boundary_rectangles_enclose_their_members(template_id: str) -> None:
    model = _load(template_id)
    positions = {e.id: e.position for e in model.elements}
    for boundary in model.trust_boundaries:
        assert boundary.position is not None and boundary.size is not None
        for member in boundary.contains:
            pos = positions[member]
            assert pos is not None
            assert boundary.position.x <= pos.x <= boundary.position.x + boundary.size.width
            assert boundary.position.y <= pos.y <= boundary.position.y + boundary.size.height


def test_severity_and_status_mixes_match_the_descriptions() -> None:
    ecommerce = _load("ecommerce-platform")
    statuses = sorted(t.mitigation.status for t in ecommerce.threats if t.mitigation)
    assert statuses.count(MitigationStatus.MITIGATED) == 4
    assert statuses.count(MitigationStatus.IN_PROGRESS) == 1
    banking = _load("mobile-banking")
    assert sum(t.severity is Severity.CRITICAL for t in banking.threats) == 3
    card = next(t for t in banking.threats if t.id == "threat-card-data-exposure")
    assert card.element is None and card.flow is not None
    health = _load("healthcare-system")
    assert all(
        t.mitigation and t.mitigation.status is MitigationStatus.MITIGATED for t in health.threats
    )


@pytest.mark.parametrize("template_id", list(EXPECTED))
def test_template_files_are_in_canonical_form(template_id: str) -> None:
    from stockade.thf.writer import to_yaml

    path = get_template(template_id).path
    assert to_yaml(read_file(path)).encode("utf-8") == path.read_bytes()


def test_new_from_template_dates_the_document_today() -> None:
    model = new_from_template("saas-platform", TODAY)
    assert (model.metadata.created, model.metadata.modified) == ("2027-05-06", "2027-05-06")
    assert model.metadata.title == "SaaS Platform"
    assert len(model.elements) == 13


def test_unknown_template_id_raises_key_error_naming_the_known_ones() -> None:
    with pytest.raises(KeyError, match=r"no-such-template.*ecommerce-platform"):
        new_from_template("no-such-template", TODAY)
