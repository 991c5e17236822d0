"""The offline engine against the six starter templates, with written expectations.

For every template: which STRIDE categories each kind of element gets (and which it must not),
that nothing the template already covers is proposed, that severities are spread by risk
rather than flat, and that the wording is specific. Then, per template, the risks its model
makes plain that must rank where an analyst would put them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from stockade.catalog.stride import ProposedThreat, analyze
from stockade.thf.model import Severity, StrideCategory, ThreatModel
from stockade.thf.reader import read_file
from tests.unit.catalog.samples import SAMPLES

C = StrideCategory
ORDER = list(Severity)

STORE_CATEGORIES = {C.TAMPERING, C.INFORMATION_DISCLOSURE, C.DENIAL_OF_SERVICE}
EXTERNAL_CATEGORIES = {C.SPOOFING, C.REPUDIATION}
FLOW_CATEGORIES = {C.TAMPERING, C.INFORMATION_DISCLOSURE, C.DENIAL_OF_SERVICE}


@dataclass(frozen=True)
class Expectation:
    stores: frozenset[str]
    external: frozenset[str]
    services: frozenset[str]
    at_least: dict[tuple[str, C], Severity] = field(default_factory=dict)
    """Risks the model makes plain: proposed at this severity or worse."""
    at_most: dict[tuple[str, C], Severity] = field(default_factory=dict)
    """Risks the model shows to be small: proposed at this severity or milder."""
    in_first_12: tuple[tuple[str, C], ...] = ()


EXPECTATIONS: dict[str, Expectation] = {
    "ecommerce-platform.thf": Expectation(
        stores=frozenset({"session-cache", "product-db", "search-index"}),
        external=frozenset({"customer-browser", "mobile-shopper", "identity-provider",
                            "payment-gateway"}),
        services=frozenset({"cdn", "waf", "load-balancer", "web-app", "api-server",
                            "order-worker"}),
        at_least={
            # Sessions held with only "TLS in transit": nothing protects them at rest.
            ("session-cache", C.INFORMATION_DISCLOSURE): Severity.HIGH,
            # Credentials arrive straight from the internet.
            ("waf", C.SPOOFING): Severity.HIGH,
            ("product-db", C.TAMPERING): Severity.HIGH,
        },
        at_most={
            # Public, unauthenticated static content: little identity to forge.
            ("cdn", C.ELEVATION_OF_PRIVILEGE): Severity.LOW,
            # A TLS flow inside the application tier carrying order events.
            ("flow-api-server-order-worker", C.TAMPERING): Severity.LOW,
        },
        in_first_12=(("session-cache", C.INFORMATION_DISCLOSURE), ("waf", C.SPOOFING),
                     ("customer-browser", C.SPOOFING)),
    ),
    "cloud-microservices.thf": Expectation(
        stores=frozenset({"user-db", "product-db", "order-db", "secrets-vault"}),
        external=frozenset({"web-client", "mobile-client"}),
        services=frozenset({"api-gateway", "service-mesh", "user-service", "product-service",
                            "order-service", "notification-service", "event-bus"}),
        at_least={("user-db", C.INFORMATION_DISCLOSURE): Severity.MEDIUM,
                  ("secrets-vault", C.TAMPERING): Severity.MEDIUM},
        at_most={("flow-product-service-product-db", C.DENIAL_OF_SERVICE): Severity.LOW},
        in_first_12=(("api-gateway", C.TAMPERING),),
    ),
    "healthcare-system.thf": Expectation(
        stores=frozenset({"ehr-db", "document-store", "audit-log"}),
        external=frozenset({"patient-portal", "clinician-app", "external-ehr", "pharmacy"}),
        services=frozenset({"fhir-gateway", "patient-service", "clinical-service",
                            "scheduling-service", "analytics-engine"}),
        at_least={
            # PHI crosses from patients' browsers into the DMZ.
            ("flow-patient-portal-fhir-gateway", C.INFORMATION_DISCLOSURE): Severity.HIGH,
            ("fhir-gateway", C.ELEVATION_OF_PRIVILEGE): Severity.HIGH,
            ("document-store", C.INFORMATION_DISCLOSURE): Severity.MEDIUM,
        },
        in_first_12=(("patient-portal", C.SPOOFING), ("fhir-gateway", C.TAMPERING)),
    ),
    "iot-smart-building.thf": Expectation(
        stores=frozenset({"timeseries-db", "access-db", "video-storage"}),
        external=frozenset({"hvac-sensor", "access-panel", "camera-system", "facility-manager"}),
        services=frozenset({"edge-gateway", "mqtt-broker", "device-manager", "stream-processor",
                            "dashboard"}),
        at_least={
            # Video over plain RTSP.
            ("flow-camera-system-edge-gateway", C.TAMPERING): Severity.HIGH,
            ("flow-camera-system-edge-gateway", C.INFORMATION_DISCLOSURE): Severity.HIGH,
            # Firmware images: software delivered to the building's gateway.
            ("flow-device-manager-edge-gateway", C.INFORMATION_DISCLOSURE): Severity.LOW,
        },
        in_first_12=(("flow-camera-system-edge-gateway", C.TAMPERING),),
    ),
    "mobile-banking.thf": Expectation(
        stores=frozenset({"token-store", "core-db", "audit-log", "hsm"}),
        external=frozenset({"banking-app", "card-network", "kyc-provider"}),
        services=frozenset({"api-gateway", "auth-service", "account-service", "fraud-engine",
                            "push-service"}),
        at_least={("hsm", C.INFORMATION_DISCLOSURE): Severity.HIGH,
                  ("core-db", C.TAMPERING): Severity.HIGH,
                  ("banking-app", C.SPOOFING): Severity.HIGH},
        in_first_12=(("banking-app", C.SPOOFING), ("api-gateway", C.SPOOFING)),
    ),
    "saas-platform.thf": Expectation(
        stores=frozenset({"tenant-db", "file-store"}),
        external=frozenset({"tenant-browser", "admin-console", "api-client", "sso-provider",
                            "monitoring", "ci-cd"}),
        services=frozenset({"load-balancer", "app-server", "api-server", "job-queue",
                            "job-worker"}),
        at_least={
            # Container images deployed into the VPC from outside it.
            ("flow-ci-cd-app-server", C.TAMPERING): Severity.HIGH,
        },
        in_first_12=(("flow-ci-cd-app-server", C.TAMPERING), ("app-server", C.SPOOFING)),
    ),
}


def _load(name: str) -> ThreatModel:
    return read_file(SAMPLES / name)


def test_every_starter_template_has_written_expectations() -> None:
    assert {p.name for p in SAMPLES.glob("*.thf")} == set(EXPECTATIONS)


def _by_key(found: list[ProposedThreat]) -> dict[tuple[str, C], ProposedThreat]:
    return {(p.target, p.category): p for p in found}


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_categories_per_kind_of_element(name: str) -> None:
    doc, want = _load(name), EXPECTATIONS[name]
    found = analyze(doc)
    by_target: dict[str, set[C]] = {}
    for p in found:
        by_target.setdefault(p.target, set()).add(p.category)
    covered = {(target, t.category) for t in doc.threats for target in (t.element, t.flow)
               if target}
    assert want.stores | want.external | want.services == {e.id for e in doc.elements}
    for element in want.stores:
        expected = {c for c in STORE_CATEGORIES if (element, c) not in covered}
        assert by_target.get(element, set()) == expected, element
    for element in want.external:
        expected = {c for c in EXTERNAL_CATEGORIES if (element, c) not in covered}
        assert by_target.get(element, set()) == expected, element
        assert not by_target.get(element, set()) & {C.TAMPERING, C.ELEVATION_OF_PRIVILEGE}
    for element in want.services:
        expected = {c for c in C if (element, c) not in covered}
        assert by_target.get(element, set()) == expected, element
    for flow in doc.data_flows:
        expected = {c for c in FLOW_CATEGORIES if (flow.id, c) not in covered}
        assert by_target.get(flow.id, set()) == expected, flow.id
        assert not by_target.get(flow.id, set()) & {C.SPOOFING, C.REPUDIATION,
                                                    C.ELEVATION_OF_PRIVILEGE}


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_nothing_the_template_covers_is_proposed(name: str) -> None:
    doc = _load(name)
    keys = set(_by_key(analyze(doc)))
    for threat in doc.threats:
        for target in (threat.element, threat.flow):
            if target:
                assert (target, threat.category) not in keys, threat.id


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_severities_are_spread_by_risk_and_ranked(name: str) -> None:
    found = analyze(_load(name))
    severities = {p.severity for p in found}
    assert len(severities) >= 3, severities
    first = found[:12]
    assert all(ORDER.index(p.severity) <= ORDER.index(Severity.MEDIUM) for p in first)
    assert [p.score for p in found] == sorted((p.score for p in found), reverse=True)


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_plain_risks_rank_where_an_analyst_puts_them(name: str) -> None:
    want = EXPECTATIONS[name]
    found = analyze(_load(name))
    by_key = _by_key(found)
    for key, floor in want.at_least.items():
        assert ORDER.index(by_key[key].severity) <= ORDER.index(floor), (key, by_key[key])
    for key, ceiling in want.at_most.items():
        assert ORDER.index(by_key[key].severity) >= ORDER.index(ceiling), (key, by_key[key])
    first = {(p.target, p.category) for p in found[:12]}
    for key in want.in_first_12:
        assert key in first, key


@pytest.mark.parametrize("name", sorted(EXPECTATIONS))
def test_wording_is_specific(name: str) -> None:
    doc = _load(name)
    names = {e.id: e.name for e in doc.elements}
    flows = {f.id: f for f in doc.data_flows}
    generic = "Review this threat with the component's owner"
    for p in analyze(doc):
        assert not p.mitigation.startswith(generic), p
        assert "Rated " + p.severity.value in p.description
        if p.element is not None:
            assert names[p.element] in p.title
            assert f"({p.element})" in p.description
        else:
            flow = flows[p.target]
            assert names[flow.from_] in p.title and names[flow.to] in p.title
            assert flow.id in p.description
