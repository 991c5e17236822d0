"""pytm's `--json` output to `.thf`: elements by class, boundaries and flow ends by name.

pytm refers to everything by name, so names are the join keys: an element's `inBoundary`, a
flow's `source` and `sink`, a finding's `target`. Findings become threats; pytm threat ids
carry no STRIDE category, so the category comes from the threat id's family (documented in
docs/formats.md) and, failing that, from the words of its description, with a warning. pytm
output has no positions: the automatic layout places everything.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from stockade.importers.build import ORIGIN_KEY, ModelBuilder, lookup_key
from stockade.importers.result import ImportFailure, ImportResult, SourceFormat
from stockade.thf.model import MitigationStatus, StrideCategory

_FORMAT = SourceFormat.PYTM
_ELEMENT_TYPES = {
    "Actor": "external_entity",
    "ExternalEntity": "external_entity",
    "Datastore": "data_store",
    "Process": "process",
    "SetOfProcesses": "process",
    "Server": "process",
    "Lambda": "process",
    "LLM": "process",
    "Asset": "process",
}
# pytm's threat library groups its ids by family (INP input, AA authentication, AC access
# control, CR crypto, DE data exposure, DO denial of service, DS data store, HA hijacking,
# LB logging, SC supply chain, DR data retention, API, LLM).
_FAMILY_CATEGORIES = {
    "INP": StrideCategory.TAMPERING,
    "AA": StrideCategory.SPOOFING,
    "AC": StrideCategory.ELEVATION_OF_PRIVILEGE,
    "CR": StrideCategory.INFORMATION_DISCLOSURE,
    "DE": StrideCategory.INFORMATION_DISCLOSURE,
    "DO": StrideCategory.DENIAL_OF_SERVICE,
    "DS": StrideCategory.INFORMATION_DISCLOSURE,
    "HA": StrideCategory.TAMPERING,
    "LB": StrideCategory.REPUDIATION,
    "SC": StrideCategory.TAMPERING,
    "DR": StrideCategory.INFORMATION_DISCLOSURE,
}
_FAMILY = re.compile(r"^([A-Za-z]+)")
_RESPONSES = {
    "mitigated": MitigationStatus.MITIGATED,
    "transferred": MitigationStatus.TRANSFERRED,
    "accepted": MitigationStatus.ACCEPTED,
    "avoided": MitigationStatus.ACCEPTED,
}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def import_pytm(data: Any, *, today: _dt.date | None = None) -> ImportResult:
    """Build a `.thf` model from parsed pytm JSON; raise `ImportFailure` if it is not that."""
    if not isinstance(data, dict) or not any(
        k in data for k in ("elements", "flows", "boundaries")
    ):
        raise ImportFailure(
            "This is not pytm --json output: it has no elements, flows or boundaries.",
            format=_FORMAT,
        )
    build = ModelBuilder(_FORMAT, today=today)
    build.metadata = {
        "title": build.name(data.get("name"), "Imported pytm model"),
        "author": "",
        "description": build.text(data.get("description")),
        ORIGIN_KEY: build.origin(
            None,
            assumptions=data.get("assumptions"),
            threatsFile=data.get("threatsFile"),
            isOrdered=data.get("isOrdered"),
        ),
    }
    boundaries = [b for b in _list(data.get("boundaries")) if isinstance(b, dict)]
    elements = [e for e in _list(data.get("elements")) if isinstance(e, dict)]
    boundary_parent = {
        lookup_key(b.get("name")): lookup_key(b["inBoundary"])
        for b in boundaries
        if isinstance(b.get("inBoundary"), str)
    }
    element_ids: dict[str, str] = {}
    members: dict[str, list[str]] = {lookup_key(b.get("name")): [] for b in boundaries}
    for element in elements:
        source_name = lookup_key(element.get("name"))
        name = build.name(source_name, "Element", source_name)
        if source_name in element_ids:
            build.warn(
                "duplicate_name",
                f"Two pytm elements are named '{name}'; flows and findings naming it go to the "
                "first.",
                source_name,
            )
        klass = str(element.get("__class__", "Asset"))
        new_id = build.new_id(name, "element")
        element_ids.setdefault(source_name, new_id)
        record: dict[str, Any] = {
            "id": new_id,
            "type": _ELEMENT_TYPES.get(klass, "process"),
            "name": name,
            "description": build.text(element.get("description")),
        }
        if klass not in _ELEMENT_TYPES:
            build.warn(
                "class_mapped",
                f"pytm class '{build.text(klass, limit=40)}' is unknown; '{name}' was imported as "
                "a process.",
                source_name,
            )
        if element.get("inScope") is False:
            record["tags"] = ["out-of-scope"]
            build.warn(
                "out_of_scope_marked",
                f"'{name}' is out of scope in pytm; it was imported with the tag out-of-scope.",
                source_name,
            )
        boundary = element.get("inBoundary")
        if isinstance(boundary, str):
            chain, seen = [boundary], {boundary}
            while chain[-1] in boundary_parent and boundary_parent[chain[-1]] not in seen:
                chain.append(boundary_parent[chain[-1]])
                seen.add(chain[-1])
            for owner in chain:
                if owner in members:
                    members[owner].append(new_id)
            if boundary not in members:
                build.warn(
                    "unknown_boundary",
                    f"'{name}' is in boundary '{build.text(boundary, limit=60)}', which is not "
                    "defined; it was imported outside any boundary.",
                    source_name,
                )
            else:
                record["trust_zone"] = build.name(boundary, "")
        record[ORIGIN_KEY] = build.origin(
            source_name,
            **{"class": klass},
            **{
                k: element.get(k)
                for k in ("OS", "port", "protocol", "isSQL", "onAWS", "isAdmin", "type")
                if element.get(k) not in (None, "", -1, False)
            },
        )
        build.elements.append(record)
    for boundary in boundaries:
        source_name = lookup_key(boundary.get("name"))
        name = build.name(source_name, "Boundary", source_name)
        build.boundaries.append(
            {
                "id": build.new_id(name, "boundary"),
                "name": name,
                "contains": members.get(source_name, []),
                ORIGIN_KEY: build.origin(source_name, inBoundary=boundary.get("inBoundary")),
            }
        )
    flow_ids: dict[str, str] = {}
    for flow in (f for f in _list(data.get("flows")) if isinstance(f, dict)):
        source_name = lookup_key(flow.get("name"))
        name = build.name(source_name, "", source_name)
        source = element_ids.get(lookup_key(flow.get("source")))
        sink = element_ids.get(lookup_key(flow.get("sink")))
        if source is None or sink is None:
            build.warn(
                "flow_dropped",
                f"Flow '{name}' names a source or sink that is not an element; it was not "
                "imported.",
                source_name,
            )
            continue
        flow_id = f"flow-{len(build.flows) + 1}"
        flow_ids.setdefault(source_name, flow_id)
        order = flow.get("order")
        record = {
            "id": flow_id,
            "name": name,
            "from": source,
            "to": sink,
            "protocol": build.name(flow.get("protocol"), ""),
            "data": build.strings(flow.get("data")),
            ORIGIN_KEY: build.origin(
                source_name,
                note=flow.get("note"),
                dstPort=flow.get("dstPort") if flow.get("dstPort") != -1 else None,
                isResponse=flow.get("isResponse") or None,
                responseTo=flow.get("responseTo"),
            ),
        }
        if isinstance(order, int) and not isinstance(order, bool) and 0 <= order < 2**32:
            record["flow_number"] = order
        build.flows.append(record)
    findings = [f for f in _list(data.get("findings")) if isinstance(f, dict)]
    for finding in findings:
        _add_finding(build, finding, element_ids, flow_ids)
    return build.finish(None)


def _add_finding(
    build: ModelBuilder,
    finding: dict[str, Any],
    element_ids: dict[str, str],
    flow_ids: dict[str, str],
) -> None:
    threat_id = str(finding.get("threat_id", ""))
    source_id = finding.get("id") or threat_id
    family = _FAMILY.match(threat_id)
    category = _FAMILY_CATEGORIES.get(family.group(1).upper()) if family else None
    if category is None:
        category = build.category(
            lookup_key(finding.get("description")),
            lookup_key(finding.get("details")),
            source_id=source_id,
        )
    response = lookup_key(finding.get("response")).lower()
    status = _RESPONSES.get(response, MitigationStatus.NOT_STARTED)
    record: dict[str, Any] = {
        "id": f"threat-{len(build.threats) + 1}",
        "title": build.name(finding.get("description"), threat_id or "Finding", source_id),
        "category": category.value,
        "severity": build.severity(finding.get("severity"), source_id).value,
        "description": build.text(finding.get("details")),
        "mitigation": {
            "status": status.value,
            "description": build.text(finding.get("mitigations")),
        },
        ORIGIN_KEY: build.origin(
            source_id,
            threat_id=threat_id,
            references=finding.get("references"),
            example=finding.get("example"),
            cvss=finding.get("cvss"),
            likelihood=finding.get("likelihood"),
        ),
    }
    target = lookup_key(finding.get("target"))
    if target in element_ids:
        record["element"] = element_ids[target]
    elif target in flow_ids:
        record["flow"] = flow_ids[target]
    else:
        build.warn(
            "threat_unattached",
            f"Finding '{record['title']}' targets '{build.text(target, limit=60)}', which is no "
            "imported element or flow; it was imported without a target.",
            source_id,
        )
    build.threats.append(record)
