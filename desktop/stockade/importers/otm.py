"""Open Threat Model (OTM 0.1 and 0.2, JSON or YAML) to `.thf`, and `.thf` to OTM 0.2 JSON.

Components become elements, dataflows flows (a bidirectional one becomes two), trust zones
trust boundaries (membership from each component's `parent`, nested zones included in their
parent's members), and every threat a component or dataflow references becomes one threat on
it, with the referenced mitigations as its mitigation. Positions come from the first diagram
representation; OTM gives them relative to the parent zone's box, so they are made absolute.
"""

from __future__ import annotations

import datetime as _dt
import json
from typing import Any

from stockade.importers.build import ORIGIN_KEY, ModelBuilder, lookup_key, number
from stockade.importers.result import ImportFailure, ImportResult, SourceFormat
from stockade.thf.model import MitigationStatus, Severity, ThreatModel

_FORMAT = SourceFormat.OTM
_STORE_WORDS = (
    "database",
    "storage",
    "store",
    "bucket",
    "cache",
    "redis",
    "vault",
    "queue",
    "table",
    "blob",
    "repository",
    "postgres",
    "mysql",
    "mongo",
    "dynamo",
    "sqlite",
    "oracle",
    "mariadb",
    "cassandra",
    "elastic",
    "file",
    "disk",
    "log",
)
_STORE_TOKENS = frozenset({"db", "sql", "s3", "rds", "fs"})
_EXTERNAL_WORDS = (
    "client",
    "user",
    "actor",
    "browser",
    "external",
    "third party",
    "saas",
    "mobile",
    "device",
    "customer",
    "partner",
)
OTM_VERSION = "0.2.0"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def element_type_for(otm_type: str) -> str:
    """The `.thf` element type an OTM component type most likely means (by its words)."""
    words = otm_type.lower().replace("-", " ").replace("_", " ")
    tokens = set(words.split())
    if (
        any(w in words for w in _STORE_WORDS)
        or tokens & _STORE_TOKENS
        or any(t.endswith(("sql", "db")) for t in tokens)
    ):
        return "data_store"
    if any(w in words for w in _EXTERNAL_WORDS):
        return "external_entity"
    return "process"


def import_otm(data: Any, *, today: _dt.date | None = None) -> ImportResult:
    """Build a `.thf` model from parsed OTM data; raise `ImportFailure` if it is not OTM."""
    if not isinstance(data, dict) or "otmVersion" not in data:
        raise ImportFailure(
            "This is not an Open Threat Model (OTM) file: it has no otmVersion.", format=_FORMAT
        )
    version = lookup_key(data.get("otmVersion"))
    if not version.startswith("0."):
        raise ImportFailure(
            f"This Open Threat Model file states otmVersion {version!r}; Stockade imports "
            "versions 0.1 and 0.2.",
            format=_FORMAT,
        )
    project = _dict(data.get("project"))
    if not project:
        raise ImportFailure(
            "This Open Threat Model file has no project section, which every OTM file has.",
            format=_FORMAT,
        )
    build = ModelBuilder(_FORMAT, today=today)
    build.metadata = {
        "title": build.name(project.get("name"), "Imported OTM model"),
        "author": build.name(project.get("owner"), ""),
        "description": build.text(project.get("description")),
        ORIGIN_KEY: build.origin(
            project.get("id"),
            otmVersion=version,
            ownerContact=project.get("ownerContact"),
            tags=project.get("tags"),
            attributes=project.get("attributes"),
            representations=data.get("representations"),
            assets=data.get("assets"),
        ),
    }
    diagram = next(
        (
            r.get("id")
            for r in _list(data.get("representations"))
            if isinstance(r, dict) and r.get("type") == "diagram"
        ),
        None,
    )
    zones = [z for z in _list(data.get("trustZones")) if isinstance(z, dict)]
    components = [c for c in _list(data.get("components")) if isinstance(c, dict)]
    zone_ids = {lookup_key(z.get("id")) for z in zones}
    component_by_id = {lookup_key(c.get("id")): c for c in components}

    def zone_of(entity: dict[str, Any], seen: frozenset[str] = frozenset()) -> str | None:
        parent = _dict(entity.get("parent"))
        if "trustZone" in parent:
            return lookup_key(parent["trustZone"])
        owner = lookup_key(parent.get("component"))
        if owner in component_by_id and owner not in seen:
            return zone_of(component_by_id[owner], seen | {owner})
        return None

    def box_of(entity: dict[str, Any]) -> tuple[float, float, float | None, float | None] | None:
        for rep in _list(entity.get("representations")):
            if not isinstance(rep, dict) or (diagram and rep.get("representation") != diagram):
                continue
            position = _dict(rep.get("position"))
            x, y = number(position.get("x")), number(position.get("y"))
            if x is None or y is None:
                continue
            size = _dict(rep.get("size"))
            return x, y, number(size.get("width")), number(size.get("height"))
        return None

    # Absolute positions: OTM places a child relative to its parent zone (or component).
    zone_by_id = {lookup_key(z.get("id")): z for z in zones}
    absolute: dict[str, tuple[float, float] | None] = {}

    def absolute_of(kind: str, entity_id: str, seen: frozenset[str] = frozenset()) -> Any:
        key = f"{kind}:{entity_id}"
        if key in absolute:
            return absolute[key]
        entity = zone_by_id.get(entity_id) if kind == "zone" else component_by_id.get(entity_id)
        box = box_of(entity) if entity is not None else None
        result: tuple[float, float] | None = None
        if box is not None and entity is not None:
            x, y = box[0], box[1]
            parent = _dict(entity.get("parent"))
            for parent_kind, field in (("zone", "trustZone"), ("component", "component")):
                parent_id = lookup_key(parent.get(field))
                if parent_id and f"{parent_kind}:{parent_id}" not in seen:
                    base = absolute_of(parent_kind, parent_id, seen | {key})
                    if base is not None:
                        x, y = x + base[0], y + base[1]
                    break
            result = (x, y)
        absolute[key] = result
        return result

    element_ids: dict[str, str] = {}
    for component in components:
        source_id = lookup_key(component.get("id"))
        name = build.name(component.get("name"), source_id or "Component", source_id)
        new_id = build.new_id(name, "component")
        element_ids[source_id] = new_id
        otm_type = build.text(component.get("type"))
        record: dict[str, Any] = {
            "id": new_id,
            "type": element_type_for(otm_type) if otm_type else "process",
            "name": name,
            "description": build.text(component.get("description")),
            "tags": build.strings(component.get("tags")),
        }
        zone = zone_of(component)
        if zone is not None and zone in zone_ids:
            record["trust_zone"] = build.name(zone_by_id[zone].get("name"), zone, zone)
        position = absolute_of("component", source_id)
        if position is not None:
            record["position"] = {"x": position[0], "y": position[1]}
        record[ORIGIN_KEY] = build.origin(
            source_id,
            type=otm_type,
            parent=component.get("parent"),
            assets=component.get("assets"),
            attributes=component.get("attributes"),
            # Diagram boxes became `position`; other views (code locations) are kept.
            representations=[
                r
                for r in _list(component.get("representations"))
                if isinstance(r, dict)
                and (not diagram or r.get("representation") != diagram)
                and "position" not in r
            ]
            or None,
        )
        build.elements.append(record)

    # Trust zones: members are the components whose zone is this one or nested inside it.
    zone_parent = {
        lookup_key(z.get("id")): lookup_key(_dict(z.get("parent")).get("trustZone"))
        for z in zones
        if "trustZone" in _dict(z.get("parent"))
    }

    def ancestors(zone_id: str) -> list[str]:
        chain, seen = [zone_id], {zone_id}
        while chain[-1] in zone_parent and zone_parent[chain[-1]] not in seen:
            chain.append(zone_parent[chain[-1]])
            seen.add(chain[-1])
        return chain

    members: dict[str, list[str]] = {lookup_key(z.get("id")): [] for z in zones}
    for component in components:
        zone = zone_of(component)
        if zone is None:
            continue
        if zone not in members:
            build.warn(
                "unknown_trust_zone",
                f"Component '{build.text(component.get('name'), limit=60)}' names a trust zone "
                "that is not defined; it was imported outside any boundary.",
                component.get("id"),
            )
            continue
        for owner in ancestors(zone):
            if owner in members:
                members[owner].append(element_ids[lookup_key(component.get("id"))])
    for zone_record in zones:
        source_id = lookup_key(zone_record.get("id"))
        name = build.name(zone_record.get("name"), source_id or "Trust zone", source_id)
        record = {
            "id": build.new_id(name, "boundary"),
            "name": name,
            "contains": members[source_id],
        }
        box = box_of(zone_record)
        position = absolute_of("zone", source_id)
        if box is not None and position is not None and box[2] and box[3]:
            record["position"] = {"x": position[0], "y": position[1]}
            record["size"] = {"width": box[2], "height": box[3]}
        record[ORIGIN_KEY] = build.origin(
            source_id,
            type=zone_record.get("type"),
            description=zone_record.get("description"),
            risk=zone_record.get("risk"),
            parent=zone_record.get("parent"),
            attributes=zone_record.get("attributes"),
        )
        build.boundaries.append(record)

    flow_ids: dict[str, list[str]] = {}
    for flow in (f for f in _list(data.get("dataflows")) if isinstance(f, dict)):
        source_id = lookup_key(flow.get("id"))
        source, target = lookup_key(flow.get("source")), lookup_key(flow.get("destination"))
        if source not in element_ids or target not in element_ids:
            build.warn(
                "flow_dropped",
                f"Dataflow '{build.text(flow.get('name') or source_id, limit=60)}' has an end "
                "that is not a component; it was not imported.",
                source_id,
            )
            continue
        name = build.name(flow.get("name"), "", source_id)
        ends = [(source, target)]
        if flow.get("bidirectional") is True:
            ends.append((target, source))
            build.warn(
                "bidirectional_split",
                f"Bidirectional dataflow '{name or source_id}' became two flows.",
                source_id,
            )
        for direction, (a, b) in enumerate(ends):
            new_id = f"flow-{len(build.flows) + 1}"
            build.flows.append(
                {
                    "id": new_id,
                    "flow_number": len(build.flows) + 1,
                    "name": name,
                    "from": element_ids[a],
                    "to": element_ids[b],
                    "data": build.strings(flow.get("assets")),
                    ORIGIN_KEY: build.origin(
                        source_id,
                        bidirectional=flow.get("bidirectional"),
                        reverse=direction == 1 or None,
                        tags=flow.get("tags"),
                        attributes=flow.get("attributes"),
                    ),
                }
            )
            flow_ids.setdefault(source_id, []).append(new_id)

    _import_threats(data, build, element_ids, flow_ids)
    return build.finish(version)


def _import_threats(
    data: dict[str, Any],
    build: ModelBuilder,
    element_ids: dict[str, str],
    flow_ids: dict[str, list[str]],
) -> None:
    threat_by_id = {
        lookup_key(t.get("id")): t for t in _list(data.get("threats")) if isinstance(t, dict)
    }
    mitigation_by_id = {
        lookup_key(m.get("id")): m for m in _list(data.get("mitigations")) if isinstance(m, dict)
    }
    referenced: set[str] = set()
    holders: list[tuple[dict[str, Any], str, str | None]] = []
    for component in _list(data.get("components")):
        if isinstance(component, dict):
            holders.append((component, "element", element_ids.get(lookup_key(component.get("id")))))
    for flow in _list(data.get("dataflows")):
        if isinstance(flow, dict):
            ids = flow_ids.get(lookup_key(flow.get("id")))
            holders.append((flow, "flow", ids[0] if ids else None))
    for holder, kind, target in holders:
        for instance in _list(holder.get("threats")):
            if not isinstance(instance, dict):
                continue
            threat_id = lookup_key(instance.get("threat"))
            referenced.add(threat_id)
            _add_threat(
                build,
                threat_by_id.get(threat_id),
                threat_id,
                instance,
                kind,
                target,
                mitigation_by_id,
            )
    for threat_id, threat in threat_by_id.items():
        if threat_id not in referenced:
            build.warn(
                "threat_unattached",
                f"Threat '{build.text(threat.get('name'), limit=60)}' is referenced by no "
                "component or dataflow; it was imported without a target.",
                threat_id,
            )
            _add_threat(build, threat, threat_id, {}, "none", None, mitigation_by_id)


def _add_threat(
    build: ModelBuilder,
    threat: dict[str, Any] | None,
    threat_id: str,
    instance: dict[str, Any],
    kind: str,
    target: str | None,
    mitigations: dict[str, dict[str, Any]],
) -> None:
    if threat is None:
        build.warn(
            "threat_undefined",
            f"A reference names threat '{build.text(threat_id, limit=60)}', which the file "
            "does not define; it was imported with that id as its title.",
            threat_id,
        )
        threat = {}
    categories = [c for c in _list(threat.get("categories")) if isinstance(c, str)]
    risk = _dict(threat.get("risk"))
    impact = number(risk.get("impact"))
    severity = (
        build.severity(impact, threat_id)
        if impact is not None
        else build.severity(threat.get("severity"), threat_id)
    )
    used = [
        (mitigations.get(lookup_key(m.get("mitigation"))), m)
        for m in _list(instance.get("mitigations"))
        if isinstance(m, dict)
    ]
    description = "\n".join(
        build.text(m.get("name") or "")
        + (f": {build.text(m.get('description'))}" if m.get("description") else "")
        for m, _ in used
        if m is not None
    )
    states = {lookup_key(ref.get("state")).lower() for _, ref in used}
    if instance.get("state") is not None:
        status = build.status(instance.get("state"), threat_id)
    else:
        status = MitigationStatus.NOT_STARTED
    if status is MitigationStatus.NOT_STARTED and "implemented" in states:
        status = (
            MitigationStatus.MITIGATED
            if states == {"implemented"}
            else MitigationStatus.IN_PROGRESS
        )
    record: dict[str, Any] = {
        "id": f"threat-{len(build.threats) + 1}",
        "title": build.name(threat.get("name"), threat_id or "Threat", threat_id),
        "category": build.category(*categories, source_id=threat_id).value,
        "severity": severity.value,
        "description": build.text(threat.get("description")),
        "mitigation": {"status": status.value, "description": description},
        ORIGIN_KEY: build.origin(
            threat_id,
            categories=categories,
            cwes=threat.get("cwes"),
            risk=threat.get("risk"),
            tags=threat.get("tags"),
            attributes=threat.get("attributes"),
            state=instance.get("state"),
            mitigations=instance.get("mitigations"),
        ),
    }
    if kind == "element" and target is not None:
        record["element"] = target
    elif kind == "flow" and target is not None:
        record["flow"] = target
    build.threats.append(record)


# ---------------------------------------------------------------------------------------------
# Export


_SEVERITY_IMPACT = {
    Severity.CRITICAL: 95,
    Severity.HIGH: 80,
    Severity.MEDIUM: 50,
    Severity.LOW: 20,
    Severity.INFO: 5,
}
_STATUS_STATE = {
    MitigationStatus.NOT_STARTED: "exposed",
    MitigationStatus.IN_PROGRESS: "exposed",
    MitigationStatus.MITIGATED: "mitigated",
    MitigationStatus.ACCEPTED: "accepted",
    MitigationStatus.TRANSFERRED: "transferred",
}


def _origin(entity: Any) -> dict[str, Any]:
    value = entity.extras.get(ORIGIN_KEY)
    return value if isinstance(value, dict) else {}


def export_otm(model: ThreatModel) -> str:
    """The model as OTM 0.2 JSON: ids, positions and the fields `.thf` has no place for."""
    meta = model.metadata
    project: dict[str, Any] = {
        "name": meta.title,
        "id": _origin(meta).get("id") or _slug_or(meta.title, "threat-model"),
        "description": meta.description,
        "owner": meta.author,
    }
    representation = {"name": "Diagram", "id": "diagram", "type": "diagram"}
    innermost = _innermost_boundaries(model)
    boundary_by_id = {b.id: b for b in model.trust_boundaries}
    zone_parent = _boundary_parents(model)
    zones = []
    for boundary in model.trust_boundaries:
        origin = _origin(boundary)
        risk = origin.get("risk")
        zone: dict[str, Any] = {
            "id": boundary.id,
            "name": boundary.name,
            "risk": risk if isinstance(risk, dict) else {"trustRating": 50},
        }
        if origin.get("type"):
            zone["type"] = origin["type"]
        parent_id = zone_parent.get(boundary.id)
        if parent_id is not None:
            zone["parent"] = {"trustZone": parent_id}
        if boundary.position is not None and boundary.size is not None:
            x, y = _relative(boundary.position.x, boundary.position.y, parent_id, boundary_by_id)
            zone["representations"] = [
                {
                    "representation": "diagram",
                    "id": f"{boundary.id}-box",
                    "position": {"x": x, "y": y},
                    "size": {"width": boundary.size.width, "height": boundary.size.height},
                }
            ]
        zones.append(zone)
    threats_by_target: dict[tuple[str, str], list[dict[str, Any]]] = {}
    otm_threats: list[dict[str, Any]] = []
    otm_mitigations: list[dict[str, Any]] = []
    for threat in model.threats:
        threat_record: dict[str, Any] = {
            "id": threat.id,
            "name": threat.title,
            "description": threat.description,
            "categories": [threat.category.value],
            "risk": {"likelihood": 50, "impact": _SEVERITY_IMPACT[threat.severity]},
        }
        otm_threats.append(threat_record)
        instance: dict[str, Any] = {
            "threat": threat.id,
            "state": _STATUS_STATE[threat.mitigation.status] if threat.mitigation else "exposed",
        }
        if threat.mitigation is not None and threat.mitigation.description:
            mitigation_id = f"{threat.id}-mitigation"
            otm_mitigations.append(
                {
                    "id": mitigation_id,
                    "name": threat.mitigation.description.split("\n")[0][:120],
                    "description": threat.mitigation.description,
                    "riskReduction": 50,
                }
            )
            instance["mitigations"] = [
                {
                    "mitigation": mitigation_id,
                    "state": "implemented"
                    if threat.mitigation.status is MitigationStatus.MITIGATED
                    else "required",
                }
            ]
        key = (
            ("flow", threat.flow)
            if threat.flow is not None and threat.element is None
            else ("element", threat.element or "")
        )
        if threat.element is None and threat.flow is None:
            # OTM threats only exist through a reference; an untargeted one is defined and
            # left unreferenced, which the importer reads back as a threat without a target.
            continue
        threats_by_target.setdefault(key, []).append(instance)
    components = []
    for element in model.elements:
        origin = _origin(element)
        component: dict[str, Any] = {
            "id": element.id,
            "name": element.name,
            "type": origin.get("type") or element.type,
            "description": element.description,
        }
        zone_id = innermost.get(element.id)
        if zone_id is not None:
            component["parent"] = {"trustZone": zone_id}
        if element.tags:
            component["tags"] = list(element.tags)
        if element.position is not None:
            x, y = _relative(element.position.x, element.position.y, zone_id, boundary_by_id)
            component["representations"] = [
                {
                    "representation": "diagram",
                    "id": f"{element.id}-box",
                    "position": {"x": x, "y": y},
                    "size": {"width": 160, "height": 60},
                }
            ]
        instances = threats_by_target.get(("element", element.id))
        if instances:
            component["threats"] = instances
        components.append(component)
    flows = []
    for flow in model.data_flows:
        record: dict[str, Any] = {
            "id": flow.id,
            "name": flow.name or flow.protocol or flow.id,
            "bidirectional": False,
            "source": flow.from_,
            "destination": flow.to,
        }
        instances = threats_by_target.get(("flow", flow.id))
        if instances:
            record["threats"] = instances
        flows.append(record)
    document = {
        "otmVersion": OTM_VERSION,
        "project": project,
        "representations": [representation],
        "trustZones": zones,
        "components": components,
        "dataflows": flows,
        "threats": otm_threats,
        "mitigations": otm_mitigations,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def _innermost_boundaries(model: ThreatModel) -> dict[str, str]:
    """Element id → the smallest boundary containing it (the earliest on a tie)."""
    size_of = {b.id: len(b.contains) for b in model.trust_boundaries}
    innermost: dict[str, str] = {}
    for boundary in model.trust_boundaries:
        for member in boundary.contains:
            if member not in innermost or size_of[boundary.id] < size_of[innermost[member]]:
                innermost[member] = boundary.id
    return innermost


def _boundary_parents(model: ThreatModel) -> dict[str, str]:
    """Boundary id → the smallest boundary whose members strictly include all of its own."""
    sets = {b.id: frozenset(b.contains) for b in model.trust_boundaries}
    parents: dict[str, str] = {}
    for boundary_id, own in sets.items():
        if not own:
            continue
        best: str | None = None
        for other_id, other in sets.items():
            if (
                other_id != boundary_id
                and own < other
                and (best is None or len(other) < len(sets[best]))
            ):
                best = other_id
        if best is not None:
            parents[boundary_id] = best
    return parents


def _relative(
    x: float, y: float, parent_id: str | None, boundaries: dict[str, Any]
) -> tuple[float, float]:
    """OTM positions are relative to the parent zone's box when that box is drawn."""
    parent = boundaries.get(parent_id) if parent_id else None
    if parent is not None and parent.position is not None and parent.size is not None:
        return x - parent.position.x, y - parent.position.y
    return x, y


def _slug_or(text: str, fallback: str) -> str:
    from stockade.thf.ids import slug

    return slug(text) or fallback
