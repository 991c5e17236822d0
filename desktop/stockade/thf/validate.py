"""Validation of a `.thf` document: untyped data → typed model, then the reference checks.

Order of `validate_document` (first failure wins):

1. the root is a mapping                           → missing_section
2. `version` present (missing_section), text (invalid_field), exactly "1.0"
                                                   → unsupported_version
3. `metadata` present and not null                 → missing_section
4. a list section left empty (YAML null) reads as an empty list, as ThreatForge's browser
   reader does; any other non-list value stays an error
5. every field has the right type and shape        → invalid_field (field names the path);
   numbers must be finite (`.nan`, `.inf` are refused, also inside unknown fields)
6. `validate_references`                           → duplicate_id, invalid_reference,
                                                     circular_group_nesting

`compatibility_warnings` reports, separately, what the file holds that ThreatForge's desktop
reader would refuse although Stockade reads it (docs/formats.md lists each code).

The reference reader types the whole document before it looks at the version. Stockade
gates the version first on purpose: a file written by a newer format may carry fields this
build cannot type, and "unsupported version" is the true, actionable reason.

Order of `validate_references` (the reference's order, then Stockade's stricter checks):

a–e. duplicate ids within elements, data_flows, layers, groups, relationships
f.   a group id equal to an element or trust-boundary id (shared canvas node space)
g.   a relationship id equal to a data-flow id (shared edge space)
s.   Stockade only: duplicate ids within trust_boundaries, threats, diagrams
h.   data flow `from`, then `to` → element ids
i.   element `layer` → layer ids, then `group` → group ids
j.   group `parent` → group ids
k.   relationship `from`, then `to` → element ids
l.   group nesting cycles (reported at the first repeated group of the walk)
m.   trust boundary `contains` members → element ids
n.   threat `element` → element ids, then `flow` → data-flow ids
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from stockade.thf.capture import FIELD_OF_KEY, CapturedColumns
from stockade.thf.columns import SectionColumns
from stockade.thf.columns import remember as remember_columns
from stockade.thf.errors import (
    CompatibilityCode,
    CompatibilityWarning,
    ThfError,
    ThfErrorCode,
)
from stockade.thf.format import SECTION_NAMES, SUPPORTED_VERSIONS

if TYPE_CHECKING:
    from pydantic import ValidationError

    from stockade.thf.model import Group, ThreatModel

_TIME_OF_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]")


def validate_references(
    model: ThreatModel, *, join_columns: bool = False, captured: CapturedColumns | None = None
) -> None:
    """Raise the first duplicate id, dangling reference or group cycle, in the order above.

    Runs on every AI commit, so the common case (a valid document) is decided in C-level
    passes over each section's id and reference columns; only when something is wrong does
    the ordered scan run to find the first problem in the documented order. A valid
    document's columns are kept for the read tools (`thf.columns`), joined too when
    `join_columns` (a read; a commit would pay that pass on every edit).
    """
    sections = {section: getattr(model, section) for section in SECTION_NAMES}
    known, joined = _captured_columns(sections, captured)
    columns = reference_columns(sections, attrgetter, known)
    if columns is None:
        _raise_first_problem(model)
        return
    cycle = first_group_cycle(columns["groups"]["id"], columns["groups"]["parent"])
    if cycle is not None:
        raise ThfError.circular_group_nesting(cycle)
    # The read tools' first lookups start from these columns (see `thf.columns`).
    for section, section_columns in columns.items():
        remember_columns(model, section, section_columns, join=join_columns,
                         joined=joined.get(section))


def _captured_columns(
    sections: Mapping[str, Sequence[Any]], captured: CapturedColumns | None
) -> tuple[dict[str, SectionColumns], dict[str, dict[str, str | None]]]:
    """The columns the compiled reader collected (`thf.capture`), by attribute name, for the
    sections where it collected exactly the id and reference columns, one value per entity;
    and their joined texts."""
    known: dict[str, SectionColumns] = {}
    joined: dict[str, dict[str, str | None]] = {}
    for section, by_key in (captured or {}).items():
        entities = sections.get(section)
        fields = {FIELD_OF_KEY.get(key, key): value for key, value in by_key.items()}
        if entities is None or set(fields) != {"id", *REFERENCE_FIELDS.get(section, ())}:
            continue
        if any(len(values) != len(entities) for values, _ in fields.values()):
            continue
        known[section] = {field: values for field, (values, _) in fields.items()}
        joined[section] = {field: text for field, (_, text) in fields.items()}
    return known, joined


REFERENCE_FIELDS: dict[str, tuple[str, ...]] = {
    "elements": ("layer", "group"),
    "groups": ("parent",),
    "data_flows": ("from_", "to"),
    "relationships": ("from_", "to"),
    "trust_boundaries": ("contains",),
    "threats": ("element", "flow"),
}
"""Each section's fields that hold ids of other entities (attribute names)."""

_NONE: frozenset[None] = frozenset({None})


def reference_columns(
    sections: Mapping[str, Sequence[Any]],
    getter: Callable[[str], Callable[[Any], Any]],
    known: Mapping[str, SectionColumns] | None = None,
) -> dict[str, SectionColumns] | None:
    """Every section's id and reference columns when all ids are unique and every reference
    resolves (everything but group cycles), else None (no order, no messages).

    `getter(field)` reads one field of an entity: `attrgetter` for models, a dict lookup for
    parsed records (`thf.check`). Each column is one C-level pass over its section; the checks
    are membership tests in the sections' id sets, also in C. `known` gives a section's
    columns already read (the compiled reader's, `thf.capture`), the same values by position.
    """
    columns: dict[str, SectionColumns] = {}
    id_sets: dict[str, set[Any]] = {}
    for section in SECTION_NAMES:
        section_columns = (known or {}).get(section)
        if section_columns is None:
            entities = sections[section]
            section_columns = {"id": list(map(getter("id"), entities))}
            for field in REFERENCE_FIELDS.get(section, ()):
                section_columns[field] = list(map(getter(field), entities))
        ids = section_columns["id"]
        id_set = set(ids)
        if len(id_set) != len(ids):
            return None
        id_sets[section] = id_set
        columns[section] = section_columns
    elements = id_sets["elements"]
    groups = id_sets["groups"]
    if not groups.isdisjoint(elements) or not groups.isdisjoint(id_sets["trust_boundaries"]):
        return None
    if not id_sets["relationships"].isdisjoint(id_sets["data_flows"]):
        return None
    flows, relationships = columns["data_flows"], columns["relationships"]
    threats, element_columns = columns["threats"], columns["elements"]
    # `issuperset` of a list tests each member in C without building a set of it. Optional
    # references may be None, which joins a copy of their target set.
    if (
        elements.issuperset(flows["from_"])
        and elements.issuperset(flows["to"])
        and elements.issuperset(relationships["from_"])
        and elements.issuperset(relationships["to"])
        and elements.issuperset(chain.from_iterable(columns["trust_boundaries"]["contains"]))
        and (elements | _NONE).issuperset(threats["element"])
        and (id_sets["layers"] | _NONE).issuperset(element_columns["layer"])
        and (groups | _NONE).issuperset(element_columns["group"])
        and (groups | _NONE).issuperset(columns["groups"]["parent"])
        and (id_sets["data_flows"] | _NONE).issuperset(threats["flow"])
    ):
        return columns
    return None


def first_group_cycle(ids: Sequence[str], parents: Sequence[str | None]) -> str | None:
    """The group at which the reference's walk first finds a cycle, or None.

    Same answer as the reference's per-group walk (first group in document order whose walk
    revisits a group; reported at that group), but linear: a group whose walk already
    reached a root is never walked again. Parents are known to exist (check j ran first).
    """
    parent_of = dict(zip(ids, parents, strict=True))
    reaches_root: set[str] = set()
    for group_id, parent in zip(ids, parents, strict=True):
        path: list[str] = [group_id]
        on_path = {group_id}
        current: str | None = parent
        while current is not None and current not in reaches_root:
            if current in on_path:
                return current
            path.append(current)
            on_path.add(current)
            current = parent_of.get(current)
        reaches_root.update(path)
    return None


def _raise_first_problem(model: ThreatModel) -> None:
    element_ids = _unique_ids(model.elements, "elements")
    flow_ids = _unique_ids(model.data_flows, "data_flows")
    layer_ids = _unique_ids(model.layers, "layers")
    group_ids = _unique_ids(model.groups, "groups")
    _unique_ids(model.relationships, "relationships")

    boundary_id_set = {b.id for b in model.trust_boundaries}
    for group in model.groups:
        if group.id in element_ids or group.id in boundary_id_set:
            raise ThfError.duplicate_id(group.id, "groups")
    for relationship in model.relationships:
        if relationship.id in flow_ids:
            raise ThfError.duplicate_id(relationship.id, "relationships")

    _unique_ids(model.trust_boundaries, "trust_boundaries")
    _unique_ids(model.threats, "threats")
    _unique_ids(model.diagrams, "diagrams")

    for flow in model.data_flows:
        if flow.from_ not in element_ids:
            raise _dangling("data_flows", flow.id, "from", flow.from_, model.elements)
        if flow.to not in element_ids:
            raise _dangling("data_flows", flow.id, "to", flow.to, model.elements)
    for element in model.elements:
        if element.layer is not None and element.layer not in layer_ids:
            raise _dangling("elements", element.id, "layer", element.layer, model.layers)
        if element.group is not None and element.group not in group_ids:
            raise _dangling("elements", element.id, "group", element.group, model.groups)
    for group in model.groups:
        if group.parent is not None and group.parent not in group_ids:
            raise _dangling("groups", group.id, "parent", group.parent, model.groups)
    for relationship in model.relationships:
        if relationship.from_ not in element_ids:
            raise _dangling(
                "relationships", relationship.id, "from", relationship.from_, model.elements
            )
        if relationship.to not in element_ids:
            raise _dangling("relationships", relationship.id, "to", relationship.to, model.elements)
    # The reference checks cycles before boundary members and threat targets (step l).
    _check_group_cycles(model.groups)
    for boundary in model.trust_boundaries:
        for member in boundary.contains:
            if member not in element_ids:
                raise _dangling("trust_boundaries", boundary.id, "contains", member, model.elements)
    for threat in model.threats:
        if threat.element is not None and threat.element not in element_ids:
            raise _dangling("threats", threat.id, "element", threat.element, model.elements)
        if threat.flow is not None and threat.flow not in flow_ids:
            raise _dangling("threats", threat.id, "flow", threat.flow, model.data_flows)
    raise AssertionError("the fast reference check and the ordered scan disagree")


def _unique_ids(entities: Sequence[Any], section: str) -> frozenset[str]:
    ids = [e.id for e in entities]
    unique = frozenset(ids)
    if len(unique) != len(ids):
        seen: set[str] = set()
        for entity_id in ids:
            if entity_id in seen:
                raise ThfError.duplicate_id(entity_id, section)
            seen.add(entity_id)
    return unique


def _dangling(
    section: str, entity_id: str, field: str, reference: str, targets: Sequence[Any]
) -> ThfError:
    return ThfError.invalid_reference(
        f"{section}[{entity_id}].{field}",
        reference,
        [t.id for t in targets],
        section=section,
        id=entity_id,
    )


def _check_group_cycles(groups: Sequence[Group]) -> None:
    cycle = first_group_cycle([g.id for g in groups], [g.parent for g in groups])
    if cycle is not None:
        raise ThfError.circular_group_nesting(cycle)


def validate_document(data: Any, *, captured: CapturedColumns | None = None) -> ThreatModel:
    """Turn parsed, untyped YAML data into a validated `ThreatModel` or raise `ThfError`.

    `captured`: the id and reference columns the compiled reader collected from this data
    (`thf.capture`), which stand for the entities' own once the data has validated."""
    if not isinstance(data, Mapping):
        raise ThfError(
            ThfErrorCode.MISSING_SECTION,
            "This file is not a threat model: it does not contain a mapping of sections.",
        )
    version = data.get("version")
    if version is None:
        raise ThfError(
            ThfErrorCode.MISSING_SECTION,
            "This file cannot be opened: it has no version.",
            section="version",
            field="version",
        )
    if not isinstance(version, str):
        raise ThfError(
            ThfErrorCode.INVALID_FIELD,
            'This file cannot be opened: version must be text, such as "1.0" in quotes.',
            field="version",
        )
    if version not in SUPPORTED_VERSIONS:
        raise ThfError.unsupported_version(version)
    if data.get("metadata") is None:
        raise ThfError(
            ThfErrorCode.MISSING_SECTION,
            "This file cannot be opened: it has no metadata section.",
            section="metadata",
            field="metadata",
        )
    if any(data.get(section, ()) is None for section in SECTION_NAMES):
        data = {
            key: ([] if value is None and key in SECTION_NAMES else value)
            for key, value in data.items()
        }
    # Imported here: the quick check (`thf.check`) and the command line's start-up use this
    # module without building the document models' validators.
    from pydantic import ValidationError

    from stockade.thf.model import ThreatModel

    try:
        model = ThreatModel.model_validate(data)
    except ValidationError as exc:
        raise _field_error(exc, data) from None
    _check_unknown_fields(model)
    validate_references(model, join_columns=True, captured=captured)
    return model


_MAX_UNKNOWN_DEPTH = 64
_MAX_INT_BITS = 3000
_NESTED_RECORDS: dict[str, tuple[str, ...]] = {
    "layers": (),
    "groups": ("position", "size"),
    "elements": ("position",),
    "data_flows": ("label_offset",),
    "relationships": ("label_offset",),
    "trust_boundaries": ("position", "size"),
    "threats": ("mitigation",),
    "diagrams": ("viewport",),
}
_EXTRA = attrgetter("__pydantic_extra__")


def _check_unknown_fields(model: ThreatModel) -> None:
    """Unknown fields are kept and written back, so they must be plain YAML data.

    Refuses what the writer could not reproduce faithfully: keys that are not scalars
    (YAML complex keys), sets, and nesting deeper than `_MAX_UNKNOWN_DEPTH`. Most documents
    have no unknown fields at all; that is established with C-level scans first.
    """
    records: list[tuple[str, Any, str | None]] = [
        ("", model, None),
        ("metadata", model.metadata, None),
    ]
    if model.metadata.settings is not None:
        records.append(("metadata.settings", model.metadata.settings, None))
    for section, nested_names in _NESTED_RECORDS.items():
        entities = getattr(model, section)
        if any(map(_EXTRA, entities)):
            records.extend(
                (_entity_path(section, e, i), e, e.id)
                for i, e in enumerate(entities)
                if e.__pydantic_extra__
            )
        for name in nested_names:
            getter = attrgetter(name)
            if any(map(_EXTRA, filter(None, map(getter, entities)))):
                records.extend(
                    (f"{_entity_path(section, e, i)}.{name}", getter(e), e.id)
                    for i, e in enumerate(entities)
                    if getter(e) is not None and getter(e).__pydantic_extra__
                )
    for path, record, entity_id in records:
        for key, value in (record.__pydantic_extra__ or {}).items():
            field = f"{path}.{key}" if path else key
            problem = plain_data_problem(value)
            if problem is not None:
                raise ThfError(
                    ThfErrorCode.INVALID_FIELD,
                    f"This file cannot be opened: {field} {problem}.",
                    section=path.split("[")[0].split(".")[0] or key,
                    id=entity_id,
                    field=field,
                )


def _entity_path(section: str, entity: Any, index: int) -> str:
    return f"{section}[{entity.id}]" if isinstance(entity.id, str) else f"{section}[{index}]"


def plain_data_problem(value: Any) -> str | None:
    """Why an unknown field's value could not be written back faithfully, or None."""
    # Iterative so that a hostile nesting depth cannot exhaust the interpreter stack.
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > _MAX_UNKNOWN_DEPTH:
            return f"is nested more than {_MAX_UNKNOWN_DEPTH} levels deep"
        if isinstance(current, dict):
            for key, item in current.items():
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    return "has a key that is itself a list or mapping"
                stack.append((item, depth + 1))
        elif isinstance(current, list):
            stack.extend((item, depth + 1) for item in current)
        elif isinstance(current, int) and current.bit_length() > _MAX_INT_BITS:
            # Python refuses to turn such integers back into text, so they could not be saved.
            return "holds a number too large to keep"
        elif isinstance(current, float) and not math.isfinite(current):
            return f"holds {_show(current)}, which is not a finite number"
        elif not isinstance(current, (str, int, float, bool)) and current is not None:
            return "holds a value that is not plain YAML data"
    return None


def _field_error(exc: ValidationError, data: Mapping[str, Any]) -> ThfError:
    detail = exc.errors(include_url=False, include_context=True)[0]
    loc = tuple(detail["loc"])
    if detail["type"] == "invalid_key" and loc:
        # The offending key is the last part; the field is the mapping that holds it.
        path, section, entity_id = _describe_loc(loc[:-1], data)
        phrase = f"has a key that is not text ({_show(loc[-1])})"
    else:
        path, section, entity_id = _describe_loc(loc, data)
        phrase = _phrase(detail)
    where = path or "the document"
    return ThfError(
        ThfErrorCode.INVALID_FIELD,
        f"This file cannot be opened: {where} {phrase}.",
        section=section,
        id=entity_id,
        field=path or None,
    )


def _describe_loc(
    loc: tuple[Any, ...], data: Mapping[str, Any]
) -> tuple[str, str | None, str | None]:
    """Render a pydantic location as `elements[web-app].position.x`; also section and id."""
    parts: list[str] = []
    current: Any = data
    section: str | None = None
    entity_id: str | None = None
    for depth, part in enumerate(loc):
        if isinstance(part, int):
            item = current[part] if isinstance(current, list) and 0 <= part < len(current) else None
            item_id = item.get("id") if isinstance(item, Mapping) else None
            if isinstance(item_id, str):
                parts.append(f"[{item_id}]")
                if depth == 1:
                    entity_id = item_id
            else:
                parts.append(f"[{part}]")
            current = item
        else:
            name = str(part)
            parts.append(name if not parts else "." + name)
            if depth == 0:
                section = name
            current = current.get(part) if isinstance(current, Mapping) else None
    return "".join(parts), section, entity_id


_TYPE_PHRASES = {
    "string_type": "must be text",
    "bool_type": "must be true or false",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "list_type": "must be a list",
    "dict_type": "must be a mapping of fields",
    "model_type": "must be a mapping of fields",
    "model_attributes_type": "must be a mapping of fields",
}


def _phrase(detail: Any) -> str:
    kind = detail["type"]
    value = detail.get("input")
    ctx = detail.get("ctx") or {}
    if kind == "missing":
        return "is required but missing"
    if kind == "value_error":
        reason = str(ctx.get("error", "has a value that is not allowed"))
        if isinstance(value, str) and _TIME_OF_DAY.match(value):
            return (
                f"is {_show(value)}, which carries a time of day; "
                f"write a plain calendar date such as {value[:10]}"
            )
        return reason if value is None else f"{reason} (found {_show(value)})"
    if kind == "enum":
        return f"must be one of {ctx.get('expected')} (found {_show(value)})"
    if kind == "finite_number":
        return f"must be a finite number (found {_show(value)})"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')} (found {_show(value)})"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')} (found {_show(value)})"
    phrase = _TYPE_PHRASES.get(kind, "has a value of the wrong kind")
    if value is None:
        return f"is empty (null) but {phrase}"
    return f"{phrase} (found {_show(value)})"


def _show(value: Any) -> str:
    """A short, safe rendering of a value from the file for a message."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = '"' + (value if len(value) <= 40 else value[:40] + "…") + '"'
    elif isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
        text = "a number with more than 900 digits"
    elif isinstance(value, float) and not math.isfinite(value):
        text = ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    elif isinstance(value, (int, float)):
        text = repr(value)
    elif isinstance(value, Mapping):
        text = "a mapping"
    elif isinstance(value, list):
        text = "a list"
    else:
        text = "a value of another kind"
    return text


def compatibility_warnings(data: Any) -> tuple[CompatibilityWarning, ...]:
    """What a parsed document holds that ThreatForge's desktop reader would refuse.

    Call it on the same parsed data `validate_document` accepted: it looks at the raw values
    (a severity's letter case, a null section) that the typed model no longer shows.
    """
    if not isinstance(data, Mapping):
        return ()
    warnings: list[CompatibilityWarning] = []
    for section in SECTION_NAMES:
        if section in data and data[section] is None:
            warnings.append(
                CompatibilityWarning(
                    CompatibilityCode.NULL_SECTION,
                    f"{section} is empty (null); ThreatForge's desktop app refuses a null "
                    f"section, so write it as an empty list ({section}: []), which "
                    "'stockade fmt' does.",
                    section=section,
                    field=section,
                )
            )
    threats = data.get("threats")
    for threat in threats if isinstance(threats, list) else ():
        if not isinstance(threat, Mapping):
            continue
        severity = threat.get("severity")
        if isinstance(severity, str) and severity != severity.lower():
            threat_id = threat.get("id") if isinstance(threat.get("id"), str) else None
            field = f"threats[{threat_id}].severity" if threat_id else "threats.severity"
            warnings.append(
                CompatibilityWarning(
                    CompatibilityCode.SEVERITY_CASE,
                    f"{field} is {_show(severity)}; ThreatForge's desktop app reads severities "
                    f"only in lowercase and would refuse this file. Stockade reads it as "
                    f"{_show(severity.lower())}; 'stockade fmt' writes it that way.",
                    section="threats",
                    id=threat_id,
                    field=field,
                )
            )
    return tuple(warnings)
