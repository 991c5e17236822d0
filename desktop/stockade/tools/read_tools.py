"""The four read tools: bounded, paginated, fenced views of the document and the catalog.

Every document- or catalog-derived string is sanitized, capped in code points and escaped
before it enters a result; lists are capped with a `<field>_total` sibling; bodies never
exceed `READ_RESULT_MAX_BYTES` and pages say why they stopped. Failures are a closed set of
authored messages and are not fenced. Read tools never return a document.

Lookups that would scan whole sections (an id's position, the flows, boundaries and threats
connected to an entity, referrers, lower-cased search text) come from per-section tables
built once per section list (`document_index`); results are the same as a scan's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from operator import attrgetter, is_not
from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field

from stockade.catalog.registry import ComponentCatalog, ComponentEntry, default_catalog
from stockade.protocol.secret_scan import redacted
from stockade.thf.model import (
    DataFlow,
    Element,
    MitigationStatus,
    Severity,
    StrideCategory,
    Threat,
    ThreatModel,
)
from stockade.tools.document_index import section_index
from stockade.tools.registry import DefinedTool, define_tool
from stockade.tools.runtime import ToolContext, ToolEffect, ToolFailed, ToolOk, ToolOutcome
from stockade.tools.schema import IdText, StrictInput
from stockade.tools.untrusted import (
    READ_RESULT_MAX_BYTES,
    EnvelopeTooLarge,
    body_bytes,
    envelope,
    sanitize,
    scalar,
)

DEFAULT_PAGE_LIMIT = 20
MAX_PAGE_LIMIT = 50
SCALAR_MAX_CODE_POINTS = 200
TEXT_MAX_CODE_POINTS = 400
LIST_MAX_ITEMS = 10
ECHO_MAX_CODE_POINTS = 80
FALLBACK_SCALAR_MAX_CODE_POINTS = 40
"""Tighter cap for the one item of a page that would not fit at the normal caps."""

READ_TOOL_NAMES: tuple[str, ...] = (
    "get_document_summary",
    "get_entity",
    "search_entities",
    "search_component_catalog",
)

EntityKind = Literal[
    "elements",
    "data_flows",
    "trust_boundaries",
    "threats",
    "layers",
    "groups",
    "relationships",
    "diagrams",
]
ENTITY_KINDS: tuple[str, ...] = get_args(EntityKind)

CatalogCategory = Literal[
    "generic", "annotations", "services", "databases", "messaging", "infrastructure",
    "security", "clients", "networking", "platform",
]
CatalogProvider = Literal["generic", "aws", "azure", "gcp", "cloudflare", "kubernetes", "oss"]
MitigationFilter = Literal[
    "not_started", "in_progress", "mitigated", "accepted", "transferred", "none"
]
NO_MITIGATION = "none"


class ReadFailure(StrEnum):
    """The closed set of ways a read tool can fail."""

    UNKNOWN_ID = "unknown_id"
    INVALID_FILTER = "invalid_filter"
    OFFSET_OUT_OF_RANGE = "offset_out_of_range"
    ENTITY_TOO_LARGE = "entity_too_large"


class PageStop(StrEnum):
    """Why a page ended: the item limit, the byte cap, or the end of the matches."""

    LIMIT = "limit"
    BYTES = "bytes"
    END = "end"


# ---------------------------------------------------------------------------------------------
# Inputs


_SEVERITY_BY_VALUE: dict[str, Severity] = {m.value: m for m in Severity}


def _severity_filter(value: Any) -> Any:
    if isinstance(value, str):
        member = _SEVERITY_BY_VALUE.get(value.lower())  # `Severity(value.lower())`
        if member is None:
            raise ValueError("must be critical, high, medium, low, or info")
        return member.value
    return value


SeverityFilter = Annotated[
    Literal["critical", "high", "medium", "low", "info"], BeforeValidator(_severity_filter)
]
CategoryFilter = Literal[
    "Spoofing", "Tampering", "Repudiation", "Information Disclosure", "Denial of Service",
    "Elevation of Privilege",
]
Offset = Annotated[int, Field(ge=0, description="Index of the first match to return.")]
Limit = Annotated[
    int, Field(ge=1, le=MAX_PAGE_LIMIT, description=f"Page size, default {DEFAULT_PAGE_LIMIT}.")
]


class SummaryInput(StrictInput):
    """No fields."""


class GetEntityInput(StrictInput):
    kind: EntityKind = Field(description="Which section the entity is in.")
    id: IdText = Field(description="The entity's id, exactly as written.")


class SearchEntitiesInput(StrictInput):
    kind: EntityKind = Field(description="Which section to search.")
    text: IdText | None = Field(default=None, description="Case-insensitive substring.")
    references: IdText | None = Field(
        default=None, description="Only entities that refer to this id (endpoint, member, target, layer, group or parent)."
    )
    element_type: IdText | None = Field(default=None, description="elements only: exact type.")
    trust_zone: IdText | None = Field(default=None, description="elements only: exact trust zone.")
    protocol: IdText | None = Field(default=None, description="data_flows only: protocol, any case.")
    authenticated: bool | None = Field(default=None, description="data_flows only.")
    severity: SeverityFilter | None = Field(default=None, description="threats only.")
    category: CategoryFilter | None = Field(default=None, description="threats only.")
    mitigation_status: MitigationFilter | None = Field(
        default=None, description="threats only; none means no mitigation recorded."
    )
    offset: Offset | None = None
    limit: Limit | None = None


class SearchCatalogInput(StrictInput):
    query: IdText | None = Field(default=None, description="Words to look for, e.g. postgres or queue.")
    category: CatalogCategory | None = None
    provider: CatalogProvider | None = None
    include_deprecated: bool | None = Field(default=None, description="Also list deprecated entries.")
    offset: Offset | None = None
    limit: Limit | None = None


FILTER_ORDER: tuple[str, ...] = (
    "text", "references", "element_type", "trust_zone", "protocol", "authenticated",
    "severity", "category", "mitigation_status",
)

APPLICABLE_FILTERS: dict[str, tuple[str, ...]] = {
    "elements": ("text", "references", "element_type", "trust_zone"),
    "data_flows": ("text", "references", "protocol", "authenticated"),
    "trust_boundaries": ("text", "references"),
    "threats": ("text", "references", "severity", "category", "mitigation_status"),
    "layers": ("text",),
    "groups": ("text", "references"),
    "relationships": ("text", "references"),
    "diagrams": ("text",),
}


# ---------------------------------------------------------------------------------------------
# Failures


def _echo(value: str) -> str:
    return scalar(value, ECHO_MAX_CODE_POINTS)[0]


def unknown_id_message(kind: str, entity_id: str, count: int) -> str:
    return (
        f'There is no "{kind}" entity with id "{_echo(entity_id)}" in the current document, '
        f'which has {count} "{kind}" entries. Call search_entities with kind "{kind}" to see '
        "the ids that exist."
    )


def invalid_filter_message(filter_name: str, kind: str) -> str:
    return (
        f'The "{filter_name}" filter does not apply to "{kind}". Filters that apply to '
        f'"{kind}": {", ".join(APPLICABLE_FILTERS[kind])}.'
    )


def offset_out_of_range_message(offset: int, total: int, kind: str) -> str:
    return (
        f'Offset {offset} is past the end of the {total} matching "{kind}" entries. '
        f"Use an offset from 0 to {total - 1}."
    )


def entity_too_large_message(kind: str, entity_id: str, size: int) -> str:
    return (
        f'The "{kind}" entity "{_echo(entity_id)}" projects to {size} bytes, over the '
        f"{READ_RESULT_MAX_BYTES}-byte limit for one result, so it cannot be returned whole. "
        f'Call search_entities with kind "{kind}" to read its compact form.'
    )


# ---------------------------------------------------------------------------------------------
# Projections


class _Projector:
    """Builds projected dicts with escaped, capped values and remembers any cut."""

    __slots__ = ("scalar_cap", "text_cap", "truncated")

    def __init__(self, scalar_cap: int = SCALAR_MAX_CODE_POINTS,
                 text_cap: int = TEXT_MAX_CODE_POINTS) -> None:
        self.scalar_cap = scalar_cap
        self.text_cap = text_cap
        self.truncated = False

    def s(self, value: Any) -> str:
        text, cut = scalar(value, self.scalar_cap)
        self.truncated |= cut
        return text

    def t(self, value: Any) -> str:
        text, cut = scalar(value, self.text_cap)
        self.truncated |= cut
        return text

    def opt(self, out: dict[str, Any], key: str, value: str | None, text: bool = False) -> None:
        if value is not None:
            out[key] = self.t(value) if text else self.s(value)

    def lst(self, out: dict[str, Any], key: str, values: Sequence[str] | None, total: int | None = None) -> None:
        values = values or ()
        out[key] = [self.s(v) for v in values[:LIST_MAX_ITEMS]]
        count = len(values) if total is None else total
        if count > LIST_MAX_ITEMS:
            out[f"{key}_total"] = count

    def done(self, out: dict[str, Any]) -> dict[str, Any]:
        if self.truncated:
            out["truncated"] = True
        return out


def _mitigation_status(threat: Threat) -> str:
    return threat.mitigation.status.value if threat.mitigation is not None else NO_MITIGATION


def _compact_into(kind: str, entity: Any, p: _Projector) -> dict[str, Any]:
    out: dict[str, Any] = {"id": p.s(entity.id)}
    if kind == "elements":
        out["name"] = p.s(entity.name)
        out["type"] = p.s(entity.type)
        out["trust_zone"] = p.s(entity.trust_zone)
        p.opt(out, "layer", entity.layer)
        p.opt(out, "group", entity.group)
    elif kind == "data_flows":
        out["name"] = p.s(entity.name)
        out["from"] = p.s(entity.from_)
        out["to"] = p.s(entity.to)
        out["protocol"] = p.s(entity.protocol)
        out["authenticated"] = entity.authenticated
    elif kind == "trust_boundaries":
        out["name"] = p.s(entity.name)
        out["contains_count"] = len(entity.contains)
    elif kind == "threats":
        out["title"] = p.s(entity.title)
        out["category"] = entity.category.value
        out["severity"] = entity.severity.value
        p.opt(out, "element", entity.element)
        p.opt(out, "flow", entity.flow)
        out["mitigation_status"] = _mitigation_status(entity)
    elif kind == "layers":
        out["name"] = p.s(entity.name)
    elif kind == "groups":
        out["name"] = p.s(entity.name)
        p.opt(out, "type", entity.type)
        p.opt(out, "parent", entity.parent)
    elif kind == "relationships":
        out["type"] = p.s(entity.type)
        out["from"] = p.s(entity.from_)
        out["to"] = p.s(entity.to)
        p.opt(out, "name", entity.name)
    elif kind == "diagrams":
        out["name"] = p.s(entity.name)
        p.opt(out, "kind", entity.kind)
    return out


def compact_projection(kind: str, entity: Any, scalar_cap: int = SCALAR_MAX_CODE_POINTS) -> dict[str, Any]:
    """The short form `search_entities` returns (no layout, no long text)."""
    p = _Projector(scalar_cap=scalar_cap)
    return p.done(_compact_into(kind, entity, p))


def full_projection(kind: str, entity: Any, document: ThreatModel) -> dict[str, Any]:
    """The complete form `get_entity` returns: compact fields, texts, lists and derived ids."""
    p = _Projector()
    out = _compact_into(kind, entity, p)
    if kind == "elements":
        element: Element = entity
        p.opt(out, "subtype", element.subtype)
        p.opt(out, "icon", element.icon)
        p.opt(out, "encryption", element.encryption)
        out["description"] = p.t(element.description)
        p.lst(out, "technologies", element.technologies)
        p.lst(out, "tags", element.tags)
        p.lst(out, "stores", element.stores)
        element_id = element.id
        flows = section_index(document, "data_flows")
        p.lst(out, "incoming_flow_ids", flows.ids_holding("to", element_id))
        p.lst(out, "outgoing_flow_ids", flows.ids_holding("from_", element_id))
        boundaries = section_index(document, "trust_boundaries")
        p.lst(out, "trust_boundary_ids", boundaries.ids_holding("contains", element_id))
        p.lst(out, "threat_ids", section_index(document, "threats").ids_holding("element", element_id))
    elif kind == "data_flows":
        data_flow: DataFlow = entity
        p.lst(out, "data", data_flow.data)
        p.lst(out, "threat_ids", section_index(document, "threats").ids_holding("flow", data_flow.id))
    elif kind == "trust_boundaries":
        p.lst(out, "contains", entity.contains)
    elif kind == "threats":
        out["description"] = p.t(entity.description)
        if entity.mitigation is not None:
            out["mitigation_description"] = p.t(entity.mitigation.description)
    elif kind in ("layers", "groups", "relationships", "diagrams"):
        p.opt(out, "description", entity.description, text=True)
    return p.done(out)


def catalog_projection(entry: ComponentEntry, scalar_cap: int = SCALAR_MAX_CODE_POINTS) -> dict[str, Any]:
    """A catalog entry as the model sees it (no artwork, licence or provenance)."""
    p = _Projector(scalar_cap=scalar_cap)
    out: dict[str, Any] = {
        "id": p.s(entry.id),
        "label": p.s(entry.label),
        "category": p.s(entry.category),
        "provider": p.s(entry.provider),
        "icon_id": p.s(entry.icon_id),
        "shape": p.s(entry.shape),
        "stride_role": entry.stride_role.value,
        "status": entry.status.value,
    }
    p.lst(out, "aliases", entry.aliases)
    p.lst(out, "keywords", entry.keywords)
    out["variants"] = [
        {"id": p.s(v.id), "label": p.s(v.label), "provider": p.s(v.provider), "icon_id": p.s(v.icon_id)}
        for v in entry.variants[:LIST_MAX_ITEMS]
    ]
    if len(entry.variants) > LIST_MAX_ITEMS:
        out["variants_total"] = len(entry.variants)
    return p.done(out)


# ---------------------------------------------------------------------------------------------
# Pagination


@dataclass(frozen=True, slots=True)
class Page:
    results: list[dict[str, Any]]
    meta: dict[str, Any]


def paginate(
    tool: str,
    extras: dict[str, Any],
    matches: Sequence[Any],
    project: Callable[[Any, int], dict[str, Any]],
    offset: int,
    limit: int,
) -> dict[str, Any]:
    """The payload for one page of `matches`, as large as `limit` and the byte cap allow.

    Sizes are added up item by item against the body's size with no results and the widest
    page meta it could carry, so the finished body is never over the cap.
    """
    total = len(matches)
    widest_next = total if len(str(total)) > len("null") else None
    widest_meta = {
        "offset": offset, "limit": limit, "returned": limit, "total": total,
        "next_offset": widest_next, "stopped_by": PageStop.LIMIT.value,
    }
    used = body_bytes({**extras, "page": widest_meta, "results": [], "tool": tool})
    results: list[dict[str, Any]] = []
    stop = PageStop.END
    index = offset
    while index < total:
        if len(results) >= limit:
            stop = PageStop.LIMIT
            break
        item = project(matches[index], SCALAR_MAX_CODE_POINTS)
        size = body_bytes(item) + (1 if results else 0)
        if used + size > READ_RESULT_MAX_BYTES and not results:
            # One oversized item must not stall paging forever: show it at tighter caps.
            item = project(matches[index], FALLBACK_SCALAR_MAX_CODE_POINTS)
            size = body_bytes(item)
        if used + size > READ_RESULT_MAX_BYTES:
            stop = PageStop.BYTES
            break
        results.append(item)
        used += size
        index += 1
    returned = len(results)
    next_offset = offset + returned if offset + returned < total else None
    meta = {
        "offset": offset, "limit": limit, "returned": returned, "total": total,
        "next_offset": next_offset, "stopped_by": stop.value,
    }
    return {**extras, "page": meta, "results": results, "tool": tool}


# ---------------------------------------------------------------------------------------------
# The tools' bodies (pure functions of the document or catalog)

_STATUS_OF = attrgetter("status")
_IS_GIVEN = partial(is_not, None)
_SEVERITY_ORDER = tuple(s.value for s in Severity)
_CATEGORY_ORDER = tuple(c.value for c in StrideCategory)


@dataclass(frozen=True, slots=True)
class ReadError:
    """A read failure: which one, and the authored text the model gets."""

    failure: ReadFailure
    message: str


def document_summary(document: ThreatModel) -> dict[str, Any]:
    """Payload of `get_document_summary`."""
    meta = document.metadata
    # Counted over the threats' columns (one C-level pass each, kept with the section's other
    # tables for the next call), never a Python step per threat. Severities are normalized to
    # lowercase on read, so `High` in a file counts as high.
    threats = section_index(document, "threats")
    severities = Counter(threats.column("severity"))
    categories = Counter(threats.column("category"))
    mitigations = threats.column("mitigation")
    given = list(filter(_IS_GIVEN, mitigations))
    statuses = Counter(map(_STATUS_OF, given))
    by_severity = {s: severities[Severity(s)] for s in _SEVERITY_ORDER}
    by_category = {c: categories[StrideCategory(c)] for c in _CATEGORY_ORDER}
    by_status = {m.value: statuses[m] for m in MitigationStatus}
    by_status[NO_MITIGATION] = len(mitigations) - len(given)
    p = _Projector()
    return {
        "version": p.s(document.version),
        "metadata": {
            "title": p.s(meta.title),
            "author": p.s(meta.author),
            "created": p.s(meta.created),
            "modified": p.s(meta.modified),
            "description": p.s(meta.description),
            "threat_analysis_enabled": meta.threat_analysis_enabled,
        },
        "counts": {kind: len(getattr(document, kind)) for kind in ENTITY_KINDS},
        "threats_by_severity": [{"severity": k, "count": v} for k, v in by_severity.items()],
        "threats_by_category": [{"category": k, "count": v} for k, v in by_category.items()],
        "threats_by_mitigation_status": [{"status": k, "count": v} for k, v in by_status.items()],
        "tool": "get_document_summary",
    }


def get_entity_result(document: ThreatModel, kind: str, entity_id: str) -> str | ReadError:
    """Fenced result of `get_entity`, or `unknown_id` / `entity_too_large`."""
    section: Sequence[Any] = getattr(document, kind)
    # A secret-shaped id is never found: the model is shown it redacted, so finding it by its
    # value would confirm a guess.
    position = section_index(document, kind).position(entity_id) if _plain(entity_id) else -1
    if position < 0:
        return ReadError(ReadFailure.UNKNOWN_ID, unknown_id_message(kind, entity_id, len(section)))
    entity = section[position]
    payload = {"kind": kind, "entity": full_projection(kind, entity, document), "tool": "get_entity"}
    try:
        return envelope(payload)
    except EnvelopeTooLarge as exc:
        return ReadError(ReadFailure.ENTITY_TOO_LARGE, entity_too_large_message(kind, entity_id, exc.size))


_NEVER: Any = object()
"""Equal to no field value (a filter that can match nothing)."""


def _plain(value: str) -> bool:
    """Whether `value` holds nothing the model is shown redacted."""
    return redacted(value) == value


class _Picked(Sequence[Any]):
    """The entities at `positions` of a section, read only when a page shows them: a search
    matching most of a large section pages 20 of them, and touching every matched entity
    (scattered over the heap) cost more than finding them."""

    __slots__ = ("_positions", "_section")

    def __init__(self, section: Sequence[Any], positions: list[int]) -> None:
        self._section = section
        self._positions = positions

    def __len__(self) -> int:
        return len(self._positions)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._section[i] for i in self._positions[index]]
        return self._section[self._positions[index]]

    def __iter__(self) -> Iterator[Any]:
        return map(self._section.__getitem__, self._positions)


def _candidates(document: ThreatModel, kind: str, query: SearchEntitiesInput) -> list[int] | None:
    """Positions passing the `text`, `references`, `severity` and `category` filters (from the
    section's tables and columns), or None if none is given."""
    index = section_index(document, kind)
    positions: list[int] | None = None
    if query.references is not None:
        positions = index.referrers(query.references) if _plain(query.references) else []
    if query.text is not None:
        # Only what the model is shown matches: a secret is `[redacted-secret]` in every
        # result, so a guess at it must not be confirmed by a match count either.
        positions = index.text_matches(query.text.lower(), positions)
    # A threat's severity and category are members of their enums (validated fields), so
    # "its value is the filter's" is "it is the filter's member".
    if query.severity is not None:
        positions = index.being("severity", Severity(query.severity), positions)
    if query.category is not None:
        positions = index.being("category", StrideCategory(query.category), positions)
    return positions


def _matcher(query: SearchEntitiesInput) -> Callable[[Any], bool] | None:
    """The filters other than `_candidates`', which read the entity itself."""
    checks: list[Callable[[Any], bool]] = []
    # Exact filters on text fields compare what the model is shown: a secret-shaped value is
    # never matched by its value (the scan runs only on values that already matched).
    if query.element_type is not None:
        element_type: Any = query.element_type if _plain(query.element_type) else _NEVER
        checks.append(lambda e: e.type == element_type)
    if query.trust_zone is not None:
        zone: Any = query.trust_zone if _plain(query.trust_zone) else _NEVER
        checks.append(lambda e: e.trust_zone == zone)
    if query.protocol is not None:
        protocol = query.protocol.lower()
        checks.append(lambda e: e.protocol.lower() == protocol and _plain(e.protocol))
    if query.authenticated is not None:
        authenticated = query.authenticated
        checks.append(lambda e: e.authenticated is authenticated)
    if query.mitigation_status is not None:
        status = query.mitigation_status
        checks.append(lambda e: _mitigation_status(e) == status)
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    return lambda e: all(check(e) for check in checks)


def search_entities_result(document: ThreatModel, query: SearchEntitiesInput) -> str | ReadError:
    """Fenced page of compact projections, or `invalid_filter` / `offset_out_of_range`."""
    kind = query.kind
    given = query.model_fields_set
    applicable = APPLICABLE_FILTERS[kind]
    for name in FILTER_ORDER:
        if name in given and name not in applicable:
            return ReadError(ReadFailure.INVALID_FILTER, invalid_filter_message(name, kind))
    section: Sequence[Any] = getattr(document, kind)
    positions = _candidates(document, kind, query)
    match = _matcher(query)
    matches: Sequence[Any]
    if positions is None:
        matches = section if match is None else [e for e in section if match(e)]
    else:
        picked = _Picked(section, positions)
        matches = picked if match is None else [e for e in picked if match(e)]
    offset = query.offset or 0
    if matches and offset >= len(matches):
        return ReadError(
            ReadFailure.OFFSET_OUT_OF_RANGE, offset_out_of_range_message(offset, len(matches), kind)
        )
    payload = paginate(
        "search_entities", {"kind": kind}, matches,
        lambda e, cap: compact_projection(kind, e, cap), offset, query.limit or DEFAULT_PAGE_LIMIT,
    )
    return envelope(payload)


def search_catalog_result(catalog: ComponentCatalog, query: SearchCatalogInput) -> str | ReadError:
    """Fenced page of catalog entries, or `offset_out_of_range` (kind `components`)."""
    matches = catalog.search(
        query.query or "", query.category, query.provider, bool(query.include_deprecated)
    )
    offset = query.offset or 0
    if matches and offset >= len(matches):
        return ReadError(
            ReadFailure.OFFSET_OUT_OF_RANGE,
            offset_out_of_range_message(offset, len(matches), "components"),
        )
    payload = paginate(
        "search_component_catalog", {}, matches, lambda e, cap: catalog_projection(e, cap),
        offset, query.limit or DEFAULT_PAGE_LIMIT,
    )
    return envelope(payload)


# ---------------------------------------------------------------------------------------------
# Tool definitions


def _outcome(value: str | ReadError) -> ToolOutcome:
    if isinstance(value, ReadError):
        return ToolFailed(value.message)
    return ToolOk(result=value)


def _summary_id(value: str) -> str:
    if (type(value) is str and 0 < len(value) <= ECHO_MAX_CODE_POINTS and value.isascii()
            and value.isprintable()):
        return value  # `sanitize`'s own first case, without its frame and tuple
    return sanitize(value, ECHO_MAX_CODE_POINTS)[0]


def read_tools(catalog: ComponentCatalog | None = None) -> tuple[DefinedTool[Any], ...]:
    """The four read tools, in advertised order. `catalog` defaults to the bundled one."""

    async def summary(_: SummaryInput, ctx: ToolContext) -> ToolOutcome:
        return ToolOk(result=envelope(document_summary(ctx.document)))

    async def get_entity(value: GetEntityInput, ctx: ToolContext) -> ToolOutcome:
        return _outcome(get_entity_result(ctx.document, value.kind, value.id))

    async def search_entities(value: SearchEntitiesInput, ctx: ToolContext) -> ToolOutcome:
        return _outcome(search_entities_result(ctx.document, value))

    async def search_catalog(value: SearchCatalogInput, ctx: ToolContext) -> ToolOutcome:
        return _outcome(search_catalog_result(catalog or default_catalog(), value))

    def catalog_summary(value: SearchCatalogInput) -> str:
        if value.query:
            return f'Search the component catalog for "{_summary_id(value.query)}".'
        return "Search the component catalog."

    return (
        define_tool(
            "get_document_summary",
            "Counts of every section and of threats by severity, category and mitigation "
            "status, plus the title and other metadata.",
            SummaryInput, ToolEffect.READ, False,
            lambda _: "Read the document summary.", summary,
        ),
        define_tool(
            "get_entity",
            "Read one entity in full by kind and exact id, including the ids of flows, "
            "boundaries and threats connected to it.",
            GetEntityInput, ToolEffect.READ, False,
            lambda v: f'Read the "{v.kind}" entity "{_summary_id(v.id)}".', get_entity,
        ),
        define_tool(
            "search_entities",
            "List the entities of one kind, optionally filtered, a page at a time. Each page "
            "says its total and the next_offset to continue from.",
            SearchEntitiesInput, ToolEffect.READ, False,
            lambda v: f'Search the "{v.kind}" entities.', search_entities,
        ),
        define_tool(
            "search_component_catalog",
            "Find component types (element type ids) in the catalog by words, category or "
            "cloud provider.",
            SearchCatalogInput, ToolEffect.READ, False, catalog_summary, search_catalog,
        ),
    )
