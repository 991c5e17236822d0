"""Deterministic STRIDE rules: the threats a model's elements and data flows call for.

Each element gets the rules of its STRIDE role (service, store or actor; annotations get
none) and each data flow gets the flow rules, one level more severe when the flow crosses a
trust boundary. A rule is skipped when the document already has a threat of that category
on that element or flow. Nothing here reads a clock or draws randomness, so the same
document always gives the same proposals in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

from stockade.catalog.registry import StrideRole, stride_role
from stockade.thf.model import DataFlow, Element, Severity, StrideCategory, ThreatModel

NAME_LIMIT = 100
"""Names are shortened in titles so a long element name cannot push a title past what the
`add_threat` tool accepts."""


@dataclass(frozen=True, slots=True)
class ProposedThreat:
    """A threat the rules call for; exactly one of `element` and `flow` is set."""

    title: str
    category: StrideCategory
    severity: Severity
    description: str
    element: str | None = None
    flow: str | None = None

    @property
    def target(self) -> str:
        return self.element if self.element is not None else self.flow or ""


@dataclass(frozen=True, slots=True)
class _Rule:
    category: StrideCategory
    severity: Severity
    title: str
    description: str


_S = StrideCategory

_SERVICE_RULES = (
    _Rule(
        _S.SPOOFING,
        Severity.HIGH,
        "Spoofed identity at {name}",
        "Someone could pose as {name}, or as one of its callers, to get access they should "
        "not have. Verify the identity of every caller with strong authentication.",
    ),
    _Rule(
        _S.TAMPERING,
        Severity.HIGH,
        "Altered input or behaviour of {name}",
        "An attacker could change what {name} receives or how it behaves. Validate every "
        "input and protect the integrity of its code and configuration.",
    ),
    _Rule(
        _S.REPUDIATION,
        Severity.MEDIUM,
        "Untraceable actions in {name}",
        "{name} could carry out operations that cannot later be tied to whoever asked for "
        "them. Record security-relevant operations in tamper-evident audit logs.",
    ),
    _Rule(
        _S.INFORMATION_DISCLOSURE,
        Severity.MEDIUM,
        "Data leaking from {name}",
        "{name} could reveal sensitive data through error messages, logs or side channels. "
        "Review what it returns and what it records.",
    ),
    _Rule(
        _S.DENIAL_OF_SERVICE,
        Severity.MEDIUM,
        "Exhaustion of {name}",
        "A flood of requests or crafted input could make {name} unavailable. Add rate "
        "limits, quotas and input size checks.",
    ),
    _Rule(
        _S.ELEVATION_OF_PRIVILEGE,
        Severity.HIGH,
        "Privilege escalation through {name}",
        "A flaw in {name} could let an attacker act with more rights than they were given. "
        "Enforce least privilege and check authorization on every operation.",
    ),
)

_STORE_RULES = (
    _Rule(
        _S.TAMPERING,
        Severity.HIGH,
        "Unauthorized changes to data in {name}",
        "Data held in {name} could be modified without permission. Restrict write access, "
        "enforce integrity constraints and keep an audit trail of changes.",
    ),
    _Rule(
        _S.INFORMATION_DISCLOSURE,
        Severity.HIGH,
        "Exposure of data stored in {name}",
        "Data at rest in {name} could be read by people who should not see it. Encrypt it "
        "at rest and apply strict access control.",
    ),
    _Rule(
        _S.DENIAL_OF_SERVICE,
        Severity.MEDIUM,
        "Exhaustion or corruption of {name}",
        "{name} could be filled, overloaded or corrupted until the system stops working. "
        "Keep backups and set storage quotas and connection limits.",
    ),
)

_ACTOR_RULES = (
    _Rule(
        _S.SPOOFING,
        Severity.HIGH,
        "Impersonation of {name}",
        "An attacker could pretend to be {name}. Authenticate this external party, for "
        "example with credentials or certificate checks.",
    ),
    _Rule(
        _S.REPUDIATION,
        Severity.MEDIUM,
        "{name} denies its actions",
        "{name} could later deny having done something. Keep signed records or audit logs "
        "that tie each action to it.",
    ),
)

_FLOW_RULES = (
    _Rule(
        _S.TAMPERING,
        Severity.HIGH,
        "Modified traffic from {source} to {target}",
        "Data sent from {source} to {target} could be altered on the way. Protect the "
        "channel with TLS and verify message integrity.",
    ),
    _Rule(
        _S.INFORMATION_DISCLOSURE,
        Severity.HIGH,
        "Intercepted traffic from {source} to {target}",
        "Data sent from {source} to {target} could be read in transit. Encrypt the channel "
        "and send only the data that is needed.",
    ),
    _Rule(
        _S.DENIAL_OF_SERVICE,
        Severity.MEDIUM,
        "Disrupted flow from {source} to {target}",
        "The channel from {source} to {target} could be cut or flooded. Plan for timeouts, "
        "retries and redundancy.",
    ),
)

_RULES_BY_ROLE: dict[StrideRole, tuple[_Rule, ...]] = {
    StrideRole.SERVICE: _SERVICE_RULES,
    StrideRole.STORE: _STORE_RULES,
    StrideRole.ACTOR: _ACTOR_RULES,
    StrideRole.NONE: (),
}

# Used only if the bundled catalog cannot be read, so analysis never fails on it.
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

SEVERITY_RANK: dict[Severity, int] = {s: i for i, s in enumerate(Severity)}
"""0 = most severe (critical) … 4 = least (info)."""

_BUMPED = {
    Severity.INFO: Severity.LOW,
    Severity.LOW: Severity.MEDIUM,
    Severity.MEDIUM: Severity.HIGH,
    Severity.HIGH: Severity.HIGH,
    Severity.CRITICAL: Severity.CRITICAL,
}


def fallback_role(element_type: str) -> StrideRole:
    """The role `role_of` gives when the catalog cannot be read (no aliases)."""
    if element_type == "text":
        return StrideRole.NONE
    if element_type in _FALLBACK_STORES:
        return StrideRole.STORE
    if element_type in _FALLBACK_ACTORS:
        return StrideRole.ACTOR
    return StrideRole.SERVICE


def role_of(element_type: str) -> StrideRole:
    """The STRIDE role of an element type (catalog aliases honoured; unknown → service)."""
    try:
        return stride_role(element_type)
    except Exception:  # a damaged catalog must not stop analysis
        return fallback_role(element_type)


def _short(name: str) -> str:
    clean = " ".join(name.split())
    if len(clean) <= NAME_LIMIT:
        return clean
    return clean[: NAME_LIMIT - 1] + "…"


def _element_name(element: Element) -> str:
    return _short(element.name) if element.name.strip() else element.id


def covered_targets(model: ThreatModel) -> set[tuple[str, StrideCategory]]:
    """(target id, category) pairs the document's threats already cover.

    A threat naming an element counts for the element only; threats naming neither an
    element nor a flow cover nothing.
    """
    covered: set[tuple[str, StrideCategory]] = set()
    for threat in model.threats:
        target = threat.element or threat.flow
        if target:
            covered.add((target, threat.category))
    return covered


def _boundary_of(model: ThreatModel) -> dict[str, str]:
    # The first boundary listing an element wins, so overlapping boundaries stay deterministic.
    owner: dict[str, str] = {}
    for boundary in model.trust_boundaries:
        for member in boundary.contains:
            owner.setdefault(member, boundary.id)
    return owner


def _crosses(owner: dict[str, str], flow: DataFlow) -> bool:
    return owner.get(flow.from_) != owner.get(flow.to)


def crosses_boundary(model: ThreatModel, flow: DataFlow) -> bool:
    """Whether the flow's two ends sit in different trust boundaries (none counts as one)."""
    return _crosses(_boundary_of(model), flow)


def analyze(model: ThreatModel) -> list[ProposedThreat]:
    """Threats the rules call for that the document does not already have.

    Order: element threats in element order (rules in table order), then flow threats in
    flow order. The document is not changed.
    """
    covered = covered_targets(model)
    out: list[ProposedThreat] = []
    for element in model.elements:
        name = _element_name(element)
        for rule in _RULES_BY_ROLE[role_of(element.type)]:
            if (element.id, rule.category) in covered:
                continue
            out.append(
                ProposedThreat(
                    title=rule.title.format(name=name),
                    category=rule.category,
                    severity=rule.severity,
                    description=rule.description.format(name=name),
                    element=element.id,
                )
            )
    names = {e.id: _element_name(e) for e in model.elements}
    owner = _boundary_of(model)
    for flow in model.data_flows:
        source = names.get(flow.from_, _short(flow.from_))
        target = names.get(flow.to, _short(flow.to))
        crossing = _crosses(owner, flow)
        for rule in _FLOW_RULES:
            if (flow.id, rule.category) in covered:
                continue
            out.append(
                ProposedThreat(
                    title=rule.title.format(source=source, target=target),
                    category=rule.category,
                    severity=_BUMPED[rule.severity] if crossing else rule.severity,
                    description=rule.description.format(source=source, target=target),
                    flow=flow.id,
                )
            )
    return out


def by_severity(proposals: list[ProposedThreat]) -> list[ProposedThreat]:
    """Most severe first; equal severities keep their document order (stable sort)."""
    return sorted(proposals, key=lambda p: SEVERITY_RANK[p.severity])
