"""Microsoft Threat Modeling Tool `.tm7` (XML) to `.thf`.

Each drawing surface is read: stencils become elements by their generic type (process, data
store, external interactor; free-text annotations become text elements), box boundaries become
trust boundaries holding the elements whose centre lies inside, line boundaries become trust
boundaries around the elements on their smaller side, connectors become flows (one with an end
that is not a stencil is dropped with a warning). Threat instances become threats on their
flow and target element: category from the threat's own category or its type in the knowledge
base, priority to severity, state to mitigation status. Out-of-scope stencils are kept and
tagged `out-of-scope`, with a warning.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any
from xml.etree.ElementTree import Element as XmlElement

from stockade.importers.build import ORIGIN_KEY, ModelBuilder, centre_inside, number, side_of_line
from stockade.importers.result import ImportFailure, ImportResult, SourceFormat

_FORMAT = SourceFormat.TM7
_XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
_ELEMENT_TYPES = {
    "GE.P": "process",
    "GE.DS": "data_store",
    "GE.EI": "external_entity",
    "GE.A": "text",
}
_STENCIL_TYPES = {
    "StencilEllipse": "GE.P",
    "StencilParallelLines": "GE.DS",
    "StencilRectangle": "GE.EI",
    "StencilAnnotation": "GE.A",
    "BorderBoundary": "GE.TB.B",
    "LineBoundary": "GE.TB.L",
    "Connector": "GE.DF",
}
_GENERIC_LABELS = frozenset(
    {
        "Generic Process",
        "Generic Data Store",
        "Generic External Interactor",
        "Generic Data Flow",
        "Free Text Annotation",
    }
)
_DIAGRAM_GAP = 200.0


def _child(node: XmlElement | None, name: str) -> XmlElement | None:
    return None if node is None else node.find("{*}" + name)


def _text(node: XmlElement | None, name: str) -> str:
    found = _child(node, name)
    return (found.text or "").strip() if found is not None else ""


def _properties(value: XmlElement) -> tuple[dict[str, str], str]:
    """The stencil's display properties by display name, and its header (the stencil label)."""
    props: dict[str, str] = {}
    header = ""
    container = _child(value, "Properties")
    for item in container if container is not None else ():
        display = _text(item, "DisplayName")
        kind = item.get(_XSI_TYPE, "")
        if kind.endswith("HeaderDisplayAttribute"):
            header = header or display
            continue
        props.setdefault(display, _text(item, "Value"))
    return props, header


def _entries(surface: XmlElement, section: str) -> list[tuple[str, XmlElement]]:
    holder = _child(surface, section)
    out = []
    for pair in holder if holder is not None else ():
        key, value = _text(pair, "Key"), _child(pair, "Value")
        if value is not None:
            out.append((key or _text(value, "Guid"), value))
    return out


def _generic_type(value: XmlElement) -> str:
    return _text(value, "GenericTypeId") or _STENCIL_TYPES.get(value.get(_XSI_TYPE, ""), "")


def import_tm7(root: XmlElement, *, today: _dt.date | None = None) -> ImportResult:
    """Build a `.thf` model from a parsed `.tm7` document; raise `ImportFailure` otherwise."""
    if root.tag.rsplit("}", 1)[-1] != "ThreatModel":
        raise ImportFailure(
            "This is not a Microsoft Threat Modeling Tool file: its XML root is not ThreatModel.",
            format=_FORMAT,
        )
    surfaces = root.findall("{*}DrawingSurfaceList/{*}DrawingSurfaceModel")
    if _child(root, "DrawingSurfaceList") is None:
        raise ImportFailure(
            "This Microsoft Threat Modeling Tool file has no drawing surface list, which every "
            ".tm7 file has.",
            format=_FORMAT,
        )
    build = ModelBuilder(_FORMAT, today=today)
    meta = _child(root, "MetaInformation")
    build.metadata = {
        "title": build.name(_text(meta, "ThreatModelName"), "Imported TM7 model"),
        "author": build.name(_text(meta, "Owner"), ""),
        "description": build.text(_text(meta, "HighLevelSystemDescription")),
        ORIGIN_KEY: build.origin(
            None,
            version=_text(root, "Version"),
            contributors=_text(meta, "Contributors"),
            reviewer=_text(meta, "Reviewer"),
            assumptions=_text(meta, "Assumptions"),
            external_dependencies=_text(meta, "ExternalDependencies"),
        ),
    }
    element_ids: dict[str, str] = {}
    flow_ids: dict[str, str] = {}
    offset_y = 0.0
    for index, surface in enumerate(surfaces):
        props, _header = _properties(surface)
        name = build.name(props.get("Name"), f"Diagram {index + 1}")
        build.diagrams.append(
            {
                "id": build.new_id(name, "diagram"),
                "name": name,
                "kind": "dfd",
                ORIGIN_KEY: build.origin(_text(surface, "Guid")),
            }
        )
        offset_y = _import_surface(build, surface, offset_y, element_ids, flow_ids) + _DIAGRAM_GAP
    _import_threats(build, root, element_ids, flow_ids)
    return build.finish(_text(root, "Version") or None)


def _import_surface(
    build: ModelBuilder,
    surface: XmlElement,
    offset_y: float,
    element_ids: dict[str, str],
    flow_ids: dict[str, str],
) -> float:
    borders = _entries(surface, "Borders")
    lines = _entries(surface, "Lines")
    tops = [number(_text(v, "Top")) for _, v in borders]
    top = min((t for t in tops if t is not None), default=0.0)
    shift = offset_y - top if offset_y else 0.0
    bottom = offset_y
    boxes: dict[str, tuple[float, float, float, float]] = {}
    boundary_boxes: list[tuple[str, dict[str, Any], tuple[float, float, float, float] | None]] = []
    for guid, value in borders:
        generic = _generic_type(value)
        props, header = _properties(value)
        left, top_y = number(_text(value, "Left")), number(_text(value, "Top"))
        width = number(_text(value, "Width")) or 100.0
        height = number(_text(value, "Height")) or 100.0
        box = (
            (left, top_y + shift, width, height) if left is not None and top_y is not None else None
        )
        if box is not None:
            bottom = max(bottom, box[1] + box[3])
        if generic == "GE.TB.B":
            name = build.name(props.get("Name"), header or "Trust boundary", guid)
            record: dict[str, Any] = {"id": build.new_id(name, "boundary"), "name": name}
            if box is not None:
                record["position"] = {"x": box[0], "y": box[1]}
                record["size"] = {"width": box[2], "height": box[3]}
            record[ORIGIN_KEY] = build.origin(guid, type_id=_text(value, "TypeId"), stencil=header)
            boundary_boxes.append((guid, record, box))
            continue
        element_type = _ELEMENT_TYPES.get(generic)
        if element_type is None:
            build.warn(
                "shape_dropped",
                f"A drawing item of type '{build.text(generic or value.get(_XSI_TYPE), limit=40)}' "
                "is not a process, data store, external interactor, annotation or boundary; it "
                "was not imported.",
                guid,
            )
            continue
        name = build.name(props.get("Name"), header or "Element", guid)
        new_id = build.new_id(name, "element")
        element_ids[guid] = new_id
        record = {"id": new_id, "type": element_type, "name": name}
        if header and header not in _GENERIC_LABELS:
            record["technologies"] = [build.name(header, "")]
        if box is not None:
            record["position"] = {"x": box[0], "y": box[1]}
            boxes[new_id] = box
        if props.get("Out Of Scope", "").lower() == "true":
            record["tags"] = ["out-of-scope"]
            build.warn(
                "out_of_scope_marked",
                f"'{name}' is out of scope in the Threat Modeling Tool; it was imported with the "
                "tag out-of-scope.",
                guid,
            )
        kept = {
            k: v
            for k, v in props.items()
            if k not in ("Name", "Out Of Scope") and v and v.lower() not in ("select", "false")
        }
        record[ORIGIN_KEY] = build.origin(
            guid, type_id=_text(value, "TypeId"), stencil=header, properties=kept or None
        )
        build.elements.append(record)

    for _guid, record, box in boundary_boxes:
        record["contains"] = (
            [eid for eid, (x, y, w, h) in boxes.items() if centre_inside(box, x, y, w, h)]
            if box is not None
            else []
        )
        build.boundaries.append(record)

    for guid, value in lines:
        generic = _generic_type(value)
        props, header = _properties(value)
        if generic == "GE.TB.L":
            name = build.name(props.get("Name"), header or "Trust boundary", guid)
            points = []
            for prefix in ("Source", "Handle", "Target"):
                px, py = number(_text(value, prefix + "X")), number(_text(value, prefix + "Y"))
                if px is not None and py is not None:
                    points.append((px, py + shift))
            members = side_of_line(points, boxes)
            record = {"id": build.new_id(name, "boundary"), "name": name, "contains": members}
            if not members and points:
                left = min(p[0] for p in points)
                top_y = min(p[1] for p in points)
                record["position"] = {"x": left, "y": top_y}
                record["size"] = {
                    "width": max(20.0, max(p[0] for p in points) - left),
                    "height": max(20.0, max(p[1] for p in points) - top_y),
                }
            build.warn(
                "line_boundary",
                f"Line boundary '{name}' became a box boundary around the {len(members)} "
                "elements on its smaller side; the line itself is kept under origin.",
                guid,
            )
            record[ORIGIN_KEY] = build.origin(
                guid, type_id=_text(value, "TypeId"), points=[list(p) for p in points]
            )
            build.boundaries.append(record)
            continue
        if generic != "GE.DF":
            build.warn(
                "shape_dropped",
                f"A line of type '{build.text(generic, limit=40)}' is neither a data flow nor a "
                "boundary; it was not imported.",
                guid,
            )
            continue
        name = build.name(props.get("Name"), "", guid)
        source = element_ids.get(_text(value, "SourceGuid"))
        target = element_ids.get(_text(value, "TargetGuid"))
        if source is None or target is None:
            build.warn(
                "flow_dropped",
                f"Data flow '{name or guid}' has an end that is not attached to an element; it "
                "was not imported.",
                guid,
            )
            continue
        flow_id = f"flow-{len(build.flows) + 1}"
        flow_ids[guid] = flow_id
        if props.get("Out Of Scope", "").lower() == "true":
            build.warn(
                "out_of_scope_marked",
                f"Data flow '{name or guid}' is out of scope in the Threat Modeling Tool; that is "
                "kept under origin only.",
                guid,
            )
        build.flows.append(
            {
                "id": flow_id,
                "flow_number": len(build.flows) + 1,
                "name": name,
                "from": source,
                "to": target,
                ORIGIN_KEY: build.origin(
                    guid,
                    type_id=_text(value, "TypeId"),
                    stencil=header,
                    out_of_scope=props.get("Out Of Scope", "").lower() == "true" or None,
                ),
            }
        )
    return bottom


def _knowledge_base_categories(root: XmlElement) -> dict[str, str]:
    """Threat type id → its category name, from the file's own knowledge base."""
    names = {
        _text(c, "Id"): _text(c, "Name")
        for c in root.findall("{*}KnowledgeBase/{*}ThreatCategories/{*}ThreatCategory")
    }
    return {
        _text(t, "Id"): names.get(_text(t, "Category"), _text(t, "Category"))
        for t in root.findall("{*}KnowledgeBase/{*}ThreatTypes/{*}ThreatType")
    }


def _import_threats(
    build: ModelBuilder, root: XmlElement, element_ids: dict[str, str], flow_ids: dict[str, str]
) -> None:
    categories = _knowledge_base_categories(root)
    holder = _child(root, "ThreatInstances")
    for pair in holder if holder is not None else ():
        value = _child(pair, "Value")
        if value is None:
            continue
        props: dict[str, str] = {}
        container = _child(value, "Properties")
        for item in container if container is not None else ():
            props.setdefault(_text(item, "Key"), _text(item, "Value"))
        source_id = _text(value, "Id") or _text(pair, "Key")
        type_id = _text(value, "TypeId")
        title = props.get("Title") or _text(value, "Title") or type_id or "Threat"
        record: dict[str, Any] = {
            "id": f"threat-{len(build.threats) + 1}",
            "title": build.name(title, "Threat", source_id),
            "category": build.category(
                props.get("UserThreatCategory") or _text(value, "UserThreatCategory"),
                categories.get(type_id, ""),
                source_id=source_id,
            ).value,
            "severity": build.severity(
                props.get("Priority") or _text(value, "Priority"), source_id
            ).value,
            "description": build.text(
                props.get("UserThreatDescription") or _text(value, "UserThreatDescription")
            ),
            "mitigation": {
                "status": build.status(_text(value, "State"), source_id).value,
                "description": build.text(
                    props.get("PossibleMitigations") or _text(value, "StateInformation")
                ),
            },
            ORIGIN_KEY: build.origin(
                source_id,
                type_id=type_id,
                state=_text(value, "State"),
                interaction=props.get("InteractionString"),
                sdl_phase=props.get("SDLPhase"),
                short_description=props.get("UserThreatShortDescription"),
            ),
        }
        flow = flow_ids.get(_text(value, "FlowGuid"))
        element = element_ids.get(_text(value, "TargetGuid"))
        if flow is not None:
            record["flow"] = flow
        if element is not None:
            record["element"] = element
        if flow is None and element is None:
            build.warn(
                "threat_unattached",
                f"Threat '{record['title']}' names no element or flow that was imported; it was "
                "imported without a target.",
                source_id,
            )
        build.threats.append(record)
