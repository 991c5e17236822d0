"""Builders for small documents used by the report tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from stockade.thf.model import ThreatModel
from stockade.thf.validate import validate_document

HOSTILE = "<script>alert('x')</script>\" onmouseover=\"steal()"
"""Text no report may ever emit unescaped."""

BASE_DOCUMENT: dict[str, Any] = {
    "version": "1.0",
    "metadata": {
        "title": "Report Test Model",
        "author": "Dana",
        "created": "2026-02-01",
        "modified": "2026-02-02",
        "description": "Two lines\nof description.",
    },
    "elements": [
        {"id": "web", "type": "web_server", "name": "Web", "position": {"x": 0, "y": 0}},
        {"id": "db", "type": "sql_database", "name": "DB", "position": {"x": 300, "y": 0}},
        {"id": "user", "type": "external_entity", "name": "User"},
    ],
    "data_flows": [
        {"id": "f1", "flow_number": 1, "name": "Queries", "from": "web", "to": "db"},
        {"id": "f2", "name": "Browse", "from": "user", "to": "web"},
    ],
    "trust_boundaries": [
        {
            "id": "b1",
            "name": "Internal",
            "contains": ["web", "db"],
            "position": {"x": -20, "y": -30},
            "size": {"width": 520, "height": 120},
        }
    ],
    "threats": [
        {
            "id": "t1",
            "title": "Critical open",
            "category": "Tampering",
            "element": "web",
            "severity": "critical",
        },
        {
            "id": "t2",
            "title": "High started",
            "category": "Spoofing",
            "flow": "f1",
            "severity": "high",
            "mitigation": {"status": "not_started"},
        },
        {
            "id": "t3",
            "title": "High accepted",
            "category": "Spoofing",
            "element": "db",
            "flow": "f1",
            "severity": "high",
            "mitigation": {"status": "accepted"},
        },
        {
            "id": "t4",
            "title": "Medium done",
            "category": "Denial of Service",
            "element": "db",
            "severity": "medium",
            "mitigation": {"status": "mitigated", "description": "Quotas"},
        },
        {
            "id": "t5",
            "title": "High in progress",
            "category": "Information Disclosure",
            "severity": "high",
            "mitigation": {"status": "in_progress"},
        },
        {
            "id": "t6",
            "title": "Low done",
            "category": "Repudiation",
            "element": "web",
            "severity": "low",
            "mitigation": {"status": "mitigated"},
        },
    ],
    "diagrams": [{"id": "main-dfd", "name": "Level 0 DFD"}],
}


def build_model(**overrides: Any) -> ThreatModel:
    """A valid document from `BASE_DOCUMENT` with whole sections replaced by `overrides`."""
    data = copy.deepcopy(BASE_DOCUMENT)
    data.update(copy.deepcopy(overrides))
    return validate_document(data)


def hostile_model() -> ThreatModel:
    """Every free-text field a report shows carries markup and attribute-breaking quotes."""
    return validate_document(
        {
            "version": "1.0",
            "metadata": {
                "title": HOSTILE,
                "author": HOSTILE,
                "created": "2026-02-01",
                "modified": "2026-02-01",
                "description": HOSTILE,
                "created_by": HOSTILE,
            },
            "elements": [
                {
                    "id": "e1" + HOSTILE,
                    "type": HOSTILE,
                    "name": HOSTILE,
                    "trust_zone": HOSTILE,
                    "description": HOSTILE,
                    "technologies": [HOSTILE],
                    "position": {"x": 10, "y": 10},
                    "fill_color": 'red" onload="steal()',
                    "stroke_color": "url(javascript:steal())",
                },
                {"id": "e2", "type": "process", "name": "Plain", "position": {"x": 400, "y": 10}},
            ],
            "data_flows": [
                {
                    "id": "f1" + HOSTILE,
                    "flow_number": 1,
                    "name": HOSTILE,
                    "from": "e1" + HOSTILE,
                    "to": "e2",
                    "protocol": HOSTILE,
                    "data": [HOSTILE],
                }
            ],
            "trust_boundaries": [
                {
                    "id": "b1" + HOSTILE,
                    "name": HOSTILE,
                    "contains": ["e1" + HOSTILE],
                    "position": {"x": 0, "y": 0},
                    "size": {"width": 300, "height": 100},
                }
            ],
            "threats": [
                {
                    "id": "t1" + HOSTILE,
                    "title": HOSTILE,
                    "category": "Tampering",
                    "element": "e1" + HOSTILE,
                    "flow": "f1" + HOSTILE,
                    "severity": "critical",
                    "description": HOSTILE,
                    "mitigation": {"status": "in_progress", "description": HOSTILE},
                }
            ],
        }
    )


@pytest.fixture
def model() -> ThreatModel:
    return build_model()
