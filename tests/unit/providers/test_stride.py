"""The STRIDE rules: roles, risk factors from the model, severity from the score, wording, order."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from stockade.catalog import StrideRole, default_catalog
from stockade.catalog.stride import (
    ProposedThreat,
    ProtocolFamily,
    Sensitivity,
    analyze,
    crosses_boundary,
    fallback_role,
    protocol_family,
    sensitivity_of,
    severity_for,
)
from stockade.thf.model import Severity, StrideCategory, ThreatModel
from tests.conftest import examples

C = StrideCategory


def model(
    elements: list[tuple[str, str]] | list[dict[str, Any]],
    flows: list[tuple[str, str, str]] | list[dict[str, Any]] = (),  # type: ignore[assignment]
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
            "elements": [e if isinstance(e, dict) else {"id": e[0], "type": e[1],
                                                         "name": e[0].upper()}
                         for e in elements],
            "data_flows": [f if isinstance(f, dict) else {"id": f[0], "from": f[1], "to": f[2]}
                           for f in flows],
            "trust_boundaries": [{"id": i, "name": f"Zone {i}", "contains": m}
                                 for i, m in boundaries],
            "threats": [
                {"id": f"threat-{n}", "title": "x", "severity": "low", **t}
                for n, t in enumerate(threats, start=1)
            ],
        }
    )


def by_key(proposals: list[ProposedThreat]) -> dict[tuple[str, StrideCategory], ProposedThreat]:
    return {(p.target, p.category): p for p in proposals}


def categories(proposals: list[ProposedThreat], target: str) -> set[StrideCategory]:
    return {p.category for p in proposals if p.target == target}


def test_each_role_gets_its_categories() -> None:
    proposals = analyze(model([("svc", "process"), ("db", "sql_database"), ("user", "web_browser"),
                               ("n", "text")], [("f", "user", "svc")]))
    assert categories(proposals, "svc") == set(C)
    assert categories(proposals, "db") == {C.TAMPERING, C.INFORMATION_DISCLOSURE,
                                           C.DENIAL_OF_SERVICE}
    assert categories(proposals, "user") == {C.SPOOFING, C.REPUDIATION}
    assert categories(proposals, "n") == set()
    assert categories(proposals, "f") == {C.TAMPERING, C.INFORMATION_DISCLOSURE,
                                          C.DENIAL_OF_SERVICE}


def test_a_third_party_service_is_treated_as_an_external_party() -> None:
    doc = model([{"id": "pay", "type": "api_endpoint", "name": "Payments", "trust_zone": "external"},
                 {"id": "api", "type": "api_gateway", "name": "API", "trust_zone": "internal"}])
    proposals = analyze(doc)
    assert categories(proposals, "pay") == {C.SPOOFING, C.REPUDIATION}
    assert categories(proposals, "api") == set(C)


def test_unknown_element_types_are_treated_as_services() -> None:
    assert categories(analyze(model([("x", "weird_thing")])), "x") == set(C)


def test_severity_follows_the_score() -> None:
    assert [severity_for(s) for s in (0, 2, 4, 6, 9, 20)] == [
        Severity.INFO, Severity.LOW, Severity.MEDIUM, Severity.HIGH, Severity.CRITICAL,
        Severity.CRITICAL]
    for proposal in analyze(model([("svc", "process"), ("db", "sql_database")],
                                  [("f", "svc", "db")])):
        assert proposal.severity is severity_for(proposal.score)


def test_a_crossing_unencrypted_flow_outranks_the_same_flow_inside_one_zone() -> None:
    flows = [{"id": "inside", "from": "a", "to": "b", "protocol": "HTTPS"},
             {"id": "crossing", "from": "a", "to": "c", "protocol": "HTTP"}]
    doc = model([("a", "process"), ("b", "process"), ("c", "process")], flows,
                [("z1", ["a", "b"]), ("z2", ["c"])])
    found = by_key(analyze(doc))
    inside, crossing = found[("inside", C.TAMPERING)], found[("crossing", C.TAMPERING)]
    assert crossing.score > inside.score
    assert any("crosses" in r or "goes from Zone z1 into Zone z2" in r for r in crossing.reasons)
    assert any("HTTP is not encrypted" in r for r in crossing.reasons)
    assert SEVERITY_ORDER.index(crossing.severity) < SEVERITY_ORDER.index(inside.severity)


SEVERITY_ORDER = list(Severity)


def test_sensitive_data_and_missing_encryption_at_rest_raise_disclosure() -> None:
    doc = model([{"id": "plain", "type": "cache", "name": "Plain", "stores": ["sessions"],
                  "encryption": "TLS in transit"},
                 {"id": "sealed", "type": "cache", "name": "Sealed", "stores": ["sessions"],
                  "encryption": "AES-256 at rest"},
                 {"id": "dull", "type": "cache", "name": "Dull", "stores": ["thumbnails"],
                  "encryption": "AES-256 at rest"}])
    found = by_key(analyze(doc))
    plain = found[("plain", C.INFORMATION_DISCLOSURE)]
    sealed = found[("sealed", C.INFORMATION_DISCLOSURE)]
    dull = found[("dull", C.INFORMATION_DISCLOSURE)]
    assert plain.score > sealed.score > dull.score
    assert any("no encryption at rest" in r and "TLS in transit" in r for r in plain.reasons)
    assert any("credentials (sessions)" in r for r in sealed.reasons)


def test_an_internet_facing_service_outranks_an_internal_one() -> None:
    doc = model([{"id": "user", "type": "web_browser", "name": "User", "trust_zone": "external"},
                 ("edge", "web_server"), ("inner", "web_server")],
                [{"id": "f1", "from": "user", "to": "edge", "authenticated": True,
                  "data": ["credentials"]},
                 {"id": "f2", "from": "edge", "to": "inner", "authenticated": True}],
                [("z", ["edge", "inner"])])
    found = by_key(analyze(doc))
    for category in (C.SPOOFING, C.DENIAL_OF_SERVICE, C.ELEVATION_OF_PRIVILEGE):
        assert found[("edge", category)].score > found[("inner", category)].score, category
    assert "straight from User" in " ".join(found[("edge", C.SPOOFING)].reasons)


def test_public_unauthenticated_content_lowers_spoofing_and_privilege() -> None:
    doc = model([{"id": "user", "type": "web_browser", "name": "User", "trust_zone": "external"},
                 ("cdn", "cdn"), ("api", "api_gateway")],
                [{"id": "f1", "from": "user", "to": "cdn", "data": ["images"]},
                 {"id": "f2", "from": "user", "to": "api", "authenticated": True,
                  "data": ["access_token"]}])
    found = by_key(analyze(doc))
    assert found[("cdn", C.SPOOFING)].score < found[("api", C.SPOOFING)].score
    assert any("public and unauthenticated" in r for r in found[("cdn", C.SPOOFING)].reasons)


def test_titles_and_descriptions_name_the_target_boundary_and_a_catalog_mitigation() -> None:
    doc = model([{"id": "cache", "type": "cache", "name": "Session Cache", "stores": ["sessions"],
                  "technologies": ["redis"]},
                 {"id": "app", "type": "web_server", "name": "Storefront"}],
                [{"id": "f", "name": "Session reads", "from": "app", "to": "cache",
                  "protocol": "RESP", "data": ["session_id"]}],
                [("data", ["cache"])])
    found = by_key(analyze(doc))
    store = found[("cache", C.INFORMATION_DISCLOSURE)]
    assert "Session Cache" in store.title and "sessions" in store.title
    assert "Where: Session Cache (cache), in Zone data." in store.description
    assert "Redis" in store.mitigation  # the technology row, not the generic role text
    assert store.description.endswith("Mitigation: " + store.mitigation)
    flow = found[("f", C.INFORMATION_DISCLOSURE)]
    assert flow.title == "Interception of 'Session reads' from Storefront to Session Cache"
    assert "crossing into Zone data from outside any trust boundary" in flow.description
    assert "TLS" in flow.mitigation


def test_protocols_and_data_are_classified() -> None:
    assert protocol_family("HTTPS (pinned)") is ProtocolFamily.ENCRYPTED
    assert protocol_family("PostgreSQL/TLS") is ProtocolFamily.ENCRYPTED
    assert protocol_family("SAML/OIDC") is ProtocolFamily.ENCRYPTED
    assert protocol_family("HTTP") is ProtocolFamily.PLAINTEXT
    assert protocol_family("RTSP") is ProtocolFamily.PLAINTEXT
    assert protocol_family("Zigbee") is ProtocolFamily.UNKNOWN
    assert protocol_family("") is ProtocolFamily.UNKNOWN
    found = sensitivity_of(["access_token", "customer_pii", "order_total", "firmware_images",
                            "thumbnails"])
    assert found == {Sensitivity.CREDENTIALS: ("access_token",),
                     Sensitivity.PERSONAL: ("customer_pii",),
                     Sensitivity.FINANCIAL: ("order_total",),
                     Sensitivity.SOFTWARE: ("firmware_images",)}


def test_the_first_boundary_listing_an_element_decides() -> None:
    doc = model([("a", "process"), ("b", "process")], [("f", "a", "b")],
                [("z1", ["a", "b"]), ("z2", ["b"])])
    assert not crosses_boundary(doc, doc.data_flows[0])


def test_existing_threats_cover_every_target_they_name() -> None:
    doc = model([("svc", "process"), ("db", "sql_database")], [("f", "svc", "db")],
                threats=[{"category": "Tampering", "element": "svc", "flow": "f"},
                         {"category": "Spoofing", "element": "svc"}])
    keys = set(by_key(analyze(doc)))
    assert ("svc", C.TAMPERING) not in keys and ("f", C.TAMPERING) not in keys
    assert ("svc", C.SPOOFING) not in keys
    assert ("svc", C.REPUDIATION) in keys and ("f", C.DENIAL_OF_SERVICE) in keys


def test_order_is_score_then_document_order() -> None:
    proposals = analyze(model([("a", "process"), ("b", "process")], [("f", "a", "b")]))
    scores = [p.score for p in proposals]
    assert scores == sorted(scores, reverse=True)
    for high, low in pairwise(proposals):
        if high.score == low.score and high.target_kind == low.target_kind == "element" \
                and high.target != low.target:
            assert [e for e in "ab" if e in (high.target, low.target)] == [high.target, low.target]


def test_narrowing_by_elements_flows_and_categories() -> None:
    doc = model([("a", "process"), ("b", "sql_database")], [("f", "a", "b")])
    only_b = analyze(doc, elements=frozenset({"b"}), flows=frozenset())
    assert {p.target for p in only_b} == {"b"}
    spoofing = analyze(doc, categories=frozenset({C.SPOOFING}))
    assert {(p.target, p.category) for p in spoofing} == {("a", C.SPOOFING)}
    flows_only = analyze(doc, elements=frozenset())
    assert {p.target for p in flows_only} == {"f"}


def test_long_names_are_shortened_in_titles() -> None:
    long_name = "N" * 500
    doc = ThreatModel.model_validate({
        "version": "1.0",
        "metadata": {"title": "t", "author": "a", "created": "2026-01-01",
                     "modified": "2026-01-01"},
        "elements": [{"id": "e", "type": "process", "name": long_name}],
    })
    for p in analyze(doc):
        assert len(p.title) <= 200
        assert "…" in p.title


def test_analysis_is_deterministic_and_does_not_change_the_document() -> None:
    doc = model([("a", "process"), ("b", "sql_database")], [("f", "a", "b")], [("z", ["a"])])
    before = doc.model_dump()
    assert analyze(doc) == analyze(doc)
    assert doc.model_dump() == before


TYPES = ["process", "sql_database", "web_browser", "text", "cache", "api_client", "weird_thing"]


@st.composite
def documents(draw: st.DrawFn) -> ThreatModel:
    count = draw(st.integers(min_value=0, max_value=6))
    ids = [f"e{i}" for i in range(count)]
    elements = [{"id": i, "type": draw(st.sampled_from(TYPES)), "name": i.upper(),
                 "trust_zone": draw(st.sampled_from(["", "external", "internal"])),
                 "stores": draw(st.lists(st.sampled_from(["sessions", "orders", "logs"]),
                                         max_size=2))}
                for i in ids]
    flows = []
    if ids:
        for n in range(draw(st.integers(min_value=0, max_value=5))):
            flows.append({"id": f"f{n}", "from": draw(st.sampled_from(ids)),
                          "to": draw(st.sampled_from(ids)),
                          "protocol": draw(st.sampled_from(["", "HTTP", "HTTPS", "Zigbee"])),
                          "authenticated": draw(st.booleans()),
                          "data": draw(st.lists(st.sampled_from(["credentials", "pii",
                                                                 "images", "firmware"]),
                                                max_size=2))})
    boundaries = [
        (f"b{n}", draw(st.lists(st.sampled_from(ids), unique=True)) if ids else [])
        for n in range(draw(st.integers(min_value=0, max_value=3)))
    ]
    targets = ids + [f["id"] for f in flows]
    threats = []
    if targets:
        for _ in range(draw(st.integers(min_value=0, max_value=6))):
            target = draw(st.sampled_from(targets))
            key = "flow" if target.startswith("f") else "element"
            threats.append({"category": draw(st.sampled_from(list(C))).value, key: target})
    return model(elements, flows, boundaries, threats)


@settings(max_examples=examples(150), deadline=None)
@given(documents())
def test_proposals_are_unique_uncovered_valid_and_ranked(doc: ThreatModel) -> None:
    proposals = analyze(doc)
    keys = [(p.target, p.category) for p in proposals]
    assert len(keys) == len(set(keys))
    covered = {(target, t.category) for t in doc.threats for target in (t.element, t.flow)
               if target}
    assert not set(keys) & covered
    element_ids = {e.id for e in doc.elements}
    flow_ids = {f.id for f in doc.data_flows}
    for p in proposals:
        assert (p.element is None) != (p.flow is None)
        assert p.element in element_ids if p.element else p.flow in flow_ids
        assert 0 < len(p.title) <= 200 and 0 < len(p.description) <= 4000
        assert p.mitigation and p.description.endswith(p.mitigation)
        assert p.severity is severity_for(p.score)
    assert [p.score for p in proposals] == sorted((p.score for p in proposals), reverse=True)
    assert analyze(doc) == proposals


def test_the_fallback_roles_agree_with_the_bundled_catalog() -> None:
    # The fallback copies the catalog's roles so analysis survives a damaged catalog file;
    # this keeps the copy from drifting when the catalog changes.
    for entry in default_catalog().entries:
        assert fallback_role(entry.id) is entry.stride_role, entry.id
    assert fallback_role("no_such_type") is StrideRole.SERVICE
