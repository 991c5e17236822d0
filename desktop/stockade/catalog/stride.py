"""Deterministic STRIDE rules ranked by the risk the model itself shows.

Every element gets the categories of its STRIDE role (a service all six, a store tampering,
disclosure and denial of service, an external party spoofing and repudiation; annotations
none) and every data flow gets tampering, disclosure and denial of service. A service whose
trust zone says it is outside (a third party) is treated as an external party: it is not ours
to harden, only to authenticate and hold to account.

Each candidate is scored from facts in the model — flows from external parties, flows that
cross trust boundaries, unauthenticated flows, protocols that are not known to be encrypted,
sensitive data (credentials, personal or financial data) held or carried, stores without
encryption at rest, security components — and its severity follows from the score, so a
flat "high" never appears by default. Titles and descriptions name the element or flow, the
boundary concerned, why the score is what it is, and a concrete mitigation from
`resources/stride_mitigations.json` (by technology, then catalog type, category and role).

A candidate is dropped when the document already has a threat of that category on that
element or flow. Nothing here reads a clock or draws randomness: the same document always gives
the same candidates in the same order (highest score first, then document order).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from typing import Any

from stockade.catalog.registry import ComponentEntry, StrideRole, default_catalog
from stockade.paths import resources_dir
from stockade.thf.model import (
    DataFlow,
    Element,
    Severity,
    StrideCategory,
    ThreatModel,
    TrustBoundary,
)

NAME_LIMIT = 80
"""Names are shortened in titles so a long element name cannot push a title past what the
`add_threat` tool accepts (200 code points)."""
TITLE_LIMIT = 200
DESCRIPTION_LIMIT = 3000
MITIGATIONS_FILE = "stride_mitigations.json"

_S = StrideCategory

CATEGORY_ORDER: tuple[StrideCategory, ...] = tuple(StrideCategory)

ROLE_CATEGORIES: dict[StrideRole, tuple[StrideCategory, ...]] = {
    StrideRole.SERVICE: CATEGORY_ORDER,
    StrideRole.STORE: (_S.TAMPERING, _S.INFORMATION_DISCLOSURE, _S.DENIAL_OF_SERVICE),
    StrideRole.ACTOR: (_S.SPOOFING, _S.REPUDIATION),
    StrideRole.NONE: (),
}
FLOW_CATEGORIES: tuple[StrideCategory, ...] = (
    _S.TAMPERING, _S.INFORMATION_DISCLOSURE, _S.DENIAL_OF_SERVICE,
)

EXTERNAL_ZONES = frozenset({
    "external", "internet", "public", "untrusted", "third-party", "third_party", "thirdparty",
    "partner", "outside",
})
"""Trust zones that put an element outside the system being modelled."""

SEVERITY_FLOORS: tuple[tuple[int, Severity], ...] = (
    (9, Severity.CRITICAL), (6, Severity.HIGH), (4, Severity.MEDIUM), (2, Severity.LOW),
)
"""Score → severity: at least 9 is critical, 6 high, 4 medium, 2 low; below that info."""

SEVERITY_RANK: dict[Severity, int] = {s: i for i, s in enumerate(Severity)}
"""0 = most severe (critical) … 4 = least (info)."""


class Sensitivity(StrEnum):
    """Kinds of data whose exposure or change matters most."""

    CREDENTIALS = "credentials"
    PERSONAL = "personal data"
    FINANCIAL = "financial data"
    SOFTWARE = "software or configuration"


_SENSITIVE_WORDS: dict[Sensitivity, frozenset[str]] = {
    Sensitivity.CREDENTIALS: frozenset({
        "credential", "credentials", "password", "passwords", "passwd", "secret", "secrets",
        "token", "tokens", "jwt", "otp", "session", "sessions", "cookie", "cookies", "apikey",
        "key", "keys", "signing", "assertion", "assertions", "hashes", "cert", "certificate",
    }),
    Sensitivity.PERSONAL: frozenset({
        "pii", "phi", "personal", "customer", "customers", "patient", "patients",
        "demographics", "identity", "selfie", "profile", "profiles", "user", "users",
        "badge", "holders", "medical", "health", "medications", "lab", "prescriptions",
        "clinical", "consent", "address", "email", "phone", "video",
    }),
    Sensitivity.FINANCIAL: frozenset({
        "payment", "payments", "card", "cards", "pan", "cvv", "cryptogram", "cryptograms",
        "ledger", "balance", "balances", "transfer", "transfers", "transaction",
        "transactions", "amount", "amounts", "total", "bank", "iban", "invoice", "invoices",
        "pin", "billing", "order", "orders",
    }),
    Sensitivity.SOFTWARE: frozenset({
        "firmware", "container", "artifact", "artifacts", "build", "builds", "package",
        "packages", "script", "scripts", "code", "binary", "binaries", "config",
        "configuration", "deployment", "release", "releases", "update", "updates", "plugin",
    }),
}
_CONFIDENTIAL = (Sensitivity.CREDENTIALS, Sensitivity.PERSONAL, Sensitivity.FINANCIAL)

_ENCRYPTED_PROTOCOL_WORDS = ("tls", "https", "ssh", "sftp", "ftps", "wss", "ipsec", "wireguard",
                             "vpn", "dtls")
_ENCRYPTED_PROTOCOL_TOKENS = frozenset({"oidc", "saml", "oauth", "oauth2", "mtls", "pinned"})
"""Protocols whose specification requires TLS (OIDC, SAML, OAuth run over HTTPS)."""
_PLAINTEXT_PROTOCOL_TOKENS = frozenset({
    "http", "ftp", "telnet", "smtp", "mqtt", "amqp", "ws", "rtsp", "tcp", "udp", "snmp", "ldap",
    "resp", "nfs", "smb", "modbus", "bacnet", "sip", "rtp", "syslog", "imap", "pop3",
})
_AT_REST_WORDS = ("rest", "aes", "tde", "kms", "sse", "hsm", "fips", "encrypted", "per-field",
                  "write-once", "seal")


class ProtocolFamily(StrEnum):
    ENCRYPTED = "encrypted"
    PLAINTEXT = "plaintext"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class ProposedThreat:
    """A threat the rules call for; exactly one of `element` and `flow` is set."""

    title: str
    category: StrideCategory
    severity: Severity
    description: str
    mitigation: str
    element: str | None = None
    flow: str | None = None
    score: int = 0
    reasons: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return self.element if self.element is not None else self.flow or ""

    @property
    def target_kind(self) -> str:
        return "element" if self.element is not None else "flow"


def severity_for(score: int) -> Severity:
    for floor, severity in SEVERITY_FLOORS:
        if score >= floor:
            return severity
    return Severity.INFO


def protocol_family(protocol: str | None) -> ProtocolFamily:
    """Whether the protocol is known to be encrypted, known to be plaintext, or unstated."""
    text = (protocol or "").strip().lower()
    if not text:
        return ProtocolFamily.UNKNOWN
    tokens = {t for t in re.split(r"[^a-z0-9]+", text) if t}
    if any(word in text for word in _ENCRYPTED_PROTOCOL_WORDS) or \
            tokens & _ENCRYPTED_PROTOCOL_TOKENS:
        return ProtocolFamily.ENCRYPTED
    if tokens & _PLAINTEXT_PROTOCOL_TOKENS:
        return ProtocolFamily.PLAINTEXT
    return ProtocolFamily.UNKNOWN


def sensitivity_of(labels: Iterable[str]) -> dict[Sensitivity, tuple[str, ...]]:
    """Which sensitive kinds the data labels name, with the labels that show it."""
    found: dict[Sensitivity, list[str]] = {}
    for label in labels:
        words = {w for w in re.split(r"[^a-z0-9]+", label.lower()) if w}
        for kind, vocabulary in _SENSITIVE_WORDS.items():
            if words & vocabulary:
                found.setdefault(kind, [])
                if label not in found[kind]:
                    found[kind].append(label)
    return {kind: tuple(found[kind]) for kind in Sensitivity if kind in found}


def _confidential(labels: Iterable[str]) -> bool:
    return any(k in _CONFIDENTIAL for k in sensitivity_of(labels))


# ---------------------------------------------------------------------------------------------
# Catalog knowledge


_FALLBACK_STORES = frozenset(
    {
        "sql_database", "nosql_database", "cache", "search_index", "object_storage",
        "secret_manager", "data_store", "file_storage", "data_lake", "backup_service",
        "key_management", "container_registry",
    }
)  # fmt: skip
_FALLBACK_ACTORS = frozenset(
    {
        "web_browser", "mobile_app", "desktop_app", "iot_device", "external_entity",
        "api_client", "cli_tool",
    }
)  # fmt: skip


def fallback_role(element_type: str) -> StrideRole:
    """The role `role_of` gives when the catalog cannot be read (no aliases)."""
    if element_type == "text":
        return StrideRole.NONE
    if element_type in _FALLBACK_STORES:
        return StrideRole.STORE
    if element_type in _FALLBACK_ACTORS:
        return StrideRole.ACTOR
    return StrideRole.SERVICE


def _entry(element_type: str) -> ComponentEntry | None:
    try:
        return default_catalog().resolve(element_type)
    except Exception:  # a damaged catalog must not stop analysis
        return None


def role_of(element_type: str) -> StrideRole:
    """The STRIDE role of an element type (catalog aliases honoured; unknown → service)."""
    entry = _entry(element_type)
    return entry.stride_role if entry is not None else fallback_role(element_type)


@cache
def _mitigations() -> Mapping[str, Any]:
    try:
        data = json.loads((resources_dir() / MITIGATIONS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    return data if isinstance(data, dict) else {}


def _lookup(table: Any, key: str, category: StrideCategory) -> str | None:
    if not isinstance(table, dict):
        return None
    row = table.get(key)
    if isinstance(row, dict):
        text = row.get(category.value)
        if isinstance(text, str) and text.strip():
            return text.strip()
    return None


_GENERIC_MITIGATION = "Review this threat with the component's owner and record the control."


def element_mitigation(element: Element, role: StrideRole, category: StrideCategory) -> str:
    """The most specific mitigation the data has: technology, type, catalog category, role."""
    data = _mitigations()
    for tech in element.technologies:
        found = _lookup(data.get("by_technology"), tech.strip().lower(), category)
        if found:
            return found
    entry = _entry(element.type)
    type_id = entry.id if entry is not None and entry.id != "generic" else element.type
    found = _lookup(data.get("by_type"), type_id, category)
    if found:
        return found
    if entry is not None:
        found = _lookup(data.get("by_catalog_category"), entry.category, category)
        if found:
            return found
    return _lookup(data.get("by_role"), role.value, category) or _GENERIC_MITIGATION


def flow_mitigation(family: ProtocolFamily, category: StrideCategory) -> str:
    data = _mitigations()
    found = _lookup(data.get("flow_by_protocol"), family.value, category)
    if found:
        return found
    flow_table = data.get("flow")
    if isinstance(flow_table, dict):
        text = flow_table.get(category.value)
        if isinstance(text, str) and text.strip():
            return text.strip()
    return _GENERIC_MITIGATION


# ---------------------------------------------------------------------------------------------
# Facts about the model


def _short(name: str, limit: int = NAME_LIMIT) -> str:
    clean = " ".join(name.split())
    if len(clean) <= limit:
        return clean
    return clean[: limit - 1] + "…"


def element_name(element: Element) -> str:
    return _short(element.name) if element.name.strip() else element.id


def is_external(element: Element, role: StrideRole) -> bool:
    """An external party: an actor by type, or anything whose trust zone is outside."""
    zone = (element.trust_zone or "").strip().lower()
    return role is StrideRole.ACTOR or zone in EXTERNAL_ZONES


def _join(items: list[str], limit: int = 3) -> str:
    shown = items[:limit]
    if len(items) > limit:
        shown = [*shown, f"{len(items) - limit} more"]
    if len(shown) <= 1:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def _quoted(flows: list[DataFlow]) -> list[str]:
    return [f"'{_short(f.name, 60)}'" if f.name else f.id for f in flows]


@dataclass(slots=True)
class _ElementFacts:
    element: Element
    index: int
    role: StrideRole
    external: bool
    boundary: TrustBoundary | None
    inbound: list[DataFlow] = field(default_factory=list)
    outbound: list[DataFlow] = field(default_factory=list)
    from_external: list[DataFlow] = field(default_factory=list)
    crossing_in: list[DataFlow] = field(default_factory=list)
    unauth_crossing_in: list[DataFlow] = field(default_factory=list)
    sensitive: dict[Sensitivity, tuple[str, ...]] = field(default_factory=dict)
    security: bool = False

    @property
    def name(self) -> str:
        return element_name(self.element)

    @property
    def where(self) -> str:
        if self.boundary is not None:
            return f"in {_short(self.boundary.name, 60)}"
        return "outside every trust boundary"

    def unencrypted_at_rest(self) -> bool:
        text = (self.element.encryption or "").lower()
        return not any(word in text for word in _AT_REST_WORDS)


@dataclass(frozen=True, slots=True)
class _Factor:
    points: int
    reason: str


class ModelFacts:
    """Everything the rules read from one document, computed once."""

    def __init__(self, model: ThreatModel) -> None:
        self.model = model
        owner: dict[str, TrustBoundary] = {}
        for boundary in model.trust_boundaries:
            for member in boundary.contains:
                # The first boundary listing an element wins: overlapping boundaries stay
                # deterministic.
                owner.setdefault(member, boundary)
        self.owner = owner
        self.elements: dict[str, _ElementFacts] = {}
        for index, element in enumerate(model.elements):
            role = role_of(element.type)
            external = role is not StrideRole.NONE and is_external(element, role)
            entry = _entry(element.type)
            facts = _ElementFacts(element, index, StrideRole.ACTOR if external else role,
                                  external, owner.get(element.id))
            facts.security = entry is not None and entry.category == "security"
            self.elements.setdefault(element.id, facts)
        for flow in model.data_flows:
            source, target = self.elements.get(flow.from_), self.elements.get(flow.to)
            if source is not None:
                source.outbound.append(flow)
            if target is None:
                continue
            target.inbound.append(flow)
            if source is not None and source.external and not target.external:
                target.from_external.append(flow)
            if self.crosses(flow):
                target.crossing_in.append(flow)
                if not flow.authenticated:
                    target.unauth_crossing_in.append(flow)
        for facts in self.elements.values():
            labels = list(facts.element.stores or ())
            for flow in (*facts.inbound, *facts.outbound):
                labels.extend(flow.data)
            facts.sensitive = sensitivity_of(labels)

    def boundary_of(self, element_id: str) -> TrustBoundary | None:
        return self.owner.get(element_id)

    def crosses(self, flow: DataFlow) -> bool:
        """Whether the flow's two ends sit in different trust boundaries (none counts as one)."""
        a, b = self.owner.get(flow.from_), self.owner.get(flow.to)
        return (a.id if a else None) != (b.id if b else None)

    def name_of(self, element_id: str) -> str:
        facts = self.elements.get(element_id)
        return facts.name if facts is not None else _short(element_id)

    def crossing_phrase(self, flow: DataFlow) -> str:
        """Which boundary the flow crosses, in words ("" when it stays inside one)."""
        if not self.crosses(flow):
            return ""
        a, b = self.owner.get(flow.from_), self.owner.get(flow.to)
        if a is None and b is not None:
            return f"into {_short(b.name, 60)} from outside any trust boundary"
        if a is not None and b is None:
            return f"out of {_short(a.name, 60)} to outside any trust boundary"
        assert a is not None and b is not None
        return f"from {_short(a.name, 60)} into {_short(b.name, 60)}"


def crosses_boundary(model: ThreatModel, flow: DataFlow) -> bool:
    """Whether the flow's two ends sit in different trust boundaries (none counts as one)."""
    return ModelFacts(model).crosses(flow)


def covered_targets(model: ThreatModel) -> set[tuple[str, StrideCategory]]:
    """(target id, category) pairs the document's threats already cover.

    A threat naming an element and a flow covers both; threats naming neither cover nothing.
    """
    covered: set[tuple[str, StrideCategory]] = set()
    for threat in model.threats:
        for target in (threat.element, threat.flow):
            if target:
                covered.add((target, threat.category))
    return covered


# ---------------------------------------------------------------------------------------------
# Scoring


def _sensitive_factor(facts: _ElementFacts, kinds: Iterable[Sensitivity], points: int,
                      verb: str) -> list[_Factor]:
    found = [(k, facts.sensitive[k]) for k in kinds if k in facts.sensitive]
    if not found:
        return []
    words = _join([f"{k.value} ({_join(list(labels), 2)})" for k, labels in found])
    return [_Factor(points + (1 if len(found) > 1 else 0), f"{verb} {words}")]


def _unauth_points(flows: list[DataFlow]) -> int:
    # An unauthenticated flow matters more when it carries something worth stealing.
    return 2 if any(_confidential(x.data) for x in flows) else 1


def _element_factors(facts: _ElementFacts, category: StrideCategory,
                     model: ModelFacts) -> tuple[int, list[_Factor]]:
    f: list[_Factor] = []
    internet = facts.from_external
    sources = _join(sorted({model.name_of(x.from_) for x in internet}))
    crossing_only = [x for x in facts.crossing_in if x not in internet]
    unauth = facts.unauth_crossing_in
    all_kinds = _CONFIDENTIAL
    business = (Sensitivity.FINANCIAL, Sensitivity.PERSONAL)
    if facts.role is StrideRole.ACTOR:
        if category is _S.SPOOFING:
            base = 3
            f += _sensitive_factor(facts, (Sensitivity.CREDENTIALS,), 2, "it signs in with")
            outbound_unauth = [x for x in facts.outbound
                               if not x.authenticated and _confidential(x.data)]
            if outbound_unauth:
                f.append(_Factor(1, f"nothing authenticates it on "
                                    f"{_join(_quoted(outbound_unauth))}"))
            f += _sensitive_factor(facts, business, 1, "it sends or receives")
            delivered = sensitivity_of(d for x in facts.outbound for d in x.data)
            if Sensitivity.SOFTWARE in delivered:
                f.append(_Factor(2, f"it delivers software or configuration "
                                    f"({_join(list(delivered[Sensitivity.SOFTWARE]), 2)})"))
        else:
            base = 1
            f += _sensitive_factor(facts, business, 2, "its requests involve")
        return base, f
    if facts.role is StrideRole.STORE:
        if category is _S.TAMPERING:
            base = 2
            f += _sensitive_factor(facts, all_kinds, 2, "it holds")
            if facts.crossing_in:
                writers = sorted({model.name_of(x.from_) for x in facts.crossing_in})
                f.append(_Factor(1, f"it is written across a trust boundary by {_join(writers)}"))
        elif category is _S.INFORMATION_DISCLOSURE:
            base = 2
            f += _sensitive_factor(facts, all_kinds, 3, "it holds")
            if facts.unencrypted_at_rest():
                stated = facts.element.encryption
                f.append(_Factor(2, "the model records no encryption at rest"
                                    + (f' (only "{_short(stated, 60)}")' if stated else "")))
        else:
            base = 2
            if len(facts.inbound) >= 2:
                f.append(_Factor(1, f"{len(facts.inbound)} flows depend on it"))
            if facts.sensitive:
                f.append(_Factor(1, "losing it loses records the system depends on"))
        return base, f
    # A service of ours.
    public_only = bool(facts.inbound) and not any(
        x.authenticated or _confidential(x.data) for x in facts.inbound)
    if public_only and category in (_S.SPOOFING, _S.ELEVATION_OF_PRIVILEGE):
        f.append(_Factor(-2, "everything it receives is public and unauthenticated, so there is "
                             "little identity to forge or privilege to gain"))
    if category is _S.SPOOFING:
        base = 2
        if internet:
            f.append(_Factor(3, f"it takes requests straight from {sources}"))
        elif crossing_only:
            f.append(_Factor(1, f"callers reach it across a trust boundary "
                                f"({_join(_quoted(crossing_only))})"))
        if unauth:
            f.append(_Factor(_unauth_points(unauth), f"{_join(_quoted(unauth))} reaching it "
                             f"{'is' if len(unauth) == 1 else 'are'} not authenticated"))
        f += _sensitive_factor(facts, (Sensitivity.CREDENTIALS,), 1, "it handles")
        if facts.security:
            f.append(_Factor(1, "it is a security control others rely on"))
    elif category is _S.TAMPERING:
        base = 2
        if internet:
            f.append(_Factor(2, f"it parses input from {sources}"))
        elif crossing_only:
            f.append(_Factor(1, "its input crosses a trust boundary"))
        if unauth:
            f.append(_Factor(1, f"{_join(_quoted(unauth))} {'is' if len(unauth) == 1 else 'are'} "
                                "not authenticated"))
        f += _sensitive_factor(facts, all_kinds, 1, "it handles")
        f += _sensitive_factor(facts, (Sensitivity.SOFTWARE,), 1, "it receives")
    elif category is _S.REPUDIATION:
        base = 1
        if Sensitivity.FINANCIAL in facts.sensitive:
            f.append(_Factor(3, "it acts on financial data "
                                f"({_join(list(facts.sensitive[Sensitivity.FINANCIAL]), 2)})"))
        elif Sensitivity.PERSONAL in facts.sensitive:
            f.append(_Factor(2, "it acts on personal data "
                                f"({_join(list(facts.sensitive[Sensitivity.PERSONAL]), 2)})"))
        if internet:
            f.append(_Factor(1, f"it acts for outside parties ({sources})"))
    elif category is _S.INFORMATION_DISCLOSURE:
        base = 1
        f += _sensitive_factor(facts, all_kinds, 2, "it handles")
        if internet:
            f.append(_Factor(1, f"its responses go straight to {sources}"))
        if facts.security:
            f.append(_Factor(1, "it is a security control whose secrets protect others"))
    elif category is _S.DENIAL_OF_SERVICE:
        base = 1
        if internet:
            f.append(_Factor(3, f"anyone reaching {sources} can send it traffic"))
        if len(facts.inbound) >= 3:
            f.append(_Factor(1, f"{len(facts.inbound)} flows depend on it"))
    else:  # elevation of privilege
        base = 2
        if internet:
            f.append(_Factor(2, f"requests from {sources} reach it"))
        elif crossing_only:
            f.append(_Factor(1, "requests cross a trust boundary to reach it"))
        if unauth:
            f.append(_Factor(1, f"{_join(_quoted(unauth))} {'is' if len(unauth) == 1 else 'are'} "
                                "not authenticated"))
        f += _sensitive_factor(facts, business, 1, "it grants access to")
        if facts.security:
            f.append(_Factor(1, "it is a security control others rely on"))
    return base, f


def _flow_factors(flow: DataFlow, category: StrideCategory,
                  model: ModelFacts) -> tuple[int, list[_Factor]]:
    f: list[_Factor] = []
    source = model.elements.get(flow.from_)
    from_outside = source is not None and source.external
    crossing = model.crosses(flow)
    family = protocol_family(flow.protocol)
    protocol = _short(flow.protocol, 40) if flow.protocol else ""
    sensitive = sensitivity_of(flow.data)
    if category is _S.DENIAL_OF_SERVICE:
        base = 1
        if from_outside:
            f.append(_Factor(2, "it starts outside the system"))
        if crossing:
            f.append(_Factor(1, f"it goes {model.crossing_phrase(flow)}"))
        target = model.elements.get(flow.to)
        if target is not None and len(target.inbound) >= 3:
            f.append(_Factor(1, f"{target.name} depends on {len(target.inbound)} inbound flows"))
        return base, f
    base = 1
    if crossing:
        f.append(_Factor(3 if category is _S.TAMPERING else 2,
                         f"it goes {model.crossing_phrase(flow)}"))
    if family is ProtocolFamily.PLAINTEXT:
        f.append(_Factor(3, f"{protocol} is not encrypted"))
    elif family is ProtocolFamily.UNKNOWN:
        f.append(_Factor(1, f"the protocol ({protocol})" + " is not known to be encrypted"
                         if protocol else "the model does not say which protocol it uses"))
    if category is _S.TAMPERING:
        if not flow.authenticated:
            f.append(_Factor(1, "the flow is not authenticated"))
        if from_outside:
            f.append(_Factor(1, "its sender is outside the system"))
        if Sensitivity.SOFTWARE in sensitive:
            f.append(_Factor(2, f"it carries software or configuration "
                                f"({_join(list(sensitive[Sensitivity.SOFTWARE]), 2)})"))
    else:
        found = [(k, v) for k, v in sensitive.items() if k in _CONFIDENTIAL]
        if found:
            words = _join([f"{k.value} ({_join(list(v), 2)})" for k, v in found])
            f.append(_Factor(2 + (1 if len(found) > 1 else 0), f"it carries {words}"))
    return base, f


def _rated(base: int, factors: list[_Factor]) -> tuple[int, Severity, tuple[str, ...]]:
    score = base + sum(x.points for x in factors)
    return score, severity_for(score), tuple(x.reason for x in factors)


# ---------------------------------------------------------------------------------------------
# Wording


_ELEMENT_TITLES: dict[tuple[StrideRole, StrideCategory], str] = {
    (StrideRole.SERVICE, _S.SPOOFING): "Forged caller identity accepted by {name}",
    (StrideRole.SERVICE, _S.TAMPERING): "Tampered requests or code change what {name} does",
    (StrideRole.SERVICE, _S.REPUDIATION): "Actions through {name} cannot be traced to a caller",
    (StrideRole.SERVICE, _S.INFORMATION_DISCLOSURE): "{name} leaks data in responses, errors or logs",
    (StrideRole.SERVICE, _S.DENIAL_OF_SERVICE): "Request flood makes {name} unavailable",
    (StrideRole.SERVICE, _S.ELEVATION_OF_PRIVILEGE): "Privilege escalation through {name}",
    (StrideRole.STORE, _S.TAMPERING): "Unauthorised changes to {data} in {name}",
    (StrideRole.STORE, _S.INFORMATION_DISCLOSURE): "Exposure of {data} held in {name}",
    (StrideRole.STORE, _S.DENIAL_OF_SERVICE): "{name} exhausted, corrupted or lost",
    (StrideRole.ACTOR, _S.SPOOFING): "Attacker impersonates {name}",
    (StrideRole.ACTOR, _S.REPUDIATION): "{name} disputes actions it took",
}

_ELEMENT_RISKS: dict[tuple[StrideRole, StrideCategory], str] = {
    (StrideRole.SERVICE, _S.SPOOFING):
        "A caller who forges or steals an identity could make {name} act on its behalf.",
    (StrideRole.SERVICE, _S.TAMPERING):
        "Crafted input, or a change to its code or configuration, could make {name} do "
        "something it should not.",
    (StrideRole.SERVICE, _S.REPUDIATION):
        "Without an attributable record, an operation carried out through {name} could later "
        "be denied by whoever asked for it.",
    (StrideRole.SERVICE, _S.INFORMATION_DISCLOSURE):
        "{name} could reveal data it handles through verbose errors, logs or over-broad "
        "responses.",
    (StrideRole.SERVICE, _S.DENIAL_OF_SERVICE):
        "A flood of requests or expensive input could exhaust {name} and everything behind it.",
    (StrideRole.SERVICE, _S.ELEVATION_OF_PRIVILEGE):
        "A missing authorization check in {name} could let a caller act with rights it was "
        "never given.",
    (StrideRole.STORE, _S.TAMPERING):
        "Anyone who can write to {name} outside its owning service could alter {data}.",
    (StrideRole.STORE, _S.INFORMATION_DISCLOSURE):
        "{data} at rest in {name} could be read by someone who reaches the store, its files or "
        "its backups.",
    (StrideRole.STORE, _S.DENIAL_OF_SERVICE):
        "{name} could be filled, overloaded or corrupted until the services that depend on it "
        "stop working.",
    (StrideRole.ACTOR, _S.SPOOFING):
        "An attacker could pretend to be {name} and be trusted as it.",
    (StrideRole.ACTOR, _S.REPUDIATION):
        "{name} could later deny having done something, and nothing on our side could show "
        "otherwise.",
}

_FLOW_TITLES: dict[StrideCategory, str] = {
    _S.TAMPERING: "Tampering with {flow} from {source} to {target}",
    _S.INFORMATION_DISCLOSURE: "Interception of {flow} from {source} to {target}",
    _S.DENIAL_OF_SERVICE: "Disruption of {flow} from {source} to {target}",
}

_FLOW_RISKS: dict[StrideCategory, str] = {
    _S.TAMPERING: "Someone on the path could alter {what} between {source} and {target}.",
    _S.INFORMATION_DISCLOSURE: "Someone on the path could read {what} between {source} and "
                               "{target}.",
    _S.DENIAL_OF_SERVICE: "If {flow} is cut or flooded, {target} stops receiving {what} from "
                          "{source}.",
}


def _stored(element: Element) -> str:
    stores = [s.replace("_", " ") for s in element.stores or ()]
    return _join(stores, 3) if stores else "the data"


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(risk: str, severity: Severity, reasons: tuple[str, ...], where: str,
              mitigation: str) -> str:
    why = "; ".join(reasons) if reasons else "no exposure factor in the model raises it"
    parts = [risk, f"Rated {severity.value}: {why}.", f"Where: {where}.",
             f"Mitigation: {mitigation}"]
    return _cap("\n".join(parts), DESCRIPTION_LIMIT)


def _element_threat(facts: _ElementFacts, category: StrideCategory,
                    model: ModelFacts) -> ProposedThreat:
    base, factors = _element_factors(facts, category, model)
    score, severity, reasons = _rated(base, factors)
    element = facts.element
    words = {"name": facts.name, "data": _stored(element)}
    key = (facts.role, category)
    title = _cap(_ELEMENT_TITLES[key].format(**words), TITLE_LIMIT)
    risk = _ELEMENT_RISKS[key].format(**words)
    if risk[0].islower():
        risk = risk[0].upper() + risk[1:]
    mitigation = element_mitigation(element, facts.role, category)
    return ProposedThreat(
        title=title, category=category, severity=severity,
        description=_describe(risk, severity, reasons, f"{facts.name} ({element.id}), "
                              f"{facts.where}", mitigation),
        mitigation=mitigation, element=element.id, score=score, reasons=reasons)


def _flow_threat(flow: DataFlow, category: StrideCategory, model: ModelFacts) -> ProposedThreat:
    base, factors = _flow_factors(flow, category, model)
    score, severity, reasons = _rated(base, factors)
    source, target = model.name_of(flow.from_), model.name_of(flow.to)
    label = f"'{_short(flow.name, 60)}'" if flow.name else f"flow {flow.id}"
    data = [d.replace("_", " ") for d in flow.data]
    what = _join(data, 3) if data else "the data it carries"
    words = {"flow": label, "source": source, "target": target, "what": what}
    title = _cap(_FLOW_TITLES[category].format(**words), TITLE_LIMIT)
    risk = _FLOW_RISKS[category].format(**words)
    risk = risk[0].upper() + risk[1:]
    crossing = model.crossing_phrase(flow)
    where = f"{label} ({flow.id}) over {flow.protocol or 'an unstated protocol'}" + (
        f", crossing {crossing}" if crossing else ", inside one trust zone")
    mitigation = flow_mitigation(protocol_family(flow.protocol), category)
    return ProposedThreat(
        title=title, category=category, severity=severity,
        description=_describe(risk, severity, reasons, where, mitigation),
        mitigation=mitigation, flow=flow.id, score=score, reasons=reasons)


# ---------------------------------------------------------------------------------------------
# Analysis


def analyze(model: ThreatModel, *, elements: frozenset[str] | None = None,
            flows: frozenset[str] | None = None,
            categories: frozenset[StrideCategory] | None = None) -> list[ProposedThreat]:
    """Threats the rules call for that the document does not already have, best first.

    `elements`, `flows` and `categories` narrow the analysis (None: everything). Order: highest
    score first; equal scores keep document order (elements before flows, categories in STRIDE
    order). The document is not changed.
    """
    covered = covered_targets(model)
    facts = ModelFacts(model)
    ranked: list[tuple[int, int, int, int, ProposedThreat]] = []
    for element_facts in facts.elements.values():
        element = element_facts.element
        if elements is not None and element.id not in elements:
            continue
        for category in ROLE_CATEGORIES[element_facts.role]:
            if (categories is not None and category not in categories) or \
                    (element.id, category) in covered:
                continue
            threat = _element_threat(element_facts, category, facts)
            ranked.append((-threat.score, 0, element_facts.index,
                           CATEGORY_ORDER.index(category), threat))
    seen_flows: set[str] = set()
    for index, flow in enumerate(model.data_flows):
        if (flows is not None and flow.id not in flows) or flow.id in seen_flows:
            continue
        seen_flows.add(flow.id)
        for category in FLOW_CATEGORIES:
            if (categories is not None and category not in categories) or \
                    (flow.id, category) in covered:
                continue
            threat = _flow_threat(flow, category, facts)
            ranked.append((-threat.score, 1, index, CATEGORY_ORDER.index(category), threat))
    ranked.sort(key=lambda item: item[:4])
    return [item[4] for item in ranked]
