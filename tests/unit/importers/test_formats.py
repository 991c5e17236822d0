"""Format details the real samples do not cover: non-STRIDE types, loose ends, pytm findings."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stockade.importers.convert import import_bytes
from stockade.importers.detect import detect, foreign_file_hint
from stockade.importers.otm import export_otm
from stockade.importers.result import SourceFormat
from stockade.thf.model import MitigationStatus, StrideCategory


def _td(cells: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {
            "version": "2.2.0",
            "summary": {"title": "TD", "owner": "Ann"},
            "detail": {"diagrams": [{"title": "Main", "diagramType": "LINDDUN", "cells": cells}]},
        }
    ).encode()


def _node(cell_id: str, shape: str, kind: str, x: float, **data: Any) -> dict[str, Any]:
    return {
        "id": cell_id,
        "shape": shape,
        "position": {"x": x, "y": 100},
        "size": {"width": 100, "height": 60},
        "data": {"type": kind, "name": cell_id.upper(), **data},
    }


def test_threat_dragon_maps_non_stride_types_with_a_warning_and_keeps_the_original() -> None:
    threats = [
        {
            "title": "Link",
            "type": "Linkability",
            "modelType": "LINDDUN",
            "severity": "Low",
            "status": "Open",
        },
        {
            "title": "Avail",
            "type": "Availability",
            "modelType": "CIA",
            "severity": "High",
            "status": "NotApplicable",
        },
        {
            "title": "Odd",
            "type": "Weird stuff",
            "modelType": "Generic",
            "severity": "TBD",
            "status": "Mitigated",
        },
    ]
    result = import_bytes(_td([_node("a", "process", "tm.Process", 0, threats=threats)]))
    got = [
        (t.category, t.severity.value, t.mitigation.status if t.mitigation else None)
        for t in result.model.threats
    ]
    assert got == [
        (StrideCategory.INFORMATION_DISCLOSURE, "low", MitigationStatus.NOT_STARTED),
        (StrideCategory.DENIAL_OF_SERVICE, "high", MitigationStatus.ACCEPTED),
        (StrideCategory.TAMPERING, "medium", MitigationStatus.MITIGATED),
    ]
    origins = [t.extras["origin"] for t in result.model.threats]
    assert [(o["type"], o["modelType"]) for o in origins] == [
        ("Linkability", "LINDDUN"),
        ("Availability", "CIA"),
        ("Weird stuff", "Generic"),
    ]
    codes = [w.code for w in result.warnings]
    assert codes.count("category_mapped") == 2 and "category_defaulted" in codes
    assert "severity_defaulted" in codes and "status_mapped" in codes


def test_threat_dragon_flows_loose_ends_dropped_and_bidirectional_split() -> None:
    cells = [
        _node("a", "actor", "tm.Actor", 0),
        _node("b", "store", "tm.Store", 300),
        {
            "id": "f1",
            "shape": "flow",
            "source": {"cell": "a"},
            "target": {"cell": "b"},
            "data": {
                "type": "tm.Flow",
                "name": "both",
                "isBidirectional": True,
                "threats": [
                    {"title": "T", "type": "Tampering", "severity": "Medium", "status": "Open"}
                ],
            },
        },
        {
            "id": "f2",
            "shape": "flow",
            "source": {"cell": "a"},
            "target": {"x": 5, "y": 5},
            "data": {"type": "tm.Flow", "name": "loose"},
        },
        {
            "id": "box",
            "shape": "trust-boundary-box",
            "position": {"x": 250, "y": 50},
            "size": {"width": 300, "height": 200},
            "attrs": {"label": {"text": "Data tier"}},
            "data": {"type": "tm.BoundaryBox"},
        },
    ]
    result = import_bytes(_td(cells))
    flows = result.model.data_flows
    assert [(f.from_, f.to, f.name) for f in flows] == [("a", "b", "both"), ("b", "a", "both")]
    assert result.model.threats[0].flow == flows[0].id
    (box,) = result.model.trust_boundaries
    assert (box.name, box.contains) == ("Data tier", ["b"])
    codes = {w.code for w in result.warnings}
    assert {"bidirectional_split", "flow_dropped"} <= codes


def test_pytm_findings_become_threats_on_elements_and_flows() -> None:
    source = {
        "name": "tm",
        "description": "",
        "boundaries": [{"name": "Web", "inBoundary": None}, {"name": "Inner", "inBoundary": "Web"}],
        "elements": [
            {"__class__": "Actor", "name": "User", "inBoundary": None},
            {"__class__": "Server", "name": "Api", "inBoundary": "Inner"},
            {"__class__": "Datastore", "name": "DB", "inBoundary": "Web", "inScope": False},
        ],
        "flows": [
            {"name": "login", "source": "User", "sink": "Api", "order": 1, "data": ["creds"]},
            {"name": "ghost", "source": "User", "sink": "Nobody"},
        ],
        "findings": [
            {
                "threat_id": "INP02",
                "target": "Api",
                "description": "Overflow",
                "severity": "High",
                "mitigations": "Bounds",
                "details": "d",
                "id": "1",
            },
            {
                "threat_id": "AA01",
                "target": "login",
                "description": "Weak auth",
                "severity": "Very High",
                "response": "mitigated",
                "id": "2",
            },
            {
                "threat_id": "XYZ9",
                "target": "DB",
                "description": "Data leak of records",
                "severity": "Low",
                "id": "3",
            },
        ],
    }
    result = import_bytes(json.dumps(source).encode())
    assert result.format is SourceFormat.PYTM
    model = result.model
    assert [e.type for e in model.elements] == ["external_entity", "process", "data_store"]
    by_name = {b.name: b.contains for b in model.trust_boundaries}
    assert by_name == {"Web": ["api", "db"], "Inner": ["api"]}
    assert [(f.name, f.data) for f in model.data_flows] == [("login", ["creds"])]
    first, second, third = model.threats
    assert (first.element, first.category, first.severity.value) == (
        "api",
        StrideCategory.TAMPERING,
        "high",
    )
    assert (second.flow, second.category, second.severity.value) == (
        "flow-1",
        StrideCategory.SPOOFING,
        "critical",
    )
    assert second.mitigation is not None and second.mitigation.status is MitigationStatus.MITIGATED
    assert third.category is StrideCategory.INFORMATION_DISCLOSURE
    assert "out-of-scope" in model.elements[2].tags
    assert {"flow_dropped", "out_of_scope_marked"} <= {w.code for w in result.warnings}


def test_otm_positions_are_made_absolute_and_survive_export() -> None:
    source = {
        "otmVersion": "0.2.0",
        "project": {"name": "P", "id": "p"},
        "representations": [{"id": "d", "name": "D", "type": "diagram"}],
        "trustZones": [
            {
                "id": "z",
                "name": "Zone",
                "risk": {"trustRating": 5},
                "representations": [
                    {
                        "representation": "d",
                        "id": "zr",
                        "position": {"x": 500, "y": 400},
                        "size": {"width": 400, "height": 300},
                    }
                ],
            },
        ],
        "components": [
            {
                "id": "c",
                "name": "Svc",
                "type": "web-service",
                "parent": {"trustZone": "z"},
                "representations": [
                    {"representation": "d", "id": "cr", "position": {"x": 20, "y": 30}}
                ],
            },
            {"id": "db", "name": "Orders DB", "type": "postgresql", "parent": {"trustZone": "z"}},
        ],
        "dataflows": [{"id": "f", "name": "q", "source": "c", "destination": "db"}],
        "threats": [
            {
                "id": "t",
                "name": "SQLi",
                "categories": ["Tampering"],
                "risk": {"likelihood": 50, "impact": 95},
            }
        ],
    }
    source["components"][1]["threats"] = [
        {
            "threat": "t",
            "state": "exposed",
            "mitigations": [{"mitigation": "m", "state": "implemented"}],
        }
    ]
    source["mitigations"] = [{"id": "m", "name": "Prepared statements", "riskReduction": 90}]
    result = import_bytes(json.dumps(source).encode())
    svc, db = result.model.elements
    assert svc.position is not None and (svc.position.x, svc.position.y) == (520.0, 430.0)
    assert db.type == "data_store" and db.position is not None
    (threat,) = result.model.threats
    assert (threat.element, threat.severity.value) == ("orders-db", "critical")
    assert threat.mitigation is not None
    assert threat.mitigation.status is MitigationStatus.MITIGATED
    assert "Prepared statements" in threat.mitigation.description
    again = import_bytes(export_otm(result.model).encode())
    moved = again.model.elements[0]
    assert moved.position == svc.position
    assert again.model.elements[0].extras["origin"]["type"] == "web-service"


@pytest.mark.parametrize(
    ("raw", "name", "fmt"),
    [
        (b"otmVersion: 0.1.0\nproject: {name: x, id: x}\n", "x.yml", SourceFormat.OTM),
        (b'  {"summary": {}, "detail": {}}', "x.json", SourceFormat.THREAT_DRAGON),
        (b"\xef\xbb\xbf<?xml version='1.0'?><ThreatModel xmlns='x'/>", "x", SourceFormat.TM7),
        (b'{"elements": [], "flows": [], "boundaries": []}', "", SourceFormat.PYTM),
    ],
)
def test_detection_goes_by_content(raw: bytes, name: str, fmt: SourceFormat) -> None:
    found = detect(raw, name)
    assert found is not None and found.format is fmt
    hint = foreign_file_hint(raw, name)
    assert hint is not None and "stockade import" in hint[1]


def test_a_thf_file_is_not_taken_for_a_foreign_model() -> None:
    assert detect(b"version: '1.0'\nmetadata: {}\n", "a.thf") is None
