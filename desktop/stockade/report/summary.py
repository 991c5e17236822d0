"""Facts every report shares: counts, threats by STRIDE category and severity, open risks."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from stockade.thf.model import (
    MitigationStatus,
    Severity,
    StrideCategory,
    Threat,
    ThreatModel,
)

NO_MITIGATION = "none"
"""Status reported for a threat that has no mitigation block at all."""

STATUS_ORDER: tuple[str, ...] = (NO_MITIGATION, *(s.value for s in MitigationStatus))
"""Every mitigation status a report shows, `none` first."""

OPEN_STATUSES: frozenset[str] = frozenset(
    {NO_MITIGATION, MitigationStatus.NOT_STARTED.value, MitigationStatus.IN_PROGRESS.value}
)
"""Statuses that leave a threat unmitigated; accepted and transferred are decisions made."""

STATUS_LABELS: dict[str, str] = {
    NO_MITIGATION: "No mitigation",
    MitigationStatus.NOT_STARTED.value: "Not started",
    MitigationStatus.IN_PROGRESS.value: "In progress",
    MitigationStatus.MITIGATED.value: "Mitigated",
    MitigationStatus.ACCEPTED.value: "Accepted",
    MitigationStatus.TRANSFERRED.value: "Transferred",
}

SEVERITY_RANK: dict[Severity, int] = {s: i for i, s in enumerate(Severity)}
"""0 for critical up to 4 for info: sorting by it puts the worst first."""


class TargetKind(StrEnum):
    """What a threat is about."""

    ELEMENT = "element"
    FLOW = "flow"
    ELEMENT_AND_FLOW = "element+flow"
    NONE = "none"


@dataclass(frozen=True)
class ThreatTarget:
    """A threat's target with names resolved; ids and names are parallel tuples."""

    kind: TargetKind
    ids: tuple[str, ...]
    names: tuple[str, ...]

    @property
    def label(self) -> str:
        """The names joined for display; empty when the threat targets nothing."""
        return ", ".join(self.names)


def mitigation_status(threat: Threat) -> str:
    """The threat's mitigation status value, or `none` when it has no mitigation."""
    return threat.mitigation.status.value if threat.mitigation is not None else NO_MITIGATION


def is_open(threat: Threat) -> bool:
    """True while nothing has been done or decided about the threat."""
    return mitigation_status(threat) in OPEN_STATUSES


@dataclass(frozen=True)
class NameIndex:
    """Display names by id, built once per document so name lookups stay O(1)."""

    element_names: dict[str, str]
    flow_names: dict[str, str]

    @classmethod
    def of(cls, model: ThreatModel) -> NameIndex:
        return cls(
            element_names={e.id: e.name for e in model.elements},
            flow_names={f.id: f.name for f in model.data_flows},
        )

    def element(self, element_id: str) -> str:
        """The element's name, or its id when it has none (or is unknown)."""
        return self.element_names.get(element_id) or element_id

    def flow(self, flow_id: str) -> str:
        """The flow's name, or its id when it has none (or is unknown)."""
        return self.flow_names.get(flow_id) or flow_id

    def target(self, threat: Threat) -> ThreatTarget:
        """The element and/or flow a threat names, with their display names."""
        ids: list[str] = []
        names: list[str] = []
        if threat.element is not None:
            ids.append(threat.element)
            names.append(self.element(threat.element))
        if threat.flow is not None:
            ids.append(threat.flow)
            names.append(self.flow(threat.flow))
        if threat.element is not None and threat.flow is not None:
            kind = TargetKind.ELEMENT_AND_FLOW
        elif threat.element is not None:
            kind = TargetKind.ELEMENT
        elif threat.flow is not None:
            kind = TargetKind.FLOW
        else:
            kind = TargetKind.NONE
        return ThreatTarget(kind=kind, ids=tuple(ids), names=tuple(names))


def by_severity(threats: list[Threat] | tuple[Threat, ...]) -> tuple[Threat, ...]:
    """Threats sorted worst first; document order kept within a severity."""
    return tuple(sorted(threats, key=lambda t: SEVERITY_RANK[t.severity]))


@dataclass(frozen=True)
class ReportSummary:
    """The numbers a report (or the Summary tab) shows for one document."""

    elements: int
    data_flows: int
    trust_boundaries: int
    threats: int
    layers: int
    groups: int
    relationships: int
    diagrams: int
    severity_counts: dict[Severity, int]
    category_counts: dict[StrideCategory, int]
    status_counts: dict[str, int]
    matrix: dict[StrideCategory, dict[Severity, int]]
    open_critical_high: tuple[Threat, ...]

    @property
    def mitigated(self) -> int:
        return self.status_counts[MitigationStatus.MITIGATED.value]

    @property
    def open(self) -> int:
        return sum(self.status_counts[s] for s in OPEN_STATUSES)

    @property
    def coverage_percent(self) -> int:
        """Share of threats marked mitigated, rounded half up; 0 when there are none."""
        if self.threats == 0:
            return 0
        return (self.mitigated * 200 + self.threats) // (self.threats * 2)


def summarize(model: ThreatModel) -> ReportSummary:
    """Count everything a report shows, in canonical category, severity and status order."""
    severity_counts = dict.fromkeys(Severity, 0)
    category_counts = dict.fromkeys(StrideCategory, 0)
    status_counts = dict.fromkeys(STATUS_ORDER, 0)
    matrix = {c: dict.fromkeys(Severity, 0) for c in StrideCategory}
    for threat in model.threats:
        severity_counts[threat.severity] += 1
        category_counts[threat.category] += 1
        status_counts[mitigation_status(threat)] += 1
        matrix[threat.category][threat.severity] += 1
    urgent = [
        t for t in model.threats if t.severity in (Severity.CRITICAL, Severity.HIGH) and is_open(t)
    ]
    return ReportSummary(
        elements=len(model.elements),
        data_flows=len(model.data_flows),
        trust_boundaries=len(model.trust_boundaries),
        threats=len(model.threats),
        layers=len(model.layers),
        groups=len(model.groups),
        relationships=len(model.relationships),
        diagrams=len(model.diagrams),
        severity_counts=severity_counts,
        category_counts=category_counts,
        status_counts=status_counts,
        matrix=matrix,
        open_critical_high=by_severity(urgent),
    )
