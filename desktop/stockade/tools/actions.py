"""The graph edits as pure functions over `ThreatModel` (shared by the AI tools and the app).

Every function takes the current document and typed input and returns either an
`ActionResult` (the whole next document, a plain result text, the new id for adds, and every
entity a delete removed) or an `ActionError` whose message says what to do instead. Nothing is
mutated in place.

New ids: elements get a slug of their name (`"Payment API"` → `payment-api`, then
`payment-api-2`, …) because `.thf` element ids are conventionally readable slugs; flows,
trust boundaries and threats get `flow-<n>`, `boundary-<n>` and `threat-<n>`, one above the
highest number in use; layers and groups get a slug of their name, as elements do. Threat ids are numbered rather than random so that the same document
and input always give the same result: the approval preview, a replayed turn and the
committed document then agree byte for byte.

Stricter than the reference: adds return the new id; unknown trust-boundary members,
unknown threat targets and unknown layers/groups/endpoints are refused with a message naming
them; deleting an element or flow that other entities still reference is refused unless the
input asks to cascade, in which case every removed entity is listed. Deleting a layer or group that elements (or
child groups) still use is refused the same way; its cascade clears those assignments and keeps
the elements, listing each one it changed.

Flows carry `encrypted` as a key the `.thf` 1.0 format does not define: it is kept in the
flow's unknown fields, which every reader here round-trips.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter, indexOf
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, model_validator

from stockade.thf import ids
from stockade.thf.errors import ThfError
from stockade.thf.model import (
    SECTION_NAMES,
    DataFlow,
    Element,
    Group,
    Layer,
    MitigationStatus,
    Severity,
    StrideCategory,
    Threat,
    ThreatModel,
    TrustBoundary,
)
from stockade.thf.validate import validate_references
from stockade.tools.schema import (
    IdList,
    IdText,
    LongText,
    NameText,
    RequiredLongText,
    ShortText,
    StrictInput,
    TextList,
)
from stockade.tools.untrusted import scalar

_ID_OF = attrgetter("id")

ECHO_MAX_CODE_POINTS = 80
"""Longest id or name echoed back in a result or error message."""
MAX_LISTED_REFERRERS = 100
"""Referrers named one by one in a message; the rest are counted (the model reads this text)."""


# ---------------------------------------------------------------------------------------------
# Typed inputs


_SEVERITY_BY_VALUE: dict[str, Severity] = {m.value: m for m in Severity}
"""`Severity(text)` for lowercase text, as a dict lookup (calling the enum runs two Python
frames per validated severity)."""


def _severity(value: Any) -> Any:
    # Models write `High` or `CRITICAL` as often as `high`; accept any case, store lowercase.
    if isinstance(value, str) and not isinstance(value, Severity):
        # `str.lower` returns an exact str, which the enum would look up just like this.
        member = _SEVERITY_BY_VALUE.get(value.lower())
        if member is None:
            raise ValueError("must be critical, high, medium, low, or info")
        return member
    return value


def _enum_exact(enum: type[StrideCategory] | type[MitigationStatus]) -> Callable[[Any], Any]:
    by_value: dict[str, Any] = {m.value: m for m in enum}

    def convert(value: Any) -> Any:
        if isinstance(value, str) and not isinstance(value, enum):
            # An exact str is looked up as `enum(value)` would; anything else goes through it.
            member = by_value.get(value) if type(value) is str else _member_or_none(enum, value)
            if member is None:
                choices = ", ".join(f'"{m.value}"' for m in enum)
                raise ValueError(f"must be one of {choices}")
            return member
        return value

    return convert


def _member_or_none(enum: type[StrideCategory] | type[MitigationStatus], value: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        return None


SeverityInput = Annotated[
    Severity,
    BeforeValidator(_severity),
    Field(description="One of critical, high, medium, low, info (any letter case; stored lowercase)."),
]
CategoryInput = Annotated[
    StrideCategory,
    BeforeValidator(_enum_exact(StrideCategory)),
    Field(description="The STRIDE category, spelled exactly as listed."),
]
StatusInput = Annotated[MitigationStatus, BeforeValidator(_enum_exact(MitigationStatus))]
Coordinate = Annotated[float, Field(allow_inf_nan=False)]
Opacity = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False, description="From 0 to 1.")]
Extent = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class PositionInput(StrictInput):
    """Canvas position in pixels."""

    x: Coordinate = Field(description="Pixels from the left; x grows to the right.")
    y: Coordinate = Field(description="Pixels from the top; y grows downward.")


class SizeInput(StrictInput):
    """Canvas size in pixels."""

    width: Extent = Field(description="Width in pixels.")
    height: Extent = Field(description="Height in pixels.")


class MitigationInput(StrictInput):
    status: StatusInput = Field(
        description="not_started, in_progress, mitigated, accepted or transferred."
    )
    description: LongText = Field(description="How the threat is or will be mitigated.")


_CLEAR_HINT = " An empty string removes it."


class NewElement(StrictInput):
    type: IdText = Field(
        description="Component type: a catalog id such as web_server or sql_database (see "
        "search_component_catalog), or process, data_store, external_entity, or text for a "
        "free-text annotation."
    )
    name: NameText = Field(description="Display name.")
    trust_zone: ShortText | None = Field(default=None, description="Trust zone, e.g. internet, dmz, internal.")
    description: LongText | None = Field(default=None, description="What the component does.")
    technologies: TextList | None = Field(default=None, description="Technologies used.")
    position: PositionInput | None = Field(default=None, description="Where to place it on the canvas.")


class _Updates(StrictInput):
    @model_validator(mode="before")
    @classmethod
    def _no_id_and_not_empty(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "id" in data:
                raise ValueError('"id" cannot be changed; ids are permanent')
            if not data:
                raise ValueError("must name at least one field to change")
        return data


class ElementUpdates(_Updates):
    name: NameText | None = None
    type: IdText | None = None
    trust_zone: ShortText | None = None
    subtype: ShortText | None = Field(default=None, description="Catalog variant id." + _CLEAR_HINT)
    icon: ShortText | None = Field(default=None, description="Icon id." + _CLEAR_HINT)
    description: LongText | None = None
    technologies: TextList | None = None
    stores: TextList | None = Field(default=None, description="Kinds of data the element stores.")
    encryption: ShortText | None = Field(default=None, description="Encryption in use." + _CLEAR_HINT)
    layer: ShortText | None = Field(default=None, description="An existing layer id." + _CLEAR_HINT)
    group: ShortText | None = Field(default=None, description="An existing group id." + _CLEAR_HINT)
    tags: TextList | None = None
    position: PositionInput | None = None
    fill_color: ShortText | None = Field(default=None, description="CSS colour." + _CLEAR_HINT)
    stroke_color: ShortText | None = Field(default=None, description="CSS colour." + _CLEAR_HINT)
    fill_opacity: Opacity | None = None
    stroke_opacity: Opacity | None = None
    font_size: Extent | None = None
    font_weight: ShortText | None = Field(default=None, description="e.g. bold, normal." + _CLEAR_HINT)


class NewDataFlow(StrictInput):
    from_: IdText = Field(alias="from", description="Id of the element the data leaves.")
    to: IdText = Field(description="Id of the element the data reaches.")
    name: ShortText | None = None
    protocol: ShortText | None = Field(default=None, description="e.g. HTTPS, gRPC, SQL.")
    data: TextList | None = Field(default=None, description="Kinds of data carried.")
    authenticated: bool | None = Field(default=None, description="Whether the flow is authenticated.")
    encrypted: bool | None = Field(default=None, description="Whether the flow is encrypted in transit.")


class DataFlowUpdates(_Updates):
    flow_number: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = None
    name: ShortText | None = None
    from_: IdText | None = Field(default=None, alias="from")
    to: IdText | None = None
    protocol: ShortText | None = None
    data: TextList | None = None
    authenticated: bool | None = None
    encrypted: bool | None = Field(default=None, description="Whether the flow is encrypted in transit.")
    label_offset: PositionInput | None = None
    source_handle: ShortText | None = Field(default=None, description="Handle name." + _CLEAR_HINT)
    target_handle: ShortText | None = Field(default=None, description="Handle name." + _CLEAR_HINT)
    stroke_color: ShortText | None = Field(default=None, description="CSS colour." + _CLEAR_HINT)
    stroke_opacity: Opacity | None = None


class NewTrustBoundary(StrictInput):
    name: NameText
    contains: IdList | None = Field(default=None, description="Ids of existing elements inside it.")
    position: PositionInput | None = Field(default=None, description="Top-left corner on the canvas.")
    size: SizeInput | None = Field(default=None, description="Enough to enclose its members.")


class TrustBoundaryUpdates(_Updates):
    name: NameText | None = None
    contains: IdList | None = Field(default=None, description="Replaces the member list.")
    position: PositionInput | None = None
    size: SizeInput | None = None
    fill_color: ShortText | None = Field(default=None, description="CSS colour." + _CLEAR_HINT)
    stroke_color: ShortText | None = Field(default=None, description="CSS colour." + _CLEAR_HINT)
    fill_opacity: Opacity | None = None
    stroke_opacity: Opacity | None = None


class NewLayer(StrictInput):
    name: NameText
    description: LongText | None = None


class LayerUpdates(_Updates):
    name: NameText | None = None
    description: LongText | None = Field(default=None, description="What the layer holds." + _CLEAR_HINT)


class NewGroup(StrictInput):
    name: NameText
    type: ShortText | None = Field(default=None, description="Free-form kind, e.g. cluster.")
    parent: ShortText | None = Field(default=None, description="An existing group id.")
    description: LongText | None = None


class GroupUpdates(_Updates):
    name: NameText | None = None
    type: ShortText | None = Field(default=None, description="Free-form kind." + _CLEAR_HINT)
    parent: ShortText | None = Field(default=None, description="An existing group id." + _CLEAR_HINT)
    description: LongText | None = Field(default=None, description="What the group is." + _CLEAR_HINT)
    position: PositionInput | None = None
    size: SizeInput | None = None


class NewThreat(StrictInput):
    title: NameText
    category: CategoryInput
    element: IdText | None = Field(default=None, description="Id of the element it targets.")
    flow: IdText | None = Field(default=None, description="Id of the data flow it targets.")
    severity: SeverityInput
    description: RequiredLongText
    mitigation: MitigationInput | None = None


class ThreatUpdates(_Updates):
    title: NameText | None = None
    category: CategoryInput | None = None
    element: ShortText | None = Field(default=None, description="Element id." + _CLEAR_HINT)
    flow: ShortText | None = Field(default=None, description="Data-flow id." + _CLEAR_HINT)
    severity: SeverityInput | None = None
    description: RequiredLongText | None = None
    mitigation: MitigationInput | None = None


# ---------------------------------------------------------------------------------------------
# Outcomes


@dataclass(frozen=True, slots=True)
class ActionResult:
    """A successful edit: the whole next document and what happened, in plain text."""

    document: ThreatModel
    result: str
    new_id: str | None = None
    removed: tuple[str, ...] = ()
    """Every entity the edit removed, as `<kind> <id>`, the target first."""


@dataclass(frozen=True, slots=True)
class ActionError:
    """A refused edit; `message` says why and what to do instead."""

    message: str


ActionOutcome = ActionResult | ActionError


# ---------------------------------------------------------------------------------------------
# Helpers


def _show(value: str) -> str:
    """An id or name echoed in a message: sanitized, escaped, capped (it may be document text)."""
    return scalar(value, ECHO_MAX_CODE_POINTS)[0]


def _listing(values: Iterable[str], *, quoted: bool = False) -> str:
    """Ids for a message, comma-separated; past `MAX_LISTED_REFERRERS` only counted."""
    items = list(values)
    shown = ", ".join(
        f'"{_show(v)}"' if quoted else _show(v) for v in items[:MAX_LISTED_REFERRERS]
    )
    if len(items) > MAX_LISTED_REFERRERS:
        shown += f" and {len(items) - MAX_LISTED_REFERRERS} more"
    return shown


def _quoted(values: Iterable[str]) -> str:
    return _listing(values, quoted=True)


_SECTION_WORDS = {
    "layers": "layer",
    "groups": "group",
    "elements": "element",
    "data_flows": "data flow",
    "trust_boundaries": "trust boundary",
    "threats": "threat",
}


def _not_found(section: str, entity_id: str) -> ActionError:
    word = _SECTION_WORDS[section]
    return ActionError(
        f'No {word} with id "{_show(entity_id)}" exists in the current document. '
        f'Call search_entities with kind "{section}" to list the ids that exist.'
    )


def _index_of(entities: Sequence[Any], entity_id: str) -> int:
    try:
        return indexOf(map(_ID_OF, entities), entity_id)
    except ValueError:
        return -1


def _replace(entities: Sequence[Any], index: int, new: Any) -> list[Any]:
    return [*entities[:index], new, *entities[index + 1 :]]


def _dump(entity: Any) -> dict[str, Any]:
    return entity.model_dump(by_alias=True, exclude_none=True)


class _KnownValid:
    """The last few documents that passed `validate_references` or were derived by an action
    from one that had, by identity (weakly held: never keeps a document alive).

    Every action checks each reference it adds or changes and removes or refuses what would
    dangle, so an action applied to a valid document yields a valid one. Only a document not
    known to be valid still needs the whole-document check.
    """

    _SIZE = 8

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, tuple[weakref.ref[ThreatModel], tuple[int, ...]]] = (
            OrderedDict()
        )

    def __contains__(self, document: ThreatModel) -> bool:
        with self._lock:
            entry = self._entries.get(id(document))
            # The shape check catches a section list mutated in place against the model's rules.
            return entry is not None and entry[0]() is document and entry[1] == _shape(document)

    def add(self, document: ThreatModel) -> None:
        with self._lock:
            self._entries[id(document)] = (weakref.ref(document), _shape(document))
            self._entries.move_to_end(id(document))
            while len(self._entries) > self._SIZE:
                self._entries.popitem(last=False)


def _shape(document: ThreatModel) -> tuple[int, ...]:
    return tuple(len(getattr(document, section)) for section in SECTION_NAMES)


_known_valid = _KnownValid()


def _finish(before: ThreatModel, document: ThreatModel, result: str, new_id: str | None = None,
            removed: tuple[str, ...] = ()) -> ActionOutcome:
    # The edits above keep every reference intact by construction, so an edit of a document
    # known to be valid needs no whole-document pass (the transaction validates again at
    # commit). Otherwise this is the safety net that turns a broken input into a refusal
    # instead of a document that cannot reopen.
    if before not in _known_valid:
        try:
            validate_references(document)
        except ThfError as exc:
            # The validator's text quotes document ids, which are untrusted: sanitize and escape.
            detail = scalar(exc.message, 600)[0]
            return ActionError(f"The change was not applied because it would break the document: {detail}")
    _known_valid.add(document)
    return ActionResult(document=document, result=result, new_id=new_id, removed=removed)


def _merge(entity: Any, changes: dict[str, Any], clearable: frozenset[str]) -> dict[str, Any]:
    merged = _dump(entity)
    for key, value in changes.items():
        if key in clearable and value == "":
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def _changed_fields(updates: StrictInput) -> str:
    return ", ".join(updates.given_names())


# ---------------------------------------------------------------------------------------------
# Elements

_ELEMENT_CLEARABLE = frozenset(
    {"subtype", "icon", "encryption", "layer", "group", "fill_color", "stroke_color", "font_weight"}
)


def add_element(document: ThreatModel, element: NewElement) -> ActionOutcome:
    """Append a new element; its id is a unique slug of its name."""
    taken = {e.id for e in document.elements}
    taken.update(g.id for g in document.groups)
    taken.update(b.id for b in document.trust_boundaries)
    new_id = ids.unique_slug(element.name, taken)
    fields = element.given()
    new = Element.model_validate(
        {"trust_zone": "", "description": "", "technologies": [], **fields, "id": new_id}
    )
    return _finish(
        document,
        document.model_copy(update={"elements": [*document.elements, new]}),
        f'Added element {_show(new_id)} ("{_show(element.name)}", type {_show(element.type)}).',
        new_id=new_id,
    )


def update_element(document: ThreatModel, element_id: str, updates: ElementUpdates) -> ActionOutcome:
    """Merge `updates` over one element; a layer or group must exist ("" clears it)."""
    index = _index_of(document.elements, element_id)
    if index < 0:
        return _not_found("elements", element_id)
    changes = updates.given()
    layer = changes.get("layer")
    if layer and layer not in {item.id for item in document.layers}:
        return ActionError(
            f'No layer with id "{_show(layer)}" exists, so element "{_show(element_id)}" was not '
            f'changed. Call search_entities with kind "layers" to list the layer ids, or send '
            f'an empty layer to remove the assignment.'
        )
    group = changes.get("group")
    if group and group not in {item.id for item in document.groups}:
        return ActionError(
            f'No group with id "{_show(group)}" exists, so element "{_show(element_id)}" was not '
            f'changed. Call search_entities with kind "groups" to list the group ids, or send '
            f'an empty group to remove the assignment.'
        )
    new = Element.model_validate(_merge(document.elements[index], changes, _ELEMENT_CLEARABLE))
    return _finish(
        document,
        document.model_copy(update={"elements": _replace(document.elements, index, new)}),
        f"Updated element {_show(element_id)}: {_changed_fields(updates)}.",
    )


def delete_element(document: ThreatModel, element_id: str, cascade: bool = False) -> ActionOutcome:
    """Remove an element (and its trust-boundary memberships).

    Refused while flows, relationships or threats reference it, unless `cascade` is set:
    then those go too, along with threats on the removed flows.
    """
    index = _index_of(document.elements, element_id)
    if index < 0:
        return _not_found("elements", element_id)
    flows = [f for f in document.data_flows if element_id in (f.from_, f.to)]
    relationships = [r for r in document.relationships if element_id in (r.from_, r.to)]
    flow_ids = {f.id for f in flows}
    threats = [
        t for t in document.threats
        if t.element == element_id or (cascade and t.flow is not None and t.flow in flow_ids)
    ]
    if not cascade and (flows or relationships or threats):
        return ActionError(
            f'Element "{_show(element_id)}" was not deleted because other entities still refer '
            f"to it: {_referrer_text(flows, relationships, threats)}. Delete or re-point those "
            f'first, or call delete_element again with "cascade": true to delete them with it.'
        )
    removed = (
        f"element {element_id}",
        *(f"data flow {f.id}" for f in flows),
        *(f"relationship {r.id}" for r in relationships),
        *(f"threat {t.id}" for t in threats),
    )
    relationship_ids = {r.id for r in relationships}
    threat_ids = {t.id for t in threats}
    boundaries = list(document.trust_boundaries)
    left: list[str] = []
    for i, boundary in enumerate(boundaries):
        if element_id in boundary.contains:
            left.append(boundary.id)
            members = [m for m in boundary.contains if m != element_id]
            boundaries[i] = boundary.model_copy(update={"contains": members})
    next_document = document.model_copy(
        update={
            "elements": [*document.elements[:index], *document.elements[index + 1 :]],
            "data_flows": [f for f in document.data_flows if f.id not in flow_ids] if flow_ids
            else document.data_flows,
            "relationships": [r for r in document.relationships if r.id not in relationship_ids]
            if relationship_ids else document.relationships,
            "threats": [t for t in document.threats if t.id not in threat_ids] if threat_ids
            else document.threats,
            "trust_boundaries": boundaries,
        }
    )
    text = f"Deleted element {_show(element_id)}."
    if len(removed) > 1:
        text += " Also deleted: " + _listing(removed[1:]) + "."
    if left:
        text += " It was removed from trust boundary " + _listing(left) + "."
    return _finish(document, next_document, text, removed=removed)


def _referrer_text(flows: Sequence[DataFlow], relationships: Sequence[Any],
                   threats: Sequence[Threat]) -> str:
    parts = []
    if flows:
        parts.append("data flows " + _quoted(f.id for f in flows))
    if relationships:
        parts.append("relationships " + _quoted(r.id for r in relationships))
    if threats:
        parts.append("threats " + _quoted(t.id for t in threats))
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Data flows

_FLOW_CLEARABLE = frozenset({"source_handle", "target_handle", "stroke_color"})


def _missing_endpoints(document: ThreatModel, endpoints: dict[str, str]) -> list[str]:
    element_ids = {e.id for e in document.elements}
    return [f'{end} "{_show(value)}"' for end, value in endpoints.items() if value not in element_ids]


def add_data_flow(document: ThreatModel, data_flow: NewDataFlow) -> ActionOutcome:
    """Connect two existing elements; the flow gets the next `flow-<n>` id and flow number."""
    missing = _missing_endpoints(document, {"from": data_flow.from_, "to": data_flow.to})
    if missing:
        return ActionError(
            "The data flow was not added: no element exists for "
            + " or ".join(missing)
            + '. Call search_entities with kind "elements" to list the element ids.'
        )
    taken = [f.id for f in document.data_flows] + [r.id for r in document.relationships]
    new_id = ids.next_numbered_id("flow", taken)
    new = DataFlow.model_validate(
        {
            "name": "",
            "protocol": "",
            "data": [],
            "authenticated": False,
            **data_flow.given(),
            "id": new_id,
            "flow_number": ids.next_flow_number(document.data_flows),
        }
    )
    return _finish(
        document,
        document.model_copy(update={"data_flows": [*document.data_flows, new]}),
        f"Added data flow {_show(new_id)} from {_show(data_flow.from_)} to {_show(data_flow.to)}.",
        new_id=new_id,
    )


def update_data_flow(document: ThreatModel, flow_id: str, updates: DataFlowUpdates) -> ActionOutcome:
    """Merge `updates` over one flow; both endpoints must still be existing elements."""
    index = _index_of(document.data_flows, flow_id)
    if index < 0:
        return _not_found("data_flows", flow_id)
    merged = _merge(document.data_flows[index], updates.given(), _FLOW_CLEARABLE)
    missing = _missing_endpoints(document, {"from": merged["from"], "to": merged["to"]})
    if missing:
        return ActionError(
            f'Data flow "{_show(flow_id)}" was not changed: no element exists for '
            + " or ".join(missing)
            + '. Call search_entities with kind "elements" to list the element ids.'
        )
    new = DataFlow.model_validate(merged)
    return _finish(
        document,
        document.model_copy(update={"data_flows": _replace(document.data_flows, index, new)}),
        f"Updated data flow {_show(flow_id)}: {_changed_fields(updates)}.",
    )


def delete_data_flow(document: ThreatModel, flow_id: str, cascade: bool = False) -> ActionOutcome:
    """Remove a flow; refused while threats target it, unless `cascade` removes them too."""
    index = _index_of(document.data_flows, flow_id)
    if index < 0:
        return _not_found("data_flows", flow_id)
    threats = [t for t in document.threats if t.flow == flow_id]
    if threats and not cascade:
        return ActionError(
            f'Data flow "{_show(flow_id)}" was not deleted because threats still target it: '
            f"{_quoted(t.id for t in threats)}. Delete or re-point those first, or call "
            f'delete_data_flow again with "cascade": true to delete them with it.'
        )
    threat_ids = {t.id for t in threats}
    removed = (f"data flow {flow_id}", *(f"threat {t.id}" for t in threats))
    next_document = document.model_copy(
        update={
            "data_flows": [*document.data_flows[:index], *document.data_flows[index + 1 :]],
            "threats": [t for t in document.threats if t.id not in threat_ids] if threat_ids
            else document.threats,
        }
    )
    text = f"Deleted data flow {_show(flow_id)}."
    if threats:
        text += " Also deleted: " + _listing(removed[1:]) + "."
    return _finish(document, next_document, text, removed=removed)


# ---------------------------------------------------------------------------------------------
# Trust boundaries

_BOUNDARY_CLEARABLE = frozenset({"fill_color", "stroke_color"})


def _unknown_members(document: ThreatModel, members: Sequence[str]) -> list[str]:
    element_ids = {e.id for e in document.elements}
    return [m for m in dict.fromkeys(members) if m not in element_ids]


def _members_error(what: str, unknown: Sequence[str]) -> ActionError:
    return ActionError(
        f"{what}: these members are not element ids: {_quoted(unknown)}. "
        'Call search_entities with kind "elements" to list the element ids.'
    )


def add_trust_boundary(document: ThreatModel, trust_boundary: NewTrustBoundary) -> ActionOutcome:
    """Append a trust boundary around existing elements; unknown members are refused."""
    members = list(dict.fromkeys(trust_boundary.contains or []))
    unknown = _unknown_members(document, members)
    if unknown:
        return _members_error("The trust boundary was not added", unknown)
    taken = [b.id for b in document.trust_boundaries]
    taken += [e.id for e in document.elements] + [g.id for g in document.groups]
    new_id = ids.next_numbered_id("boundary", taken)
    new = TrustBoundary.model_validate({**trust_boundary.given(), "contains": members, "id": new_id})
    return _finish(
        document,
        document.model_copy(update={"trust_boundaries": [*document.trust_boundaries, new]}),
        f'Added trust boundary {_show(new_id)} ("{_show(trust_boundary.name)}") with '
        f"{len(members)} member{'s' if len(members) != 1 else ''}.",
        new_id=new_id,
    )


def update_trust_boundary(document: ThreatModel, boundary_id: str,
                          updates: TrustBoundaryUpdates) -> ActionOutcome:
    """Merge `updates` over one boundary; a new member list must name existing elements."""
    index = _index_of(document.trust_boundaries, boundary_id)
    if index < 0:
        return _not_found("trust_boundaries", boundary_id)
    changes = updates.given()
    if "contains" in changes:
        changes["contains"] = list(dict.fromkeys(changes["contains"]))
        unknown = _unknown_members(document, changes["contains"])
        if unknown:
            return _members_error(f'Trust boundary "{_show(boundary_id)}" was not changed', unknown)
    new = TrustBoundary.model_validate(
        _merge(document.trust_boundaries[index], changes, _BOUNDARY_CLEARABLE)
    )
    return _finish(
        document,
        document.model_copy(
            update={"trust_boundaries": _replace(document.trust_boundaries, index, new)}
        ),
        f"Updated trust boundary {_show(boundary_id)}: {_changed_fields(updates)}.",
    )


def delete_trust_boundary(document: ThreatModel, boundary_id: str) -> ActionOutcome:
    """Remove a trust boundary; its member elements stay."""
    index = _index_of(document.trust_boundaries, boundary_id)
    if index < 0:
        return _not_found("trust_boundaries", boundary_id)
    boundaries = document.trust_boundaries
    return _finish(
        document,
        document.model_copy(update={"trust_boundaries": [*boundaries[:index], *boundaries[index + 1 :]]}),
        f"Deleted trust boundary {_show(boundary_id)}; its elements were kept.",
        removed=(f"trust boundary {boundary_id}",),
    )


# ---------------------------------------------------------------------------------------------
# Threats


def _target_error(document: ThreatModel, what: str, element: str | None,
                  flow: str | None) -> ActionError | None:
    if element and element not in {e.id for e in document.elements}:
        return ActionError(
            f'{what}: no element with id "{_show(element)}" exists. Call search_entities with '
            'kind "elements" to list the element ids.'
        )
    if flow and flow not in {f.id for f in document.data_flows}:
        return ActionError(
            f'{what}: no data flow with id "{_show(flow)}" exists. Call search_entities with '
            'kind "data_flows" to list the data-flow ids.'
        )
    return None


def add_threat(document: ThreatModel, threat: NewThreat) -> ActionOutcome:
    """Append a threat; its element and flow, when given, must exist."""
    error = _target_error(document, "The threat was not added", threat.element, threat.flow)
    if error:
        return error
    new_id = ids.next_numbered_id("threat", [t.id for t in document.threats])
    new = Threat.model_validate({**threat.given(), "id": new_id})
    target = ""
    if threat.element:
        target += f" on element {_show(threat.element)}"
    if threat.flow:
        target += f" on data flow {_show(threat.flow)}"
    return _finish(
        document,
        document.model_copy(update={"threats": [*document.threats, new]}),
        f'Added threat {_show(new_id)} ("{_show(threat.title)}", {new.category.value}, '
        f"{new.severity.value}){target}.",
        new_id=new_id,
    )


def update_threat(document: ThreatModel, threat_id: str, updates: ThreatUpdates) -> ActionOutcome:
    """Merge `updates` over one threat; a new element or flow must exist ("" clears it)."""
    index = _index_of(document.threats, threat_id)
    if index < 0:
        return _not_found("threats", threat_id)
    changes = updates.given()
    error = _target_error(
        document, f'Threat "{_show(threat_id)}" was not changed', changes.get("element"),
        changes.get("flow"),
    )
    if error:
        return error
    new = Threat.model_validate(
        _merge(document.threats[index], changes, frozenset({"element", "flow"}))
    )
    return _finish(
        document,
        document.model_copy(update={"threats": _replace(document.threats, index, new)}),
        f"Updated threat {_show(threat_id)}: {_changed_fields(updates)}.",
    )


def delete_threat(document: ThreatModel, threat_id: str) -> ActionOutcome:
    """Remove a threat (nothing refers to threats)."""
    index = _index_of(document.threats, threat_id)
    if index < 0:
        return _not_found("threats", threat_id)
    return _finish(
        document,
        document.model_copy(
            update={"threats": [*document.threats[:index], *document.threats[index + 1 :]]}
        ),
        f"Deleted threat {_show(threat_id)}.",
        removed=(f"threat {threat_id}",),
    )


# ---------------------------------------------------------------------------------------------
# Layers and groups


def _container_ids(document: ThreatModel) -> set[str]:
    taken = {item.id for item in document.layers}
    taken.update(item.id for item in document.groups)
    taken.update(item.id for item in document.elements)
    taken.update(item.id for item in document.trust_boundaries)
    return taken


def add_layer(document: ThreatModel, layer: NewLayer) -> ActionOutcome:
    """Append a layer; its id is a unique slug of its name."""
    new_id = ids.unique_slug(layer.name, _container_ids(document))
    new = Layer.model_validate({**layer.given(), "id": new_id})
    return _finish(
        document,
        document.model_copy(update={"layers": [*document.layers, new]}),
        f'Added layer {_show(new_id)} ("{_show(layer.name)}").',
        new_id=new_id,
    )


def update_layer(document: ThreatModel, layer_id: str, updates: LayerUpdates) -> ActionOutcome:
    """Merge `updates` over one layer ("" clears the description)."""
    index = _index_of(document.layers, layer_id)
    if index < 0:
        return _not_found("layers", layer_id)
    new = Layer.model_validate(_merge(document.layers[index], updates.given(), frozenset({"description"})))
    return _finish(
        document,
        document.model_copy(update={"layers": _replace(document.layers, index, new)}),
        f"Updated layer {_show(layer_id)}: {_changed_fields(updates)}.",
    )


def delete_layer(document: ThreatModel, layer_id: str, cascade: bool = False) -> ActionOutcome:
    """Remove a layer; refused while elements are on it, unless `cascade` takes them off it."""
    index = _index_of(document.layers, layer_id)
    if index < 0:
        return _not_found("layers", layer_id)
    members = [e for e in document.elements if e.layer == layer_id]
    if members and not cascade:
        return ActionError(
            f'Layer "{_show(layer_id)}" was not deleted because elements are still on it: '
            f"{_quoted(e.id for e in members)}. Move them to another layer first, or delete "
            "again with cascade to take them off the layer (the elements are kept)."
        )
    elements = [
        e.model_copy(update={"layer": None}) if e.layer == layer_id else e for e in document.elements
    ] if members else document.elements
    removed = (f"layer {layer_id}", *(f"layer of element {e.id}" for e in members))
    text = f"Deleted layer {_show(layer_id)}."
    if members:
        text += " Taken off it (kept): " + _listing(e.id for e in members) + "."
    return _finish(
        document,
        document.model_copy(
            update={"layers": [*document.layers[:index], *document.layers[index + 1 :]],
                    "elements": elements}
        ),
        text,
        removed=removed,
    )


def _parent_error(document: ThreatModel, what: str, group_id: str | None,
                  parent: str | None) -> ActionError | None:
    if not parent:
        return None
    by_id = {g.id: g for g in document.groups}
    if parent not in by_id:
        return ActionError(
            f'{what}: no group with id "{_show(parent)}" exists. Call search_entities with kind '
            '"groups" to list the group ids, or leave the parent empty.'
        )
    # Walking up from the new parent must never reach the group itself: groups nest as a tree.
    current: str | None = parent
    seen: set[str] = set()
    while current is not None and current not in seen:
        if current == group_id:
            return ActionError(
                f'{what}: group "{_show(parent)}" is inside "{_show(group_id or "")}", so it cannot '
                "also be its parent (groups cannot nest in a circle)."
            )
        seen.add(current)
        current = by_id[current].parent if current in by_id else None
    return None


def add_group(document: ThreatModel, group: NewGroup) -> ActionOutcome:
    """Append a group; its id is a unique slug of its name, its parent must exist."""
    error = _parent_error(document, "The group was not added", None, group.parent)
    if error:
        return error
    new_id = ids.unique_slug(group.name, _container_ids(document))
    fields = {k: v for k, v in group.given().items() if not (k in ("parent", "type") and v == "")}
    new = Group.model_validate({**fields, "id": new_id})
    return _finish(
        document,
        document.model_copy(update={"groups": [*document.groups, new]}),
        f'Added group {_show(new_id)} ("{_show(group.name)}").',
        new_id=new_id,
    )


def update_group(document: ThreatModel, group_id: str, updates: GroupUpdates) -> ActionOutcome:
    """Merge `updates` over one group; a parent must exist and never make a cycle."""
    index = _index_of(document.groups, group_id)
    if index < 0:
        return _not_found("groups", group_id)
    changes = updates.given()
    error = _parent_error(
        document, f'Group "{_show(group_id)}" was not changed', group_id, changes.get("parent")
    )
    if error:
        return error
    new = Group.model_validate(
        _merge(document.groups[index], changes, frozenset({"type", "parent", "description"}))
    )
    return _finish(
        document,
        document.model_copy(update={"groups": _replace(document.groups, index, new)}),
        f"Updated group {_show(group_id)}: {_changed_fields(updates)}.",
    )


def delete_group(document: ThreatModel, group_id: str, cascade: bool = False) -> ActionOutcome:
    """Remove a group; refused while elements or child groups are in it, unless `cascade`
    takes them out of it (they are kept; child groups move up to no parent)."""
    index = _index_of(document.groups, group_id)
    if index < 0:
        return _not_found("groups", group_id)
    members = [e for e in document.elements if e.group == group_id]
    children = [g for g in document.groups if g.parent == group_id]
    if (members or children) and not cascade:
        parts = []
        if members:
            parts.append("elements " + _quoted(e.id for e in members))
        if children:
            parts.append("groups " + _quoted(g.id for g in children))
        return ActionError(
            f'Group "{_show(group_id)}" was not deleted because these are still in it: '
            f"{'; '.join(parts)}. Move them out first, or delete again with cascade to take "
            "them out of the group (they are kept)."
        )
    groups = [
        g.model_copy(update={"parent": None}) if g.parent == group_id else g
        for i, g in enumerate(document.groups) if i != index
    ]
    elements = [
        e.model_copy(update={"group": None}) if e.group == group_id else e for e in document.elements
    ] if members else document.elements
    removed = (
        f"group {group_id}",
        *(f"group of element {e.id}" for e in members),
        *(f"parent of group {g.id}" for g in children),
    )
    text = f"Deleted group {_show(group_id)}."
    if members or children:
        text += " Taken out of it (kept): " + _listing([*(e.id for e in members),
                                                         *(g.id for g in children)]) + "."
    return _finish(
        document,
        document.model_copy(update={"groups": groups, "elements": elements}),
        text,
        removed=removed,
    )


# ---------------------------------------------------------------------------------------------
# Document properties


class MetadataUpdates(_Updates):
    title: NameText | None = None
    author: ShortText | None = None
    description: LongText | None = None


def update_metadata(document: ThreatModel, updates: MetadataUpdates) -> ActionOutcome:
    """Change the title, author or description of the document."""
    metadata = document.metadata.model_copy(update=updates.given())
    return _finish(
        document,
        document.model_copy(update={"metadata": metadata}),
        f"Updated document properties: {_changed_fields(updates)}.",
    )
