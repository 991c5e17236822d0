"""A quick verdict on parsed `.thf` data without building the document models: valid, or unsure.

`stockade validate` only needs to know that a file opens, its counts and its compatibility
warnings. Building the pydantic models for that means importing pydantic and building every
model's validator, most of the command's start-up. `is_plainly_valid` answers from the parsed
data alone, and only ever says "valid" when `validate_document` would accept the same data;
whenever anything is not plainly right (a wrong type, a missing field, a value out of range, a
key that is not text, an unknown field that is not plain data, a broken reference, a
`from_` spelling) it says "unsure" and the caller reads the file the full way, which also
produces the one error message. So an invalid file gets exactly the error it always got.

`RECORDS` restates the models' fields (input key, kind, whether required); a test derives the
same table from the pydantic models, so the two cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from operator import methodcaller
from typing import Any

from stockade.thf.format import SECTION_NAMES, SUPPORTED_VERSIONS, calendar_date
from stockade.thf.validate import first_group_cycle, plain_data_problem, reference_columns

# Field kinds: what the strict model accepts for the field.
STR = "str"
BOOL = "bool"
NUMBER = "number"  # finite float; integers become floats
U32 = "u32"
I64 = "i64"
DATE = "date"  # YYYY-MM-DD text
STR_LIST = "str_list"
RECORD = "record"  # detail: the record's name in RECORDS
RECORD_LIST = "record_list"
ENUM = "enum"  # detail: the accepted values

STRIDE_CATEGORIES = (
    "Spoofing",
    "Tampering",
    "Repudiation",
    "Information Disclosure",
    "Denial of Service",
    "Elevation of Privilege",
)
SEVERITIES = ("critical", "high", "medium", "low", "info")
MITIGATION_STATUSES = ("not_started", "in_progress", "mitigated", "accepted", "transferred")
LENIENT_ENUMS = frozenset({SEVERITIES})
"""Enums read in any letter case (`Severity._missing_`)."""

# (kind, required, nullable, detail) per input key, for every record of the format.
Field = tuple[str, bool, bool, Any]


def _f(kind: str, *, required: bool = False, nullable: bool = False, detail: Any = None) -> Field:
    return (kind, required, nullable, detail)


_REQ_STR = _f(STR, required=True)
_STR_DEFAULT = _f(STR)
_OPT_STR = _f(STR, nullable=True)
_OPT_NUMBER = _f(NUMBER, nullable=True)

RECORDS: dict[str, dict[str, Field]] = {
    "Position": {"x": _f(NUMBER, required=True), "y": _f(NUMBER, required=True)},
    "Size": {"width": _f(NUMBER, required=True), "height": _f(NUMBER, required=True)},
    "Viewport": {
        "x": _f(NUMBER, required=True),
        "y": _f(NUMBER, required=True),
        "zoom": _f(NUMBER, required=True),
    },
    "FileSettings": {
        "grid_size": _f(U32, nullable=True),
        "default_element_fill": _OPT_STR,
        "default_element_stroke": _OPT_STR,
        "default_boundary_fill": _OPT_STR,
        "default_boundary_stroke": _OPT_STR,
    },
    "Metadata": {
        "title": _REQ_STR,
        "author": _REQ_STR,
        "created": _f(DATE, required=True),
        "modified": _f(DATE, required=True),
        "description": _STR_DEFAULT,
        "created_by": _OPT_STR,
        "modified_by": _OPT_STR,
        "last_edit_timestamp": _f(I64, nullable=True),
        "threat_analysis_enabled": _f(BOOL, nullable=True),
        "settings": _f(RECORD, nullable=True, detail="FileSettings"),
    },
    "Layer": {"id": _REQ_STR, "name": _REQ_STR, "description": _OPT_STR},
    "Group": {
        "id": _REQ_STR,
        "name": _REQ_STR,
        "type": _OPT_STR,
        "parent": _OPT_STR,
        "description": _OPT_STR,
        "position": _f(RECORD, nullable=True, detail="Position"),
        "size": _f(RECORD, nullable=True, detail="Size"),
        "fill_color": _OPT_STR,
        "stroke_color": _OPT_STR,
        "fill_opacity": _OPT_NUMBER,
        "stroke_opacity": _OPT_NUMBER,
    },
    "Element": {
        "id": _REQ_STR,
        "type": _REQ_STR,
        "name": _REQ_STR,
        "trust_zone": _STR_DEFAULT,
        "layer": _OPT_STR,
        "group": _OPT_STR,
        "subtype": _OPT_STR,
        "icon": _OPT_STR,
        "description": _STR_DEFAULT,
        "technologies": _f(STR_LIST),
        "tags": _f(STR_LIST),
        "stores": _f(STR_LIST, nullable=True),
        "encryption": _OPT_STR,
        "position": _f(RECORD, nullable=True, detail="Position"),
        "fill_color": _OPT_STR,
        "stroke_color": _OPT_STR,
        "fill_opacity": _OPT_NUMBER,
        "stroke_opacity": _OPT_NUMBER,
        "font_size": _OPT_NUMBER,
        "font_weight": _OPT_STR,
    },
    "DataFlow": {
        "id": _REQ_STR,
        "flow_number": _f(U32, nullable=True),
        "name": _STR_DEFAULT,
        "from": _REQ_STR,
        "to": _REQ_STR,
        "protocol": _STR_DEFAULT,
        "data": _f(STR_LIST),
        "authenticated": _f(BOOL),
        "label_offset": _f(RECORD, nullable=True, detail="Position"),
        "source_handle": _OPT_STR,
        "target_handle": _OPT_STR,
        "stroke_color": _OPT_STR,
        "stroke_opacity": _OPT_NUMBER,
    },
    "Relationship": {
        "id": _REQ_STR,
        "type": _REQ_STR,
        "from": _REQ_STR,
        "to": _REQ_STR,
        "name": _OPT_STR,
        "description": _OPT_STR,
        "source_handle": _OPT_STR,
        "target_handle": _OPT_STR,
        "label_offset": _f(RECORD, nullable=True, detail="Position"),
        "stroke_color": _OPT_STR,
        "stroke_opacity": _OPT_NUMBER,
    },
    "TrustBoundary": {
        "id": _REQ_STR,
        "name": _REQ_STR,
        "contains": _f(STR_LIST),
        "position": _f(RECORD, nullable=True, detail="Position"),
        "size": _f(RECORD, nullable=True, detail="Size"),
        "fill_color": _OPT_STR,
        "stroke_color": _OPT_STR,
        "fill_opacity": _OPT_NUMBER,
        "stroke_opacity": _OPT_NUMBER,
    },
    "Mitigation": {
        "status": _f(ENUM, required=True, detail=MITIGATION_STATUSES),
        "description": _STR_DEFAULT,
    },
    "Threat": {
        "id": _REQ_STR,
        "title": _REQ_STR,
        "category": _f(ENUM, required=True, detail=STRIDE_CATEGORIES),
        "element": _OPT_STR,
        "flow": _OPT_STR,
        "severity": _f(ENUM, required=True, detail=SEVERITIES),
        "description": _STR_DEFAULT,
        "mitigation": _f(RECORD, nullable=True, detail="Mitigation"),
    },
    "Diagram": {
        "id": _REQ_STR,
        "name": _REQ_STR,
        "kind": _OPT_STR,
        "description": _OPT_STR,
        "layout_file": _OPT_STR,
        "viewport": _f(RECORD, nullable=True, detail="Viewport"),
    },
    "ThreatModel": {
        "version": _REQ_STR,
        "metadata": _f(RECORD, required=True, detail="Metadata"),
        "layers": _f(RECORD_LIST, detail="Layer"),
        "groups": _f(RECORD_LIST, detail="Group"),
        "elements": _f(RECORD_LIST, detail="Element"),
        "data_flows": _f(RECORD_LIST, detail="DataFlow"),
        "relationships": _f(RECORD_LIST, detail="Relationship"),
        "trust_boundaries": _f(RECORD_LIST, detail="TrustBoundary"),
        "threats": _f(RECORD_LIST, detail="Threat"),
        "diagrams": _f(RECORD_LIST, detail="Diagram"),
    },
}

NAME_ONLY_KEYS: dict[str, frozenset[str]] = {
    "DataFlow": frozenset({"from_"}),
    "Relationship": frozenset({"from_"}),
}
"""Field names the models also accept as keys (their input key is an alias); left to pydantic."""

_REQUIRED_COUNT = {
    name: sum(1 for field in fields.values() if field[1]) for name, fields in RECORDS.items()
}
_EXACT_FLOAT_INT = 2**53


def _value_ok(field: Field, value: Any) -> bool:
    kind, _, nullable, detail = field
    if value is None:
        return nullable
    value_type = type(value)
    if kind == STR:
        return value_type is str
    if kind == RECORD:
        return _record_ok(detail, value)
    if kind == NUMBER:
        if value_type is float:
            return math.isfinite(value)
        return value_type is int and -_EXACT_FLOAT_INT <= value <= _EXACT_FLOAT_INT
    if kind == STR_LIST:
        return value_type is list and all(type(item) is str for item in value)
    if kind == BOOL:
        return value_type is bool
    if kind == RECORD_LIST:
        return value_type is list and all(_record_ok(detail, item) for item in value)
    if kind == ENUM:
        return value_type is str and (
            value in detail or (detail in LENIENT_ENUMS and value.lower() in detail)
        )
    if kind == U32:
        return value_type is int and 0 <= value <= 2**32 - 1
    if kind == I64:
        return value_type is int and -(2**63) <= value <= 2**63 - 1
    if kind == DATE:
        if value_type is not str:
            return False
        try:
            calendar_date(value)
        except ValueError:
            return False
        return True
    return False


def _record_ok(name: str, raw: Any) -> bool:
    if type(raw) is not dict:
        return False
    fields = RECORDS[name]
    name_only = NAME_ONLY_KEYS.get(name, frozenset())
    required = 0
    for key, value in raw.items():
        if type(key) is not str or key in name_only:
            return False
        field = fields.get(key)
        if field is None:
            # An unknown field: kept and written back, so it must be plain YAML data.
            if plain_data_problem(value) is not None:
                return False
            continue
        if field[1]:
            required += 1
        if not _value_ok(field, value):
            return False
    return required == _REQUIRED_COUNT[name]


_RAW_KEYS = {"from_": "from"}


def _raw_field(field: str) -> methodcaller:
    return methodcaller("get", _RAW_KEYS.get(field, field), () if field == "contains" else None)


def is_plainly_valid(data: Any) -> bool:
    """True only when `validate_document(data)` (and a read's sidecar merge) would accept
    `data` unchanged; False means "unsure", not "invalid"."""
    if not isinstance(data, Mapping) or type(data) is not dict:
        return False
    if data.get("version") not in SUPPORTED_VERSIONS or data.get("metadata") is None:
        return False
    if any(data.get(section, ()) is None for section in SECTION_NAMES):
        data = {
            key: ([] if value is None and key in SECTION_NAMES else value)
            for key, value in data.items()
        }
    if not _record_ok("ThreatModel", data):
        return False
    sections = {section: data.get(section, []) for section in SECTION_NAMES}
    if any(
        diagram.get("layout_file") is not None and diagram.get("viewport") is None
        for diagram in sections["diagrams"]
    ):
        return False  # a legacy layout sidecar would be merged: the full read decides
    columns = reference_columns(sections, _raw_field)
    if columns is None:
        return False
    return first_group_cycle(columns["groups"]["id"], columns["groups"]["parent"]) is None


def section_counts(data: Mapping[str, Any]) -> dict[str, int]:
    """The number of entities in each section of data that `validate_document` accepts."""
    return {section: len(data.get(section) or ()) for section in SECTION_NAMES}
