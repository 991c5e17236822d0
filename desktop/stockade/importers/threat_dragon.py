"""OWASP Threat Dragon JSON (version 1 JointJS cells, version 2 x6 cells) to `.thf`, and back.

Every diagram's cells are read: actors, processes, stores and text blocks become elements,
flows become flows (a bidirectional one becomes two; a flow with a loose end is dropped with a
warning), box boundaries become trust boundaries with the elements whose centre is inside,
curve (line) boundaries become trust boundaries around the elements on their smaller side.
Threats on a cell become threats on that element or flow; a non-STRIDE type (LINDDUN, CIA,
DIE, PLOT4ai, generic) is mapped to the closest STRIDE category and kept under `origin`.
Diagrams after the first are placed below it, so no two diagrams overlap.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from stockade.importers.build import (
    ORIGIN_KEY,
    ModelBuilder,
    centre_inside,
    number,
    side_of_line,
)
from stockade.importers.result import ImportFailure, ImportResult, SourceFormat
from stockade.thf.model import MitigationStatus, ThreatModel

_FORMAT = SourceFormat.THREAT_DRAGON
_ELEMENT_TYPES = {
    "tm.Actor": "external_entity",
    "tm.Process": "process",
    "tm.Store": "data_store",
    "tm.Text": "text",
}
_V2_SHAPES = {
    "actor": "tm.Actor",
    "process": "tm.Process",
    "store": "tm.Store",
    "td-text-block": "tm.Text",
    "flow": "tm.Flow",
    "trust-boundary-box": "tm.BoundaryBox",
    "trust-boundary-curve": "tm.Boundary",
    "trust-broundary-curve": "tm.Boundary",
}
_DIAGRAM_GAP = 200.0
_DEFAULT_SIZE = (160.0, 80.0)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class _Cell:
    """One cell of either version, read into the same shape."""

    def __init__(self, raw: dict[str, Any], v2: bool) -> None:
        self.raw = raw
        data = _dict(raw.get("data")) if v2 else raw
        self.data = data
        kind = data.get("type") if v2 else raw.get("type")
        if v2 and not isinstance(kind, str):
            kind = _V2_SHAPES.get(str(raw.get("shape")))
        self.kind = kind if isinstance(kind, str) else ""
        self.id = str(raw.get("id", ""))
        attrs = _dict(raw.get("attrs"))
        label = _dict(attrs.get("text")).get("text") or _dict(attrs.get("label")).get("text")
        self.name: Any = data.get("name") if v2 and data.get("name") else label
        if self.kind == "tm.Flow" and not self.name:
            labels = [
                _dict(lb.get("attrs")) for lb in _list(raw.get("labels")) if isinstance(lb, dict)
            ]
            for label_attrs in labels:
                text = (
                    _dict(label_attrs.get("text")).get("text")
                    or _dict(label_attrs.get("label")).get("text")
                    or _dict(label_attrs.get("labelText")).get("text")
                )
                if text:
                    self.name = text
                    break
        position, size = _dict(raw.get("position")), _dict(raw.get("size"))
        self.x, self.y = number(position.get("x")), number(position.get("y"))
        self.w = number(size.get("width")) or _DEFAULT_SIZE[0]
        self.h = number(size.get("height")) or _DEFAULT_SIZE[1]
        self.threats = [t for t in _list(data.get("threats")) if isinstance(t, dict)]
        end_key = "cell" if v2 else "id"
        self.source = _dict(raw.get("source"))
        self.target = _dict(raw.get("target"))
        self.source_id = (
            self.source.get(end_key) or self.source.get("id") or self.source.get("cell")
        )
        self.target_id = (
            self.target.get(end_key) or self.target.get("id") or self.target.get("cell")
        )

    def line_points(self) -> list[tuple[float, float]]:
        points = []
        for point in (self.source, *_list(self.raw.get("vertices")), self.target):
            px, py = number(_dict(point).get("x")), number(_dict(point).get("y"))
            if px is not None and py is not None:
                points.append((px, py))
        return points


def import_threat_dragon(data: Any, *, today: _dt.date | None = None) -> ImportResult:
    """Build a `.thf` model from parsed Threat Dragon JSON; raise `ImportFailure` otherwise."""
    if not isinstance(data, dict):
        raise ImportFailure(
            "This Threat Dragon file is malformed: its top level is not a JSON object.",
            format=_FORMAT,
        )
    summary, detail = data.get("summary"), data.get("detail")
    if not isinstance(summary, dict) or not isinstance(detail, dict):
        missing = "summary" if not isinstance(summary, dict) else "detail"
        raise ImportFailure(
            f"This OWASP Threat Dragon file is malformed: it has no {missing} section, which "
            "every Threat Dragon model has.",
            format=_FORMAT,
        )
    diagrams = detail.get("diagrams")
    if not isinstance(diagrams, list):
        raise ImportFailure(
            "This OWASP Threat Dragon file is malformed: its detail section has no list of "
            "diagrams.",
            format=_FORMAT,
        )
    stated = data.get("version")
    version = str(stated) if isinstance(stated, (str, int, float)) else None
    build = ModelBuilder(_FORMAT, today=today)
    build.metadata = {
        "title": build.name(summary.get("title"), "Imported Threat Dragon model"),
        "author": build.name(summary.get("owner"), ""),
        "description": build.text(summary.get("description")),
        ORIGIN_KEY: build.origin(
            summary.get("id"),
            version=version,
            contributors=detail.get("contributors"),
            reviewer=detail.get("reviewer"),
        ),
    }
    offset_y = 0.0
    any_v2 = False
    for index, diagram in enumerate(d for d in diagrams if isinstance(d, dict)):
        v2 = "cells" in diagram and "diagramJson" not in diagram
        any_v2 = any_v2 or v2
        raw_cells = diagram.get("cells") if v2 else _dict(diagram.get("diagramJson")).get("cells")
        cells = [_Cell(c, v2) for c in _list(raw_cells) if isinstance(c, dict)]
        diagram_id = build.new_id(
            build.name(diagram.get("title"), f"diagram {index + 1}"), "diagram"
        )
        build.diagrams.append(
            {
                "id": diagram_id,
                "name": build.name(diagram.get("title"), f"Diagram {index + 1}"),
                "kind": "dfd",
                "description": build.text(diagram.get("description")) or None,
                ORIGIN_KEY: build.origin(
                    diagram.get("id"),
                    diagramType=diagram.get("diagramType"),
                    version=diagram.get("version"),
                ),
            }
        )
        build.diagrams[-1] = {k: v for k, v in build.diagrams[-1].items() if v is not None}
        offset_y = _import_diagram(build, cells, offset_y) + _DIAGRAM_GAP
    if version is None:
        version = "2.x" if any_v2 else "1.x"
    return build.finish(version)


def _import_diagram(build: ModelBuilder, cells: list[_Cell], offset_y: float) -> float:
    """Add one diagram's cells; return the bottom of what it placed (in shifted coordinates)."""
    top = min((c.y for c in cells if c.y is not None), default=0.0)
    shift = offset_y - top if offset_y else 0.0
    bottom = offset_y
    element_ids: dict[str, str] = {}
    boxes: dict[str, tuple[float, float, float, float]] = {}
    for cell in cells:
        element_type = _ELEMENT_TYPES.get(cell.kind)
        if element_type is None:
            continue
        fallback = {"tm.Actor": "Actor", "tm.Process": "Process", "tm.Store": "Store"}.get(
            cell.kind, "Text"
        )
        name = build.name(cell.name, fallback, cell.id)
        new_id = build.new_id(name, "element")
        element_ids[cell.id] = new_id
        record: dict[str, Any] = {
            "id": new_id,
            "type": element_type,
            "name": name,
            "description": build.text(cell.data.get("description")),
        }
        if cell.x is not None and cell.y is not None:
            x, y = cell.x, cell.y + shift
            record["position"] = {"x": x, "y": y}
            boxes[new_id] = (x, y, cell.w, cell.h)
            bottom = max(bottom, y + cell.h)
        if cell.data.get("outOfScope") is True:
            record["tags"] = ["out-of-scope"]
            build.warn(
                "out_of_scope_marked",
                f"'{name}' is out of scope in Threat Dragon; it was imported with the tag "
                "out-of-scope.",
                cell.id,
            )
        record[ORIGIN_KEY] = build.origin(cell.id, cell_type=cell.kind, **_kept(cell.data))
        build.elements.append(record)
        _add_threats(build, cell, "element", new_id)

    for cell in cells:
        if cell.kind != "tm.Flow":
            continue
        name = build.name(cell.name, "", cell.id)
        source = element_ids.get(str(cell.source_id)) if cell.source_id else None
        target = element_ids.get(str(cell.target_id)) if cell.target_id else None
        if source is None or target is None:
            build.warn(
                "flow_dropped",
                f"Flow '{name or cell.id}' has a loose end (not attached to an element); it was "
                "not imported"
                + (f", with its {len(cell.threats)} threats" if cell.threats else "")
                + ".",
                cell.id,
            )
            _add_threats(build, cell, "none", None)
            continue
        ends = [(source, target)]
        if cell.data.get("isBidirectional") is True:
            ends.append((target, source))
            build.warn(
                "bidirectional_split",
                f"Bidirectional flow '{name or cell.id}' became two flows.",
                cell.id,
            )
        first_id = None
        for direction, (a, b) in enumerate(ends):
            flow_id = f"flow-{len(build.flows) + 1}"
            first_id = first_id or flow_id
            record = {
                "id": flow_id,
                "flow_number": len(build.flows) + 1,
                "name": name,
                "from": a,
                "to": b,
                "protocol": build.name(cell.data.get("protocol"), ""),
                ORIGIN_KEY: build.origin(
                    cell.id, reverse=direction == 1 or None, **_kept(cell.data)
                ),
            }
            if cell.data.get("outOfScope") is True:
                build.warn(
                    "out_of_scope_marked",
                    f"Flow '{name or cell.id}' is out of scope in Threat Dragon; that is kept "
                    "under origin only.",
                    cell.id,
                )
            build.flows.append(record)
        _add_threats(build, cell, "flow", first_id)

    for cell in cells:
        if cell.kind == "tm.BoundaryBox":
            name = build.name(cell.name, "Trust boundary", cell.id)
            record = {"id": build.new_id(name, "boundary"), "name": name, "contains": []}
            if cell.x is not None and cell.y is not None:
                box = (cell.x, cell.y + shift, cell.w, cell.h)
                record["position"] = {"x": box[0], "y": box[1]}
                record["size"] = {"width": box[2], "height": box[3]}
                record["contains"] = [
                    element_id
                    for element_id, (x, y, w, h) in boxes.items()
                    if centre_inside(box, x, y, w, h)
                ]
            record[ORIGIN_KEY] = build.origin(cell.id, cell_type=cell.kind, **_kept(cell.data))
            build.boundaries.append(record)
        elif cell.kind == "tm.Boundary":
            name = build.name(cell.name, "Trust boundary", cell.id)
            points = [(x, y + shift) for x, y in cell.line_points()]
            members = side_of_line(points, boxes)
            record = {"id": build.new_id(name, "boundary"), "name": name, "contains": members}
            if not members and points:
                left, top_y = min(p[0] for p in points), min(p[1] for p in points)
                record["position"] = {"x": left, "y": top_y}
                record["size"] = {
                    "width": max(20.0, max(p[0] for p in points) - left),
                    "height": max(20.0, max(p[1] for p in points) - top_y),
                }
            build.warn(
                "line_boundary",
                f"Line boundary '{name}' became a box boundary around the {len(members)} "
                "elements on its smaller side; the line itself is kept under origin.",
                cell.id,
            )
            record[ORIGIN_KEY] = build.origin(
                cell.id, cell_type=cell.kind, points=[list(p) for p in cell.line_points()]
            )
            build.boundaries.append(record)
        if cell.kind in ("tm.BoundaryBox", "tm.Boundary") and cell.threats:
            _add_threats(build, cell, "none", None)
    return bottom


_NOT_KEPT = frozenset({"name", "description", "threats", "type", "hasOpenThreats"})


def _kept(data: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in data.items()
        if k not in _NOT_KEPT
        and k
        not in (
            "attrs",
            "size",
            "position",
            "source",
            "target",
            "vertices",
            "labels",
            "id",
            "z",
            "angle",
            "smooth",
        )
    }


def _add_threats(build: ModelBuilder, cell: _Cell, kind: str, target: str | None) -> None:
    for threat in cell.threats:
        source_id = threat.get("id") or threat.get("number")
        status = build.status(threat.get("status"), source_id)
        record: dict[str, Any] = {
            "id": f"threat-{len(build.threats) + 1}",
            "title": build.name(threat.get("title"), "Threat", source_id),
            "category": build.category(threat.get("type"), source_id=source_id).value,
            "severity": build.severity(threat.get("severity"), source_id).value,
            "description": build.text(threat.get("description")),
            "mitigation": {
                "status": status.value,
                "description": build.text(threat.get("mitigation")),
            },
            ORIGIN_KEY: build.origin(
                source_id,
                type=threat.get("type"),
                modelType=threat.get("modelType"),
                status=threat.get("status"),
                score=threat.get("score"),
                number=threat.get("number"),
            ),
        }
        if kind == "element" and target is not None:
            record["element"] = target
        elif kind == "flow" and target is not None:
            record["flow"] = target
        else:
            build.warn(
                "threat_unattached",
                f"Threat '{record['title']}' is on a cell that is not an element or an attached "
                "flow; it was imported without a target.",
                source_id,
            )
        build.threats.append(record)


# ---------------------------------------------------------------------------------------------
# Export


_SHAPES = {"external_entity": "actor", "data_store": "store", "text": "td-text-block"}
_TYPES = {
    "actor": "tm.Actor",
    "store": "tm.Store",
    "process": "tm.Process",
    "td-text-block": "tm.Text",
}
_STATUS = {
    MitigationStatus.NOT_STARTED: "Open",
    MitigationStatus.IN_PROGRESS: "Open",
    MitigationStatus.MITIGATED: "Mitigated",
    MitigationStatus.ACCEPTED: "NotApplicable",
    MitigationStatus.TRANSFERRED: "NotApplicable",
}


def _origin(entity: Any) -> dict[str, Any]:
    value = entity.extras.get(ORIGIN_KEY)
    return value if isinstance(value, dict) else {}


def _td_threat(threat: Any) -> dict[str, Any]:
    origin = _origin(threat)
    return {
        "id": threat.id,
        "title": threat.title,
        "status": _STATUS[threat.mitigation.status] if threat.mitigation else "Open",
        "severity": threat.severity.value.capitalize(),
        "type": threat.category.value,
        "modelType": "STRIDE",
        "description": threat.description,
        "mitigation": threat.mitigation.description if threat.mitigation else "",
        **({"score": origin["score"]} if "score" in origin else {}),
    }


def export_threat_dragon(model: ThreatModel) -> str:
    """The model as a Threat Dragon version 2 JSON model with one STRIDE diagram.

    Threats with no element or flow have no cell to live on in Threat Dragon; they are put on
    a text block named "Threats without a target" so none is lost.
    """
    from stockade.thf.layout import layout_missing_positions

    model = layout_missing_positions(model)
    threats_on: dict[str, list[dict[str, Any]]] = {}
    loose: list[dict[str, Any]] = []
    for threat in model.threats:
        target = threat.element if threat.element is not None else threat.flow
        if target is None:
            loose.append(_td_threat(threat))
        else:
            threats_on.setdefault(target, []).append(_td_threat(threat))
    cells: list[dict[str, Any]] = []
    for z, boundary in enumerate(model.trust_boundaries):
        position = boundary.position
        size = boundary.size
        cells.append(
            {
                "id": boundary.id,
                "shape": "trust-boundary-box",
                "zIndex": -1 - z,
                "position": {
                    "x": position.x if position else 0.0,
                    "y": position.y if position else 0.0,
                },
                "size": {
                    "width": size.width if size else 400.0,
                    "height": size.height if size else 300.0,
                },
                "attrs": {"label": {"text": boundary.name}},
                "data": {
                    "type": "tm.BoundaryBox",
                    "name": boundary.name,
                    "description": "",
                    "isTrustBoundary": True,
                    "hasOpenThreats": False,
                },
            }
        )
    for z, element in enumerate(model.elements, start=1):
        shape = _SHAPES.get(element.type, "process")
        threats = threats_on.get(element.id, [])
        position = element.position
        cells.append(
            {
                "id": element.id,
                "shape": shape,
                "zIndex": z,
                "position": {
                    "x": position.x if position else 0.0,
                    "y": position.y if position else 0.0,
                },
                "size": {"width": 160.0, "height": 80.0},
                "attrs": {"text": {"text": element.name}},
                "data": {
                    "type": _TYPES[shape],
                    "name": element.name,
                    "description": element.description,
                    "outOfScope": "out-of-scope" in element.tags,
                    "reasonOutOfScope": "",
                    "isTrustBoundary": False,
                    "threats": threats,
                    "hasOpenThreats": any(t["status"] == "Open" for t in threats),
                },
            }
        )
    if loose:
        cells.append(
            {
                "id": "threats-without-a-target",
                "shape": "td-text-block",
                "zIndex": len(cells) + 1,
                "position": {"x": 0.0, "y": -120.0},
                "size": {"width": 240.0, "height": 60.0},
                "attrs": {"text": {"text": "Threats without a target"}},
                "data": {
                    "type": "tm.Text",
                    "name": "Threats without a target",
                    "threats": loose,
                    "hasOpenThreats": any(t["status"] == "Open" for t in loose),
                },
            }
        )
    for flow in model.data_flows:
        threats = threats_on.get(flow.id, [])
        cells.append(
            {
                "id": flow.id,
                "shape": "flow",
                "zIndex": 10,
                "source": {"cell": flow.from_},
                "target": {"cell": flow.to},
                "labels": [{"position": 0.5, "attrs": {"label": {"text": flow.name}}}],
                "data": {
                    "type": "tm.Flow",
                    "name": flow.name,
                    "description": "",
                    "protocol": flow.protocol,
                    "isBidirectional": False,
                    "isEncrypted": False,
                    "isPublicNetwork": False,
                    "outOfScope": False,
                    "reasonOutOfScope": "",
                    "threats": threats,
                    "hasOpenThreats": any(t["status"] == "Open" for t in threats),
                },
            }
        )
    meta = model.metadata
    document = {
        "version": "2.3.0",
        "summary": {
            "title": meta.title,
            "owner": meta.author,
            "description": meta.description,
            "id": 0,
        },
        "detail": {
            "contributors": [],
            "diagrams": [
                {
                    "id": 0,
                    "title": model.diagrams[0].name if model.diagrams else "Main diagram",
                    "diagramType": "STRIDE",
                    "version": "2.3.0",
                    "cells": cells,
                }
            ],
            "diagramTop": 1,
            "reviewer": "",
            "threatTop": len(model.threats),
        },
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
