"""Typed, immutable models for every section and field of the `.thf` format 1.0."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

# Re-exported: these long lived here, and much of the code imports them from the model.
from stockade.thf.format import SECTION_NAMES as SECTION_NAMES
from stockade.thf.format import SUPPORTED_VERSIONS as SUPPORTED_VERSIONS
from stockade.thf.format import calendar_date


class StrideCategory(StrEnum):
    SPOOFING = "Spoofing"
    TAMPERING = "Tampering"
    REPUDIATION = "Repudiation"
    INFORMATION_DISCLOSURE = "Information Disclosure"
    DENIAL_OF_SERVICE = "Denial of Service"
    ELEVATION_OF_PRIVILEGE = "Elevation of Privilege"


class Severity(StrEnum):
    """Ordered from most to least severe; stored lowercase."""

    CRITICAL = "critical"
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"
    INFO = "info"

    @classmethod
    def _missing_(cls, value: object) -> Severity | None:
        # The reference stored `High` verbatim and then could not reopen the file; any letter
        # case names the same severity. pydantic-core calls this only when the exact value
        # misses, so lowercase files never reach Python here.
        if isinstance(value, str):
            lowered = value.lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None


class MitigationStatus(StrEnum):
    NOT_STARTED = "not_started"
    IN_PROGRESS = "in_progress"
    MITIGATED = "mitigated"
    ACCEPTED = "accepted"
    TRANSFERRED = "transferred"


CalendarDate = Annotated[str, BeforeValidator(calendar_date)]


class _TextEnum:
    """Annotation: the field takes text, looked up by value inside pydantic-core.

    Strict mode accepts only enum instances, which a parsed file never holds, and lax mode
    alone would also decode bytes. A strict text check chained to a lax lookup by value takes
    text and members only, with no Python call per value.
    """

    def __get_pydantic_core_schema__(
        self, source: type[StrEnum], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        enum = dict(handler.resolve_ref_schema(handler(source)))
        enum.pop("ref", None)  # an inline copy; the shared definition stays strict
        enum["strict"] = False
        return core_schema.chain_schema([core_schema.str_schema(strict=True), enum])


# Strict floats accept integers (stored as floats) and refuse booleans and numeric strings,
# all inside pydantic-core: positions are the most numerous scalars in a large model. `.nan`
# and `.inf` are refused too: no canvas can place them and no other tool reads them back.
Number = Annotated[float, Field(allow_inf_nan=False)]
U32 = Annotated[int, Field(ge=0, le=2**32 - 1)]
I64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
SeverityField = Annotated[Severity, _TextEnum()]
CategoryField = Annotated[StrideCategory, _TextEnum()]
StatusField = Annotated[MitigationStatus, _TextEnum()]


class ThfModel(BaseModel):
    """Base for every `.thf` record: strict scalars, frozen, unknown keys kept."""

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        strict=True,
        populate_by_name=True,
        validate_default=False,
        revalidate_instances="never",
    )

    @property
    def extras(self) -> dict[str, Any]:
        """Unknown keys read from the file, in file order (written back after known keys)."""
        return dict(self.__pydantic_extra__ or {})


class Position(ThfModel):
    x: Number
    y: Number


class Size(ThfModel):
    width: Number
    height: Number


class Viewport(ThfModel):
    x: Number
    y: Number
    zoom: Number


class FileSettings(ThfModel):
    grid_size: U32 | None = None
    default_element_fill: str | None = None
    default_element_stroke: str | None = None
    default_boundary_fill: str | None = None
    default_boundary_stroke: str | None = None


class Metadata(ThfModel):
    title: str
    author: str
    created: CalendarDate
    modified: CalendarDate
    description: str = ""
    created_by: str | None = None
    modified_by: str | None = None
    last_edit_timestamp: I64 | None = None
    threat_analysis_enabled: bool | None = None
    settings: FileSettings | None = None


class Layer(ThfModel):
    id: str
    name: str
    description: str | None = None


class Group(ThfModel):
    id: str
    name: str
    type: str | None = None
    parent: str | None = None
    description: str | None = None
    position: Position | None = None
    size: Size | None = None
    fill_color: str | None = None
    stroke_color: str | None = None
    fill_opacity: Number | None = None
    stroke_opacity: Number | None = None


class Element(ThfModel):
    id: str
    type: str
    name: str
    trust_zone: str = ""
    layer: str | None = None
    group: str | None = None
    subtype: str | None = None
    icon: str | None = None
    description: str = ""
    technologies: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    stores: list[str] | None = None
    encryption: str | None = None
    position: Position | None = None
    fill_color: str | None = None
    stroke_color: str | None = None
    fill_opacity: Number | None = None
    stroke_opacity: Number | None = None
    font_size: Number | None = None
    font_weight: str | None = None


class DataFlow(ThfModel):
    id: str
    flow_number: U32 | None = None
    name: str = ""
    from_: str = Field(alias="from")
    to: str
    protocol: str = ""
    data: list[str] = Field(default_factory=list)
    authenticated: bool = False
    label_offset: Position | None = None
    source_handle: str | None = None
    target_handle: str | None = None
    stroke_color: str | None = None
    stroke_opacity: Number | None = None


class Relationship(ThfModel):
    id: str
    type: str
    from_: str = Field(alias="from")
    to: str
    name: str | None = None
    description: str | None = None
    source_handle: str | None = None
    target_handle: str | None = None
    label_offset: Position | None = None
    stroke_color: str | None = None
    stroke_opacity: Number | None = None


class TrustBoundary(ThfModel):
    id: str
    name: str
    contains: list[str] = Field(default_factory=list)
    position: Position | None = None
    size: Size | None = None
    fill_color: str | None = None
    stroke_color: str | None = None
    fill_opacity: Number | None = None
    stroke_opacity: Number | None = None


class Mitigation(ThfModel):
    status: StatusField
    description: str = ""


class Threat(ThfModel):
    id: str
    title: str
    category: CategoryField
    element: str | None = None
    flow: str | None = None
    severity: SeverityField
    description: str = ""
    mitigation: Mitigation | None = None


class Diagram(ThfModel):
    id: str
    name: str
    kind: str | None = None
    description: str | None = None
    layout_file: str | None = None
    viewport: Viewport | None = None


class ThreatModel(ThfModel):
    """A whole `.thf` document. Immutable: every edit produces a new instance."""

    version: str
    metadata: Metadata
    layers: list[Layer] = Field(default_factory=list)
    groups: list[Group] = Field(default_factory=list)
    elements: list[Element] = Field(default_factory=list)
    data_flows: list[DataFlow] = Field(default_factory=list)
    relationships: list[Relationship] = Field(default_factory=list)
    trust_boundaries: list[TrustBoundary] = Field(default_factory=list)
    threats: list[Threat] = Field(default_factory=list)
    diagrams: list[Diagram] = Field(default_factory=list)


ENTITY_TYPES: dict[str, type[ThfModel]] = {
    "layers": Layer,
    "groups": Group,
    "elements": Element,
    "data_flows": DataFlow,
    "relationships": Relationship,
    "trust_boundaries": TrustBoundary,
    "threats": Threat,
    "diagrams": Diagram,
}
"""Section name → entity model, in canonical section order."""
