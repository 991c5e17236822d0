"""JSON export: a stable document with metadata, counts and threats with resolved targets."""

from __future__ import annotations

import json
from typing import Any

from stockade.report.summary import NameIndex, ReportSummary, mitigation_status, summarize
from stockade.thf.model import ThreatModel

REPORT_KIND = "stockade.threat-model-report"
REPORT_VERSION = 1
"""Bumped only when a key changes meaning or disappears; new keys do not bump it."""


def _metadata(model: ThreatModel) -> dict[str, Any]:
    meta = model.metadata
    return {
        "title": meta.title,
        "author": meta.author,
        "created": meta.created,
        "modified": meta.modified,
        "description": meta.description,
        "created_by": meta.created_by,
        "modified_by": meta.modified_by,
    }


def _counts(summary: ReportSummary) -> dict[str, Any]:
    return {
        "elements": summary.elements,
        "data_flows": summary.data_flows,
        "trust_boundaries": summary.trust_boundaries,
        "threats": summary.threats,
        "layers": summary.layers,
        "groups": summary.groups,
        "relationships": summary.relationships,
        "diagrams": summary.diagrams,
        "threats_by_severity": {k.value: v for k, v in summary.severity_counts.items()},
        "threats_by_category": {k.value: v for k, v in summary.category_counts.items()},
        "threats_by_mitigation_status": dict(summary.status_counts),
        "mitigated": summary.mitigated,
        "unmitigated": summary.open,
        "coverage_percent": summary.coverage_percent,
    }


def report_document(model: ThreatModel) -> dict[str, Any]:
    """The export as plain JSON-ready data (same key order every time)."""
    summary = summarize(model)
    names = NameIndex.of(model)
    threats: list[dict[str, Any]] = []
    for threat in model.threats:
        target = names.target(threat)
        threats.append(
            {
                "id": threat.id,
                "title": threat.title,
                "category": threat.category.value,
                "severity": threat.severity.value,
                "description": threat.description,
                "target": {
                    "type": target.kind.value,
                    "element": (
                        {"id": threat.element, "name": names.element(threat.element)}
                        if threat.element is not None
                        else None
                    ),
                    "flow": (
                        {"id": threat.flow, "name": names.flow(threat.flow)}
                        if threat.flow is not None
                        else None
                    ),
                },
                "mitigation_status": mitigation_status(threat),
                "mitigation": (
                    {
                        "status": threat.mitigation.status.value,
                        "description": threat.mitigation.description,
                    }
                    if threat.mitigation is not None
                    else None
                ),
            }
        )
    boundaries_of: dict[str, list[str]] = {}
    for boundary in model.trust_boundaries:
        for member in boundary.contains:
            boundaries_of.setdefault(member, []).append(boundary.id)
    return {
        "report": REPORT_KIND,
        "report_version": REPORT_VERSION,
        "document_version": model.version,
        "metadata": _metadata(model),
        "counts": _counts(summary),
        "unmitigated_critical_high": [t.id for t in summary.open_critical_high],
        "threats": threats,
        "elements": [
            {
                "id": e.id,
                "name": e.name,
                "type": e.type,
                "trust_zone": e.trust_zone,
                "trust_boundaries": boundaries_of.get(e.id, []),
            }
            for e in model.elements
        ],
        "data_flows": [
            {
                "id": f.id,
                "flow_number": f.flow_number,
                "name": f.name,
                "from": {"id": f.from_, "name": names.element(f.from_)},
                "to": {"id": f.to, "name": names.element(f.to)},
                "protocol": f.protocol,
                "data": list(f.data),
                "authenticated": f.authenticated,
            }
            for f in model.data_flows
        ],
        "trust_boundaries": [
            {
                "id": b.id,
                "name": b.name,
                "contains": [{"id": m, "name": names.element(m)} for m in b.contains],
            }
            for b in model.trust_boundaries
        ],
    }


def render_json(model: ThreatModel) -> str:
    """The export as UTF-8 JSON text, indented, ending with a newline."""
    return json.dumps(report_document(model), ensure_ascii=False, indent=2) + "\n"
