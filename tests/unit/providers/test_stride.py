"""The STRIDE rules engine: roles, rule tables, boundary bump, de-duplication, order."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.catalog import StrideRole, default_catalog
from stockade.catalog.stride import (
    ProposedThreat,
    analyze,
    by_severity,
    crosses_boundary,
    fallback_role,
)
from stockade.thf.model import Severity, StrideCategory, ThreatModel
from tests.conftest import examples

C = StrideCategory


def model(
    elements: list[tuple[str, str]],
    flows: list[tuple[str, str, str]] = (),  # type: ignore[assignment]
    boundaries: list[tuple[str, list[str]]] = (),  # type: ignore[assignment]
    threats: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> ThreatModel:
    return ThreatModel.model_validate(
        {
            "version": "1.0",
            "metadata": {
                "title": "t",
                "author": "a",
                "created": "2026-01-01",
                "modified": "2026-01-01",
            },
            "elements": [{"id": i, "type": t, "name": i.upper()} for i, t in elements],
            "data_flows": [{"id": i, "from": a, "to": b} for i, a, b in flows],
            "trust_boundaries": [{"id": i, "name": i, "contains": m} for i, m in boundaries],
            "threats": [
                {"id": f"threat-{n}", "title": "x", "severity": "low", **t}
                for n, t in enumerate(threats, start=1)
            ],
        }
    )


def categories(proposals: list[ProposedThreat], target: str) -> list[StrideCategory]:
    return [p.category for p in proposals if p.target == target]


def test_each_role_gets_its_rules_in_table_order() -> None:
    proposals = analyze(
        model([("svc", "process"), ("db", "sql_database"), ("user", "web_browser"), ("n", "text")])
    )
    assert categories(proposals, "svc") == [
        C.SPOOFING, C.TAMPERING, C.REPUDIATION, C.INFORMATION_DISCLOSURE,
        C.DENIAL_OF_SERVICE, C.ELEVATION_OF_PRIVILEGE,
    ]  # fmt: skip
    assert categories(proposals, "db") == [
        C.TAMPERING,
        C.INFORMATION_DISCLOSURE,
        C.DENIAL_OF_SERVICE,
    ]
    assert categories(proposals, "user") == [C.SPOOFING, C.REPUDIATION]
    assert categories(proposals, "n") == []


def test_unknown_element_types_are_treated_as_services() -> None:
    assert len(analyze(model([("x", "quantum_router")]))) == 6


def test_base_severities() -> None:
    proposals = analyze(model([("svc", "process"), ("db", "data_store"), ("u", "external_entity")]))
    severity = {(p.target, p.category): p.severity for p in proposals}
    assert severity[("svc", C.SPOOFING)] is Severity.HIGH
    assert severity[("svc", C.REPUDIATION)] is Severity.MEDIUM
    assert severity[("db", C.INFORMATION_DISCLOSURE)] is Severity.HIGH
    assert severity[("db", C.DENIAL_OF_SERVICE)] is Severity.MEDIUM
    assert severity[("u", C.REPUDIATION)] is Severity.MEDIUM


def test_flow_crossing_a_boundary_is_one_level_more_severe() -> None:
    doc = model(
        [("a", "process"), ("b", "process"), ("c", "process")],
        flows=[("inside", "a", "b"), ("across", "a", "c"), ("loose", "c", "c")],
        boundaries=[("zone", ["a", "b"])],
    )
    flows = {(p.target, p.category): p.severity for p in analyze(doc) if p.flow}
    assert flows[("inside", C.DENIAL_OF_SERVICE)] is Severity.MEDIUM
    assert flows[("across", C.DENIAL_OF_SERVICE)] is Severity.HIGH
    assert flows[("across", C.TAMPERING)] is Severity.HIGH  # high stays high
    assert flows[("loose", C.DENIAL_OF_SERVICE)] is Severity.MEDIUM  # both ends unbounded
    assert crosses_boundary(doc, doc.data_flows[1]) and not crosses_boundary(doc, doc.data_flows[0])


def test_the_first_boundary_listing_an_element_decides() -> None:
    doc = model(
        [("a", "process"), ("b", "process")],
        flows=[("f", "a", "b")],
        boundaries=[("one", ["a", "b"]), ("two", ["b"])],
    )
    assert not crosses_boundary(doc, doc.data_flows[0])


def test_existing_threats_suppress_matching_rules_only() -> None:
    doc = model(
        [("svc", "process")],
        flows=[("f", "svc", "svc")],
        threats=[
            {"category": "Spoofing", "element": "svc"},
            {"category": "Tampering", "element": "svc", "flow": "f"},  # counts for svc only
            {"category": "Denial of Service", "flow": "f"},
            {"category": "Repudiation"},  # no target: covers nothing
        ],
    )
    proposals = analyze(doc)
    assert C.SPOOFING not in categories(proposals, "svc")
    assert C.TAMPERING not in categories(proposals, "svc")
    assert C.REPUDIATION in categories(proposals, "svc")
    assert categories(proposals, "f") == [C.TAMPERING, C.INFORMATION_DISCLOSURE]


def test_elements_come_before_flows_and_text_names_the_endpoints() -> None:
    doc = model([("a", "process"), ("b", "data_store")], flows=[("f", "a", "b")])
    proposals = analyze(doc)
    kinds = ["flow" if p.flow else "element" for p in proposals]
    assert kinds == sorted(kinds, key=lambda k: k == "flow")
    flow = next(p for p in proposals if p.flow == "f")
    assert "A" in flow.title and "B" in flow.title
    assert flow.element is None


def test_long_names_are_shortened_in_titles() -> None:
    doc = ThreatModel.model_validate(
        {
            "version": "1.0",
            "metadata": {
                "title": "t",
                "author": "a",
                "created": "2026-01-01",
                "modified": "2026-01-01",
            },
            "elements": [{"id": "x", "type": "process", "name": "n" * 5000}],
        }
    )
    assert all(len(p.title) <= 200 for p in analyze(doc))


def test_analysis_is_deterministic_and_does_not_change_the_document() -> None:
    doc = model([("a", "process"), ("b", "sql_database")], flows=[("f", "a", "b")])
    before = doc.model_dump()
    assert analyze(doc) == analyze(doc)
    assert doc.model_dump() == before


def test_by_severity_is_stable_within_a_severity() -> None:
    proposals = analyze(model([("a", "process"), ("b", "process")]))
    ordered = by_severity(proposals)
    ranks = [list(Severity).index(p.severity) for p in ordered]
    assert ranks == sorted(ranks)
    highs = [p for p in ordered if p.severity is Severity.HIGH]
    assert highs == [p for p in proposals if p.severity is Severity.HIGH]


TYPES = ["process", "sql_database", "web_browser", "text", "cache", "api_client", "weird_thing"]


@st.composite
def documents(draw: st.DrawFn) -> ThreatModel:
    count = draw(st.integers(min_value=0, max_value=6))
    ids = [f"e{i}" for i in range(count)]
    elements = [(i, draw(st.sampled_from(TYPES))) for i in ids]
    flows = []
    if ids:
        for n in range(draw(st.integers(min_value=0, max_value=5))):
            flows.append((f"f{n}", draw(st.sampled_from(ids)), draw(st.sampled_from(ids))))
    boundaries = [
        (f"b{n}", draw(st.lists(st.sampled_from(ids), unique=True)) if ids else [])
        for n in range(draw(st.integers(min_value=0, max_value=3)))
    ]
    targets = ids + [f[0] for f in flows]
    threats = []
    if targets:
        for _ in range(draw(st.integers(min_value=0, max_value=6))):
            target = draw(st.sampled_from(targets))
            key = "flow" if target.startswith("f") else "element"
            threats.append({"category": draw(st.sampled_from(list(C))).value, key: target})
    return model(elements, flows, boundaries, threats)


@settings(max_examples=examples(150), deadline=None)
@given(documents())
def test_proposals_never_repeat_a_covered_or_proposed_pair(doc: ThreatModel) -> None:
    proposals = analyze(doc)
    keys = [(p.target, p.category) for p in proposals]
    assert len(keys) == len(set(keys))
    covered = {(t.element or t.flow, t.category) for t in doc.threats}
    assert not set(keys) & covered
    element_ids = {e.id for e in doc.elements}
    flow_ids = {f.id for f in doc.data_flows}
    for p in proposals:
        assert (p.element is None) != (p.flow is None)
        assert p.element in element_ids if p.element else p.flow in flow_ids
        assert 0 < len(p.title) <= 200 and p.description
    assert analyze(doc) == proposals


def test_the_fallback_roles_agree_with_the_bundled_catalog() -> None:
    # The fallback copies the catalog's roles so analysis survives a damaged catalog file;
    # this keeps the copy from drifting when the catalog changes.
    for entry in default_catalog().entries:
        assert fallback_role(entry.id) is entry.stride_role, entry.id
    assert fallback_role("no_such_type") is StrideRole.SERVICE
